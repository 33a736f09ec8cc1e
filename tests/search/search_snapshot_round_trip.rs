//! The persisted graph snapshot (rows of the `index_snapshot` table, inside the store's
//! one file): searches give identical results before a close and after the reopen that
//! loads it; a snapshot older than the last writes is reconciled with them; and a torn or
//! damaged snapshot (simulated by rewriting its rows with raw redb while the store is
//! closed: a truncated part, a missing part, garbage, an extra part) is detected and
//! ignored — searches stay correct (exact while the index loads), `verify()` is clean — and
//! the graph is rebuilt and written again, so the next open loads a good snapshot.
//!
//! The store is kept below the size where it would build a graph by itself when it has no
//! snapshot, so a graph after a clean reopen can only have come from the snapshot.

use crate::search_support;

use ratchetdb::{Chunk, Document, SearchOptions, Store, Version};
use search_support::{
    assert_verified, exact_top_k, ingest_one_chunk_docs, open, rewrite_snapshot, settle,
    snapshot_parts, Structured,
};

const DIM: usize = 64;
const N: usize = 2000;

/// What a search returned, compared bit for bit.
type Results = Vec<Vec<(String, u32, String, u32)>>;

fn results(store: &Store, queries: &[Vec<f32>], options: &SearchOptions) -> Results {
    queries
        .iter()
        .map(|q| {
            store
                .search(q, 10, options)
                .expect("search")
                .into_iter()
                .map(|h| (h.id, h.position, h.text, h.score.to_bits()))
                .collect()
        })
        .collect()
}

#[test]
fn results_are_identical_after_reopening_with_the_persisted_graph() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = Structured::new(51, DIM);
    let vectors = data.vectors(52, N);
    let queries = data.vectors(53, 40);
    let ann = SearchOptions::default().ef(64);
    let exact = SearchOptions::default().exact(true);
    let (before_ann, before_exact) = {
        let store = open(dir.path());
        ingest_one_chunk_docs(&store, "s", &vectors);
        store.build_index().expect("build");
        assert!(store.index_info().graph_ready);
        (
            results(&store, &queries, &ann),
            results(&store, &queries, &exact),
        )
    };
    assert!(!snapshot_parts(&dir.path().join("search.redb")).is_empty());

    let store = open(dir.path());
    settle(&store);
    assert!(
        store.index_info().graph_ready,
        "the persisted graph was not loaded: {:?}",
        store.index_info()
    );
    assert_eq!(results(&store, &queries, &ann), before_ann);
    assert_eq!(results(&store, &queries, &exact), before_exact);
    assert_verified(&store, "after reopening");
}

#[test]
fn a_snapshot_older_than_the_last_writes_is_reconciled_with_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = Structured::new(54, DIM);
    let mut vectors = data.vectors(55, N);
    let queries = data.vectors(56, 20);
    {
        let store = open(dir.path());
        ingest_one_chunk_docs(&store, "s", &vectors);
        store.build_index().expect("build");
        // After the snapshot: rewrite a tenth of the documents, delete a few.
        let fresh = data.vectors(57, N / 10);
        for (j, v) in fresh.into_iter().enumerate() {
            let i = j * 10;
            store
                .upsert(
                    Document::new("s", format!("v{i}"), Version::number(2))
                        .with_chunk(Chunk::new(format!("chunk {i} v2"), v.clone())),
                )
                .expect("upsert");
            vectors[i] = v;
        }
        for i in (5..N).step_by(100) {
            store
                .delete("s", &format!("v{i}"), Version::number(3))
                .expect("delete");
        }
    }
    let store = open(dir.path());
    settle(&store);
    let info = store.index_info();
    assert!(info.graph_ready, "{info:?}");
    // The snapshot's points for the replaced and deleted vectors are dead.
    assert!(info.dead_fraction > 0.05, "{info:?}");
    assert_verified(&store, "after reopening on an older snapshot");
    let live: Vec<Vec<f32>> = vectors
        .iter()
        .enumerate()
        .map(|(i, v)| {
            if i % 100 == 5 {
                // Deleted: far from every query.
                v.iter().map(|x| -x).collect()
            } else {
                v.clone()
            }
        })
        .collect();
    let mut found = 0;
    for q in &queries {
        let truth: Vec<String> = exact_top_k(&live, q, 10)
            .into_iter()
            .map(|i| format!("v{i}"))
            .collect();
        let hits = store
            .search(q, 10, &SearchOptions::default().ef(64))
            .expect("search");
        for hit in &hits {
            let i: usize = hit.id[1..].parse().expect("id");
            assert_ne!(i % 100, 5, "a deleted document was returned");
            let text = if i.is_multiple_of(10) {
                format!("chunk {i} v2")
            } else {
                format!("chunk {i}")
            };
            assert_eq!(hit.text, text);
        }
        found += hits.iter().filter(|h| truth.contains(&h.id)).count();
    }
    let recall = found as f64 / (queries.len() * 10) as f64;
    assert!(recall >= 0.95, "recall@10 {recall}");
}

