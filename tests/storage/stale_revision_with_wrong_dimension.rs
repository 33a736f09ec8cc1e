//! Regression: a stale upsert whose vectors had the wrong dimension was refused as `older`
//! when it shared a batch with the write that fixed the store's dimension, but rejected with
//! `DimensionMismatch` when it came alone afterwards: the answer depended on batch
//! boundaries. The dimension is now checked before the guard, so it is always the error.

use ratchetdb::{Chunk, Document, Op, OpOutcome, Options, Store, Version, WriteError};

fn doc(version: u64, vector: Vec<f32>) -> Document {
    Document::new("s", "d", Version::number(version))
        .with_chunk(Chunk::new(format!("v{version}"), vector))
}

#[test]
fn a_wrong_dimension_is_an_error_in_a_batch_and_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path().join("db.redb"), Options::default()).expect("open");
    // One batch: the first write fixes the dimension at 2; the stale one has 3 dimensions.
    let results = store
        .write_batch(vec![
            Op::Upsert(doc(5, vec![1.0, 0.0])),
            Op::Upsert(doc(3, vec![1.0, 0.0, 0.0])),
        ])
        .expect("batch");
    assert!(matches!(results[0], Ok(OpOutcome::Document(_))));
    assert!(
        matches!(
            results[1],
            Err(WriteError::DimensionMismatch {
                position: 0,
                expected: 2,
                found: 3
            })
        ),
        "{:?}",
        results[1]
    );
    // Alone, afterwards: the same error.
    assert!(matches!(
        store.upsert(doc(3, vec![1.0, 0.0, 0.0])),
        Err(WriteError::DimensionMismatch {
            position: 0,
            expected: 2,
            found: 3
        })
    ));
    assert_eq!(
        store.get("s", "d").expect("get").expect("row").version,
        Version::number(5)
    );
    assert!(store.verify().expect("verify").is_ok());
}
