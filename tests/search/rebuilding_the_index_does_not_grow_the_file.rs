//! Regression: each refresh of the persisted graph wrote the new snapshot in the same
//! transaction that deleted the old one, and redb keeps a transaction's freed pages until
//! it commits, so the file had to hold both snapshots at once. A `build_index` on a
//! GloVe-100k store grew its file from 71 MB to 101 MB (the new pages at the end, the old
//! ones left free). The old snapshot is now deleted and committed first: rebuilding the
//! graph again and again leaves the file the size it was, and the graph still loads whole.

use crate::search_support;

use ratchetdb::SearchOptions;
use search_support::{assert_verified, ingest_one_chunk_docs, open, settle, Structured};

const DIM: usize = 32;
const N: usize = 6000;

fn file_len(path: &std::path::Path) -> u64 {
    std::fs::metadata(path).expect("the store's file").len()
}

#[test]
fn rebuilding_the_index_does_not_grow_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("search.redb");
    let data = Structured::new(71, DIM);
    let vectors = data.vectors(72, N);
    let store = open(dir.path());
    ingest_one_chunk_docs(&store, "docs", &vectors);
    store.build_index().expect("first build");
    settle(&store);
    assert_eq!(store.index_info().persisted_points, N as u64);
    let built = file_len(&path);
    for round in 0..3 {
        store.build_index().expect("rebuild");
        settle(&store);
        let info = store.index_info();
        assert_eq!(info.persisted_points, N as u64, "round {round}: {info:?}");
        let now = file_len(&path);
        assert!(
            now <= built,
            "round {round}: a rebuild grew the file from {built} to {now} bytes"
        );
    }
    assert_verified(&store, "after the rebuilds");
    drop(store);

    // The last snapshot is whole: the reopened store's graph holds every point at once.
    let store = open(dir.path());
    settle(&store);
    let info = store.index_info();
    assert_eq!(info.graph_points, N as u64, "{info:?}");
    assert_eq!(info.persisted_points, N as u64, "{info:?}");
    let hits = store
        .search(&vectors[17], 1, &SearchOptions::default().ef(64))
        .expect("search");
    assert_eq!(hits.first().map(|h| h.id.as_str()), Some("v17"));
    assert_verified(&store, "after reopening");
}