#[test]
fn a_torn_or_damaged_snapshot_is_ignored_and_written_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("search.redb");
    let data = Structured::new(58, DIM);
    let vectors = data.vectors(59, N);
    let queries = data.vectors(60, 20);
    let exact = SearchOptions::default().exact(true);
    let expected = {
        let store = open(dir.path());
        ingest_one_chunk_docs(&store, "s", &vectors);
        store.build_index().expect("build");
        results(&store, &queries, &exact)
    };
    let good = snapshot_parts(&path);
    assert!(good.len() >= 2, "header and payload parts");

    let mut damaged: Vec<(&str, Vec<Vec<u8>>)> = Vec::new();
    let last = good.len() - 1;
    let mut truncated = good.clone();
    truncated[last].truncate(good[last].len() / 2);
    damaged.push(("the last part cut in half", truncated));
    damaged.push(("the last part missing", good[..last].to_vec()));
    let mut flipped = good.clone();
    let middle = flipped[1].len() / 2;
    for byte in &mut flipped[1][middle..middle + 64] {
        *byte ^= 0xA5;
    }
    damaged.push(("garbage in the payload", flipped));
    let mut header = good.clone();
    header[0] = vec![0x5A; good[0].len()];
    damaged.push(("garbage for the header", header));
    let mut extra = good.clone();
    extra.push(vec![1, 2, 3]);
    damaged.push(("an extra part", extra));
    damaged.push(("only the header", good[..1].to_vec()));

    for (what, parts) in damaged {
        rewrite_snapshot(&path, &parts);
        let store = open(dir.path());
        // Immediately (while the index loads): exact, correct.
        assert_eq!(results(&store, &queries, &exact), expected, "{what}");
        // The damaged snapshot is detected, ignored, and the graph rebuilt and written again.
        settle(&store);
        let info = store.index_info();
        assert!(info.loaded && info.graph_ready, "{what}: {info:?}");
        assert_eq!(results(&store, &queries, &exact), expected, "{what}");
        let ann = results(&store, &queries, &SearchOptions::default().ef(64));
        let found: usize = ann
            .iter()
            .zip(&expected)
            .map(|(got, want)| got.iter().filter(|hit| want.contains(hit)).count())
            .sum();
        let recall = found as f64 / (queries.len() * 10) as f64;
        assert!(
            recall >= 0.95,
            "{what}: recall@10 {recall} with the rebuilt graph"
        );
        assert_verified(&store, what);
        drop(store);
        let rewritten = snapshot_parts(&path);
        assert_ne!(
            rewritten, parts,
            "{what}: the damaged snapshot was not replaced"
        );
        // The next open loads the rewritten snapshot.
        let store = open(dir.path());
        settle(&store);
        assert!(
            store.index_info().graph_ready,
            "{what}: rewritten snapshot not loaded"
        );
        assert_eq!(results(&store, &queries, &exact), expected, "{what}");
        drop(store);
    }

    // An explicit build writes a good snapshot too, which the next open loads.
    {
        let store = open(dir.path());
        settle(&store);
        store.build_index().expect("build");
    }
    let store = open(dir.path());
    settle(&store);
    assert!(store.index_info().graph_ready);
    assert_eq!(results(&store, &queries, &exact), expected);
    assert_verified(&store, "after rebuilding");
}
