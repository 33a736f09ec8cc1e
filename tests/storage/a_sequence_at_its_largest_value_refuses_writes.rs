//! Regression: a file whose `counters` table held a sequence at `u64::MAX` (the next
//! generation, the commit sequence, the skip log's next number, the tickets' high-water
//! mark) overflowed it on the next write that moved it on: a panic in a debug build (the
//! ticket's outside any containment), and in a release build a wrapped sequence, so
//! generations, commits or tickets that went backwards. Only damage puts a sequence there
//! (2^64 commits are not made in any store's life), so each such write is now refused with
//! `WriteError::Corrupted` naming the counter, nothing is written, the documents stay
//! readable, and writes that do not move that sequence still succeed.

use crate::support;

use ratchetdb::testkit::{harness_doc, harness_options};
use ratchetdb::{Store, Version, WriteError};
use redb::TableDefinition;
use std::path::Path;
use support::no_panic;

const COUNTERS: TableDefinition<&str, u64> = TableDefinition::new("counters");

fn set_counter(path: &Path, key: &str, value: u64) {
    let db = redb::Database::open(path).expect("open with redb");
    let txn = db.begin_write().expect("write");
    txn.open_table(COUNTERS)
        .expect("counters")
        .insert(key, value)
        .expect("insert");
    txn.commit().expect("commit");
}

/// Everything a reader can see, as text: the documents with their chunks and vectors.
fn contents(store: &Store) -> String {
    format!("{:?}", store.documents(true).expect("documents"))
}

fn assert_names_the_counter(result: Result<impl std::fmt::Debug, WriteError>, key: &str) {
    match result {
        Err(WriteError::Corrupted { what, detail }) => {
            assert_eq!(what, "counters");
            assert!(detail.contains(key), "{key}: {detail}");
        }
        other => panic!("{key}: expected Corrupted naming the counter, got {other:?}"),
    }
}

#[test]
fn a_sequence_at_u64_max_refuses_the_write_that_would_move_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    for key in ["seq.next_generation", "seq.commit", "seq.next_skip"] {
        let path = dir.path().join(format!("{key}.redb"));
        {
            let store = Store::open(&path, harness_options()).expect("create");
            store
                .upsert(harness_doc("wiki", "a", 5, 2, 1))
                .expect("write");
        }
        set_counter(&path, key, u64::MAX);
        let store = Store::open(&path, harness_options()).expect("reopen");
        let before = contents(&store);
        let result = no_panic(key, || {
            if key == "seq.next_skip" {
                // Only a refusal numbers a skip-log entry.
                store.upsert(harness_doc("wiki", "a", 1, 2, 2))
            } else {
                store.upsert(harness_doc("wiki", "b", 1, 2, 2))
            }
        });
        assert_names_the_counter(result, key);
        assert_eq!(
            contents(&store),
            before,
            "{key}: the refused write changed the store"
        );
        if key == "seq.next_skip" {
            // A write that is accepted moves the other sequences only.
            store
                .upsert(harness_doc("wiki", "b", 1, 2, 2))
                .expect("an accepted write");
            assert!(store.get("wiki", "b").expect("get").is_some());
        }
        assert!(store.get("wiki", "a").expect("get").is_some(), "{key}");
    }
}

#[test]
fn a_ticket_high_water_mark_at_u64_max_refuses_new_tickets() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("tickets.redb");
    drop(Store::open(&path, harness_options()).expect("create"));
    for high_water in [u64::MAX, u64::MAX - 1] {
        set_counter(&path, "seq.ticket_high_water", high_water);
        let store = Store::open(&path, harness_options()).expect("reopen");
        if high_water < u64::MAX {
            // One ticket is left above the mark: it is issued, and is the largest.
            let last = no_panic("the last ticket", || store.ticket()).expect("the last ticket");
            assert_eq!(last, Version::ticket(u64::MAX));
        }
        let result = no_panic("ticket", || store.ticket());
        assert_names_the_counter(result, "seq.ticket_high_water");
        // The refusal poisoned nothing: an ordinary write still commits.
        store
            .upsert(harness_doc("wiki", &format!("t{high_water}"), 1, 1, 1))
            .expect("a write after the refused ticket");
    }
}
