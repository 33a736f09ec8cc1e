//! Regression (issue 48): a store reopened without a memory budget kept the heap its index
//! load had freed (the snapshot's parsed parts and the reads of them, the vectors' first
//! copies) resident beside the index for as long as it served: glibc keeps freed blocks
//! below its mapping threshold for the threads that freed them. At 100k x 384-d that was
//! 16 MB of 235 MB, and it put the store's resident memory above hnswlib's.
//!
//! The bound, from the index's shape alone: once the reopened index serves, the process's
//! anonymous resident memory may have grown since the open returned by the vectors in `f32`, the graph's
//! layer-0 rows (a count and `2M` neighbours, 4 bytes each), [`PER_POINT`] bytes a point
//! for its ids, membership and upper layers, and [`FIXED`] bytes for everything else (the
//! file's handles, threads). The vectors have too few dimensions for 8-bit
//! codes, so the graph's links weigh as much as the vectors and a kept copy of the
//! snapshot's parts (about the links' size) shows.
//!
//! RSS is a process's, and this binary runs its tests side by side in one process: the
//! reopen runs in a child process of its own (this test's binary again, running only this
//! test, with [`CHILD`] set), which prints the growth for the parent to check.

use crate::search_support::{
    child_dir, child_field, ingest_one_chunk_docs, normalized, open, random_vector, run_child,
    status_bytes, Rng,
};
use ratchetdb::{Options, SearchOptions, Store};
use std::time::Duration;

/// Set in the child process that measures.
const CHILD: &str = "RATCHETDB_TEST_REOPEN_RSS_CHILD";
/// Vectors of the store, and their dimension (below the graph's 8-bit codes' minimum).
const N: usize = 40_000;
const DIM: usize = 16;
/// The graph's `M` (the default `IndexOptions`): layer 0 keeps `2M` neighbours a point.
const M: usize = 16;
/// A point's bytes beside its vector and layer-0 row: its id in the graph's array and in
/// the two id maps (hash tables at most half empty), its level, its upper layers' rows (a
/// sixteenth of the points, `M + 1` words a layer), its lock and liveness bits.
const PER_POINT: usize = 96;
/// Bytes for the rest of the open store.
const FIXED: usize = 3 << 20;

/// Waits for `store`'s index to load and settle (the graph's build is slow on a busy machine).
fn settle(store: &Store) {
    assert!(
        store.wait_for_index(Duration::from_secs(900)),
        "the index did not settle: {:?}",
        store.index_info()
    );
}

/// The process's anonymous resident memory (`RssAnon`: its heap and mappings, not the pages of
/// its executable), in bytes.
fn resident() -> u64 {
    status_bytes("RssAnon:")
}

/// The child: reopens the store at `dir`, waits for its index to settle and searches once;
/// prints how far its anonymous resident memory grew meanwhile.
fn measure(dir: &std::path::Path) {
    let query = normalized(random_vector(&mut Rng::new(7), DIM));
    // The default durability: the file shared with other processes, so the load reads
    // through a handle without a page cache (with the file held exclusively, the load's
    // reads fill the page cache, up to `Options::cache_size`).
    let store = Store::open(dir.join("search.redb"), Options::default()).expect("reopen");
    // From the open's return: what the open itself allocates (12 MB more in a debug build
    // than in a release one) is not the index's. The index loads in the background from
    // the open on, so this can only count less of it, never more.
    let before = resident();
    settle(&store);
    let info = store.index_info();
    assert!(
        info.graph_ready && info.loaded_from_file,
        "the graph must load from the file: {info:?}"
    );
    store
        .search(&query, 10, &SearchOptions::default().ef(64))
        .expect("search");
    // On a line of its own: the harness prints the test's name before it.
    println!(
        "\ngrowth={} points={}",
        resident().saturating_sub(before),
        info.graph_points
    );
}

#[test]
#[cfg(target_os = "linux")]
fn the_reopened_index_holds_little_beyond_its_vectors_and_links() {
    if let Some(dir) = child_dir(CHILD) {
        measure(&dir);
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let mut rng = Rng::new(5);
        let vectors: Vec<Vec<f32>> = (0..N)
            .map(|_| normalized(random_vector(&mut rng, DIM)))
            .collect();
        let store = open(dir.path());
        ingest_one_chunk_docs(&store, "s", &vectors);
        settle(&store);
        // A graph is saved as it grows by half, and not on close: built once more here, the
        // file holds every point, so the child only loads (it absorbs nothing).
        store.build_index().expect("build the index");
        settle(&store);
        assert_eq!(
            store.index_info().persisted_points,
            N as u64,
            "the file must hold the whole graph for the reopen to load it: {:?}",
            store.index_info()
        );
    }
    let name = "an_unbudgeted_reopen_keeps_no_freed_heap_resident::\
                the_reopened_index_holds_little_beyond_its_vectors_and_links";
    let stdout = run_child(name, CHILD, dir.path());
    let field = |name: &str| child_field(&stdout, name);
    let (growth, points) = (field("growth="), field("points="));
    assert_eq!(points, N as u64, "every vector must be in the graph");
    let bound = (N * (DIM * 4 + (2 * M + 1) * 4 + PER_POINT) + FIXED) as u64;
    println!("resident growth across the reopen: {growth} bytes, bound {bound}");
    assert!(
        growth <= bound,
        "the reopened index of {N} x {DIM}-d grew the resident set by {growth} bytes: more \
         than {bound}"
    );
}
