//! Huge documents against the size limits, at the defaults documented in `src/options.rs`
//! (10,000 chunks, 1 MiB of text per chunk, 64 KiB of metadata, 1024-byte ids) and with
//! raised limits: exactly at a limit is accepted and reads back whole; one past it is an
//! `InputError` naming the field, and the store is unchanged.
//!
//! Regression: raising `max_chunk_text_bytes` or `max_meta_bytes` past 64 MiB let a chunk
//! row be written that no read could decode (rows are decoded under a 64 MiB bound), so the
//! document, and every export, failed with `Corrupted`. Both limits now have a hard ceiling of
//! 16 MiB, as the `Limits` documentation always said.

use ratchetdb::testkit::store_rows;
use ratchetdb::{Chunk, Document, Limits, Options, Outcome, Store, Version, WriteError};

fn vector(i: usize) -> Vec<f32> {
    vec![1.0, (i % 7) as f32, 0.5, -1.0]
}

fn doc(id: &str, chunks: usize, text: &str) -> Document {
    let mut doc = Document::new("big", id, Version::number(1));
    for i in 0..chunks {
        doc = doc.with_chunk(Chunk::new(format!("{text}{i}"), vector(i)));
    }
    doc
}

fn refused(result: Result<Outcome, WriteError>, field: &str) {
    match result {
        Err(WriteError::Input(e)) => assert_eq!(e.field, field, "{e}"),
        other => panic!("expected an InputError on {field}, got {other:?}"),
    }
}

#[test]
fn defaults_are_the_documented_ones() {
    let limits = Limits::default();
    assert_eq!(limits.max_id_bytes, 1024);
    assert_eq!(limits.max_chunks_per_document, 10_000);
    assert_eq!(limits.max_chunk_text_bytes, 1 << 20);
    assert_eq!(limits.max_meta_bytes, 64 << 10);
    assert_eq!(limits.max_meta_depth, 64);
    assert_eq!(limits.max_dimension, 8192);
    assert_eq!(limits.max_listing_ids, 10_000_000);
}

#[test]
fn documents_at_and_past_the_default_limits() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store =
        Store::open(dir.path().join("big.redb"), Options::default().dimension(4)).expect("open");
    // At the limits: accepted, and read back whole.
    let at = doc("at", 10_000, "c");
    assert!(matches!(store.upsert(at), Ok(Outcome::Written { .. })));
    let text = "t".repeat(1 << 20);
    let big_text = Document::new("big", "text", Version::number(1))
        .with_chunk(Chunk::new(text.clone(), vector(0)));
    assert!(matches!(
        store.upsert(big_text),
        Ok(Outcome::Written { .. })
    ));
    // 64 KiB of canonical JSON: {"m":"…"} is 8 bytes of syntax.
    let meta = serde_json::json!({ "m": "x".repeat((64 << 10) - 8) });
    let big_meta = doc("meta", 1, "m").with_meta(meta.clone());
    assert!(matches!(
        store.upsert(big_meta),
        Ok(Outcome::Written { .. })
    ));
    let before = store_rows(&store).expect("rows");
    assert_eq!(
        store
            .get("big", "at")
            .expect("get")
            .expect("doc")
            .chunks
            .len(),
        10_000
    );
    assert_eq!(
        store.get("big", "text").expect("get").expect("doc").chunks[0].text,
        text
    );
    assert_eq!(
        store.get("big", "meta").expect("get").expect("doc").meta,
        meta
    );

    // One past each limit: refused, naming the field, nothing changed.
    refused(store.upsert(doc("past", 10_001, "c")), "chunks");
    refused(
        store.upsert(
            Document::new("big", "text2", Version::number(1))
                .with_chunk(Chunk::new("t".repeat((1 << 20) + 1), vector(0))),
        ),
        "chunks[0].text",
    );
    refused(
        store.upsert(
            doc("meta2", 1, "m").with_meta(serde_json::json!({ "m": "x".repeat((64 << 10) - 7) })),
        ),
        "meta",
    );
    refused(
        store.upsert(
            Document::new("big", "cmeta", Version::number(1)).with_chunk(
                Chunk::new("t", vector(0)).with_meta(serde_json::json!("y".repeat(64 << 10))),
            ),
        ),
        "chunks[0].meta",
    );
    refused(
        store.upsert(Document::new("big", "i".repeat(1025), Version::number(1))),
        "id",
    );
    refused(
        store.upsert(Document::new("s".repeat(1025), "x", Version::number(1))),
        "source",
    );
    assert_eq!(
        store_rows(&store).expect("rows"),
        before,
        "a refusal changed the store"
    );
    assert!(store.verify().expect("verify").is_ok());
}

