//! `ratchet copy --from A --to B`: moves every document (versions, tombstones, metadata,
//! chunks and their vectors) and every listing between a redb file and a PostgreSQL store
//! (`postgres://...`), either way, through the guarded write path; then the history: the
//! destination's outcome counters become what they were before the copy plus the
//! source's (for a new destination: the source's), and the source's skip log is appended
//! to the destination's. Then it runs `verify` on both ends and checks that the
//! destination holds every document of the source at the same version with the same
//! content hash, every listing with the same members, those counters and those refusals.
//! The destination records the source's metric, dimension and embedding model. Built with
//! the `postgres` feature.

use crate::output::Output;
use crate::{exit, open_failure, Failure};
use clap::Args;
use ratchetdb::{
    redact_address, Chunk, Counters, Document, Op, Options, SkipRecord, Store, StoredDocument,
};
use std::collections::{BTreeMap, BTreeSet};
use std::process::ExitCode;

/// Operations per write transaction on the destination.
const BATCH: usize = 256;

#[derive(Args, Debug)]
pub struct CopyArgs {
    /// The store to read: a redb file, or `postgres://user@host:port/database`.
    #[arg(long, value_name = "PATH|URL")]
    from: String,
    /// The store to write (created if missing): a redb file, or a `postgres://` URL.
    #[arg(long, value_name = "PATH|URL")]
    to: String,
}

/// A stored document as the operation that recreates it, with its chunks' vectors in the
/// vector spaces `keep` names (the others left out).
fn op_of(doc: StoredDocument, keep: &BTreeSet<String>) -> Op {
    if doc.deleted {
        return Op::Delete {
            source: doc.source,
            id: doc.id,
            version: doc.version,
        };
    }
    let mut document = Document::new(doc.source, doc.id, doc.version).with_meta(doc.meta);
    for chunk in doc.chunks {
        document = document.with_chunk(Chunk {
            text: chunk.text,
            vector: chunk.vector,
            meta: chunk.meta,
            spaces: chunk
                .spaces
                .into_iter()
                .filter(|(name, _)| keep.contains(name))
                .collect(),
        });
    }
    Op::Upsert(document)
}

pub fn run(args: CopyArgs) -> Result<ExitCode, Failure> {
    // Both ends through `Store::open`: a path opens a redb file, a URL a PostgreSQL store.
    let from = Store::open(&args.from, Options::default().must_exist()).map_err(open_failure)?;
    // The destination records the source's metric, dimension and model (an existing one
    // that recorded others refuses the copy: its vectors would not be comparable).
    let mut to_options = Options::default().metric(from.metric());
    if let Some(dimension) = from.dimension() {
        to_options = to_options.dimension(dimension);
    }
    if let Some(model) = from.model() {
        to_options = to_options.model(model);
    }
    let to = Store::open(&args.to, to_options).map_err(open_failure)?;
    let counters_before = to.stats()?.counters;
    let docs = from.documents(true)?;
    let listings = from.listings()?;
    let history = from.stats()?;
    let expected: BTreeMap<(String, String), (ratchetdb::Version, bool, String)> = docs
        .iter()
        .map(|d| {
            (
                (d.source.clone(), d.id.clone()),
                (d.version, d.deleted, d.content_hash.clone()),
            )
        })
        .collect();
    let mut out = Output::stdout();
    let (keep, active) = copy_spaces(&from, &to, &mut out)?;
    let (mut applied, mut refused) = (0u64, Vec::new());
    // Documents first, then the listings in version order (each guarded: a listing
    // tombstones nothing the copied documents do not already show).
    let listing_ops = listings.iter().map(|listing| Op::Retain {
        source: listing.source.clone(),
        present: listing.present.clone(),
        version: listing.version,
    });
    let mut ops = docs
        .into_iter()
        .map(|doc| op_of(doc, &keep))
        .chain(listing_ops)
        .peekable();
    while ops.peek().is_some() {
        let batch: Vec<Op> = ops.by_ref().take(BATCH).collect();
        for result in to.write_batch(batch)? {
            match result.map_err(|e| e.to_string()) {
                Ok(outcome) => match outcome {
                    ratchetdb::OpOutcome::Document(ratchetdb::Outcome::Skipped { .. }) => {
                        refused.push(format!("{outcome:?}"))
                    }
                    ratchetdb::OpOutcome::Retain(ref retained) if retained.skipped.is_some() => {
                        refused.push(format!("{outcome:?}"))
                    }
                    _ => applied += 1,
                },
                Err(error) => refused.push(error),
            }
        }
    }
    let copied: BTreeMap<(String, String), (ratchetdb::Version, bool, String)> = to
        .documents(false)?
        .into_iter()
        .map(|d| ((d.source, d.id), (d.version, d.deleted, d.content_hash)))
        .collect();
    let counters = added(&counters_before, &history.counters)?;
    to.restore_history(&counters, &history.recent_skips)?;
    let mut problems: Vec<String> = Vec::new();
    let copied_listings = to.listings()?;
    for listing in &listings {
        if !copied_listings.contains(listing) {
            problems.push(format!(
                "listing {}@{} is not in the destination with the same ids",
                listing.source, listing.version
            ));
        }
    }
    let after = to.stats()?;
    if without_commits(&after.counters)? != without_commits(&counters)? {
        problems.push(format!(
            "counters: {:?}, not {:?}",
            after.counters, counters
        ));
    }
    let tail = &after.recent_skips[after
        .recent_skips
        .len()
        .saturating_sub(history.recent_skips.len())..];
    if tail.iter().map(refusal).collect::<Vec<_>>()
        != history.recent_skips.iter().map(refusal).collect::<Vec<_>>()
    {
        problems.push("the skip log's last records are not the source's".to_string());
    }
    for (key, want) in &expected {
        match copied.get(key) {
            Some(have) if have == want => {}
            Some(have) => problems.push(format!("{}/{}: {have:?}, not {want:?}", key.0, key.1)),
            None => problems.push(format!("{}/{}: missing", key.0, key.1)),
        }
    }
    if let (Ok(before), Ok(after)) = (from.spaces(), to.spaces()) {
        for space in before.iter().filter(|s| keep.contains(&s.name)) {
            match after.iter().find(|s| s.name == space.name) {
                Some(copied) if copied.vectors >= space.vectors => {}
                Some(copied) => problems.push(format!(
                    "space {:?}: {} vectors, not {}",
                    space.name, copied.vectors, space.vectors
                )),
                None => problems.push(format!("space {:?}: missing", space.name)),
            }
        }
    }
    if let Some(name) = active {
        if let Err(error) = to.activate(&name) {
            problems.push(format!("space {name:?} (active in the source): {error}"));
        }
    }
    for (name, report) in [("source", from.verify()?), ("destination", to.verify()?)] {
        for violation in &report.violations {
            problems.push(format!("{name}: {violation}"));
        }
    }
    for line in &refused {
        out.text_line(&format!("refused: {line}"))?;
    }
    for problem in &problems {
        out.text_line(&format!("violation: {problem}"))?;
    }
    let ok = problems.is_empty() && refused.is_empty();
    out.text_line(&format!(
        "{}: {applied} of {} documents and listings copied from {} to {}, with the counters \
         and {} refusals of the skip log; verify ran on both ends",
        if ok { "ok" } else { "FAILED" },
        expected.len() + listings.len(),
        redact_address(&args.from),
        redact_address(&args.to),
        history.recent_skips.len(),
    ))?;
    out.finish()?;
    Ok(if ok { exit::ok() } else { exit::error() })
}

