//! A store's vector spaces (issue 46): the embedded store adds an empty space, walks the
//! live chunks it lacks in batches, fills it with guarded writes, refuses to activate it
//! while it is incomplete (naming how many chunks lack a vector), activates it, searches
//! it by default afterwards (the default space still by name), requires its vectors in
//! every later revision, and drops it once another space is active. PostgreSQL keeps only
//! the default space: every space operation is `Unsupported` naming the operation, a search
//! naming another space too, and a chunk carrying another space's vector is refused as
//! input naming the field.

use crate::fixture::Fixture;
use ratchetdb::{
    Chunk, Document, Options, ReadError, SearchOptions, SpaceVector, Version, WriteError,
};

crate::conformance!(vector_spaces_are_added_filled_activated_and_dropped);

/// The second space's vector for a text: 4 dimensions, deterministic.
fn wide(text: &str) -> Vec<f32> {
    let h = text
        .bytes()
        .fold(17u32, |h, b| h.wrapping_mul(31).wrapping_add(b.into()));
    vec![
        1.0 + (h % 7) as f32,
        1.0 + (h / 7 % 11) as f32,
        1.0 + (h / 77 % 13) as f32,
        1.0 + (h / 1001 % 5) as f32,
    ]
}

fn doc(id: &str, version: u64, texts: &[&str]) -> Document {
    let mut doc = Document::new("s", id, Version::number(version));
    for text in texts {
        doc = doc.with_chunk(Chunk::new(*text, crate::common::vector(text)));
    }
    doc
}

