//! Regression (review of schema 9): the text codec's training policy.
//! - A store whose first chunks have no text (vector-only chunks), written one document a
//!   commit, read its whole chunks table again at every commit while it gathered texts to
//!   train with (quadratic in the store's size); the file is now read once per writer, at
//!   most 4,096 rows, and the texts gathered are kept across commits.
//! - A store whose first 1,024 texts were short (a glossary split into 12-byte chunks)
//!   recorded an empty table for good, and every longer text written after stayed raw; a
//!   table is now trained once 16 KiB of text have been gathered, however short the texts.
//!
//! Both stores end with a table, and every text reads back. (The bounded read of the file is
//! not timed here: performance is measured in benches.)

use crate::support;
use ratchetdb::{Chunk, Document, Options, Store, Version};
use redb::{ReadableDatabase, TableDefinition};
use std::path::Path;

const DIMENSION: usize = 8;
const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");

fn has_codec(path: &Path) -> bool {
    let db = redb::Database::open(path).expect("redb");
    let txn = db.begin_read().expect("read");
    let meta = txn.open_table(META).expect("meta");
    let row = meta.get("text_codec").expect("get");
    row.is_some_and(|r| r.value().len() > 2)
}

fn sentence(i: u64) -> String {
    format!(
        "Entry {i}: the pipeline redelivers this note and the store keeps its newest \
         revision, refusing the stale one."
    )
}

#[test]
fn vector_only_chunks_then_sentences_one_document_a_commit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("empty.redb");
    let options = Options::default().dimension(DIMENSION);
    let store = Store::open(&path, options.clone()).expect("open");
    for d in 0..300u64 {
        let doc = Document::new("v", format!("e{d:04}"), Version::number(1))
            .with_chunk(Chunk::new("", support::minilm_like(d, DIMENSION)));
        store.upsert(doc).expect("upsert");
    }
    for d in 0..300u64 {
        let doc = Document::new("t", format!("s{d:04}"), Version::number(1)).with_chunk(
            Chunk::new(sentence(d), support::minilm_like(d + 1000, DIMENSION)),
        );
        store.upsert(doc).expect("upsert");
    }
    for d in 0..300u64 {
        let got = store
            .get("t", &format!("s{d:04}"))
            .expect("get")
            .expect("present");
        assert_eq!(got.chunks[0].text, sentence(d));
    }
    assert!(store.verify().expect("verify").is_ok());
    drop(store);
    assert!(
        has_codec(&path),
        "no table after 300 sentences of 100 bytes"
    );
}

#[test]
fn a_glossary_of_short_chunks_trains_a_table() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("glossary.redb");
    let options = Options::default().dimension(DIMENSION);
    let store = Store::open(&path, options.clone()).expect("open");
    // 1,500 chunks of 10-13 bytes in one document: 17 KiB of text.
    let terms: Vec<String> = (0..1500).map(|i| format!("term-{i:04};def")).collect();
    let mut doc = Document::new("g", "glossary", Version::number(1));
    for (i, term) in terms.iter().enumerate() {
        doc = doc.with_chunk(Chunk::new(
            term.clone(),
            support::minilm_like(i as u64, DIMENSION),
        ));
    }
    store.upsert(doc).expect("upsert");
    let got = store.get("g", "glossary").expect("get").expect("present");
    let texts: Vec<&str> = got.chunks.iter().map(|c| c.text.as_str()).collect();
    assert_eq!(texts, terms.iter().map(String::as_str).collect::<Vec<_>>());
    drop(store);
    assert!(has_codec(&path), "a glossary of 17 KiB trained no table");
}
