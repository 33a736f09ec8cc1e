//! A store opened in turn with and without a memory budget keeps both saved indexes (the
//! full index's graph and the budgeted index, in tables of their own). A budgeted open
//! loads its saved index and catches it up from the changelog when the unbudgeted open
//! wrote a few commits, and rebuilds it from the vectors rows when it wrote more than the
//! changelog keeps (a stale index is never loaded); the unbudgeted open keeps loading its
//! graph. Every open answers with recall against exact search and finds what the other
//! wrote.

use crate::search_support::{assert_verified, ingest_one_chunk_docs, open, settle, Structured};
use crate::{open_budgeted, recall_at_10, BUDGET, DIM, N};
use ratchetdb::{Chunk, Document, Op, SearchOptions, Store, Version};

/// Commits of one document each made by the first unbudgeted open: few, fewer than a
/// closing store keeps of the changelog (16; it trims the rest when the session grew the
/// file), so the budgeted open can catch up whatever the close did.
const FEW: usize = 12;
/// ... and by the second: more than the changelog keeps (1024 commits).
const MANY: usize = 1100;

/// Writes `vectors[from..to]` as documents `late/v{i}` (`i` the vector's index), one commit
/// each.
fn write_late(store: &Store, vectors: &[Vec<f32>], from: usize, to: usize) {
    for (i, vector) in vectors.iter().enumerate().take(to).skip(from) {
        let doc = Document::new("late", format!("v{i}"), Version::number(1))
            .with_chunk(Chunk::new(format!("late {i}"), vector.clone()));
        for outcome in store.write_batch(vec![Op::Upsert(doc)]).expect("write") {
            outcome.expect("a document");
        }
    }
}

fn check(store: &Store, vectors: &[Vec<f32>], queries: &[Vec<f32>], late: usize, when: &str) {
    let info = store.index_info();
    assert_eq!(info.live_vectors, (N + late) as u64, "{when}: {info:?}");
    let recall = recall_at_10(store, &vectors[..N + late], queries);
    assert!(recall >= 0.95, "{when}: recall {recall:.4}");
    for i in (0..late).step_by(37) {
        let hits = store
            .search(&vectors[N + i], 1, &SearchOptions::default())
            .expect("search");
        let top = hits.first().map(|h| (h.source.as_str(), h.id.clone()));
        let id = format!("v{}", N + i);
        assert_eq!(top, Some(("late", id)), "{when}: late vector {i}");
    }
    assert_verified(store, when);
}

#[test]
fn budgeted_and_unbudgeted_opens_alternate_and_each_keeps_its_index() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = Structured::new(101, DIM);
    let vectors = data.vectors(102, N + FEW + MANY);
    let queries = data.vectors(103, 40);
    {
        let store = open_budgeted(dir.path(), BUDGET);
        ingest_one_chunk_docs(&store, "s", &vectors[..N]);
        store
            .build_index()
            .expect("build and save the budgeted index");
        settle(&store);
    }
    {
        let store = open(dir.path());
        write_late(&store, &vectors, N, N + FEW);
        store.build_index().expect("build and save the full graph");
        settle(&store);
        assert!(!store.index_info().loaded_from_file);
        check(&store, &vectors, &queries, FEW, "first unbudgeted open");
    }
    {
        // Saved before the unbudgeted open's commits, which the changelog still holds.
        let store = open_budgeted(dir.path(), BUDGET);
        settle(&store);
        assert!(
            store.index_info().loaded_from_file,
            "{:?}",
            store.index_info()
        );
        check(&store, &vectors, &queries, FEW, "budgeted open, caught up");
    }
    {
        let store = open(dir.path());
        settle(&store);
        assert!(
            store.index_info().loaded_from_file,
            "the full graph was not kept"
        );
        write_late(&store, &vectors, N + FEW, N + FEW + MANY);
        settle(&store);
        check(
            &store,
            &vectors,
            &queries,
            FEW + MANY,
            "second unbudgeted open",
        );
    }
    {
        // The budgeted index saved misses commits the changelog no longer holds.
        let store = open_budgeted(dir.path(), BUDGET);
        settle(&store);
        assert!(
            !store.index_info().loaded_from_file,
            "a stale index was loaded"
        );
        check(
            &store,
            &vectors,
            &queries,
            FEW + MANY,
            "budgeted open, rebuilt",
        );
    }
    let store = open_budgeted(dir.path(), BUDGET);
    settle(&store);
    assert!(
        store.index_info().loaded_from_file,
        "the rebuilt index was not saved"
    );
    check(&store, &vectors, &queries, FEW + MANY, "last budgeted open");
}
