//! A ratchetdb file whose `meta` rows are damaged or missing (schema version of the wrong
//! length or absent, an unknown metric, a dimension of the wrong length) is refused with
//! `OpenError::Corrupted` naming the row and what is wrong with it, never a panic, and its
//! meta rows are left as they were (no repair is attempted).

use crate::support;

use ratchetdb::testkit::{harness_doc, harness_options};
use ratchetdb::{OpenError, Store};
use redb::TableDefinition;
use support::no_panic;

const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");

fn meta_rows(path: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    use redb::{ReadableDatabase, ReadableTable};
    let db = redb::Database::open(path).expect("open with redb");
    let txn = db.begin_read().expect("read");
    let meta = txn.open_table(META).expect("meta");
    meta.iter()
        .expect("iter")
        .map(|e| {
            let (k, v) = e.expect("row");
            (k.value().to_string(), v.value().to_vec())
        })
        .collect()
}

#[test]
fn damaged_meta_rows_are_named() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cases: [(&str, Option<&[u8]>, &str); 5] = [
        (
            "schema_version",
            Some(&[1, 0, 0]),
            "schema version: 3 bytes, expected 8",
        ),
        ("schema_version", None, "schema version: missing"),
        ("metric", Some(b"manhattan"), "unknown metric \"manhattan\""),
        ("metric", None, "metric: missing"),
        ("dimension", Some(&[4, 0]), "dimension: 2 bytes, expected 8"),
    ];
    for (i, (key, value, expected)) in cases.into_iter().enumerate() {
        let path = dir.path().join(format!("meta-{i}.redb"));
        {
            let store = Store::open(&path, harness_options()).expect("create");
            store
                .upsert(harness_doc("wiki", "a", 1, 2, 1))
                .expect("write");
        }
        {
            let db = redb::Database::open(&path).expect("open with redb");
            let txn = db.begin_write().expect("write");
            {
                let mut meta = txn.open_table(META).expect("meta");
                match value {
                    Some(v) => drop(meta.insert(key, v).expect("insert")),
                    None => drop(meta.remove(key).expect("remove")),
                }
            }
            txn.commit().expect("commit");
        }
        let before = meta_rows(&path);
        let opened = no_panic(key, || Store::open(&path, ratchetdb::Options::default()));
        match opened {
            Err(e @ OpenError::Corrupted { .. }) => {
                assert!(e.to_string().contains(expected), "{key}: {e}");
            }
            other => panic!("{key} = {value:?}: expected Corrupted, got {other:?}"),
        }
        assert_eq!(meta_rows(&path), before, "{key}: the meta rows changed");
    }
}
