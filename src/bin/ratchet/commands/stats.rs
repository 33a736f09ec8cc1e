//! `ratchet stats`: totals, every counter, and the most recent refusals.

use crate::output::Output;
use crate::{exit, open_existing, DbArg, Failure};
use clap::Args;
use ratchetdb::{Counters, SkipReason, SkipRecord, Stats};
use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use std::fmt;
use std::process::ExitCode;

/// How many of the most recent refusals (older, conflict, tombstoned) the table shows.
const RECENT_SKIPS_SHOWN: usize = 10;

/// How many of the most recent duplicates ("already stored") the table shows, after the
/// refusals: a re-ingest of an unchanged folder makes one per file, and they must not bury
/// a refusal that matters.
const RECENT_DUPLICATES_SHOWN: usize = 3;

/// The words for a counter, shared with `ingest`'s summary (which names its rows so).
pub fn counter_words(name: &str) -> Option<&'static str> {
    Some(match name {
        "unchanged" => "a newer version of the same content: nothing embedded",
        "skipped_duplicate" => {
            "already stored: the same version again (a re-ingest of an unchanged file)"
        }
        "skipped_older" => "refused: older than the stored version, which search serves",
        "skipped_conflict" => "refused: the stored version with other content",
        "skipped_tombstoned" => "refused: not newer than a delete or --sync",
        _ => return None,
    })
}

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
    if !stats.spaces.is_empty() {
        let default_active = stats.spaces.iter().all(|s| !s.active);
        let mark = |active: bool| if active { " (active)" } else { "" };
        row(
            &format!("space default{}", mark(default_active)),
            format!(
                "{}, {} dims, {}/{} chunks",
                stats.model.clone().unwrap_or_else(|| "-".into()),
                stats.dimension.unwrap_or(0),
                stats.vectors,
                stats.chunks
            ),
        );
        for space in &stats.spaces {
            row(
                &format!("space {}{}", space.name, mark(space.active)),
                format!(
                    "{}, {} dims, {}/{} chunks",
                    space.model,
                    space.dimension.unwrap_or(0),
                    space.vectors,
                    space.live_chunks
                ),
            );
        }
    }
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
        match counter_words(&name) {
            // (A JSON value's `Display` ignores the width: pad its text.)
            Some(words) => lines.push(format!("  {name:<32} {:<8} {words}", value.to_string())),
            None => lines.push(format!("  {name:<32} {value}")),
        }
    }
    lines.push(String::new());
    let kept = stats.recent_skips.len();
    let (duplicates, refusals): (Vec<&SkipRecord>, Vec<&SkipRecord>) = stats
        .recent_skips
        .iter()
        .partition(|skip| skip.reason == SkipReason::Duplicate);
    if kept == 0 {
        lines.push("recent skips: none".to_string());
        return Ok(lines);
    }
    lines.push(format!(
        "recent skips ({kept} kept): {} refused, {} already stored",
        refusals.len(),
        duplicates.len()
    ));
    for (what, records, most) in [
        ("refused", &refusals, RECENT_SKIPS_SHOWN),
        ("already stored", &duplicates, RECENT_DUPLICATES_SHOWN),
    ] {
        let shown = &records[records.len().saturating_sub(most)..];
        if shown.is_empty() {
            continue;
        }
        lines.push(format!(
            "  {what} (the last {} of {}, oldest first)",
            shown.len(),
            records.len()
        ));
        for skip in shown {
            lines.push(format!(
                "    #{:<6} {}/{}: {} (stored {}, incoming {})",
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
