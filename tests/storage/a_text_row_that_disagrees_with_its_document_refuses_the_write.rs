//! A `text_docs` row that disagrees with its document (damaged bytes, or missing while the
//! document has chunks) makes the next write of that document fail with
//! `WriteError::Corrupted` naming the text index (or its row, when the bytes do not decode), and nothing of that write commits: the
//! document keeps its stored revision and the row stays as it was. Covers each way a
//! revision meets the row: replacing every chunk (the row replaced in one insertion and the
//! old one checked after), keeping a chunk (the row read first), and a tombstone (the row
//! removed whole).

use ratchetdb::{Chunk, Document, Options, Store, Version, WriteError};
use redb::{ReadableDatabase, ReadableTable, TableDefinition};
use std::path::Path;

const TEXT_DOCS: TableDefinition<u64, &[u8]> = TableDefinition::new("text_docs");

fn revision(version: u64, second: &str) -> Document {
    Document::new("notes", "a", Version::number(version))
        .with_chunk(Chunk::new("alpha kept chunk", vec![1.0, 0.5]))
        .with_chunk(Chunk::new(second, vec![0.5, 1.0]))
}

/// Every text row of the file at `path`, by key.
fn text_rows(path: &Path) -> Vec<(u64, Vec<u8>)> {
    let db = redb::Database::open(path).expect("redb");
    let txn = db.begin_read().expect("read");
    let table = txn.open_table(TEXT_DOCS).expect("text_docs");
    let rows = table
        .iter()
        .expect("iter")
        .map(|e| {
            let (k, v) = e.expect("row");
            (k.value(), v.value().to_vec())
        })
        .collect();
    rows
}

/// A store holding revision 1 of `notes/a`, its text row then replaced by `damaged` (or
/// removed, for `None`).
fn damaged_store(path: &Path, damaged: Option<&[u8]>) {
    {
        let store = Store::open(path, Options::default()).expect("create");
        store.upsert(revision(1, "beta first text")).expect("write");
    }
    let keys: Vec<u64> = text_rows(path).into_iter().map(|(k, _)| k).collect();
    assert_eq!(keys.len(), 1, "one document, one text row");
    let db = redb::Database::open(path).expect("redb");
    let txn = db.begin_write().expect("write");
    {
        let mut table = txn.open_table(TEXT_DOCS).expect("text_docs");
        match damaged {
            Some(bytes) => drop(table.insert(keys[0], bytes).expect("insert")),
            None => drop(table.remove(keys[0]).expect("remove")),
        }
    }
    txn.commit().expect("commit");
}

#[test]
fn a_damaged_or_missing_text_row_refuses_the_write_and_changes_nothing() {
    // Bytes no segment decodes from, and a row gone while the document has two chunks.
    for damaged in [Some(&[0xFFu8, 0xFF, 0x07][..]), None] {
        type Write = fn(&Store) -> Result<ratchetdb::Outcome, WriteError>;
        let writes: [(&str, Write); 3] = [
            ("every chunk replaced", |s| {
                s.upsert(
                    Document::new("notes", "a", Version::number(2))
                        .with_chunk(Chunk::new("gamma new", vec![0.25, 1.0]))
                        .with_chunk(Chunk::new("delta new", vec![1.0, 0.25])),
                )
            }),
            ("a chunk kept", |s| {
                s.upsert(revision(2, "epsilon second text"))
            }),
            ("a tombstone", |s| {
                s.delete("notes", "a", Version::number(2))
            }),
        ];
        for (what, write) in writes {
            let dir = tempfile::tempdir().expect("tempdir");
            let path = dir.path().join("store.redb");
            damaged_store(&path, damaged);
            let before = text_rows(&path);
            {
                let store = Store::open(&path, Options::default()).expect("reopen");
                match write(&store) {
                    Err(WriteError::Corrupted {
                        what: structure,
                        detail,
                    }) => {
                        assert!(
                            matches!(structure.as_str(), "text index" | "text row"),
                            "{what}: {structure}: {detail}"
                        )
                    }
                    other => panic!("{what} over {damaged:?}: {other:?}"),
                }
            }
            let store = Store::open(&path, Options::default()).expect("reopen");
            let stored = store.get("notes", "a").expect("get").expect("stored");
            assert_eq!(stored.version, Version::number(1), "{what}");
            assert!(!stored.deleted, "{what}");
            drop(store);
            assert_eq!(text_rows(&path), before, "{what}: the text rows changed");
        }
    }
}
