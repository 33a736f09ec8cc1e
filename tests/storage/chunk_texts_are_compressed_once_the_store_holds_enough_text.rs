//! Schema 9 compresses chunk texts with one FSST symbol table a store trains from its first
//! 16 KiB of text (`schema/text_code.rs`). A store written one small document per commit
//! keeps its first texts raw and records no table until it holds enough text; the commit
//! that crosses the mark records one, and the texts written from then on take fewer bytes
//! in the file. Through all of it every read returns each text exactly: `get`, the export,
//! a vector search's hits, a text search, a revision that keeps some chunks, and a reopen;
//! `verify` passes. A schema-8 file (raw texts, no table) is stamped this build's schema (10) on a writable
//! open and reads beside the compressed texts written after it.

use crate::support;
use ratchetdb::{Chunk, Document, Options, SearchOptions, Store, Version};
use redb::{ReadableDatabase, ReadableTableMetadata, TableDefinition};
use std::path::Path;

const DIMENSION: usize = 16;
const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");
const CHUNKS: TableDefinition<u64, &[u8]> = TableDefinition::new("doc_chunks");

const WORDS: &[&str] = &[
    "the",
    "store",
    "refuses",
    "a",
    "stale",
    "revision",
    "of",
    "notes",
    "pipeline",
    "delivers",
    "every",
    "document",
    "at",
    "least",
    "once",
    "and",
    "in",
    "no",
    "order",
    "retries",
    "version",
    "chunk",
    "search",
    "returns",
    "only",
    "its",
    "latest",
    "text",
    "index",
    "never",
    "moves",
    "backwards",
    "when",
    "consumer",
    "replays",
    "dead-letter",
    "queue",
];

/// Sentence `i`: eight to twenty words of [`WORDS`], and its number.
fn sentence(i: u64) -> String {
    let mut rng = ratchetdb::testkit::SplitMix64::new(i);
    let len = 8 + rng.below(13) as usize;
    let words: Vec<&str> = (0..len)
        .map(|_| WORDS[rng.below(WORDS.len() as u64) as usize])
        .collect();
    format!("{} number {i}.", words.join(" "))
}

/// Document `d` at `version`: two chunks, the second's text shared by every version.
fn document(d: u64, version: u64) -> Document {
    Document::new("notes", format!("n{d:04}"), Version::number(version))
        .with_chunk(Chunk::new(
            sentence(d * 1000 + version),
            support::minilm_like(d * 7 + version, DIMENSION),
        ))
        .with_chunk(Chunk::new(
            sentence(d * 1000),
            support::minilm_like(d * 7, DIMENSION),
        ))
}

/// Whether the closed file at `path` records a text codec, and its chunks table's stored
/// bytes.
fn file_state(path: &Path) -> (bool, u64) {
    let db = redb::Database::open(path).expect("redb");
    let txn = db.begin_read().expect("read");
    let meta = txn.open_table(META).expect("meta");
    let codec = meta.get("text_codec").expect("get").is_some();
    let chunks = txn.open_table(CHUNKS).expect("chunks");
    (codec, chunks.stats().expect("stats").stored_bytes())
}

/// Every read of `store` returns each of `written` (id, version) documents' texts exactly.
fn assert_reads_back(store: &Store, written: &[(u64, u64)]) {
    for &(d, version) in written {
        let want = document(d, version);
        let got = store
            .get("notes", &format!("n{d:04}"))
            .expect("get")
            .expect("present");
        let texts: Vec<&str> = got.chunks.iter().map(|c| c.text.as_str()).collect();
        let wanted: Vec<&str> = want.chunks.iter().map(|c| c.text.as_str()).collect();
        assert_eq!(texts, wanted, "get n{d:04}");
        // The document's own first vector finds its first chunk, with its text.
        let hits = store
            .search(
                want.chunks[0].vector.as_deref().expect("vector"),
                1,
                &SearchOptions::default().exact(true),
            )
            .expect("search");
        assert_eq!(hits[0].text, want.chunks[0].text, "search n{d:04}");
        // Its number is a word only its first chunk holds.
        let number = format!("{}", d * 1000 + version);
        let hits = store
            .search_text(&number, 3, &SearchOptions::default())
            .expect("search_text");
        assert!(
            hits.iter().any(|h| h.text == want.chunks[0].text),
            "text search for {number}: {hits:?}"
        );
    }
    let exported: Vec<String> = store
        .documents(false)
        .expect("documents")
        .into_iter()
        .flat_map(|doc| doc.chunks.into_iter().map(|c| c.text))
        .collect();
    assert_eq!(exported.len(), written.len() * 2);
    let report = store.verify().expect("verify");
    assert!(report.is_ok(), "{report:?}");
}

#[test]
fn chunk_texts_are_compressed_once_the_store_holds_enough_text() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("texts.redb");
    let options = Options::default().dimension(DIMENSION).text_index(true);
    let mut written: Vec<(u64, u64)> = Vec::new();

    // A few small documents, one a commit: too little text to train a table.
    {
        let store = Store::open(&path, options.clone()).expect("open");
        for d in 0..20 {
            store.upsert(document(d, 1)).expect("upsert");
            written.push((d, 1));
        }
        assert_reads_back(&store, &written);
    }
    let (codec, raw_bytes) = file_state(&path);
    assert!(!codec, "a table was trained from {raw_bytes} bytes");

    // Marked schema 8 (what a schema-8 build wrote: raw texts, no table), then opened by
    // this build: stamped schema 10, its raw texts read as they are.
    support::set_schema_version(&path, 8);
    {
        let store = Store::open(&path, options.clone()).expect("open a schema-8 file");
        assert_reads_back(&store, &written);
        // One document a commit, until well past the training mark; then revisions that
        // keep each document's second chunk.
        for d in 20..400 {
            store.upsert(document(d, 1)).expect("upsert");
            written.push((d, 1));
        }
        for entry in written.iter_mut().filter(|(d, _)| d % 3 == 0) {
            entry.1 = 2;
            store.upsert(document(entry.0, 2)).expect("revise");
        }
        assert_reads_back(&store, &written);
    }
    assert_eq!(support::schema_version(&path), 10);
    let (codec, stored) = file_state(&path);
    assert!(codec, "no table after 400 documents");
    let text: usize = written
        .iter()
        .map(|&(d, v)| {
            document(d, v)
                .chunks
                .iter()
                .map(|c| c.text.len())
                .sum::<usize>()
        })
        .sum();
    // Each row also holds its document's key, version and metadata; compressed, the rows
    // still take fewer bytes than the texts alone.
    assert!(
        (stored as usize) < text,
        "chunks rows {stored} bytes for {text} bytes of text"
    );

    // Reopened: the table is read from the file.
    let store = Store::open(&path, options).expect("reopen");
    assert_reads_back(&store, &written);
    drop(store);
    let reader = Store::open_read_only(&path).expect("read-only");
    assert_reads_back(&reader, &written);
}
