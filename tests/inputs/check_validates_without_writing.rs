//! `Store::check` refuses what an upsert refuses for its input, with the same error naming
//! the same field, and writes nothing; what it accepts an upsert accepts. (The Python
//! binding's `Store.add` checks every item with it, so one bad item refuses the whole call.)

use crate::common;

use common::{assert_verified, document, open};
use ratchetdb::{Chunk, Document, Version, WriteError};

#[test]
fn check_refuses_what_upsert_refuses_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    store
        .upsert(document("s", "seed", Version::number(1), &["seed"]))
        .unwrap();
    let dimension = store.dimension().unwrap();
    let good = document("s", "a", Version::number(1), &["a"]);
    let bad = [
        Document::new("s", "", Version::number(1)).with_chunk(Chunk::new("x", common::vector("x"))),
        Document::new("", "b", Version::number(1)).with_chunk(Chunk::new("x", common::vector("x"))),
        Document::new("s", "b", Version::number(1))
            .with_chunk(Chunk::new("x", vec![1.0; dimension + 1])),
        Document::new("s", "b", Version::number(1)).with_chunk(Chunk::new("x", {
            let mut v = common::vector("x");
            v[2] = f32::NAN;
            v
        })),
        Document::new("s", "b\0c", Version::number(1))
            .with_chunk(Chunk::new("x", common::vector("x"))),
    ];
    let before = common::export(&store).len();
    store.check(&good).unwrap();
    for doc in &bad {
        let checked = store.check(doc).unwrap_err();
        let written = store.upsert(doc.clone()).unwrap_err();
        assert_eq!(checked.to_string(), written.to_string());
        assert!(
            matches!(
                checked,
                WriteError::Input(_) | WriteError::DimensionMismatch { .. }
            ),
            "{checked:?}"
        );
    }
    assert_eq!(common::export(&store).len(), before);
    assert!(store.get("s", "a").unwrap().is_none());
    store.upsert(good).unwrap();
    assert_verified(&store);
}
