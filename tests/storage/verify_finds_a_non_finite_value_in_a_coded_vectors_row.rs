//! A coded vectors row (schema 8) whose fifth vector of six holds a NaN, written into the file
//! behind the store's back (a vector can only get there by damage: writes refuse it).
//! `verify` reports that chunk, and only it: the check walks the row's vectors once, so a
//! coded vector past the first is decoded from where its escaped values start, not from the
//! first vector's.

use crate::support;
use ratchetdb::{Chunk, Document, Options, Store, Version};
use redb::ReadableTable;

const DIMENSION: usize = 384;
const VECTORS: redb::TableDefinition<u64, &[u8]> = redb::TableDefinition::new("doc_vectors");

#[test]
fn verify_finds_a_non_finite_value_in_a_coded_vectors_row() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("store.redb");
    let vectors: Vec<Vec<f32>> = {
        let store = Store::open(&path, Options::default()).expect("open");
        let mut document = Document::new("s", "d", Version::number(1));
        for c in 0..6u64 {
            document = document.with_chunk(Chunk::new(
                format!("chunk {c}"),
                support::minilm_like(c, DIMENSION),
            ));
        }
        store.upsert(document).expect("upsert");
        assert!(store.verify().expect("verify").violations.is_empty());
        let stored = store
            .snapshot()
            .and_then(|s| s.get_with_vectors("s", "d"))
            .expect("get")
            .expect("the document");
        stored
            .chunks
            .into_iter()
            .map(|c| c.vector.expect("a vector"))
            .collect()
    };
    let db = redb::Database::open(&path).expect("redb");
    let txn = db.begin_write().expect("begin_write");
    {
        let mut table = txn.open_table(VECTORS).expect("doc_vectors");
        let (key, stored_row) = {
            let (key, row) = table.first().expect("first").expect("a row");
            (key.value(), row.value().to_vec())
        };
        // The row as written, less whatever of the chunks row rides after its vectors.
        let (clean, coded) = ratchetdb::testkit::vectors_row(&vectors, true).expect("encode");
        assert!(
            coded,
            "six MiniLM-like vectors are written coded (two pages instead of three)"
        );
        assert!(
            stored_row.starts_with(&clean),
            "the stored row's vectors part"
        );
        let spill = &stored_row[clean.len()..];
        let mut damaged_vectors = vectors.clone();
        damaged_vectors[4][100] = f32::NAN;
        let (mut damaged, coded) =
            ratchetdb::testkit::vectors_row(&damaged_vectors, true).expect("encode");
        assert!(coded, "the NaN is escaped, the row still coded");
        damaged.extend_from_slice(spill);
        table.insert(key, damaged.as_slice()).expect("insert");
    }
    txn.commit().expect("commit");
    drop(db);

    let store = Store::open(&path, Options::default()).expect("reopen");
    let report = store.verify().expect("verify");
    let finite: Vec<String> = report
        .violations
        .iter()
        .map(|v| v.problem.clone())
        .filter(|p| p.contains("non-finite"))
        .collect();
    assert_eq!(
        finite,
        vec!["chunk 4: vector has a non-finite value".to_string()],
        "{:#?}",
        report.violations
    );
}
