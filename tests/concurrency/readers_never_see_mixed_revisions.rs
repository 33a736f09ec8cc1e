//! Readers running alongside writers never see a mixed or a missing document (I3, I4; F3,
//! F6, F7).
//!
//! Three writer threads rewrite eight documents for two seconds: revisions of 1 to 7 chunks
//! (so revisions grow and shrink), each chunk text naming its document, revision and position
//! (`doc5 rev12 chunk3`); four of the documents are also deleted and re-created. Versions are
//! issued per document from a shared counter and the writes race, so revisions also land out
//! of order and the guard refuses the stale ones. Some writes go through `write_batch`.
//!
//! Three reader threads loop over `store.snapshot()` and read every document, by `get` and by
//! the `documents` stream, asserting for each document they see:
//! * every chunk carries the document's revision and its own position in its text, and the
//!   document's generation; positions are `0..n` and `n` is the revision's chunk count;
//! * a tombstone has no chunks; a document the writers never delete is never a tombstone;
//! * a document once seen is never absent later, and its version never goes down;
//! * `get` and the `documents` stream agree within one snapshot.
//!
//! Readers never wait for the writers: each read pass must finish well inside a second. At
//! the end `verify()` holds and every document is in the state its highest-versioned write
//! defines.

use ratchetdb::{
    Chunk, Document, Durability, Op, OpOutcome, Options, Outcome, SkipReason, Snapshot, Store,
    StoredDocument, Version,
};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

const SOURCE: &str = "wiki";
const DOCUMENTS: usize = 8;
/// Documents `0..STABLE` are never deleted; the rest are deleted and re-created.
const STABLE: usize = 4;
const WRITERS: u64 = 3;
const READERS: u64 = 3;
const WRITE_FOR: Duration = Duration::from_secs(2);
/// A read pass (snapshot + every document) taking longer than this is a reader that waited.
const MAX_READ_PASS: Duration = Duration::from_secs(1);
const DIMENSION: usize = 8;

fn doc_id(doc: usize) -> String {
    format!("doc{doc}")
}

fn mix(x: u64) -> u64 {
    // One SplitMix64 step from `x`: a well-mixed function of it.
    ratchetdb::testkit::SplitMix64::new(x).next_u64()
}

/// The chunk count of a revision: a function of (document, revision), between 1 and 7.
fn chunk_count(doc: usize, revision: u64) -> usize {
    1 + (mix(((doc as u64) << 32) ^ revision) % 7) as usize
}

fn chunk_text(doc: usize, revision: u64, position: usize) -> String {
    format!("doc{doc} rev{revision} chunk{position}")
}

fn revision(doc: usize, revision: u64) -> Document {
    let mut document = Document::new(SOURCE, doc_id(doc), Version::number(revision));
    for position in 0..chunk_count(doc, revision) {
        let seed = mix(((doc as u64) << 40) ^ (revision << 8) ^ position as u64);
        let vector = (0..DIMENSION)
            .map(|lane| ((seed >> (8 * lane)) & 0xff) as f32 + 1.0)
            .collect();
        document = document.with_chunk(Chunk::new(chunk_text(doc, revision, position), vector));
    }
    document
}

/// The versions issued so far, per document: the highest, and whether it was a delete.
struct Issued {
    highest: Mutex<Vec<(u64, bool)>>,
}

impl Issued {
    fn next(&self, doc: usize, delete: bool) -> u64 {
        let mut highest = self.highest.lock().unwrap_or_else(|e| e.into_inner());
        let version = highest[doc].0 + 1;
        highest[doc] = (version, delete);
        version
    }
}

/// Checks an outcome the writers can get: written, deleted, or refused as older / tombstoned
/// by a strictly newer stored version (versions are unique per document, so never a tie).
fn check_outcome(doc: usize, version: u64, outcome: &Outcome) {
    match outcome {
        Outcome::Written { .. } | Outcome::Deleted { .. } => {}
        Outcome::Skipped {
            reason: SkipReason::Older | SkipReason::Tombstoned,
            stored_version,
            incoming_version,
        } => {
            assert_eq!(incoming_version.value, version);
            assert!(
                stored_version.value > version,
                "doc{doc}@{version} refused by stored version {stored_version}"
            );
        }
        other => panic!("doc{doc}@{version}: unexpected outcome {other:?}"),
    }
}

