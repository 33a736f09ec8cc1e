//! Regression: `Store::restore_history` turned each counter's target into a delta with
//! `target as i64 - current`: a counter of 2^63 or more wrapped to a negative delta, and
//! the write then failed as if the file were damaged (or, from an empty store, a target of
//! `u64::MAX` became "subtract one"); counters near 2^63 that were restored then overflowed
//! `Counters::skipped()`'s sum in `stats`. A counter above 2^63 - 1 (the largest PostgreSQL
//! keeps) is now an `InputError` naming its field, the store is unchanged, and the sum of
//! refusals saturates instead of overflowing.

use crate::common;

use common::document;
use ratchetdb::{Counters, InputError, Version, WriteError};

#[test]
fn a_counter_above_2_63_is_refused_by_field_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = common::open(dir.path());
    store
        .upsert(document("s", "a", Version::number(1), &["one"]))
        .unwrap();
    let before = store.stats().unwrap().counters;

    for value in [1u64 << 63, u64::MAX] {
        let mut counters = before.clone();
        counters.written_new = value;
        counters.skipped_older = 7;
        match store.restore_history(&counters, &[]) {
            Err(WriteError::Input(InputError { field, .. })) => {
                assert_eq!(field, "counters.written_new")
            }
            other => panic!("{value}: expected an InputError, got {other:?}"),
        }
        assert_eq!(store.stats().unwrap().counters, before, "{value}");
    }
    // The store still writes.
    store
        .upsert(document("s", "b", Version::number(1), &["two"]))
        .unwrap();
}

#[test]
fn the_largest_counters_restore_and_their_sum_saturates() {
    let dir = tempfile::tempdir().unwrap();
    let store = common::open(dir.path());
    store
        .upsert(document("s", "a", Version::number(1), &["one"]))
        .unwrap();
    let largest = (1u64 << 63) - 1;
    let mut counters: Counters = store.stats().unwrap().counters;
    counters.skipped_older = largest;
    counters.skipped_duplicate = largest;
    counters.skipped_conflict = 2;
    store.restore_history(&counters, &[]).expect("restore");
    let restored = store.stats().expect("stats after the restore").counters;
    assert_eq!(restored.skipped_older, largest);
    assert_eq!(restored.skipped_duplicate, largest);
    assert_eq!(restored.skipped(), u64::MAX);
    // Restoring lower values again moves them down by the difference.
    let mut lower = restored.clone();
    lower.skipped_older = 1;
    lower.skipped_duplicate = 0;
    store.restore_history(&lower, &[]).expect("restore lower");
    let again = store.stats().unwrap().counters;
    assert_eq!(
        (
            again.skipped_older,
            again.skipped_duplicate,
            again.skipped()
        ),
        (1, 0, 3)
    );
}
