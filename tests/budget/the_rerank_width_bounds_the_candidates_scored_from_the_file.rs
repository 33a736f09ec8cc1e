//! Under a budget a search scores exactly only the head of its candidates, ranked by their
//! codes (`SearchOptions::rerank`; each one scored reads a vectors row from the file). The
//! width reaches the search: scoring only the `k` hits asked for loses recall to the codes'
//! ranking, scoring every candidate loses none, and the default width keeps recall@10 at
//! least 0.95 and within 0.01 of scoring all, for fine codes (`BUDGET`: 192 bytes, a
//! default of 10 per hit) and coarse ones (`COARSE`: 55 bytes, 40 per hit; a unit test in
//! `index::budget` pins both plans). Every hit's score is exact whatever the width. Without
//! a budget the width is unused. A width of 0, or above `Limits::max_k`, is an `InputError`
//! naming `rerank`.

use crate::search_support::{assert_verified, ingest_one_chunk_docs, settle, Structured};
use crate::{open_budgeted, recall_at_10_with, BUDGET, DIM, N};
use ratchetdb::{Options, ReadError, SearchOptions, Store};

const QUERIES: usize = 100;
/// Hits asked for (recall@10).
const K: usize = 10;
/// Wider than either default rerank width at `k` 10 (100 or 400), so that the default
/// scores a part.
const EF: usize = 1000;
/// A budget whose plan for these 5,000 vectors gives 55-byte codes (7 dimensions a byte).
const COARSE: u64 = 2500 << 10;

#[test]
fn the_rerank_width_bounds_the_candidates_scored_from_the_file() {
    let data = Structured::new(81, DIM);
    let vectors = data.vectors(82, N);
    let queries = data.vectors(83, QUERIES);
    let coarse_dir = tempfile::tempdir().expect("tempdir");
    let coarse = indexed(coarse_dir.path(), COARSE, &vectors);
    assert_default_width_keeps_recall(&coarse, &vectors, &queries, "coarse codes");
    drop(coarse);

    let dir = tempfile::tempdir().expect("tempdir");
    let store = indexed(dir.path(), BUDGET, &vectors);
    assert_default_width_keeps_recall(&store, &vectors, &queries, "fine codes");

    for width in [0, ratchetdb::Limits::default().max_k + 1] {
        match store.search(&queries[0], K, &SearchOptions::default().rerank(width)) {
            Err(ReadError::Input(error)) => assert_eq!(error.field, "rerank", "{error}"),
            other => panic!("rerank {width}: expected an InputError, got {other:?}"),
        }
    }
    assert_verified(&store, "after the searches");
    drop(store);

    // Without a budget the index holds the vectors and scores every candidate: the width
    // changes nothing.
    let store = Store::open(dir.path().join("search.redb"), Options::default()).expect("open");
    settle(&store);
    for query in queries.iter().take(20) {
        let hits = |options: &SearchOptions| store.search(query, K, options).expect("search");
        assert_eq!(
            hits(&SearchOptions::default().ef(200)),
            hits(&SearchOptions::default().ef(200).rerank(K))
        );
    }
}

/// A store in `dir` under `budget` holding `vectors` (one-chunk documents), its index built.
fn indexed(dir: &std::path::Path, budget: u64, vectors: &[Vec<f32>]) -> Store {
    let store = open_budgeted(dir, budget);
    ingest_one_chunk_docs(&store, "s", vectors);
    store.build_index().expect("build");
    settle(&store);
    store
}

/// Recall@10 at `EF` scoring `K`, the default width and all the candidates: the width
/// reaches the search, and the default keeps recall at least 0.95 and within 0.01 of all.
fn assert_default_width_keeps_recall(
    store: &Store,
    vectors: &[Vec<f32>],
    queries: &[Vec<f32>],
    what: &str,
) {
    assert!(store.index_info().budgeted_bytes > 0, "{what}");
    let wide = SearchOptions::default().ef(EF);
    let only_k = recall_at_10_with(store, vectors, queries, &wide.clone().rerank(K));
    let default = recall_at_10_with(store, vectors, queries, &wide);
    let all = recall_at_10_with(store, vectors, queries, &wide.clone().rerank(EF));
    println!(
        "{what}: recall@{K} at ef {EF}: rerank {K} {only_k:.4}, default {default:.4}, all {all:.4}"
    );
    assert!(
        only_k < all,
        "{what}: scoring {K} candidates ({only_k:.4}) is no worse than all ({all:.4})"
    );
    assert!(
        default >= 0.95,
        "{what}: default width: recall@{K} {default:.4} < 0.95"
    );
    assert!(
        default + 0.01 >= all,
        "{what}: default width {default:.4} against all {all:.4}"
    );
}
