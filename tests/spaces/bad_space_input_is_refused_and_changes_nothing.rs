//! Bad input about vector spaces is refused with a typed error naming the field, and the
//! store is left exactly as it was (its export, its spaces, its counters): an unknown space
//! (in a chunk, a guarded write, a walk, a search, activation, drop), a vector of the wrong
//! dimension for its space (in a chunk, a guarded write), a non-finite one, a bad space name
//! or dimension, a second space of the same name, a batch size of 0, and a revision missing
//! its vector for a complete space (in a batch, beside an operation that is written).

use super::{open, revision, wide, WIDE};
use ratchetdb::{
    Chunk, Document, Op, ReadError, SearchOptions, SpaceVector, Store, Version, WriteError,
};

fn state(store: &Store) -> String {
    format!(
        "{:?}\n{:?}\n{:?}",
        store.documents(true).expect("documents"),
        store.spaces().expect("spaces"),
        store.stats().expect("stats").counters
    )
}

fn input_field(e: WriteError) -> String {
    match e {
        WriteError::Input(e) => e.field,
        other => panic!("expected an input error, got {other:?}"),
    }
}

fn read_field(e: ReadError) -> String {
    match e {
        ReadError::Input(e) => e.field,
        other => panic!("expected an input error, got {other:?}"),
    }
}

#[test]
fn bad_space_input_is_refused_and_changes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(dir.path());
    store.upsert(revision("a", 1, 2)).expect("a");
    store.add_space("wide", "wide-test", WIDE).expect("add");
    let before = state(&store);

    // Adding: names, dimensions, duplicates.
    for (name, dimension, field) in [
        ("", 4, "name"),
        ("a b", 4, "name"),
        ("default", 4, "name"),
        ("wide", 4, "name"),
        ("other", 0, "dimension"),
        ("other", 1 << 20, "dimension"),
    ] {
        assert_eq!(
            input_field(store.add_space(name, "m", dimension).unwrap_err()),
            field
        );
    }
    // Activation and drop of unknown spaces.
    assert_eq!(input_field(store.activate("nope").unwrap_err()), "name");
    assert_eq!(input_field(store.drop_space("nope").unwrap_err()), "name");
    // The walk and the search.
    assert_eq!(
        read_field(store.chunks_missing_vectors("nope", None, 5).unwrap_err()),
        "space"
    );
    assert_eq!(
        read_field(store.chunks_missing_vectors("wide", None, 0).unwrap_err()),
        "limit"
    );
    assert_eq!(
        read_field(
            store
                .search(&wide("x"), 1, &SearchOptions::default().space("nope"))
                .unwrap_err()
        ),
        "space"
    );
    assert!(read_field(
        store
            .search(&[1.0, 2.0, 3.0], 1, &SearchOptions::default().space("wide"))
            .unwrap_err()
    )
    .starts_with("query"));
    // Guarded writes: unknown space, wrong dimension, not finite.
    let chunk = store.chunks_missing_vectors("wide", None, 5).expect("walk")[0].clone();
    assert_eq!(
        input_field(
            store
                .write_space_vectors("nope", vec![SpaceVector::for_chunk(&chunk, wide("x"))])
                .unwrap_err()
        ),
        "space"
    );
    let ok = SpaceVector::for_chunk(&chunk, wide(&chunk.text));
    for (bad, field) in [
        (vec![1.0; WIDE + 1], "vectors[1].vector"),
        (vec![f32::NAN; WIDE], "vectors[1].vector[0]"),
    ] {
        let e = store
            .write_space_vectors(
                "wide",
                vec![ok.clone(), SpaceVector::for_chunk(&chunk, bad)],
            )
            .unwrap_err();
        assert_eq!(input_field(e), field);
    }
    // Chunks: unknown space, wrong dimension, the default space by name.
    for (chunk, field) in [
        (
            Chunk::new("n", crate::common::vector("n")).with_space_vector("nope", wide("n")),
            "chunks[0].spaces.nope",
        ),
        (
            Chunk::new("n", crate::common::vector("n")).with_space_vector("wide", vec![1.0; 3]),
            "chunks[0].spaces.wide",
        ),
        (
            Chunk::new("n", crate::common::vector("n")).with_space_vector("default", vec![1.0; 3]),
            "chunks[0].spaces.default",
        ),
        (
            Chunk::new("n", crate::common::vector("n"))
                .with_space_vector("wide", vec![f32::INFINITY; WIDE]),
            "chunks[0].spaces.wide[0]",
        ),
    ] {
        let doc = Document::new("s", "n", Version::number(1)).with_chunk(chunk);
        let e = store.upsert(doc).unwrap_err();
        let found = input_field(e);
        assert!(
            found.starts_with(field) || found == field,
            "{found} for {field}"
        );
    }
    assert_eq!(state(&store), before, "nothing changed");

    // A complete space: a revision without its vector is refused, the rest of the batch
    // goes on.
    let missing = store.chunks_missing_vectors("wide", None, 5).expect("walk");
    let vectors = missing
        .iter()
        .map(|c| SpaceVector::for_chunk(c, wide(&c.text)))
        .collect();
    store.write_space_vectors("wide", vectors).expect("fill");
    let before = state(&store);
    let results = store
        .write_batch(vec![
            Op::Upsert(revision("b", 1, 1)),
            Op::Upsert(Document::new("s", "c", Version::number(1)).with_chunk(
                Chunk::new("c", crate::common::vector("c")).with_space_vector("wide", wide("c")),
            )),
        ])
        .expect("batch");
    match &results[0] {
        Err(WriteError::MissingSpaceVector { space, position }) => {
            assert_eq!((space.as_str(), *position), ("wide", 0))
        }
        other => panic!("{other:?}"),
    }
    assert!(results[1].is_ok(), "{:?}", results[1]);
    assert!(store.get("s", "b").expect("get").is_none());
    assert_ne!(state(&store), before);
    let report = store.verify().expect("verify");
    assert!(report.is_ok(), "{:#?}", report.violations);
}
