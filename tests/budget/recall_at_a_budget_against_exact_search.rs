//! Recall@10 of a budgeted store at the default search width, against the exact scan, on
//! structured 384-d vectors: at least 0.95, and every hit's score is the exact one (the
//! candidates are scored again on the vectors in the file).

use crate::search_support::{
    assert_verified, doc_index, dot, exact_top_k, ingest_one_chunk_docs, settle, Structured,
};
use crate::{open_budgeted, BUDGET, DIM, N};
use ratchetdb::SearchOptions;

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

    let mut found = 0usize;
    for query in &queries {
        let truth = exact_top_k(&vectors, query, K);
        let hits = store
            .search(query, K, &SearchOptions::default().ef(64))
            .expect("search");
        assert_eq!(hits.len(), K);
        for hit in &hits {
            let exact = dot(&vectors[doc_index(hit)], query);
            assert!(
                (hit.score - exact).abs() < 1e-5,
                "a hit's score is not exact"
            );
        }
        found += hits
            .iter()
            .filter(|hit| truth.contains(&doc_index(hit)))
            .count();
    }
    let recall = found as f64 / (QUERIES * K) as f64;
    println!("recall@{K} at a budget of {BUDGET} bytes, {N} x {DIM}: {recall:.4}");
    assert!(recall >= 0.95, "recall@{K} = {recall:.4} < 0.95");
    assert_verified(&store, "after the searches");
}
