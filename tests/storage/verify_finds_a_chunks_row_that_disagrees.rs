//! Schema 4's chunks row carries its document's version and key and each chunk's vector
//! slot, and a search hit reports them from that row alone (issue 17). A chunks row whose
//! copy disagrees with the document row or the vectors row would make hits lie, so `verify`
//! reports each disagreement: another version, another key, a chunk's slot other than the
//! vectors row's at its position, and two document rows sharing an internal id. Searches
//! over such a file answer or fail with a typed error, never a panic.

use crate::support;

use ratchetdb::{Chunk, Document, Options, SearchOptions, Store, Version};
use redb::{ReadableTable, TableDefinition};
use std::path::Path;
use support::{decode_row, no_panic, ChunksRowV5};

const CHUNKS: TableDefinition<u64, &[u8]> = TableDefinition::new("doc_chunks");
const DOCS: TableDefinition<(&str, &str), &[u8]> = TableDefinition::new("docs");

/// A store of three small documents (two chunks each, 4-d vectors: no spill).
fn store(path: &Path) {
    let store = Store::open(path, Options::default()).expect("create");
    for (i, id) in ["a", "b", "c"].into_iter().enumerate() {
        let v = |j: usize| vec![1.0 + i as f32, j as f32, 0.5, -0.25];
        store
            .upsert(
                Document::new("notes", id, Version::number(3))
                    .with_chunk(Chunk::new(format!("{id} first"), v(0)))
                    .with_chunk(Chunk::new(format!("{id} second"), v(1))),
            )
            .expect("write");
    }
    assert!(store.verify().expect("verify").is_ok());
}

/// Rewrites the chunks row of the document whose key is `id` with `change`.
fn tamper(path: &Path, id: &str, change: impl Fn(&mut ChunksRowV5)) {
    let db = redb::Database::open(path).expect("open with redb");
    let txn = db.begin_write().expect("write");
    {
        let mut chunks = txn.open_table(CHUNKS).expect("chunks");
        let mut found = None;
        for entry in chunks.iter().expect("iter") {
            let (key, value) = entry.expect("row");
            let row: ChunksRowV5 = decode_row("chunks row", value.value());
            if row.id == id {
                found = Some((key.value(), row));
            }
        }
        let (key, mut row) = found.expect("the document's chunks row");
        change(&mut row);
        let bytes =
            bincode::serde::encode_to_vec(&row, bincode::config::standard()).expect("encode");
        chunks.insert(key, bytes.as_slice()).expect("insert");
    }
    txn.commit().expect("commit");
}

/// The problems `verify` reports for `notes/<id>`, after searches answered without a panic.
fn problems(path: &Path, id: &str) -> Vec<String> {
    let store = Store::open(path, Options::default()).expect("reopen");
    for exact in [true, false] {
        let options = SearchOptions::default().exact(exact);
        let _ = no_panic("search", || {
            store.search(&[1.0, 0.0, 0.5, -0.25], 6, &options)
        });
    }
    let _ = no_panic("text search", || {
        store.search_text("first", 6, &SearchOptions::default())
    });
    let report = store.verify().expect("verify");
    report
        .violations
        .iter()
        .filter(|v| v.id.as_deref() == Some(id))
        .map(|v| v.problem.clone())
        .collect()
}

fn case(change: impl Fn(&mut ChunksRowV5), expect: &str) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("store.redb");
    store(&path);
    tamper(&path, "b", change);
    let found = problems(&path, "b");
    assert!(
        found.iter().any(|p| p.contains(expect)),
        "expected {expect:?} among {found:?}"
    );
}

#[test]
fn another_version_in_the_chunks_row_is_reported() {
    case(|row| row.version += 1, "the chunks row has version");
}

#[test]
fn another_key_in_the_chunks_row_is_reported() {
    case(
        |row| row.source = "elsewhere".to_string(),
        "the chunks row names the document elsewhere/b",
    );
}

#[test]
fn a_chunk_slot_other_than_the_vectors_rows_is_reported() {
    case(
        |row| row.chunks[1].slot += 5,
        "chunk 1: the chunks row has slot",
    );
}

/// Schema 5 dropped each chunk's own text hash (and `verify`'s check of it): a chunk text
/// changed in the file is still found, by the document's content hash over its chunks.
#[test]
fn a_chunk_text_changed_in_the_file_is_reported() {
    case(
        |row| row.chunks[0].text.push('!'),
        "content hash does not match the chunks and metadata",
    );
}

#[test]
fn two_documents_sharing_an_internal_id_are_reported() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("store.redb");
    store(&path);
    {
        // Give "c" the document row of "b" (same internal id), as a damaged file might.
        let db = redb::Database::open(&path).expect("open with redb");
        let txn = db.begin_write().expect("write");
        {
            let mut docs = txn.open_table(DOCS).expect("docs");
            let b = docs
                .get(("notes", "b"))
                .expect("get")
                .expect("b")
                .value()
                .to_vec();
            docs.insert(("notes", "c"), b.as_slice()).expect("insert");
        }
        txn.commit().expect("commit");
    }
    let found = problems(&path, "c");
    assert!(
        found
            .iter()
            .any(|p| p.contains("is another document's too")),
        "{found:?}"
    );
}
