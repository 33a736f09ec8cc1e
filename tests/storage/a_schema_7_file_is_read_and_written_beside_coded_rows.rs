//! A file written by a schema-7 build (raw vectors rows only; made here by rewriting a
//! store's rows as that build writes them, `testkit::rewrite_as_schema_7`) is read by a
//! read-only open as it is, the file untouched and still schema 7. A writable open stamps it
//! this build's schema (the original kept beside it as a backup, as every conversion does) and rewrites
//! no row: its raw rows stay raw until a revision rewrites them, and the rows written from
//! then on are coded. The store then holds both layouts: every vector reads back bit for
//! bit, `verify` passes, and the file reopens clean.

use crate::support;
use ratchetdb::{Chunk, Document, Op, Options, Store, Version};

const DIMENSION: usize = 384;

fn document(d: u64, version: u64, seed: u64) -> Document {
    Document::new("s", format!("d{d:04}"), Version::number(version)).with_chunk(Chunk::new(
        format!("chunk {d} of version {version}"),
        support::minilm_like(seed, DIMENSION),
    ))
}

/// Every document's id and first vector's bits, as the store exports them.
fn exported(store: &Store) -> Vec<(String, Vec<u32>)> {
    store
        .documents(true)
        .expect("documents")
        .into_iter()
        .filter_map(|doc| {
            // A tombstone has no chunks.
            let vector = doc.chunks.first()?.vector.as_deref().expect("vector");
            Some((doc.id, support::bits(vector)))
        })
        .collect()
}

#[test]
fn a_schema_7_file_is_read_and_written_beside_coded_rows() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("seven.redb");
    {
        let store = Store::open(&path, Options::default()).expect("open");
        let ops: Vec<Op> = (0..100).map(|d| Op::Upsert(document(d, 1, d))).collect();
        for outcome in store.write_batch(ops).expect("write_batch") {
            assert!(outcome.is_ok(), "{outcome:?}");
        }
    }
    assert_eq!(ratchetdb::testkit::rewrite_as_schema_7(&path), Ok(100));
    assert_eq!(support::schema_version(&path), 7);
    let image = std::fs::read(&path).expect("read");

    // Read-only: read as it is, nothing written.
    {
        let store = Store::open_read_only(&path).expect("a read-only open of schema 7");
        let first: Vec<(String, Vec<u32>)> = (0..100)
            .map(|d| {
                let doc = document(d, 1, d);
                (
                    doc.id,
                    support::bits(doc.chunks[0].vector.as_deref().unwrap_or_default()),
                )
            })
            .collect();
        assert_eq!(exported(&store), first);
        let report = store.verify().expect("verify");
        assert!(report.is_ok(), "{:#?}", report.violations);
    }
    assert_eq!(
        std::fs::read(&path).expect("read"),
        image,
        "a read-only open changed the file"
    );

    // Writable: stamped 10 (this build's schema), a backup kept, no row rewritten.
    let store = Store::open(&path, Options::default()).expect("open schema 7");
    drop(store);
    assert_eq!(support::schema_version(&path), 10);
    let backup = dir.path().join("seven.redb.schema7-backup");
    assert_eq!(support::schema_version(&backup), 7, "the backup's schema");
    assert_eq!(
        ratchetdb::testkit::vectors_row_layouts(&path),
        Ok((100, 0)),
        "the conversion rewrote rows"
    );

    // New documents, new versions of old ones (new vectors, or the same vectors with other
    // metadata), deletions: coded rows beside raw ones.
    let store = Store::open(&path, Options::default()).expect("reopen");
    let mut ops: Vec<Op> = (100..150).map(|d| Op::Upsert(document(d, 1, d))).collect();
    ops.extend((0..20).map(|d| Op::Upsert(document(d, 2, 5_000 + d))));
    ops.extend(
        (20..30).map(|d| {
            Op::Upsert(document(d, 2, d).with_meta(serde_json::json!({ "edited": true })))
        }),
    );
    ops.extend((30..35).map(|d| Op::Delete {
        source: "s".into(),
        id: format!("d{d:04}"),
        version: Version::number(2),
    }));
    for outcome in store.write_batch(ops).expect("write_batch") {
        assert!(outcome.is_ok(), "{outcome:?}");
    }
    let report = store.verify().expect("verify");
    assert!(report.is_ok(), "{:#?}", report.violations);
    let mut expected: Vec<(String, Vec<u32>)> = (0..150)
        .filter(|d| !(30..35).contains(d))
        .map(|d| {
            let (version, seed) = if d < 20 { (2, 5_000 + d) } else { (1, d) };
            let doc = document(d, version, seed);
            (
                doc.id,
                support::bits(doc.chunks[0].vector.as_deref().unwrap_or_default()),
            )
        })
        .collect();
    expected.sort();
    let mut got = exported(&store);
    got.sort();
    assert_eq!(got, expected);
    drop(store);
    let (raw, coded) = ratchetdb::testkit::vectors_row_layouts(&path).expect("layouts");
    assert!(raw > 0 && coded > 0, "raw {raw}, coded {coded}");
    assert_eq!(raw + coded, 145);
    support::reopen_verified(&path);
}