/// The source's vector spaces besides the default one that the destination gets, each
/// added there unless it has it (same model and dimension, else a failure), and the source's
/// active space if it is one of them. A space is copied when it is complete in the source
/// (every chunk brings its vector); an incomplete one, or any on a destination without
/// spaces (PostgreSQL), is left out with a note (`ratchet reembed` fills it in).
fn copy_spaces(
    from: &Store,
    to: &Store,
    out: &mut Output,
) -> Result<(BTreeSet<String>, Option<String>), Failure> {
    let mut keep = BTreeSet::new();
    let Ok(spaces) = from.spaces() else {
        return Ok((keep, None));
    };
    let mut active = None;
    let there = to.spaces().ok();
    for space in spaces
        .into_iter()
        // The default space first: after a promotion it is listed under the promoted
        // space's name, so it is skipped by position, not by name.
        .skip(1)
    {
        let Some(there) = &there else {
            out.text_line(&format!(
                "note: the vector space {:?} ({}) is not copied: the destination keeps no \
                 vector spaces",
                space.name, space.model
            ))?;
            continue;
        };
        if !space.is_complete() {
            out.text_line(&format!(
                "note: the vector space {:?} ({}) is not copied: {} of {} chunks lack a vector \
                 there (`{} reembed` fills it in)",
                space.name,
                space.model,
                space.missing(),
                space.live_chunks,
                crate::program_name()
            ))?;
            continue;
        }
        let dimension = space.dimension.unwrap_or_default();
        match there.iter().find(|s| s.name == space.name) {
            Some(have) if have.model == space.model && have.dimension == space.dimension => {}
            Some(have) => {
                return Err(Failure(format!(
                    "the destination's vector space {:?} holds vectors of {} ({} dimensions), \
                     the source's of {} ({dimension}); copy into another store",
                    space.name,
                    have.model,
                    have.dimension.unwrap_or_default(),
                    space.model
                )))
            }
            None => {
                to.add_space(&space.name, &space.model, dimension)?;
            }
        }
        if space.active {
            active = Some(space.name.clone());
        }
        keep.insert(space.name);
    }
    Ok((keep, active))
}

/// The sum of two stores' counters, counter by counter (by their serde names, so a counter
/// added to the library is moved without a change here).
fn added(a: &Counters, b: &Counters) -> Result<Counters, Failure> {
    let (a, b) = (serde_json::to_value(a)?, serde_json::to_value(b)?);
    let mut sum = serde_json::Map::new();
    if let (Some(a), Some(b)) = (a.as_object(), b.as_object()) {
        for (name, value) in a {
            // Saturating: a damaged store's counters may be anything.
            let total = value
                .as_u64()
                .unwrap_or(0)
                .saturating_add(b.get(name).and_then(|v| v.as_u64()).unwrap_or(0));
            sum.insert(name.clone(), total.into());
        }
    }
    Ok(serde_json::from_value(serde_json::Value::Object(sum))?)
}

/// The counters without `commits` (each store counts its own transactions).
fn without_commits(counters: &Counters) -> Result<serde_json::Value, Failure> {
    let mut value = serde_json::to_value(counters)?;
    if let Some(object) = value.as_object_mut() {
        object.remove("commits");
    }
    Ok(value)
}

/// A refusal without its position in its log.
fn refusal(skip: &SkipRecord) -> String {
    format!(
        "{}/{} {} {} {}",
        skip.source, skip.id, skip.reason, skip.stored_version, skip.incoming_version
    )
}
