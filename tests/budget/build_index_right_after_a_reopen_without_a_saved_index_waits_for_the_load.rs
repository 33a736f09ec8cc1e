//! Regression: `Store::build_index()` under a budget, called right after a reopen that found
//! no saved index it could use, started a full load of its own while the one the open had
//! started in the background (from the vectors rows) was still running: two budgeted
//! indexes filled side by side, on every core, about twice the budget. It now waits for
//! the background load, and for the work that follows it (the save), then frees that index
//! before loading its own.
//!
//! From outside: the call returns with one index that serves, built from the rows (not the
//! file) and saved, searches are right, `verify` agrees, and the next open loads what it
//! saved. That two indexes are never held at once is counted by the crate's own test
//! (`indexer::budgeted_build_tests`), which also holds the background load until the call
//! has begun; the count is not reachable from here.

use crate::search_support::{doc_index, settle, Rng, Structured};
use crate::{open_budgeted, write_drawn_documents, BUDGET, BUDGET_SNAPSHOT, N};
use ratchetdb::SearchOptions;

#[test]
fn build_index_right_after_a_reopen_without_a_saved_index_waits_for_the_load() {
    let dir = tempfile::tempdir().expect("tempdir");
    let vectors = Structured::new(111, crate::DIM);
    {
        let store = open_budgeted(dir.path(), BUDGET);
        write_drawn_documents(&store, N, 1000, &vectors, &mut Rng::new(112), |i| {
            format!("chunk {i}")
        });
        store.build_index().expect("build and save");
    }
    // No usable saved index: the reopen loads one from the vectors rows.
    {
        let db = redb::Database::open(dir.path().join("search.redb")).expect("redb open");
        let tx = db.begin_write().expect("write");
        assert!(tx.delete_table(BUDGET_SNAPSHOT).expect("delete"), "saved");
        tx.commit().expect("commit");
    }
    {
        let store = open_budgeted(dir.path(), BUDGET);
        store
            .build_index()
            .expect("build during the load after open");
        let info = store.index_info();
        assert!(info.loaded && !info.loaded_from_file, "{info:?}");
        assert_eq!(info.live_vectors, N as u64, "{info:?}");
        assert!(info.persisted_points > 0, "saved: {info:?}");
        settle(&store);
        let report = store.verify().expect("verify");
        assert!(report.is_ok(), "{:#?}", report.violations);
        // Each of a few stored vectors finds its own document first.
        let mut rng = Rng::new(112);
        let stored: Vec<Vec<f32>> = (0..20).map(|_| vectors.sample(&mut rng)).collect();
        for (i, vector) in stored.iter().enumerate() {
            let hits = store
                .search(vector, 1, &SearchOptions::default())
                .expect("search");
            assert_eq!(hits.first().map(doc_index), Some(i), "vector {i}");
        }
    }
    let store = open_budgeted(dir.path(), BUDGET);
    settle(&store);
    assert!(
        store.index_info().loaded_from_file,
        "the next open loads the index the build saved"
    );
}
