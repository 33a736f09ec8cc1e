//! Every row of a closed store file, read with redb alone and read-only (a writable open
//! rewrites redb's header and allocator pages even when it commits nothing, so a refused
//! open is checked to have left every row as it was, not every byte).

use redb::{ReadableDatabase, ReadableTable, TableDefinition, TableHandle};
use std::collections::BTreeMap;
use std::path::Path;

/// A table's rows, each key and value as the bytes redb stores.
pub type Rows = Vec<(Vec<u8>, Vec<u8>)>;

/// The names of the file's tables, and the rows of each table a store keeps (by name),
/// with the types every schema since the first gives them.
pub fn every_row(path: &Path) -> (Vec<String>, BTreeMap<&'static str, Rows>) {
    let db = redb::Builder::new()
        .open_read_only(path)
        .expect("open with redb, read-only");
    let txn = db.begin_read().expect("read");
    let mut names: Vec<String> = txn
        .list_tables()
        .expect("tables")
        .map(|table| table.name().to_string())
        .collect();
    names.sort();
    let mut rows = BTreeMap::new();
    let mut read = |name: &'static str, table: Option<Rows>| {
        if let Some(table) = table {
            rows.insert(name, table);
        }
    };
    read("meta", table::<&str, &[u8]>(&txn, "meta"));
    read("counters", table::<&str, u64>(&txn, "counters"));
    read("docs", table::<(&str, &str), &[u8]>(&txn, "docs"));
    read("doc_chunks", table::<u64, &[u8]>(&txn, "doc_chunks"));
    read("doc_vectors", table::<u64, &[u8]>(&txn, "doc_vectors"));
    read("changelog", table::<u64, &[u8]>(&txn, "changelog"));
    read("skip_log", table::<u64, &[u8]>(&txn, "skip_log"));
    read("listings", table::<(&str, u64), &[u8]>(&txn, "listings"));
    read(
        "listing_members",
        table::<(&str, u64, &str), ()>(&txn, "listing_members"),
    );
    read("spaces", table::<&str, &[u8]>(&txn, "spaces"));
    read(
        "space_vectors",
        table::<(u32, u64), &[u8]>(&txn, "space_vectors"),
    );
    read(
        "space_changelog",
        table::<u64, &[u8]>(&txn, "space_changelog"),
    );
    read(
        "index_snapshot",
        table::<u32, &[u8]>(&txn, "index_snapshot"),
    );
    read(
        "budget_snapshot",
        table::<u32, &[u8]>(&txn, "budget_snapshot"),
    );
    read("text_docs", table::<u64, &[u8]>(&txn, "text_docs"));
    (names, rows)
}

/// The rows of table `name` (`None`: the file has no such table).
fn table<K: redb::Key + 'static, V: redb::Value + 'static>(
    txn: &redb::ReadTransaction,
    name: &'static str,
) -> Option<Rows> {
    let table = match txn.open_table(TableDefinition::<K, V>::new(name)) {
        Ok(table) => table,
        Err(redb::TableError::TableDoesNotExist(_)) => return None,
        Err(e) => panic!("open table {name}: {e}"),
    };
    let rows = table
        .iter()
        .expect("iterate")
        .map(|entry| {
            let (key, value) = entry.expect("a row");
            let (key, value) = (key.value(), value.value());
            let row = (
                K::as_bytes(&key).as_ref().to_vec(),
                V::as_bytes(&value).as_ref().to_vec(),
            );
            row
        })
        .collect();
    Some(rows)
}
