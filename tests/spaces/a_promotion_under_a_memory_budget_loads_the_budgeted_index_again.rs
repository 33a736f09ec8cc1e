//! A promotion on a store under `Options::memory_budget` (issue 46): the budgeted index of
//! the old vectors (compact codes of the old model's dimension) is not caught up but loaded
//! again from the new vectors; searches find every live chunk by its new vector meanwhile
//! and after, and so after a reopen under the same budget.

use super::{every_chunk_found_by_its_wide_vector, live_texts, moved_to_wide_with};
use ratchetdb::{Options, SearchOptions, Store};
use std::time::Duration;

const BUDGET: u64 = 64 << 20;

#[test]
fn a_promotion_under_a_memory_budget_loads_the_budgeted_index_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = moved_to_wide_with(dir.path(), 40, Options::default().memory_budget(BUDGET));
    assert!(store.wait_for_index(Duration::from_secs(60)));
    let chunks = live_texts(&store).len() as u64;
    assert_eq!(store.drop_space("default").expect("promote"), chunks);
    every_chunk_found_by_its_wide_vector(&store, &SearchOptions::default());
    assert!(store.wait_for_index(Duration::from_secs(60)));
    let info = store.index_info();
    assert_eq!(info.live_vectors, chunks);
    assert!(info.budgeted_bytes > 0, "{info:?}");
    every_chunk_found_by_its_wide_vector(&store, &SearchOptions::default());
    let report = store.verify().expect("verify");
    assert!(report.is_ok(), "{:#?}", report.violations);
    drop(store);
    let store = Store::open(
        dir.path().join("db.redb"),
        Options::default().memory_budget(BUDGET),
    )
    .expect("reopen");
    assert!(store.wait_for_index(Duration::from_secs(60)));
    every_chunk_found_by_its_wide_vector(&store, &SearchOptions::default());
}
