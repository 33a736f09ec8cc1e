//! Regression: a store opened empty under a budget and filled faster than its index loads
//! outgrew the plan of each reload while it loaded; the loader's catch-up then came back
//! "reload" and was ignored, so the index stayed behind the last commit until the next one
//! (`wait_for_index` waited forever, searches scanned the file). The loader now loads again.

use crate::search_support::{ingest_one_chunk_docs, settle, Structured};
use crate::{open_budgeted, BUDGET, DIM};
use ratchetdb::SearchOptions;

#[test]
fn an_index_outgrown_while_it_loads_loads_again_and_settles() {
    let dir = tempfile::tempdir().expect("tempdir");
    let vectors = Structured::new(111, DIM).vectors(112, 4000);
    let store = open_budgeted(dir.path(), BUDGET);
    ingest_one_chunk_docs(&store, "s", &vectors);
    settle(&store);
    let info = store.index_info();
    assert!(info.loaded && info.graph_ready, "{info:?}");
    assert_eq!(info.live_vectors, 4000);
    let hits = store
        .search(&vectors[9], 1, &SearchOptions::default())
        .expect("search");
    assert_eq!(hits[0].id, "v9");
}
