//! A file whose text index has the per-chunk layout of the builds before the per-document
//! rows (a `text_chunks` table, one row per chunk under its vector id, stamped under
//! `text_totals["commit"]`) still opens: text search on it is refused with
//! `ReadError::NoTextIndex` (a reader does not mistake the old rows for current ones) and
//! `verify` reports it, until a writer opens it and rebuilds the index in the per-document
//! layout in one transaction, deleting the old table; then searches find what they found
//! before and `verify` is clean.

use ratchetdb::{Chunk, Document, Options, ReadError, SearchOptions, Store, Version};
use redb::{ReadableDatabase, ReadableTable, ReadableTableMetadata, TableDefinition};

const TEXT_TOTALS: TableDefinition<&str, u64> = TableDefinition::new("text_totals");
const TEXT_DOCS: TableDefinition<u64, &[u8]> = TableDefinition::new("text_docs");
const TEXT_CHUNKS: TableDefinition<u64, &[u8]> = TableDefinition::new("text_chunks");
const COUNTERS: TableDefinition<&str, u64> = TableDefinition::new("counters");

/// A per-chunk row: `len · term count · (term bytes · term · count)*` (every value below 251
/// here, so each varint is one byte).
fn chunk_row(text: &str) -> Vec<u8> {
    let words: Vec<String> = text.split_whitespace().map(str::to_lowercase).collect();
    let mut distinct: Vec<(String, u8)> = Vec::new();
    for word in &words {
        match distinct.iter_mut().find(|(w, _)| w == word) {
            Some((_, count)) => *count += 1,
            None => distinct.push((word.clone(), 1)),
        }
    }
    let mut row = vec![words.len() as u8, distinct.len() as u8];
    for (word, count) in distinct {
        row.push(word.len() as u8);
        row.extend_from_slice(word.as_bytes());
        row.push(count);
    }
    row
}

fn ids(store: &Store, query: &str) -> Vec<String> {
    let mut ids: Vec<String> = store
        .search_text(query, 10, &SearchOptions::default())
        .expect("search_text")
        .into_iter()
        .map(|h| h.id)
        .collect();
    ids.sort();
    ids
}

#[test]
fn a_per_chunk_text_index_is_refused_then_rebuilt_per_document() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("per_chunk.redb");
    let texts = [
        ("a", ["the pawl stops the gear", "a second pawl"]),
        ("b", ["coffee beans", "roasted coffee"]),
        ("c", ["a gear train", "teeth of the gear"]),
    ];
    let before = {
        let store = Store::open(&path, Options::default()).expect("open");
        for (id, chunks) in texts {
            let mut doc = Document::new("notes", id, Version::number(1));
            for text in chunks {
                doc = doc.with_chunk(Chunk::new(text, vec![1.0, 0.5]));
            }
            store.upsert(doc).expect("upsert");
        }
        store
            .delete("notes", "b", Version::number(2))
            .expect("delete");
        (
            ids(&store, "gear"),
            ids(&store, "pawl"),
            ids(&store, "coffee"),
        )
    };
    assert_eq!(before.0, ["a", "c", "c"], "one hit per chunk with the word");
    assert!(before.2.is_empty(), "a deleted document");

    // Rewrite the index in the per-chunk layout, as a build of that layout left it.
    {
        let db = redb::Database::open(&path).expect("redb");
        let txn = db.begin_write().expect("write");
        let commit = txn
            .open_table(COUNTERS)
            .expect("counters")
            .get("seq.commit")
            .expect("get")
            .map(|v| v.value())
            .expect("a commit sequence");
        txn.delete_table(TEXT_DOCS).expect("drop text_docs");
        {
            let mut rows = txn.open_table(TEXT_CHUNKS).expect("text_chunks");
            let live = [texts[0].1, texts[2].1];
            for (n, text) in live.iter().flat_map(|chunks| chunks.iter()).enumerate() {
                rows.insert(n as u64 + 1, chunk_row(text).as_slice())
                    .expect("insert");
            }
            let mut totals = txn.open_table(TEXT_TOTALS).expect("totals");
            totals.remove("commit.doc_rows").expect("remove");
            totals.insert("commit", commit).expect("insert");
        }
        txn.commit().expect("commit");
    }
    {
        let reader = Store::open_read_only(&path).expect("read-only");
        assert!(matches!(
            reader.search_text("gear", 5, &SearchOptions::default()),
            Err(ReadError::NoTextIndex { .. })
        ));
        assert!(!reader.verify().expect("verify").is_ok(), "verify sees it");
    }

    let store = Store::open(&path, Options::default()).expect("reopen for writing");
    let report = store.verify().expect("verify");
    assert!(report.is_ok(), "{:?}", report.violations);
    assert_eq!(
        (
            ids(&store, "gear"),
            ids(&store, "pawl"),
            ids(&store, "coffee")
        ),
        before
    );
    drop(store);
    let db = redb::Database::open(&path).expect("redb");
    let txn = db.begin_read().expect("read");
    assert!(
        matches!(
            txn.open_table(TEXT_CHUNKS),
            Err(redb::TableError::TableDoesNotExist(_))
        ),
        "the per-chunk table is deleted"
    );
    assert!(
        txn.open_table(TEXT_DOCS)
            .expect("text_docs")
            .len()
            .expect("len")
            == 2,
        "one row per live document"
    );
}
