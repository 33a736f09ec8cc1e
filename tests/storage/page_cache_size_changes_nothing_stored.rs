//! `Options::cache_size` sizes redb's page cache and nothing else. The same writes into a
//! store with no cache at all, with one smaller than a single batch, and with the default
//! give the same outcomes, the same documents (vectors included), the same counters and a
//! clean `verify`; and each file reads the same after a reopen with another cache size.
//! That the setting reaches redb at all is checked on a backend that counts reads: with no
//! cache, every read goes to it; with the default, repeated reads of a small store do not.

use crate::common;

use common::{assert_verified, counters, document, export, CountingBackend};
use ratchetdb::{Op, OpOutcome, Options, Store, Version, DEFAULT_CACHE_SIZE};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Chunks of 2 KB, so that one batch writes far more pages than the small caches hold.
fn texts(doc: u64, version: u64, chunks: u64) -> Vec<String> {
    (0..chunks)
        .map(|c| format!("doc {doc} v{version} chunk {c} ").repeat(100))
        .collect()
}

fn upsert(doc: u64, version: u64, chunks: u64) -> Op {
    Op::Upsert(document(
        "src",
        &format!("d{doc}"),
        Version::number(version),
        &texts(doc, version, chunks),
    ))
}

/// New documents, then shrinking and growing revisions, stale revisions, deletes and a write
/// against a tombstone, in batches and one at a time.
fn write_everything(store: &Store) -> Vec<OpOutcome> {
    let mut outcomes = Vec::new();
    for batch in 0..4u64 {
        let ops = (batch * 50..(batch + 1) * 50).map(|d| upsert(d, 1, 1 + d % 7));
        outcomes.extend(accepted(store.write_batch(ops.collect()).unwrap()));
    }
    let revisions = (0..200u64).map(|d| match d % 5 {
        0 => upsert(d, 2, 1),
        1 => upsert(d, 2, 9),
        2 => upsert(d, 0, 3),
        3 => Op::Delete {
            source: "src".into(),
            id: format!("d{d}"),
            version: Version::number(2),
        },
        _ => upsert(d, 1, 1 + d % 7),
    });
    outcomes.extend(accepted(store.write_batch(revisions.collect()).unwrap()));
    for d in (3..200u64).step_by(25) {
        outcomes.push(OpOutcome::Document(store.upsert(doc_op(d, 1)).unwrap()));
    }
    outcomes
}

/// Every operation here is valid input, so each has an outcome.
fn accepted(results: Vec<Result<OpOutcome, ratchetdb::WriteError>>) -> Vec<OpOutcome> {
    results.into_iter().map(|r| r.unwrap()).collect()
}

fn doc_op(doc: u64, version: u64) -> ratchetdb::Document {
    document(
        "src",
        &format!("d{doc}"),
        Version::number(version),
        &texts(doc, version, 2),
    )
}

fn open(path: &Path, cache_size: usize) -> Store {
    Store::open(path, Options::default().dimension(3).cache_size(cache_size)).unwrap()
}

#[test]
fn stores_with_any_cache_size_hold_the_same_documents() {
    let dir = tempfile::tempdir().unwrap();
    let sizes = [0, 16 << 10, DEFAULT_CACHE_SIZE];
    let mut results = Vec::new();
    for (i, &size) in sizes.iter().enumerate() {
        let path = dir.path().join(format!("cache-{i}.redb"));
        let store = open(&path, size);
        let outcomes = write_everything(&store);
        assert_verified(&store);
        let state = export(&store);
        let counted = counters(&store);
        drop(store);

        // Reopened with another cache size, the file reads the same.
        let store = open(&path, sizes[(i + 1) % sizes.len()]);
        assert_eq!(export(&store), state, "cache size {size}, after reopening");
        assert_eq!(counters(&store), counted);
        assert_verified(&store);
        results.push((size, outcomes, state, counted));
    }
    let (_, outcomes, state, counted) = &results[2];
    // The scenario exercises what it claims: shrinks, refusals, deletes and tombstones.
    assert!(counted.written_newer > 0 && counted.chunks_removed > 0);
    assert!(counted.skipped_older > 0 && counted.skipped_tombstoned > 0);
    assert!(state.iter().any(|d| d.deleted));
    for (size, other_outcomes, other_state, other_counted) in &results[..2] {
        assert_eq!(other_outcomes, outcomes, "cache size {size}: outcomes");
        assert_eq!(other_state, state, "cache size {size}: documents");
        assert_eq!(other_counted, counted, "cache size {size}: counters");
    }
}

/// Backend reads while every document of a freshly written store is read three times.
fn reads_while_reading(cache_size: usize) -> (u64, u64) {
    let backend = CountingBackend::default();
    let reads = backend.reads.clone();
    let options = Options::default().dimension(3).cache_size(cache_size);
    let store = Store::open_with_backend(backend, options).unwrap();
    let ops = (0..100u64).map(|d| upsert(d, 1, 2)).collect();
    accepted(store.write_batch(ops).unwrap());
    // Background index passes read the file too: let them finish first.
    assert!(store.wait_for_index(Duration::from_secs(60)));
    let start = reads.load(Ordering::SeqCst);
    let mut gets = 0;
    for _ in 0..3 {
        for d in 0..100u64 {
            assert!(store.get("src", &format!("d{d}")).unwrap().is_some());
            gets += 1;
        }
    }
    (reads.load(Ordering::SeqCst) - start, gets)
}

#[test]
fn the_cache_size_reaches_redb() {
    let (uncached, gets) = reads_while_reading(0);
    let (cached, _) = reads_while_reading(DEFAULT_CACHE_SIZE);
    // Without a cache every get reads at least its document's row from the backend.
    assert!(uncached >= gets, "{uncached} backend reads for {gets} gets");
    // With the default, this store (under 1 MB of chunk text) stays cached once written.
    assert!(
        cached * 10 < uncached,
        "{cached} backend reads with the default cache, {uncached} without"
    );
}
