//! Reading documents back: `get` returns a live document with its metadata and chunks in
//! order (texts, metadata, one generation), a tombstone as `deleted` with no chunks, and
//! `None` for an id never written; `documents(false)` lists every document, tombstones
//! included, sorted by `(source, id)`, with no vectors, and `documents(true)` the same with
//! each chunk's vector as written (under L2, which stores it as given; an unchanged chunk keeps its stored vector).

use crate::common::assert_verified;
use crate::fixture::Fixture;
use ratchetdb::{Chunk, Document, Metric, Options, StoredDocument, Version};
use serde_json::json;

crate::conformance!(get_and_documents_with_and_without_vectors);

fn chunk(text: &str, x: f32) -> Chunk {
    Chunk::new(text, vec![1.0, x, 0.25]).with_meta(json!({ "x": x }))
}

/// The documents without their vectors, or generations (which number commits per backend).
fn shape(documents: &[StoredDocument]) -> Vec<(String, String, u64, bool, Vec<String>)> {
    documents
        .iter()
        .map(|d| {
            let texts = d.chunks.iter().map(|c| c.text.clone()).collect();
            (
                d.source.clone(),
                d.id.clone(),
                d.version.value,
                d.deleted,
                texts,
            )
        })
        .collect()
}

fn get_and_documents_with_and_without_vectors(b: &dyn Fixture) {
    // L2: vectors are stored as given (cosine stores them normalised).
    let store = b.open_with("db", Options::default().metric(Metric::L2));
    store
        .upsert(
            Document::new("wiki", "b", Version::number(1))
                .with_meta(json!({ "lang": "en" }))
                .with_chunk(chunk("first", 0.5))
                .with_chunk(chunk("second", 1.5)),
        )
        .expect("upsert b");
    store
        .upsert(Document::new("mail", "z", Version::number(1)).with_chunk(chunk("mail", 2.0)))
        .expect("upsert z");
    store
        .upsert(Document::new("wiki", "a", Version::number(1)).with_chunk(chunk("gone", 3.0)))
        .expect("upsert a");
    store
        .delete("wiki", "a", Version::number(2))
        .expect("delete a");
    // A revision that keeps "second" (its stored vector is reused: asked for without one).
    store
        .upsert(
            Document::new("wiki", "b", Version::number(2))
                .with_meta(json!({ "lang": "de" }))
                .with_chunk(Chunk::without_vector("second"))
                .with_chunk(chunk("third", 4.0)),
        )
        .expect("revise b");

    let b_doc = store.get("wiki", "b").expect("get").expect("b is stored");
    assert!(!b_doc.deleted);
    assert_eq!(b_doc.version, Version::number(2));
    assert_eq!(b_doc.meta, json!({ "lang": "de" }));
    let texts: Vec<&str> = b_doc.chunks.iter().map(|c| c.text.as_str()).collect();
    assert_eq!(texts, ["second", "third"]);
    let positions: Vec<u32> = b_doc.chunks.iter().map(|c| c.position).collect();
    assert_eq!(positions, [0, 1]);
    assert_eq!(b_doc.chunks[0].meta, serde_json::Value::Null);
    assert_eq!(b_doc.chunks[1].meta, json!({ "x": 4.0 }));
    assert!(b_doc
        .chunks
        .iter()
        .all(|c| c.generation == b_doc.generation));

    let a_doc = store.get("wiki", "a").expect("get").expect("a's tombstone");
    assert!(a_doc.deleted);
    assert_eq!(a_doc.version, Version::number(2));
    assert!(a_doc.chunks.is_empty());
    assert!(store.get("wiki", "never").expect("get").is_none());
    assert!(store.get("other", "b").expect("get").is_none());

    let without = store.documents(false).expect("documents");
    let with = store.documents(true).expect("documents with vectors");
    let expected = vec![
        ("mail".into(), "z".into(), 1, false, vec!["mail".into()]),
        ("wiki".into(), "a".into(), 2, true, vec![]),
        (
            "wiki".into(),
            "b".into(),
            2,
            false,
            vec!["second".into(), "third".into()],
        ),
    ];
    assert_eq!(shape(&without), expected);
    assert_eq!(shape(&with), expected);
    assert!(without
        .iter()
        .flat_map(|d| &d.chunks)
        .all(|c| c.vector.is_none()));
    let vectors: Vec<Option<Vec<f32>>> = with[2].chunks.iter().map(|c| c.vector.clone()).collect();
    assert_eq!(
        vectors,
        [Some(vec![1.0, 1.5, 0.25]), Some(vec![1.0, 4.0, 0.25])]
    );
    assert_eq!(with[0].chunks[0].vector, Some(vec![1.0, 2.0, 0.25]));
    // `get` and `documents` read the same rows.
    assert_eq!(without[2].content_hash, b_doc.content_hash);
    assert_eq!(without[2].generation, b_doc.generation);
    assert_verified(&store);
}
