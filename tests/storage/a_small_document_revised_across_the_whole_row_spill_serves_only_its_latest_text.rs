//! A one-chunk document of 384 dimensions carries its whole chunks row in its vectors row's
//! share of the leaf (the chunks table keeps an empty row) while its text is short, and not
//! once it grows or gains chunks. Revised back and forth across that line (short text, a
//! metadata-only revision, a long text, two chunks, short again), every revision's hits,
//! text hits, `get` and `verify` show exactly that revision: never an older text, version
//! or metadata (the spill's layout changes with each step), before and after a reopen.

use ratchetdb::{Chunk, Document, Options, SearchOptions, Store, Version};
use serde_json::json;

const DIMENSION: usize = 384;

/// Floats over sixteen binades: the coded layout (schema 8) saves no page bytes on them, so
/// the row stays raw, two to a leaf, with room for the chunks row (`schema/spill.rs`).
fn vector(seed: usize) -> Vec<f32> {
    (0..DIMENSION)
        .map(|i| (((i * 31 + seed * 7) % 97) as f32 - 48.0) * 2f32.powi((i % 16) as i32 - 8))
        .collect()
}

/// Revision `version` of document `a`: its chunks' texts (vector `i` and metadata
/// `{"chunk": i}` for chunk `i`) and the document's metadata.
fn revision(version: u64, texts: &[String], meta: serde_json::Value) -> Document {
    let mut doc = Document::new("s", "a", Version::number(version)).with_meta(meta);
    for (i, text) in texts.iter().enumerate() {
        doc = doc.with_chunk(Chunk::new(text.clone(), vector(i)).with_meta(json!({ "chunk": i })));
    }
    doc
}

/// The store shows exactly revision `version` of `a` with `texts` and document metadata
/// `meta`, and nothing older.
fn shows(store: &Store, version: u64, texts: &[String], meta: &serde_json::Value) {
    let stored = store.get("s", "a").expect("get").expect("live");
    assert_eq!(stored.version, Version::number(version));
    assert_eq!(&stored.meta, meta);
    let stored_texts: Vec<&str> = stored.chunks.iter().map(|c| c.text.as_str()).collect();
    assert_eq!(
        stored_texts,
        texts.iter().map(String::as_str).collect::<Vec<_>>()
    );
    for (i, text) in texts.iter().enumerate() {
        for exact in [false, true] {
            let hits = store
                .search(&vector(i), 10, &SearchOptions::default().exact(exact))
                .expect("search");
            assert_eq!(hits.len(), texts.len(), "{hits:?}");
            assert_eq!(&hits[0].text, text);
            for hit in &hits {
                assert_eq!(hit.version, Version::number(version));
                assert!(texts.contains(&hit.text), "an older text: {:?}", hit.text);
            }
        }
    }
    let text_hits = store
        .search_text("ratchet", 10, &SearchOptions::default())
        .expect("text search");
    assert!(!text_hits.is_empty());
    for hit in &text_hits {
        assert_eq!(hit.version, Version::number(version));
        assert!(texts.contains(&hit.text), "an older text: {:?}", hit.text);
    }
    let report = store.verify().expect("verify");
    assert!(report.is_ok(), "{:#?}", report.violations);
}

#[test]
fn a_small_document_revised_across_the_whole_row_spill_serves_only_its_latest_text() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("db.redb");
    let short = |v: u64| vec![format!("ratchet short text of revision {v}")];
    let long = |v: u64| {
        vec![format!(
            "ratchet long text of revision {v}: {}",
            "turns one way. ".repeat(200)
        )]
    };
    let two = |v: u64| {
        vec![
            format!("ratchet first chunk of revision {v}"),
            format!("ratchet second chunk of revision {v}"),
        ]
    };
    let steps: Vec<(u64, Vec<String>, serde_json::Value)> = vec![
        (1, short(1), json!({ "m": 1 })),
        // The same chunks, new metadata: a metadata-only revision.
        (2, short(1), json!({ "m": 2 })),
        (3, long(3), json!({ "m": 3 })),
        (4, short(4), json!({ "m": 4 })),
        (5, two(5), json!({ "m": 5 })),
        (6, short(6), json!({ "m": 6 })),
        (7, short(6), json!({ "m": 7 })),
    ];
    let store = Store::open(&path, Options::default().dimension(DIMENSION)).expect("open");
    for (version, texts, meta) in &steps {
        store
            .upsert(revision(*version, texts, meta.clone()))
            .expect("write");
        shows(&store, *version, texts, meta);
    }
    drop(store);
    let (version, texts, meta) = steps.last().expect("steps");
    let store = Store::open(&path, Options::default()).expect("reopen");
    shows(&store, *version, texts, meta);
}
