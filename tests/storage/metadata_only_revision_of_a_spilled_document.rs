//! A document whose vectors row is over a page carries the tail of its chunks row in that
//! row (schema 3). A revision that changes only the document's metadata keeps every vector
//! in place and leaves that tail as it was, so the vectors row is not rewritten; one that
//! changes the last chunk's metadata changes the tail, so it is. Either way, what is read
//! back is the new revision whole: new metadata, the same text and vectors under the same
//! ids, the new generation on every chunk, `verify` clean, before and after a reopen.

use ratchetdb::{Chunk, Document, Options, Outcome, Store, StoredDocument, Version};
use serde_json::json;

const DIMENSION: usize = 384;
const CHUNKS: usize = 8;

fn text(c: usize) -> String {
    format!("chunk {c}: ").repeat(100)
}

fn vector(c: usize) -> Vec<f32> {
    (0..DIMENSION)
        .map(|i| ((i * 7 + c * 13) % 23) as f32 - 11.0)
        .collect()
}

fn read(store: &Store) -> StoredDocument {
    store
        .snapshot()
        .expect("snapshot")
        .get_with_vectors("wiki", "big")
        .expect("get")
        .expect("live")
}

fn assert_revision(store: &Store, first: &StoredDocument, meta: serde_json::Value, last: &str) {
    let doc = read(store);
    assert_eq!(doc.meta, meta, "the document's metadata");
    assert_eq!(doc.chunks.len(), CHUNKS);
    for (new, old) in doc.chunks.iter().zip(&first.chunks) {
        assert_eq!(new.text, old.text);
        assert_eq!(new.vector_id, old.vector_id, "a kept vector keeps its id");
        assert_eq!(new.vector, old.vector);
        assert_eq!(new.generation, doc.generation);
    }
    assert_eq!(doc.chunks[CHUNKS - 1].meta, json!({ "note": last }));
    let report = store.verify().expect("verify");
    assert!(report.is_ok(), "{:#?}", report.violations);
}

fn revision(version: u64, meta: serde_json::Value, last: &str) -> Document {
    let mut doc = Document::new("wiki", "big", Version::number(version)).with_meta(meta);
    for c in 0..CHUNKS {
        let mut chunk = Chunk::without_vector(text(c));
        if c == CHUNKS - 1 {
            chunk = chunk.with_meta(json!({ "note": last }));
        }
        doc = doc.with_chunk(chunk);
    }
    doc
}

#[test]
fn metadata_only_revision_of_a_spilled_document() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("store.redb");
    let store = Store::open(&path, Options::default()).expect("open");
    let mut doc = Document::new("wiki", "big", Version::number(1)).with_meta(json!({"v": 1}));
    for c in 0..CHUNKS {
        let mut chunk = Chunk::new(text(c), vector(c));
        if c == CHUNKS - 1 {
            chunk = chunk.with_meta(json!({ "note": "first" }));
        }
        doc = doc.with_chunk(chunk);
    }
    store.upsert(doc).expect("first revision");
    let first = read(&store);

    // The document's metadata only.
    let outcome = store
        .upsert(revision(2, json!({"v": 2}), "first"))
        .expect("document metadata");
    assert!(
        matches!(
            outcome,
            Outcome::Written {
                chunks_written: 0,
                chunks_reused: 8,
                chunks_removed: 0,
                ..
            }
        ),
        "{outcome:?}"
    );
    assert_revision(&store, &first, json!({"v": 2}), "first");

    // The last chunk's metadata: the tail the vectors row carries.
    store
        .upsert(revision(3, json!({"v": 2}), "second"))
        .expect("chunk metadata");
    assert_revision(&store, &first, json!({"v": 2}), "second");

    drop(store);
    let store = Store::open(&path, Options::default()).expect("reopen");
    assert_revision(&store, &first, json!({"v": 2}), "second");
    assert_eq!(read(&store).version, Version::number(3));
}
