//! Issue 46 (review of today's merges), item 4: on a file store, `Store::adopt_tickets`
//! (what `ratchet ingest` does with an export's `store` line) accepted
//! `tickets_issued: 18446744073709551615`, after which every `ticket()` failed. A value above
//! 2^63 - 1 (the largest PostgreSQL keeps) is now an `InputError` naming `tickets_issued`,
//! and the store is unchanged: tickets are issued as before.

use crate::common;

use ratchetdb::{InputError, Version, WriteError};

#[test]
fn tickets_above_2_63_are_refused_by_field_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = common::open(dir.path());
    store.adopt_tickets(5).unwrap();
    let before = store.tickets_issued().unwrap();

    for value in [1u64 << 63, u64::MAX] {
        match store.adopt_tickets(value) {
            Err(WriteError::Input(InputError { field, .. })) => {
                assert_eq!(field, "tickets_issued")
            }
            other => panic!("adopt_tickets({value}): {other:?}"),
        }
        assert_eq!(store.tickets_issued().unwrap(), before);
    }
    let ticket = store.ticket().unwrap();
    assert_eq!(ticket, Version::ticket(6));
    store
        .upsert(common::document("s", "a", ticket, &["one"]))
        .unwrap();

    // The largest value kept is accepted.
    store.adopt_tickets(i64::MAX as u64).unwrap();
    assert_eq!(store.tickets_issued().unwrap(), i64::MAX as u64);
}
