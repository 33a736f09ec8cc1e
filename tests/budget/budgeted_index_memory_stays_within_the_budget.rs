//! The budgeted index's own accounting of its resident bytes (codes, links, ids, the id
//! map, the quantiser, vectors not yet coded) plus the page cache's share stays within the
//! budget after a build and after a reopen, where the same vectors held in `f32` alone
//! would not fit in it.
//!
//! (The process's RSS is measured by `benches/peers/memory_budget.py`, in a process of its
//! own: a test binary runs its tests side by side in one process.)

use crate::search_support::{ingest_one_chunk_docs, settle, Structured};
use crate::{open_budgeted, BUDGET, DIM, N};

#[test]
fn the_index_bytes_and_the_page_cache_fit_the_budget() {
    let dir = tempfile::tempdir().expect("tempdir");
    let vectors = Structured::new(61, DIM).vectors(62, N);
    let raw = (N * DIM * 4) as u64;
    assert!(raw > BUDGET, "the vectors alone must not fit the budget");
    let cache = BUDGET / 8;
    {
        let store = open_budgeted(dir.path(), BUDGET);
        ingest_one_chunk_docs(&store, "s", &vectors);
        store.build_index().expect("build");
        settle(&store);
        let info = store.index_info();
        assert_eq!(info.memory_budget, BUDGET);
        assert!(
            info.budgeted_bytes > 0 && info.budgeted_bytes + cache <= BUDGET,
            "after the build: {} bytes of index + {cache} of cache > {BUDGET}",
            info.budgeted_bytes
        );
    }
    let store = open_budgeted(dir.path(), BUDGET);
    settle(&store);
    let info = store.index_info();
    assert_eq!(info.live_vectors, N as u64);
    assert!(
        info.budgeted_bytes > 0 && info.budgeted_bytes + cache <= BUDGET,
        "after a reopen: {} bytes of index + {cache} of cache > {BUDGET}",
        info.budgeted_bytes
    );
}