#[test]
fn raised_limits_stop_at_the_hard_ceiling_and_stay_readable() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut limits = Limits::default();
    limits.max_chunk_text_bytes = 1 << 30;
    limits.max_meta_bytes = 1 << 30;
    let store = Store::open(
        dir.path().join("raised.redb"),
        Options::default().dimension(4).limits(limits),
    )
    .expect("open");
    // 16 MiB is the ceiling: accepted, and readable.
    let text = "a".repeat(16 << 20);
    let at = Document::new("big", "ceiling", Version::number(1))
        .with_chunk(Chunk::new(text.clone(), vector(0)));
    assert!(matches!(store.upsert(at), Ok(Outcome::Written { .. })));
    let got = store
        .get("big", "ceiling")
        .expect("a 16 MiB chunk reads back");
    assert_eq!(got.expect("doc").chunks[0].text.len(), text.len());
    // Past it, whatever the setting: refused (it used to be written and then unreadable).
    refused(
        store.upsert(
            Document::new("big", "huge", Version::number(1))
                .with_chunk(Chunk::new("a".repeat(70 << 20), vector(0))),
        ),
        "chunks[0].text",
    );
    refused(
        store.upsert(
            Document::new("big", "huge-meta", Version::number(1))
                .with_meta(serde_json::json!("m".repeat(70 << 20))),
        ),
        "meta",
    );
    assert_eq!(
        store
            .snapshot()
            .expect("snapshot")
            .documents(false)
            .expect("docs")
            .count(),
        1
    );
    assert!(store.verify().expect("verify").is_ok());
}

/// A revision's chunks are stored as one row and its vectors as another, so a document has
/// a total ceiling too: 48 MiB of chunk text and metadata, 256 MiB of vectors.
#[test]
fn a_document_past_the_total_ceilings_is_refused_and_one_at_them_reads_back() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(
        dir.path().join("total.redb"),
        Options::default().dimension(4),
    )
    .expect("open");
    // 1 MiB chunks (the default per-chunk limit): 47 fit under 48 MiB, 48 do not.
    let chunk_text = |i: usize| format!("{}{i:02}", "t".repeat((1 << 20) - 2));
    let big = |id: &str, chunks: usize| {
        let mut doc = Document::new("big", id, Version::number(1));
        for i in 0..chunks {
            doc = doc.with_chunk(Chunk::new(chunk_text(i), vector(i)));
        }
        doc
    };
    assert!(matches!(
        store.upsert(big("47", 47)),
        Ok(Outcome::Written { .. })
    ));
    let got = store
        .get("big", "47")
        .expect("a 47 MiB document reads back")
        .expect("doc");
    assert_eq!(got.chunks.len(), 47);
    assert!(got
        .chunks
        .iter()
        .enumerate()
        .all(|(i, c)| c.text == chunk_text(i)));
    let before = store_rows(&store).expect("rows");
    refused(store.upsert(big("48", 48)), "chunks");
    assert_eq!(
        store_rows(&store).expect("rows"),
        before,
        "a refusal changed the store"
    );

    // Vectors: chunks * dimension * 4 bytes. In a 8192-dimensional store, 8192 chunks are
    // at the ceiling (they pass the size check and stop at the missing vector: none is
    // sent, which keeps the test's memory small), 8193 are past it.
    let wide = Store::open(
        dir.path().join("wide.redb"),
        Options::default().dimension(8192),
    )
    .expect("open");
    let no_vectors = |chunks: usize| {
        let mut doc = Document::new("big", "wide", Version::number(1));
        for i in 0..chunks {
            doc = doc.with_chunk(Chunk::without_vector(format!("c{i}")));
        }
        doc
    };
    assert!(
        matches!(
            wide.upsert(no_vectors(8192)),
            Err(WriteError::MissingVector { position: 0 })
        ),
        "8192 chunks of 8192 dimensions are within the ceiling"
    );
    refused(wide.upsert(no_vectors(8193)), "chunks");
    assert!(wide.verify().expect("verify").is_ok());
    assert!(store.verify().expect("verify").is_ok());
}
