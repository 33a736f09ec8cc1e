//! Bad input is a typed error naming the field and changes nothing (I9): an empty id, a
//! vector of the wrong dimension, a non-finite value, a version kind mismatch, a ticket never
//! issued, a chunk without a vector and no stored text to take it from, a malformed filter,
//! a query of the wrong dimension and `k` over the limit. After each refusal the export and
//! the counters are exactly as before, and a batch mixing good and bad operations stores
//! the good ones only.

use crate::common::assert_verified;
use crate::fixture::Fixture;
use ratchetdb::{
    Chunk, Document, Filter, Op, Options, ReadError, SearchOptions, Version, WriteError,
};
use serde_json::json;

crate::conformance!(bad_input_is_refused_and_changes_nothing);

fn field_of(error: &WriteError) -> String {
    match error {
        WriteError::Input(input) => input.field.clone(),
        WriteError::DimensionMismatch { position, .. } => format!("chunks[{position}].vector"),
        WriteError::VersionKindMismatch { .. } => "version".into(),
        WriteError::MissingVector { position } => format!("chunks[{position}].vector"),
        other => panic!("not an input error: {other:?}"),
    }
}

fn bad_input_is_refused_and_changes_nothing(b: &dyn Fixture) {
    let store = b.open_with("db", Options::default());
    store
        .upsert(
            Document::new("s", "a", Version::number(1))
                .with_chunk(Chunk::new("first", vec![1.0, 0.0, 0.0])),
        )
        .expect("good write");
    let cases: Vec<(Document, &str)> = vec![
        (Document::new("s", "", Version::number(2)), "id"),
        (
            Document::new("s", "b", Version::number(1)).with_chunk(Chunk::new("x", vec![1.0, 0.0])),
            "chunks[0].vector",
        ),
        (
            Document::new("s", "b", Version::number(1))
                .with_chunk(Chunk::new("x", vec![1.0, f32::NAN, 0.0])),
            "chunks[0].vector[1]",
        ),
        (
            Document::new("s", "a", Version::timestamp_micros(5))
                .with_chunk(Chunk::new("y", vec![1.0, 0.0, 0.0])),
            "version",
        ),
        (
            Document::new("s", "c", Version::ticket(1_000_000))
                .with_chunk(Chunk::new("z", vec![1.0, 0.0, 0.0])),
            "version",
        ),
        (
            Document::new("s", "a", Version::number(3)).with_chunk(Chunk::without_vector("new")),
            "chunks[0].vector",
        ),
    ];
    for (doc, field) in cases {
        let before = store.documents(true).expect("export");
        let counters = store.stats().expect("stats").counters;
        let error = match store.upsert(doc.clone()) {
            Ok(outcome) => panic!("{doc:?} was not refused: {outcome:?}"),
            Err(error) => error,
        };
        assert_eq!(field_of(&error), field, "{doc:?}: {error}");
        assert_eq!(store.documents(true).expect("export"), before, "{doc:?}");
        assert_eq!(store.stats().expect("stats").counters, counters, "{doc:?}");
    }
    // A batch: the good operations are stored, the bad ones refused in place.
    let results = store
        .write_batch(vec![
            Op::Upsert(
                Document::new("s", "good", Version::number(1))
                    .with_chunk(Chunk::new("good", vec![0.0, 1.0, 0.0])),
            ),
            Op::Upsert(
                Document::new("s", "bad", Version::number(1))
                    .with_chunk(Chunk::new("bad", vec![0.0, 1.0])),
            ),
            Op::Delete {
                source: "s".into(),
                id: "a".into(),
                version: Version::timestamp_micros(9),
            },
        ])
        .expect("batch");
    assert!(results[0].is_ok());
    assert!(matches!(
        results[1],
        Err(WriteError::DimensionMismatch { .. })
    ));
    assert!(matches!(
        results[2],
        Err(WriteError::VersionKindMismatch { .. })
    ));
    assert!(store.get("s", "bad").expect("get").is_none());
    assert!(!store.get("s", "a").expect("get").expect("row").deleted);
    // Reads: typed errors naming the field.
    let k_error = store
        .search(&[1.0, 0.0, 0.0], 1_000_000, &SearchOptions::default())
        .expect_err("k over the limit");
    assert!(
        matches!(&k_error, ReadError::Input(e) if e.field == "k"),
        "{k_error}"
    );
    let q_error = store
        .search(&[1.0, 0.0], 3, &SearchOptions::default())
        .expect_err("query dimension");
    assert!(
        matches!(&q_error, ReadError::Input(e) if e.field == "query"),
        "{q_error}"
    );
    let f_error = Filter::parse(&json!({"year": {"$gte": [1]}})).expect_err("bad filter");
    assert_eq!(f_error.field, "where.year.$gte");
    assert_verified(&store);
}
