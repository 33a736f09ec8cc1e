//! Hostile vectors: NaN, +inf, -inf anywhere in a vector are refused with an `InputError`
//! naming the exact element (`chunks[i].vector[j]`), in any position and through every write
//! path; the store is unchanged.
//!
//! Documented normalisations: denormal (subnormal) floats are ACCEPTED as they are — they are
//! finite numbers, and refusing them would refuse legitimate embeddings with tiny components.
//! For a cosine store a vector is normalised in f64 before it is stored as f32, so a vector
//! made only of denormals (or of f32::MAX) is stored as a proper unit vector; only an
//! all-zero vector, which has no direction, is refused. An L2 store keeps the values as given,
//! up to a squared length of `f32::MAX / 8` (longer ones would overflow f32 distances).

use ratchetdb::testkit::store_rows;
use ratchetdb::{Chunk, Document, Metric, Op, Options, Outcome, Store, Version, WriteError};

const DIM: usize = 8;

fn doc(id: &str, vector: Vec<f32>) -> Document {
    Document::new("v", id, Version::number(1))
        .with_chunk(Chunk::new("fine", vec![1.0; DIM]))
        .with_chunk(Chunk::new(format!("hostile {id}"), vector))
}

#[test]
fn non_finite_values_are_refused_naming_the_element() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store =
        Store::open(dir.path().join("v.redb"), Options::default().dimension(DIM)).expect("open");
    assert!(matches!(
        store.upsert(doc("ok", vec![0.5; DIM])),
        Ok(Outcome::Written { .. })
    ));
    let before = store_rows(&store).expect("rows");
    let mut refused = 0;
    for bad in [f32::NAN, -f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
        for position in [0, 3, DIM - 1] {
            let mut vector = vec![0.25; DIM];
            vector[position] = bad;
            let field = format!("chunks[1].vector[{position}]");
            let results = [
                store.upsert(doc("bad", vector.clone())),
                store.writer().upsert(doc("bad", vector.clone())),
                store
                    .write_batch(vec![Op::Upsert(doc("bad", vector.clone()))])
                    .expect("batch")
                    .remove(0)
                    .map(|o| match o {
                        ratchetdb::OpOutcome::Document(d) => d,
                        other => panic!("{other:?}"),
                    }),
            ];
            for result in results {
                match result {
                    Err(WriteError::Input(e)) => {
                        assert_eq!(e.field, field);
                        assert!(e.problem.contains("finite"), "{e}");
                        refused += 1;
                    }
                    other => panic!("{bad} at {position}: {other:?}"),
                }
            }
        }
    }
    assert_eq!(refused, 36);
    assert_eq!(
        store_rows(&store).expect("rows"),
        before,
        "a refusal changed the store"
    );
    assert!(store.verify().expect("verify").is_ok());
}

#[test]
fn denormals_are_accepted_and_cosine_normalises_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tiny = f32::from_bits(1); // The smallest positive denormal.
    assert!(tiny.is_subnormal());
    for metric in [Metric::Cosine, Metric::L2] {
        let store = Store::open(
            dir.path().join(format!("{metric}.redb")),
            Options::default().dimension(DIM).metric(metric),
        )
        .expect("open");
        let cases = [
            ("all-denormal", vec![tiny; DIM]),
            ("mixed", vec![1.0, tiny, -tiny, 0.0, 2.0, tiny, 0.0, 1.0]),
            ("max", vec![f32::MAX; DIM]),
            ("min-normal", vec![f32::MIN_POSITIVE; DIM]),
        ];
        for (id, vector) in cases {
            if metric == Metric::L2 && id == "max" {
                // Too long for f32 distances: refused (see the test below).
                continue;
            }
            let written = store.upsert(doc(id, vector.clone()));
            assert!(
                matches!(written, Ok(Outcome::Written { .. })),
                "{metric} {id}: {written:?}"
            );
            let stored = store
                .snapshot()
                .expect("snapshot")
                .get_with_vectors("v", id)
                .expect("get")
                .expect("doc");
            let stored = stored.chunks[1].vector.clone().expect("vector");
            assert!(
                stored.iter().all(|x| x.is_finite()),
                "{metric} {id}: {stored:?}"
            );
            match metric {
                Metric::Cosine => {
                    let norm: f64 = stored
                        .iter()
                        .map(|x| f64::from(*x).powi(2))
                        .sum::<f64>()
                        .sqrt();
                    assert!((norm - 1.0).abs() < 1e-5, "{id}: stored norm {norm}");
                }
                _ => assert_eq!(stored, vector, "{id}: an L2 store keeps the values"),
            }
        }
        if metric == Metric::Cosine {
            match store.upsert(doc("zero", vec![0.0; DIM])) {
                Err(WriteError::Input(e)) => assert_eq!(e.field, "chunks[1].vector"),
                other => panic!("a zero vector under cosine: {other:?}"),
            }
        }
        assert!(store.verify().expect("verify").is_ok());
    }
}

