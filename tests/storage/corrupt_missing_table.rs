//! Regression: a flipped bit in the table tree of a cleanly closed store (seen in
//! `corrupt_flipped_bytes.rs` at byte 41069) made redb report "Table 'counters' does not
//! exist", and `Store::open` passed that on as a generic `Storage` error instead of
//! refusing the file as corrupted. Every store is created with all of its tables, so a
//! missing one (or one of another type) now refuses the open as `OpenError::Corrupted`
//! naming the table, and a second open refuses it the same way (nothing was repaired).

use ratchetdb::{Chunk, Document, OpenError, Options, Store, Version};
use redb::TableDefinition;

const COUNTERS: TableDefinition<&str, u64> = TableDefinition::new("counters");

fn store_without_counters(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("store.redb");
    {
        let store = Store::open(&path, Options::default()).expect("create");
        store
            .upsert(
                Document::new("s", "a", Version::number(1))
                    .with_chunk(Chunk::new("text", vec![1.0, 0.0, 0.0])),
            )
            .expect("upsert");
    }
    let db = redb::Database::open(&path).expect("open with redb");
    let txn = db.begin_write().expect("write");
    assert!(
        txn.delete_table(COUNTERS).expect("delete"),
        "counters existed"
    );
    txn.commit().expect("commit");
    path
}

#[test]
fn a_missing_table_is_refused_as_corrupted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = store_without_counters(dir.path());
    // Twice: the refusal repairs nothing behind the caller's back.
    for attempt in 0..2 {
        match Store::open(&path, Options::default()) {
            Err(OpenError::Corrupted { what, .. }) => {
                assert!(what.contains("counters"), "attempt {attempt}: {what}")
            }
            other => {
                panic!("attempt {attempt}: expected Corrupted naming the table, got {other:?}")
            }
        }
    }
}

#[test]
fn a_table_of_another_type_is_refused_as_corrupted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = store_without_counters(dir.path());
    {
        let db = redb::Database::open(&path).expect("open with redb");
        let txn = db.begin_write().expect("write");
        let wrong: TableDefinition<u64, u64> = TableDefinition::new("counters");
        txn.open_table(wrong).expect("create with other types");
        txn.commit().expect("commit");
    }
    match Store::open(&path, Options::default()) {
        Err(OpenError::Corrupted { .. }) => {}
        other => panic!("expected Corrupted, got {other:?}"),
    }
}
