//! Regression (review, 2026-12-07): a file whose `meta.active_space` names no space (a damaged
//! or hand-edited file) made every search that gave no `space` fail with an `InputError` on
//! `space`, a field the caller never gave, as if the caller could correct it. It is now a
//! `Corrupted` error naming the active space; a search naming a space, and `verify`'s own
//! report, go on.

use super::{moved_to_wide, wide};
use ratchetdb::{ReadError, SearchOptions, Store};
use redb::TableDefinition;

const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");

#[test]
fn a_search_of_the_active_space_when_it_names_no_space_is_corrupted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("db.redb");
    drop(moved_to_wide(dir.path(), 4));
    {
        let db = redb::Database::open(&path).expect("open with redb");
        let txn = db.begin_write().expect("write");
        {
            let mut meta = txn.open_table(META).expect("meta");
            meta.insert("active_space", b"gone".as_slice())
                .expect("insert");
        }
        txn.commit().expect("commit");
    }
    let store = Store::open(&path, ratchetdb::Options::default()).expect("open");
    let query = wide("d0 v1 c0");
    match store.search(&query, 3, &SearchOptions::default()) {
        Err(ReadError::Corrupted { .. }) => {}
        other => panic!("a search of the active space that names no space: {other:?}"),
    }
    // Naming a space is the caller's choice, and works.
    let hits = store
        .search(&query, 3, &SearchOptions::default().space("wide"))
        .expect("a search naming the space");
    assert!(!hits.is_empty());
}