fn writer(store: &Store, issued: &Issued, seed: u64, writes: &AtomicU64) {
    let mut rng = seed;
    let mut next = move || {
        rng = mix(rng);
        rng
    };
    let start = Instant::now();
    while start.elapsed() < WRITE_FOR {
        let choice = next() % 10;
        let doc = (next() % DOCUMENTS as u64) as usize;
        if choice < 6 {
            let version = issued.next(doc, false);
            let outcome = store
                .upsert(revision(doc, version))
                .unwrap_or_else(|e| panic!("upsert doc{doc}@{version}: {e}"));
            check_outcome(doc, version, &outcome);
            writes.fetch_add(1, Ordering::Relaxed);
        } else if choice < 8 {
            // A batch: two or three documents, and sometimes a delete of a churning one.
            let mut docs: Vec<usize> = (0..2 + next() % 2)
                .map(|_| (next() % DOCUMENTS as u64) as usize)
                .collect();
            docs.sort_unstable();
            docs.dedup();
            let mut planned = Vec::new();
            let mut ops = Vec::new();
            for doc in docs {
                let delete = doc >= STABLE && next() % 3 == 0;
                let version = issued.next(doc, delete);
                planned.push((doc, version));
                ops.push(if delete {
                    Op::Delete {
                        source: SOURCE.to_string(),
                        id: doc_id(doc),
                        version: Version::number(version),
                    }
                } else {
                    Op::Upsert(revision(doc, version))
                });
            }
            let results = store
                .write_batch(ops)
                .unwrap_or_else(|e| panic!("batch {planned:?}: {e}"));
            assert_eq!(results.len(), planned.len());
            for ((doc, version), result) in planned.into_iter().zip(results) {
                match result {
                    Ok(OpOutcome::Document(outcome)) => check_outcome(doc, version, &outcome),
                    other => panic!("batch doc{doc}@{version}: {other:?}"),
                }
            }
            writes.fetch_add(1, Ordering::Relaxed);
        } else {
            let doc = STABLE + doc % (DOCUMENTS - STABLE);
            let version = issued.next(doc, true);
            let outcome = store
                .delete(SOURCE, &doc_id(doc), Version::number(version))
                .unwrap_or_else(|e| panic!("delete doc{doc}@{version}: {e}"));
            check_outcome(doc, version, &outcome);
            writes.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// What one reader saw.
#[derive(Debug, Default)]
struct ReaderTally {
    passes: u64,
    /// Times a document had another version than in this reader's previous pass.
    changes_seen: u64,
    slowest_pass: Duration,
}

/// One document as one snapshot shows it: consistent with itself (I3, I4).
fn check_document(doc: usize, stored: &StoredDocument) -> Result<(), String> {
    let version = stored.version.value;
    let name = format!("doc{doc}@{version}");
    if stored.deleted {
        if doc < STABLE {
            return Err(format!("{name}: a document never deleted is a tombstone"));
        }
        if !stored.chunks.is_empty() {
            return Err(format!(
                "{name}: a tombstone with {} chunks",
                stored.chunks.len()
            ));
        }
        return Ok(());
    }
    let expected = chunk_count(doc, version);
    if stored.chunks.len() != expected {
        return Err(format!(
            "{name}: {} chunks, the revision has {expected}: {:?}",
            stored.chunks.len(),
            stored.chunks.iter().map(|c| &c.text).collect::<Vec<_>>()
        ));
    }
    for (position, chunk) in stored.chunks.iter().enumerate() {
        if chunk.position as usize != position {
            return Err(format!(
                "{name}: chunk {position} says position {}",
                chunk.position
            ));
        }
        let text = chunk_text(doc, version, position);
        if chunk.text != text {
            return Err(format!(
                "{name}: mixed revisions: chunk {position} is {:?}, expected {text:?}",
                chunk.text
            ));
        }
        if chunk.generation != stored.generation || chunk.generation == 0 {
            return Err(format!(
                "{name}: chunk {position} has generation {}, the document {}",
                chunk.generation, stored.generation
            ));
        }
    }
    Ok(())
}

/// One pass over one snapshot. `last[doc]`: the version this reader last saw.
fn read_pass(
    snapshot: &Snapshot,
    by_stream: bool,
    last: &mut [Option<u64>],
    tally: &mut ReaderTally,
) -> Result<(), String> {
    let mut seen: Vec<Option<StoredDocument>> = vec![None; DOCUMENTS];
    if by_stream {
        for stored in snapshot
            .documents(false)
            .map_err(|e| format!("documents: {e}"))?
        {
            let stored = stored.map_err(|e| format!("documents: {e}"))?;
            let doc = (0..DOCUMENTS)
                .find(|&d| stored.source == SOURCE && stored.id == doc_id(d))
                .ok_or_else(|| format!("an unknown document {}/{}", stored.source, stored.id))?;
            let again = snapshot
                .get(SOURCE, &stored.id)
                .map_err(|e| format!("get: {e}"))?;
            if again.as_ref() != Some(&stored) {
                return Err(format!(
                    "one snapshot, two answers for doc{doc}: {stored:?} vs {again:?}"
                ));
            }
            seen[doc] = Some(stored);
        }
    } else {
        for (doc, slot) in seen.iter_mut().enumerate() {
            *slot = snapshot
                .get(SOURCE, &doc_id(doc))
                .map_err(|e| format!("get: {e}"))?;
        }
    }
    for (doc, stored) in seen.iter().enumerate() {
        match (stored, last[doc]) {
            (None, None) if doc < STABLE => {
                return Err(format!(
                    "doc{doc}, written before the readers started, is absent"
                ))
            }
            (None, None) => {}
            (None, Some(previous)) => {
                return Err(format!(
                    "doc{doc} was seen at version {previous} and is now absent"
                ))
            }
            (Some(stored), previous) => {
                check_document(doc, stored)?;
                let version = stored.version.value;
                if let Some(previous) = previous {
                    if version < previous {
                        return Err(format!("doc{doc} went back from {previous} to {version}"));
                    }
                    if version != previous {
                        tally.changes_seen += 1;
                    }
                }
                last[doc] = Some(version);
            }
        }
    }
    Ok(())
}

fn reader(store: &Store, stop: &AtomicBool) -> Result<ReaderTally, String> {
    let mut tally = ReaderTally::default();
    let mut last: Vec<Option<u64>> = vec![None; DOCUMENTS];
    // A hard cap, so that a writer that died cannot leave the readers running forever.
    let cap = Instant::now() + WRITE_FOR * 10;
    while !stop.load(Ordering::Acquire) && Instant::now() < cap {
        let started = Instant::now();
        let snapshot = store.snapshot().map_err(|e| format!("snapshot: {e}"))?;
        read_pass(&snapshot, tally.passes % 2 == 1, &mut last, &mut tally)?;
        drop(snapshot);
        let took = started.elapsed();
        tally.slowest_pass = tally.slowest_pass.max(took);
        if took > MAX_READ_PASS {
            return Err(format!("a read pass took {took:?}: the reader waited"));
        }
        tally.passes += 1;
    }
    Ok(tally)
}

#[test]
fn readers_never_see_mixed_revisions() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let store = Store::open(
        dir.path().join("index.redb"),
        Options::default().durability(Durability::None),
    )
    .unwrap_or_else(|e| panic!("open: {e}"));
    // Every stable document exists before the readers start.
    let issued = Issued {
        highest: Mutex::new(vec![(0, false); DOCUMENTS]),
    };
    for doc in 0..STABLE {
        let version = issued.next(doc, false);
        store
            .upsert(revision(doc, version))
            .unwrap_or_else(|e| panic!("seed doc{doc}: {e}"));
    }

    let stop = AtomicBool::new(false);
    let writes = AtomicU64::new(0);
    let (writer_results, reader_results) = std::thread::scope(|scope| {
        let readers: Vec<_> = (0..READERS)
            .map(|_| scope.spawn(|| reader(&store, &stop)))
            .collect();
        let writers: Vec<_> = (0..WRITERS)
            .map(|seed| {
                let (store, issued, writes) = (&store, &issued, &writes);
                scope.spawn(move || writer(store, issued, seed + 1, writes))
            })
            .collect();
        let writer_results: Vec<_> = writers.into_iter().map(|w| w.join()).collect();
        stop.store(true, Ordering::Release);
        let reader_results: Vec<_> = readers.into_iter().map(|r| r.join()).collect();
        (writer_results, reader_results)
    });
    for result in writer_results {
        if let Err(panic) = result {
            std::panic::resume_unwind(panic);
        }
    }
    let mut changes_seen = 0;
    for (index, result) in reader_results.into_iter().enumerate() {
        let tally = match result {
            Ok(Ok(tally)) => tally,
            Ok(Err(violation)) => panic!("reader {index}: {violation}"),
            Err(panic) => std::panic::resume_unwind(panic),
        };
        eprintln!("reader {index}: {tally:?}");
        assert!(
            tally.passes >= 10,
            "reader {index} made only {} passes",
            tally.passes
        );
        changes_seen += tally.changes_seen;
    }
    let writes = writes.load(Ordering::Relaxed);
    eprintln!("writes: {writes}, rewrites seen by readers: {changes_seen}");
    assert!(writes >= 50, "only {writes} writes in {WRITE_FOR:?}");
    assert!(
        changes_seen >= 10,
        "the readers saw only {changes_seen} rewrites: they did not run alongside the writers"
    );

    let report = store.verify().unwrap_or_else(|e| panic!("verify: {e}"));
    assert!(report.is_ok(), "verify: {:#?}", report.violations);
    // Every document ends in the state its highest-versioned write defines (I2).
    let highest = issued.highest.lock().unwrap_or_else(|e| e.into_inner());
    for (doc, &(version, deleted)) in highest.iter().enumerate() {
        if version == 0 {
            continue;
        }
        let stored = store
            .get(SOURCE, &doc_id(doc))
            .unwrap_or_else(|e| panic!("get: {e}"))
            .unwrap_or_else(|| panic!("doc{doc} is missing"));
        assert_eq!(stored.version, Version::number(version), "doc{doc}");
        assert_eq!(stored.deleted, deleted, "doc{doc} deleted");
        check_document(doc, &stored).unwrap_or_else(|e| panic!("final: {e}"));
    }
}