#[test]
fn vector_length_is_bounded() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path().join("dim.redb"), Options::default()).expect("open");
    let huge =
        Document::new("v", "huge", Version::number(1)).with_chunk(Chunk::new("t", vec![1.0; 8193]));
    match store.upsert(huge) {
        Err(WriteError::Input(e)) => assert_eq!(e.field, "chunks[0].vector"),
        other => panic!("{other:?}"),
    }
    let empty = Document::new("v", "empty", Version::number(1)).with_chunk(Chunk::new("t", vec![]));
    match store.upsert(empty) {
        Err(WriteError::Input(e)) => assert_eq!(e.field, "chunks[0].vector"),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        store.dimension(),
        None,
        "a refused vector does not fix the dimension"
    );
}

/// Regression (issue 19): L2 and dot-product stores accepted vectors near `f32::MAX`; their
/// distances overflowed to `inf` and a far vector ranked beside (or above) a near one. Such
/// vectors (squared length above `f32::MAX / 8`) are now refused at write time with an
/// `InputError` on the vector, and as queries on `query`; the store is unchanged. Vectors
/// within the bound keep their order.
#[test]
fn vectors_too_long_for_f32_distances_are_refused() {
    for metric in [Metric::L2, Metric::Dot] {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("big.redb");
        let store = Store::open(&path, Options::default().metric(metric)).expect("open");
        let mut near = vec![0.0f32; DIM];
        near[0] = 1.0;
        store
            .upsert(
                Document::new("v", "near", Version::number(1))
                    .with_chunk(Chunk::new("near", near.clone())),
            )
            .expect("near");
        let before = store_rows(&store).expect("rows");
        let mut huge = vec![0.0f32; DIM];
        huge[0] = f32::MAX / 2.0;
        match store.upsert(doc("huge", huge.clone())) {
            Err(WriteError::Input(e)) => assert_eq!(e.field, "chunks[1].vector", "{metric}"),
            other => panic!("{metric}: {other:?}"),
        }
        assert_eq!(
            store_rows(&store).expect("rows"),
            before,
            "{metric}: the store changed"
        );
        match store.search(&huge, 1, &ratchetdb::SearchOptions::default()) {
            Err(ratchetdb::ReadError::Input(e)) => assert_eq!(e.field, "query", "{metric}"),
            other => panic!("{metric}: {other:?}"),
        }
        // The largest length allowed: distances stay finite and ordered.
        let mut far = vec![0.0f32; DIM];
        far[0] = -((f32::MAX as f64 / 8.0).sqrt() as f32) * 0.999;
        store
            .upsert(
                Document::new("v", "far", Version::number(1)).with_chunk(Chunk::new("far", far)),
            )
            .expect("far is within the bound");
        let hits = store
            .search(&near, 2, &ratchetdb::SearchOptions::default().exact(true))
            .expect("search");
        let ids: Vec<&str> = hits.iter().map(|h| h.id.as_str()).collect();
        assert_eq!(ids, ["near", "far"], "{metric}");
        assert!(
            hits.iter().all(|h| h.score.is_finite()),
            "{metric}: {hits:?}"
        );
    }
}