fn vector_spaces_are_added_filled_activated_and_dropped(b: &dyn Fixture) {
    let store = b.open_with("db", Options::default().dimension(3));
    store.upsert(doc("a", 1, &["alpha", "beta"])).unwrap();
    store.upsert(doc("b", 1, &["gamma"])).unwrap();

    if b.is_postgres() {
        let unsupported = |e: WriteError, op: &str| {
            assert!(
                matches!(&e, WriteError::Unsupported { operation, .. } if *operation == op),
                "{e:?}"
            );
        };
        unsupported(
            store.add_space("wide", "m", 4).unwrap_err(),
            "Store::add_space",
        );
        unsupported(store.activate("wide").unwrap_err(), "Store::activate");
        unsupported(store.drop_space("wide").unwrap_err(), "Store::drop_space");
        unsupported(
            store.drop_space("default").unwrap_err(),
            "Store::drop_space",
        );
        unsupported(
            store.write_space_vectors("wide", Vec::new()).unwrap_err(),
            "Store::write_space_vectors",
        );
        for (e, op) in [
            (store.spaces().unwrap_err(), "Store::spaces"),
            (
                store.chunks_missing_vectors("wide", None, 10).unwrap_err(),
                "Store::chunks_missing_vectors",
            ),
            (
                store
                    .search(&[1.0, 0.0, 0.0], 1, &SearchOptions::default().space("wide"))
                    .unwrap_err(),
                "SearchOptions::space",
            ),
        ] {
            assert!(
                matches!(&e, ReadError::Unsupported { operation, .. } if *operation == op),
                "{e:?}"
            );
        }
        let with_space = Document::new("s", "c", Version::number(1))
            .with_chunk(Chunk::new("x", vec![1.0, 0.0, 0.0]).with_space_vector("wide", wide("x")));
        match store.upsert(with_space).unwrap_err() {
            WriteError::Input(e) => assert_eq!(e.field, "chunks[0].spaces.wide"),
            other => panic!("{other:?}"),
        }
        assert!(store.get("s", "c").unwrap().is_none());
        return;
    }

    let added = store.add_space("wide", "wide-model", 4).unwrap();
    assert_eq!(added.vectors, 0);
    assert_eq!(added.missing(), 3);
    let spaces = store.spaces().unwrap();
    assert_eq!(spaces.len(), 2);
    assert_eq!(spaces[0].name, "default");
    assert!(spaces[0].active && spaces[0].is_complete());
    assert_eq!(spaces[1].name, "wide");
    assert_eq!(spaces[1].model, "wide-model");
    assert_eq!(spaces[1].dimension, Some(4));
    assert!(!spaces[1].active);

    // Incomplete: activation refused, naming how many chunks lack a vector.
    match store.activate("wide").unwrap_err() {
        WriteError::SpaceIncomplete { space, missing } => {
            assert_eq!((space.as_str(), missing), ("wide", 3));
        }
        other => panic!("{other:?}"),
    }
    // An incomplete space may be omitted by a revision.
    store.upsert(doc("c", 1, &["delta"])).unwrap();

    // The walk, two at a time, with its cursor.
    let first = store.chunks_missing_vectors("wide", None, 2).unwrap();
    assert_eq!(first.len(), 2);
    let rest = store
        .chunks_missing_vectors("wide", Some(first[1].revision), 2)
        .unwrap();
    assert_eq!(rest.len(), 2);
    let mut all: Vec<_> = first.iter().chain(&rest).map(|c| c.text.clone()).collect();
    all.sort();
    assert_eq!(all, ["alpha", "beta", "delta", "gamma"]);
    assert!(store
        .chunks_missing_vectors("wide", Some(rest[1].revision), 2)
        .unwrap()
        .is_empty());

    let vectors: Vec<SpaceVector> = first
        .iter()
        .chain(&rest)
        .map(|c| SpaceVector::for_chunk(c, wide(&c.text)))
        .collect();
    let wrote = store.write_space_vectors("wide", vectors.clone()).unwrap();
    assert_eq!((wrote.written, wrote.superseded, wrote.present), (4, 0, 0));
    // Again: present, nothing written.
    let again = store.write_space_vectors("wide", vectors).unwrap();
    assert_eq!((again.written, again.present), (0, 4));
    assert!(store
        .chunks_missing_vectors("wide", None, 10)
        .unwrap()
        .is_empty());
    crate::common::assert_verified(&store);

    // Complete: a revision must bring its vectors there; one that does is written.
    match store.upsert(doc("d", 1, &["epsilon"])).unwrap_err() {
        WriteError::MissingSpaceVector { space, position } => {
            assert_eq!((space.as_str(), position), ("wide", 0));
        }
        other => panic!("{other:?}"),
    }
    assert!(store.get("s", "d").unwrap().is_none());
    store
        .upsert(
            Document::new("s", "d", Version::number(1)).with_chunk(
                Chunk::new("epsilon", crate::common::vector("epsilon"))
                    .with_space_vector("wide", wide("epsilon")),
            ),
        )
        .unwrap();
    // A revision keeping a chunk keeps its vectors: no new one needed for "alpha".
    store.upsert(doc("a", 2, &["alpha"])).unwrap();

    store.activate("wide").unwrap();
    let default_hit = |options: &SearchOptions, query: &[f32]| {
        store.search(query, 1, options).unwrap()[0].text.clone()
    };
    // The active space answers searches without a space, and takes its queries.
    assert_eq!(
        default_hit(&SearchOptions::default(), &wide("gamma")),
        "gamma"
    );
    assert_eq!(
        default_hit(
            &SearchOptions::default().space("default"),
            &crate::common::vector("delta")
        ),
        "delta"
    );
    match store
        .search(
            &crate::common::vector("delta"),
            1,
            &SearchOptions::default(),
        )
        .unwrap_err()
    {
        ReadError::Input(e) => assert!(e.field.starts_with("query"), "{e:?}"),
        other => panic!("{other:?}"),
    }
    // Superseded chunks never come back from the space: "beta" was dropped by a's v2.
    let hits = store
        .search(&wide("beta"), 10, &SearchOptions::default())
        .unwrap();
    assert!(hits.iter().all(|h| h.text != "beta"), "{hits:?}");
    assert_eq!(hits.len(), 4);

    // The active space cannot be dropped, nor the default one while it is the active one
    // (no space to promote in its place; `tests/spaces/` promotes one).
    assert!(matches!(store.drop_space("wide"), Err(WriteError::Input(e)) if e.field == "name"));
    store.activate("default").unwrap();
    assert!(matches!(store.drop_space("default"), Err(WriteError::Input(e)) if e.field == "name"));
    assert_eq!(store.drop_space("wide").unwrap(), 4);
    assert_eq!(store.spaces().unwrap().len(), 1);
    // Gone: revisions no longer need it, and naming it is input.
    store.upsert(doc("e", 1, &["zeta"])).unwrap();
    match store
        .search(&wide("x"), 1, &SearchOptions::default().space("wide"))
        .unwrap_err()
    {
        ReadError::Input(e) => assert_eq!(e.field, "space"),
        other => panic!("{other:?}"),
    }
    crate::common::assert_verified(&store);
}
