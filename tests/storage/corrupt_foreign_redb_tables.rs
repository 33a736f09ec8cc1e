//! Opening a redb database that is not a ratchetdb store: one with someone else's tables, and
//! one with a `meta` table but no ratchetdb format marker. Each is refused with
//! `OpenError::NotAStore` naming what was found, never a panic, and nothing is added to the
//! file (no ratchetdb table is created in someone else's database).
//!
//! By design, a redb database with no tables at all is adopted as a new, empty store.

use crate::support;

use ratchetdb::testkit::harness_options;
use ratchetdb::{OpenError, Store};
use redb::{ReadableDatabase, TableDefinition, TableHandle};
use support::no_panic;

const USERS: TableDefinition<&str, u64> = TableDefinition::new("users");
const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");

fn tables(path: &std::path::Path) -> Vec<String> {
    let db = redb::Database::open(path).expect("reopen with redb");
    let txn = db.begin_read().expect("read");
    txn.list_tables()
        .expect("tables")
        .map(|t| t.name().to_string())
        .collect()
}

#[test]
fn someone_elses_redb_file_is_not_a_store() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("users.redb");
    {
        let db = redb::Database::create(&path).expect("create");
        let txn = db.begin_write().expect("write");
        txn.open_table(USERS)
            .expect("table")
            .insert("alice", 1)
            .expect("insert");
        txn.commit().expect("commit");
    }
    let opened = no_panic("open", || Store::open(&path, harness_options()));
    match opened {
        Err(e @ OpenError::NotAStore { .. }) => {
            let message = e.to_string();
            assert!(
                message.contains("users"),
                "the error names the tables: {message}"
            );
        }
        other => panic!("expected NotAStore, got {other:?}"),
    }
    assert_eq!(
        tables(&path),
        vec!["users".to_string()],
        "nothing was added"
    );
}

#[test]
fn a_meta_table_without_the_format_marker_is_not_a_store() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("meta.redb");
    {
        let db = redb::Database::create(&path).expect("create");
        let txn = db.begin_write().expect("write");
        txn.open_table(META)
            .expect("table")
            .insert("format", b"somethingelse".as_slice())
            .expect("insert");
        txn.commit().expect("commit");
    }
    let opened = no_panic("open", || Store::open(&path, harness_options()));
    match opened {
        Err(e @ OpenError::NotAStore { .. }) => {
            assert!(e.to_string().contains("format marker"), "{e}");
        }
        other => panic!("expected NotAStore, got {other:?}"),
    }
    assert_eq!(tables(&path), vec!["meta".to_string()], "nothing was added");
}

#[test]
fn an_empty_redb_database_is_adopted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("empty.redb");
    drop(redb::Database::create(&path).expect("create"));
    let store = Store::open(&path, harness_options()).expect("an empty redb file is adopted");
    assert!(store.verify().expect("verify").is_ok());
}
