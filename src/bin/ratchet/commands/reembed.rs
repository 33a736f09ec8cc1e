//! `ratchet reembed`: fills a vector space of the store with another embedder's vectors
//! while searches go on in the active space, then (`--activate`) switches searches to it.

use crate::embedder;
use crate::progress::Progress;
use crate::{exit, DbArg, Failure};
use clap::Args;
use ratchetdb::{Embedder, HashingEmbedder, Options, ReembedProgress, Store};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

pub const LONG_ABOUT: &str = "\
Embed every chunk of the store again with another embedder, into a vector space of its own,
while searches keep using the active space; `--activate` switches searches to the new space
once it covers every chunk.

  ratchet reembed --db index.redb --model DIR --activate      (MiniLM from DIR)
  ratchet reembed --db index.redb --hashing 768 --activate    (the built-in embedder, 768 wide)
  ratchet reembed --db index.redb --model DIR --activate --drop-old

The space is named after the embedder unless --space names it; a space that exists is
continued. Each batch is committed as it is embedded, and a chunk whose document is rewritten
meanwhile is not overwritten (it is counted as superseded, and embedded again from its new
text): stop it at any time (Ctrl-C, a kill) and run the same command again to go on from
where it stopped; only the batch in flight when it stopped (at most --batch chunks) is
embedded again. `ratchet ingest` embeds new revisions for every space whose embedder it can
load; `ratchet stats` shows each space's coverage. The store takes one writer at a time:
while this runs, `search` works and `ingest` waits or is refused (`--wait`).

`--drop-old` (with --activate) then drops the space that was active before: when that is the
default space (the store's own vectors), the new space is promoted in its place (one
transaction: every chunk's vector becomes the new one, the store records the new model and
dimension), so `ingest` embeds with the new embedder alone from then on (`ratchet spaces
drop` does the same step on its own). Run again after a stop between the activation and
the drop, it finishes the drop: the space was active already, so the default space is
dropped when it is the only other one (and nothing when the space is the default one
already); with other spaces beside it, which one was active before is not known, and it
says so and drops nothing.";

#[derive(Args, Debug)]
pub struct ReembedArgs {
    #[command(flatten)]
    db: DbArg,
    /// A MiniLM model folder (config.json, tokenizer.json, model.safetensors).
    #[arg(
        long,
        value_name = "DIR",
        conflicts_with = "hashing",
        required_unless_present = "hashing"
    )]
    model: Option<PathBuf>,
    /// The built-in lexical hashing embedder, DIM wide.
    #[arg(long, value_name = "DIM")]
    hashing: Option<usize>,
    /// The space's name (default: the embedder's name): 1 to 64 ASCII letters, digits,
    /// '-', '_' and '.'.
    #[arg(long, value_name = "NAME", value_parser = space_name)]
    space: Option<String>,
    /// Chunks embedded and written per batch (one transaction each), 1 to 100,000.
    #[arg(
        long,
        value_name = "N",
        default_value = "64",
        value_parser = clap::value_parser!(u32).range(1..=MAX_BATCH)
    )]
    batch: u32,
    /// Make the space the one searches use once it covers every chunk.
    #[arg(long)]
    activate: bool,
    /// After --activate, drop the space that was active before (the default one: promote
    /// the new space in its place, so the old model is never needed again).
    #[arg(long, requires = "activate")]
    drop_old: bool,
}

/// The largest `--batch` (the store's largest walk step, `Store::reembed`'s `batch_size`).
const MAX_BATCH: i64 = 100_000;

/// The longest space name, in bytes (as the store checks it).
const MAX_SPACE_NAME_BYTES: usize = 64;

