//! `ratchet stats`: totals, every counter, and the most recent refusals.

use crate::output::Output;
use crate::{exit, open_existing, DbArg, Failure};
use clap::Args;
use ratchetdb::{Counters, Stats};
use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use std::fmt;
use std::process::ExitCode;

/// How many of the most recent refusals the table shows.
const RECENT_SKIPS_SHOWN: usize = 10;

#[derive(Args, Debug)]
pub struct StatsArgs {
    #[command(flatten)]
    db: DbArg,
    /// Print the statistics as one JSON object instead of a table.
    #[arg(long)]
    json: bool,
}

pub fn run(args: StatsArgs) -> Result<ExitCode, Failure> {
    let stats = open_existing(&args.db)?.stats()?;
    let mut out = Output::stdout();
    if args.json {
        out.json_line(&stats)?;
    } else {
        for line in table(&stats)? {
            out.text_line(&line)?;
        }
    }
    out.finish()?;
    Ok(exit::ok())
}

fn table(stats: &Stats) -> Result<Vec<String>, Failure> {
    let mut lines = Vec::new();
    let mut row = |name: &str, value: String| lines.push(format!("{name:<34} {value}"));
    row("documents", stats.documents.to_string());
    row("tombstones", stats.tombstones.to_string());
    row("chunks", stats.chunks.to_string());
    row("vectors", stats.vectors.to_string());
    row(
        "chunks/document",
        format!("{:.2}", stats.chunks_per_document),
    );
    row("listings", stats.listings.to_string());
    row(
        "dimension",
        stats
            .dimension
            .map_or_else(|| "not fixed yet".to_string(), |d| d.to_string()),
    );
    row("metric", stats.metric.to_string());
    row("model", stats.model.clone().unwrap_or_else(|| "-".into()));
    row(
        "equal-version share of skips",
        format!(
            "{:.1}% of {} skips",
            stats.equal_version_skip_share * 100.0,
            stats.counters.skipped()
        ),
    );
    lines.push(String::new());
    lines.push("counters".to_string());
    for (name, value) in counters_in_order(&stats.counters)? {
        lines.push(format!("  {name:<32} {value}"));
    }
    lines.push(String::new());
    let kept = stats.recent_skips.len();
    let shown = &stats.recent_skips[kept.saturating_sub(RECENT_SKIPS_SHOWN)..];
    if shown.is_empty() {
        lines.push("recent skips: none".to_string());
    } else {
        lines.push(format!(
            "recent skips (the last {} of {kept} kept, oldest first)",
            shown.len()
        ));
        for skip in shown {
            lines.push(format!(
                "  #{:<6} {}/{}: {} (stored {}, incoming {})",
                skip.seq,
                skip.source,
                skip.id,
                skip.reason,
                skip.stored_version,
                skip.incoming_version
            ));
        }
    }
    Ok(lines)
}

/// Every counter by name, in the order `Counters` declares them (its serde form), so a
/// counter added to the library shows up here without a change.
fn counters_in_order(counters: &Counters) -> Result<Vec<(String, serde_json::Value)>, Failure> {
    let json = serde_json::to_string(counters)?;
    Ok(serde_json::from_str::<OrderedFields>(&json)?.0)
}

/// A JSON object's fields in document order (serde_json's map sorts them).
struct OrderedFields(Vec<(String, serde_json::Value)>);

impl<'de> Deserialize<'de> for OrderedFields {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct FieldsVisitor;
        impl<'de> Visitor<'de> for FieldsVisitor {
            type Value = OrderedFields;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<OrderedFields, A::Error> {
                let mut fields = Vec::new();
                while let Some(entry) = map.next_entry()? {
                    fields.push(entry);
                }
                Ok(OrderedFields(fields))
            }
        }
        deserializer.deserialize_map(FieldsVisitor)
    }
}
