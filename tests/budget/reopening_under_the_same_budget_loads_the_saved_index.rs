//! A store reopened under the budget it was built under loads its budgeted index from the
//! file (codes, links, ids, saved whole after the build and again as the store closed)
//! instead of building it from the vectors rows, and answers as the built one did: recall
//! against exact search holds, and vectors written after the save (caught up from the
//! changelog, or saved on close) are found.

use crate::search_support::{assert_verified, ingest_one_chunk_docs, settle, Structured};
use crate::{open_budgeted, recall_at_10, BUDGET, DIM, N};
use ratchetdb::SearchOptions;

#[test]
fn a_reopen_under_the_same_budget_loads_the_saved_index() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = Structured::new(81, DIM);
    let vectors = data.vectors(82, N + 200);
    let queries = data.vectors(83, 50);
    let built = {
        let store = open_budgeted(dir.path(), BUDGET);
        ingest_one_chunk_docs(&store, "s", &vectors[..N]);
        store.build_index().expect("build and save");
        settle(&store);
        let info = store.index_info();
        assert!(!info.loaded_from_file, "{info:?}");
        assert_eq!(
            info.persisted_points, N as u64,
            "saved after the build: {info:?}"
        );
        recall_at_10(&store, &vectors[..N], &queries)
    };
    {
        let store = open_budgeted(dir.path(), BUDGET);
        settle(&store);
        let info = store.index_info();
        assert!(info.loaded_from_file, "not rebuilt: {info:?}");
        assert_eq!(info.live_vectors, N as u64, "{info:?}");
        let recall = recall_at_10(&store, &vectors[..N], &queries);
        assert!(
            recall >= 0.95 && recall >= built - 0.02,
            "recall {recall:.4} after the reopen, {built:.4} as built"
        );
        assert_verified(&store, "after loading the saved index");
        // Written after the load: saved as the store closes.
        ingest_one_chunk_docs(&store, "t", &vectors[N..]);
        settle(&store);
    }
    let store = open_budgeted(dir.path(), BUDGET);
    settle(&store);
    let info = store.index_info();
    assert!(info.loaded_from_file, "not rebuilt: {info:?}");
    assert_eq!(info.live_vectors, N as u64 + 200, "{info:?}");
    for (i, vector) in vectors[N..].iter().enumerate().step_by(20) {
        let hits = store
            .search(vector, 1, &SearchOptions::default())
            .expect("search");
        let top = hits.first().map(|h| (h.source.as_str(), h.id.clone()));
        assert_eq!(top, Some(("t", format!("v{i}"))), "vector {i} written last");
    }
    assert_verified(&store, "after the second reopen");
}
