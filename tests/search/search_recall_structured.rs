//! Recall@10 of the HNSW graph at the default search width, against the exact scan, on
//! structured 384-d vectors (low-rank clusters plus noise; see `search_support::Structured`)
//! — not uniform random vectors, on which every index looks alike and recall says nothing.
//! Must be at least 0.95.
//!
//! Real embeddings (GloVe) are not available offline here, so only the synthetic set is
//! measured; `benches/search.rs` measures the same generator at 100k vectors.
//!
//! The store is far below the size where search uses the graph by default, so
//! `build_index()` forces a graph and `ef(64)` (the default width, `DEFAULT_EF_SEARCH`)
//! forces the graph path.

use crate::search_support;

use ratchetdb::SearchOptions;
use search_support::{
    assert_verified, doc_index, dot, exact_top_k, ingest_one_chunk_docs, open, Structured,
};

const DIM: usize = 384;
const N: usize = 6000;
const QUERIES: usize = 100;
const K: usize = 10;
/// `DEFAULT_EF_SEARCH` in `src/index/mod.rs`.
const DEFAULT_EF: usize = 64;

#[test]
fn recall_at_10_of_the_graph_is_at_least_0_95_on_structured_vectors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = Structured::new(41, DIM);
    let vectors = data.vectors(42, N);
    // Queries from the same distribution, not in the store.
    let queries = data.vectors(43, QUERIES);
    let store = open(dir.path());
    ingest_one_chunk_docs(&store, "s", &vectors);
    store.build_index().expect("build");
    assert!(store.index_info().graph_ready);

    let mut found = 0usize;
    for query in &queries {
        let truth = exact_top_k(&vectors, query, K);
        // The store's exact scan is the ground truth: check it first (by score: two
        // vectors within rounding of each other may come in either order).
        let exact = store
            .search(query, K, &SearchOptions::default().exact(true))
            .expect("exact search");
        for (hit, &i) in exact.iter().zip(&truth) {
            let expected = dot(&vectors[i], query);
            assert!(
                (hit.score - expected).abs() < 1e-5,
                "the exact scan is not the brute-force top {K}"
            );
        }
        let ann = store
            .search(query, K, &SearchOptions::default().ef(DEFAULT_EF))
            .expect("ann search");
        assert_eq!(ann.len(), K);
        found += ann
            .iter()
            .filter(|hit| truth.contains(&doc_index(hit)))
            .count();
    }
    let recall = found as f64 / (QUERIES * K) as f64;
    println!("recall@{K} at ef {DEFAULT_EF}, {N} x {DIM}: {recall:.4}");
    assert!(recall >= 0.95, "recall@{K} = {recall:.4} < 0.95");
    assert_verified(&store, "after the searches");
}
