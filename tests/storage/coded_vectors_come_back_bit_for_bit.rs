//! Vectors stored in the coded layout (schema 8) come back bit for bit through every read:
//! `get` with vectors, the export, and exact search, whose scores equal those of the same
//! vectors stored raw (a copy of the store rewritten as a schema-7 build writes it); and
//! `verify` passes on both. The vectors include what a lossy coding would lose: negative
//! zero, subnormals and values far outside the row's common exponents.

use crate::support;
use ratchetdb::{Chunk, Document, Metric, Op, Options, SearchOptions, Store, Version};

const DIMENSION: usize = 384;
const DOCUMENTS: u64 = 300;

fn vector(d: u64) -> Vec<f32> {
    let mut v = support::minilm_like(d, DIMENSION);
    if d.is_multiple_of(3) {
        v[0] = -0.0;
        v[1] = f32::MIN_POSITIVE / 3.0;
        v[2] = -f32::from_bits(1);
        v[3] = 3.0e18;
        v[4] = -1.0e17;
        v[5] = 0.0;
    }
    v
}

fn document(d: u64) -> Document {
    let mut doc = Document::new("s", format!("d{d:04}"), Version::number(1))
        .with_chunk(Chunk::new(format!("chunk {d}"), vector(d)));
    // Every fifth document has a second chunk.
    if d.is_multiple_of(5) {
        doc = doc.with_chunk(Chunk::new(format!("second chunk {d}"), vector(d + 100_000)));
    }
    doc
}

/// Each document's vectors as the store hands them back, as bits.
fn stored_bits(store: &Store) -> Vec<(String, Vec<Vec<u32>>)> {
    store
        .documents(true)
        .expect("documents")
        .into_iter()
        .map(|doc| {
            let vectors = doc
                .chunks
                .iter()
                .map(|c| support::bits(c.vector.as_deref().expect("vector")))
                .collect();
            (doc.id, vectors)
        })
        .collect()
}

#[test]
fn coded_vectors_come_back_bit_for_bit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let coded = dir.path().join("coded.redb");
    let raw = dir.path().join("raw.redb");
    {
        // L2: the store keeps vectors as given (cosine would normalise them).
        let store = Store::open(&coded, Options::default().metric(Metric::L2)).expect("open");
        let ops: Vec<Op> = (0..DOCUMENTS).map(|d| Op::Upsert(document(d))).collect();
        for outcome in store.write_batch(ops).expect("write_batch") {
            assert!(outcome.is_ok(), "{outcome:?}");
        }
    }
    // A row of two 384-d vectors is alone in its leaf raw or coded: it stays raw.
    let two_chunk = (0..DOCUMENTS).filter(|d| d.is_multiple_of(5)).count() as u64;
    assert_eq!(
        ratchetdb::testkit::vectors_row_layouts(&coded),
        Ok((two_chunk, DOCUMENTS - two_chunk)),
        "(raw, coded) rows"
    );
    std::fs::copy(&coded, &raw).expect("copy");
    assert_eq!(
        ratchetdb::testkit::rewrite_as_schema_7(&raw),
        Ok(DOCUMENTS - two_chunk),
        "rows rewritten raw"
    );

    let expected: Vec<(String, Vec<Vec<u32>>)> = (0..DOCUMENTS)
        .map(|d| {
            let doc = document(d);
            let vectors = doc
                .chunks
                .iter()
                .map(|c| support::bits(c.vector.as_deref().unwrap_or_default()))
                .collect();
            (doc.id, vectors)
        })
        .collect();
    let coded = Store::open_read_only(&coded).expect("open coded");
    let raw = Store::open_read_only(&raw).expect("open raw");
    for store in [&coded, &raw] {
        assert_eq!(stored_bits(store), expected, "the export");
        for d in [0, 3, 5, 299] {
            let doc = document(d);
            let snapshot = store.snapshot().expect("snapshot");
            let got = snapshot
                .get_with_vectors("s", &doc.id)
                .expect("get")
                .expect("live");
            let got: Vec<Vec<u32>> = got
                .chunks
                .iter()
                .map(|c| support::bits(c.vector.as_deref().expect("vector")))
                .collect();
            let want: Vec<Vec<u32>> = doc
                .chunks
                .iter()
                .map(|c| support::bits(c.vector.as_deref().unwrap_or_default()))
                .collect();
            assert_eq!(got, want, "get {}", doc.id);
        }
        let report = store.verify().expect("verify");
        assert!(report.is_ok(), "{:#?}", report.violations);
    }
    // Exact search: the same hits with the same scores, bit for bit, raw or coded.
    for q in 0..20 {
        let query = support::minilm_like(1_000_000 + q, DIMENSION);
        let options = SearchOptions::default().exact(true);
        let hits = |store: &Store| -> Vec<(String, u32, u32)> {
            store
                .search(&query, 10, &options)
                .expect("search")
                .into_iter()
                .map(|h| (h.id, h.position, h.score.to_bits()))
                .collect()
        };
        let from_coded = hits(&coded);
        assert_eq!(from_coded.len(), 10);
        assert_eq!(from_coded, hits(&raw), "query {q}");
    }
}