/// Checks `--space` as the store checks a space name, before the store is opened: a bad
/// name is a usage error naming `--space`, and the store is left as it was.
fn space_name(name: &str) -> Result<String, String> {
    if name.is_empty() {
        return Err("a space name must not be empty".into());
    }
    if name.len() > MAX_SPACE_NAME_BYTES {
        return Err(format!(
            "is {} bytes; a space name is at most {MAX_SPACE_NAME_BYTES}",
            name.len()
        ));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
    {
        return Err(format!(
            "contains {c:?}; a space name is ASCII letters, digits, '-', '_' and '.'"
        ));
    }
    Ok(name.to_owned())
}

pub fn run(args: ReembedArgs) -> Result<ExitCode, Failure> {
    let embedder: Box<dyn Embedder> = match (args.hashing, &args.model) {
        (Some(dimension), _) => Box::new(HashingEmbedder::new(dimension)?),
        (None, Some(dir)) => embedder::for_ingest(Some(dir))?,
        (None, None) => return Err(Failure("give --model DIR or --hashing DIM".into())),
    };
    // An existing store only: a mistyped path is refused, not created empty.
    let store = Store::open(
        &args.db.db,
        args.db.options(Options::default().must_exist()),
    )
    .map_err(crate::open_failure)?;
    let name = args
        .space
        .clone()
        .unwrap_or_else(|| embedder.name().to_owned());
    let existing = store.spaces()?.into_iter().find(|s| s.name == name);
    let space = match existing {
        Some(space) => {
            if space.model != embedder.name() || space.dimension != Some(embedder.dimension()) {
                return Err(Failure(format!(
                    "the space {name:?} holds vectors of {} ({} dimensions), not {} ({}); \
                     name another space with --space",
                    space.model,
                    space.dimension.unwrap_or(0),
                    embedder.name(),
                    embedder.dimension()
                )));
            }
            space
        }
        None => store.add_space(&name, embedder.name(), embedder.dimension())?,
    };
    let started = Instant::now();
    eprintln!(
        "reembed: {} of {} chunks lack a vector in space {name:?} ({}); embedding in batches of {}",
        space.missing(),
        space.live_chunks,
        embedder::describe(embedder.name()),
        args.batch
    );
    let progress = Progress::new("reembed", "chunks", space.missing());
    let mut reported = 0u64;
    let mut first = true;
    let mut on_batch = |p: ReembedProgress| {
        let elapsed = started.elapsed().as_secs_f64().max(1e-9);
        let rate = p.embedded as f64 / elapsed;
        progress.advance(p.embedded - reported, || format!("{rate:.1} chunks/s"));
        if first {
            progress.println(&format!(
                "reembed: first batch written: {} chunks embedded, {rate:.1} chunks/s, about {:.0}s left",
                p.embedded,
                p.missing.saturating_sub(p.embedded) as f64 / rate.max(1e-9)
            ));
            first = false;
        }
        reported = p.embedded;
    };
    let outcome = store.reembed(&name, embedder.as_ref(), args.batch as usize, &mut on_batch);
    progress.finish();
    let outcome = outcome?;
    let elapsed = started.elapsed().as_secs_f64();
    let after = store
        .spaces()?
        .into_iter()
        .find(|s| s.name == name)
        .ok_or_else(|| Failure(format!("the space {name:?} went away meanwhile")))?;
    eprintln!(
        "reembed: {} chunks embedded in {elapsed:.1}s ({:.1} chunks/s): {} written, {} superseded \
         by newer revisions, {} already there; space {name:?} covers {}/{} chunks",
        outcome.embedded,
        outcome.embedded as f64 / elapsed.max(1e-9),
        outcome.writes.written,
        outcome.writes.superseded,
        outcome.writes.present,
        after.vectors,
        after.live_chunks
    );
    if args.activate {
        let spaces = store.spaces()?;
        store.activate(&name)?;
        eprintln!("reembed: space {name:?} is active: searches use it");
        if args.drop_old {
            drop_old(&store, &name, &spaces)?;
        }
    } else if !after.active {
        eprintln!(
            "reembed: searches still use the active space; `{} reembed --db {} {} --activate` switches them",
            crate::program_name(),
            ratchetdb::redact_address(&args.db.db),
            match args.hashing {
                Some(d) => format!("--hashing {d}"),
                None => "--model DIR".to_owned(),
            }
        );
    }
    Ok(exit::ok())
}

/// `--drop-old`: drops the space that was active before space `name` (`spaces`: the spaces
/// as they were before it was activated). When `name` was active already (a run stopped
/// between the activation and the drop, or an earlier `--activate`), the space active before
/// it is not recorded: the default space is dropped when it is the only other one (it was
/// active before, or no space still there was), nothing when `name` is the default space
/// already, and with other spaces beside them nothing is dropped and the run fails saying
/// so.
fn drop_old(store: &Store, name: &str, spaces: &[ratchetdb::SpaceInfo]) -> Result<(), Failure> {
    // The default space is dropped by its first name whatever it answers to.
    let default = spaces.first().map(|s| s.name.as_str());
    let old = match spaces.iter().find(|s| s.active) {
        Some(old) if old.name != name => old.name.as_str(),
        _ if default == Some(name) => {
            eprintln!("reembed: space {name:?} is the default space already: nothing to drop");
            return Ok(());
        }
        _ => {
            let others: Vec<&str> = spaces
                .iter()
                .skip(1)
                .map(|s| s.name.as_str())
                .filter(|s| *s != name)
                .collect();
            if !others.is_empty() {
                return Err(Failure(format!(
                    "space {name:?} was active before this run, so the space active before it \
                     is not known (besides the default space the store has {}); nothing was \
                     dropped: `{} spaces drop NAME` drops one (`spaces drop default` promotes \
                     {name:?} in the default space's place)",
                    others
                        .iter()
                        .map(|s| format!("{s:?}"))
                        .collect::<Vec<_>>()
                        .join(", "),
                    crate::program_name()
                )));
            }
            eprintln!(
                "reembed: space {name:?} was active already; the space active before it was \
                 the default one (the only other): dropping it now"
            );
            default.unwrap_or(ratchetdb::DEFAULT_SPACE)
        }
    };
    let old = if Some(old) == default {
        ratchetdb::DEFAULT_SPACE
    } else {
        old
    };
    crate::commands::spaces::drop_space(store, old)
}
