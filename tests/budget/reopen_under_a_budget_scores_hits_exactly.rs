//! A store written without a budget and reopened under one: its index loads from the file
//! (codes trained on a sample, every vector streamed in), a search answers at once (the
//! file is scanned exactly while the index loads), and after the load every hit carries the
//! exact score the exact scan gives the same chunk.

use crate::search_support::{assert_verified, ingest_one_chunk_docs, open, settle, Structured};
use crate::{open_budgeted, BUDGET, DIM, N};
use ratchetdb::SearchOptions;

#[test]
fn a_reopened_budgeted_store_answers_with_exact_scores() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = Structured::new(71, DIM);
    let vectors = data.vectors(72, N);
    let queries = data.vectors(73, 20);
    {
        let store = open(dir.path());
        ingest_one_chunk_docs(&store, "s", &vectors);
        store.build_index().expect("build the full graph");
    }
    let store = open_budgeted(dir.path(), BUDGET);
    // Whether or not the index has loaded yet, a search answers.
    assert_eq!(
        store
            .search(&queries[0], 10, &SearchOptions::default())
            .expect("first search")
            .len(),
        10
    );
    settle(&store);
    assert_eq!(store.index_info().live_vectors, N as u64);
    for query in &queries {
        let exact = store
            .search(query, 10, &SearchOptions::default().exact(true))
            .expect("exact");
        let ann = store
            .search(query, 10, &SearchOptions::default())
            .expect("budgeted");
        assert_eq!(ann.len(), 10);
        for hit in &ann {
            if let Some(same) = exact.iter().find(|e| e.id == hit.id) {
                assert_eq!(same.score.to_bits(), hit.score.to_bits(), "{}", hit.id);
            }
        }
        // Ranked by the exact score.
        assert!(ann.windows(2).all(|w| w[0].score >= w[1].score));
    }
    assert_verified(&store, "after reopening under a budget");
}
