//! Recall@10 of a budgeted store at the default search width, against the exact scan, on
//! structured 384-d vectors: at least 0.95, and every hit's score is the exact one (the
//! candidates are scored again on the vectors in the file).

use crate::search_support::{assert_verified, ingest_one_chunk_docs, settle, Structured};
use crate::{open_budgeted, recall_at_10, BUDGET, DIM, N};

const QUERIES: usize = 100;
const K: usize = 10;

#[test]
fn recall_at_10_under_a_budget_is_at_least_0_95_with_exact_scores() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = Structured::new(51, DIM);
    let vectors = data.vectors(52, N);
    let queries = data.vectors(53, QUERIES);
    let store = open_budgeted(dir.path(), BUDGET);
    ingest_one_chunk_docs(&store, "s", &vectors);
    store.build_index().expect("build");
    settle(&store);
    let info = store.index_info();
    assert!(info.graph_ready && info.budgeted_bytes > 0, "{info:?}");
    assert_eq!(info.live_vectors, N as u64);

    let recall = recall_at_10(&store, &vectors, &queries);
    println!("recall@{K} at a budget of {BUDGET} bytes, {N} x {DIM}: {recall:.4}");
    assert!(recall >= 0.95, "recall@{K} = {recall:.4} < 0.95");
    assert_verified(&store, "after the searches");
}
