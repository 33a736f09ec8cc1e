//! Near the smallest budget that works, the plan gives the code its bytes before layer 0
//! gets more than `M` links (at 5000 x 384-d and 2.75 MiB: about 20 links and a code of
//! about 4 dimensions per byte, where `2 M` links would leave the code half the bytes).
//! The budget still holds (the index's own accounting plus the page cache), and recall@10
//! against exact search stays at least 0.95 with every hit's score exact.

use crate::search_support::{assert_verified, ingest_one_chunk_docs, settle, Structured};
use crate::{open_budgeted, recall_at_10, DIM, N};

/// 2.75 MiB: a little above the smallest budget for 5000 x 384-d.
const TIGHT: u64 = 11 << 18;
const QUERIES: usize = 100;
const K: usize = 10;

#[test]
fn a_tight_budget_keeps_recall_and_exact_scores() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = Structured::new(71, DIM);
    let vectors = data.vectors(72, N);
    let queries = data.vectors(73, QUERIES);
    let store = open_budgeted(dir.path(), TIGHT);
    ingest_one_chunk_docs(&store, "s", &vectors);
    store.build_index().expect("build");
    settle(&store);
    let info = store.index_info();
    assert!(info.graph_ready && info.budgeted_bytes > 0, "{info:?}");
    assert_eq!(info.live_vectors, N as u64);
    // The page cache's share is an eighth, at least 1 MiB.
    let cache = (TIGHT / 8).max(1 << 20);
    assert!(
        info.budgeted_bytes + cache <= TIGHT,
        "index {} + cache {cache} > {TIGHT}",
        info.budgeted_bytes
    );
    let recall = recall_at_10(&store, &vectors, &queries);
    println!("recall@{K} at a budget of {TIGHT} bytes, {N} x {DIM}: {recall:.4}");
    assert!(recall >= 0.95, "recall@{K} = {recall:.4} < 0.95");
    assert_verified(&store, "after the searches");
}
