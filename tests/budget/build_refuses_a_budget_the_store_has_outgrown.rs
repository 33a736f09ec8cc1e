//! A store opened empty under a budget and then written past what the budget holds:
//! `build_index` refuses with an `InputError` on `memory_budget` naming the smallest budget
//! that works, changes nothing, and searches still answer every live vector.

use crate::open_budgeted;
use crate::search_support::{ingest_one_chunk_docs, settle, Structured};
use ratchetdb::{ReadError, SearchOptions};

const DIM: usize = 64;
const N: usize = 20_000;

#[test]
fn build_index_refuses_a_budget_too_small_for_the_live_vectors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let vectors = Structured::new(101, DIM).vectors(102, N);
    let store = open_budgeted(dir.path(), 2 << 20);
    ingest_one_chunk_docs(&store, "s", &vectors);
    match store.build_index() {
        Err(ReadError::Input(error)) => {
            assert_eq!(error.field, "memory_budget");
            assert!(
                error.problem.contains("smallest budget that works"),
                "{}",
                error.problem
            );
        }
        other => panic!("expected a refusal on memory_budget, got {other:?}"),
    }
    settle(&store);
    assert_eq!(store.stats().expect("stats").documents, N as u64);
    let hits = store
        .search(&vectors[5], 1, &SearchOptions::default().exact(true))
        .expect("search");
    assert_eq!(hits[0].id, "v5");
}
