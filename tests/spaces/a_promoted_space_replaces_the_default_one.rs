//! Dropping the default space once another is active promotes that one in its place, in
//! one transaction (issue 46): every live chunk's vector becomes its vector in the promoted
//! space, the store records that space's model and dimension and answers to its name, the
//! space's own rows go, `verify` is clean, and writes need (and take) only the new vectors.
//! Text and hybrid searches find the same chunks (their indexes are keyed by vector id). A
//! reopen (the persisted graph built again from the new vectors) keeps it so.

use super::{every_chunk_found_by_its_wide_vector, live_texts, moved_to_wide, wide, WIDE};
use ratchetdb::{Chunk, Document, Options, SearchOptions, Store, Version, WriteError};

fn input_field(e: WriteError) -> String {
    match e {
        WriteError::Input(e) => e.field,
        other => panic!("expected an input error, got {other:?}"),
    }
}

fn check_promoted(store: &Store) {
    let spaces = store.spaces().expect("spaces");
    assert_eq!(spaces.len(), 1, "{spaces:?}");
    let space = &spaces[0];
    assert_eq!(space.name, "wide");
    assert_eq!(space.model, "wide-test");
    assert_eq!(space.dimension, Some(WIDE));
    assert!(space.active && space.is_complete());
    assert_eq!(store.dimension(), Some(WIDE));
    assert_eq!(store.model(), Some("wide-test"));
    let stats = store.stats().expect("stats");
    assert_eq!(stats.dimension, Some(WIDE));
    assert_eq!(stats.model.as_deref(), Some("wide-test"));
    assert!(stats.spaces.is_empty());
    // Every stored vector is the chunk's `wide` one, and every chunk is found by it,
    // through the active space, the default one by either name.
    for doc in store.documents(true).expect("documents") {
        for chunk in &doc.chunks {
            let stored = chunk.vector.as_ref().expect("a vector");
            assert_eq!(stored.len(), WIDE);
        }
    }
    for options in [
        SearchOptions::default(),
        SearchOptions::default().space("wide"),
        SearchOptions::default().space("default"),
    ] {
        every_chunk_found_by_its_wide_vector(store, &options);
    }
    // The text index and the filter index are keyed by vector id, which no chunk changed:
    // text and hybrid searches (filtered too) find the same chunks.
    let text = "d7 v1 c2";
    if store.has_text_index() {
        let hits = store
            .search_text(text, 1, &SearchOptions::default())
            .expect("text search");
        assert_eq!(hits[0].text, text);
        let filter = ratchetdb::Filter::parse(&serde_json::json!({"tag": {"$exists": false}}))
            .expect("filter");
        let filtered = SearchOptions::default().filter(filter);
        let hits = store
            .search_hybrid(text, &wide(text), 1, &filtered)
            .expect("hybrid search");
        assert_eq!(hits[0].text, text);
        let hits = store
            .search(&wide(text), 1, &filtered)
            .expect("filtered search");
        assert_eq!(hits[0].text, text);
    }
    let report = store.verify().expect("verify");
    assert!(report.is_ok(), "{:#?}", report.violations);
}

#[test]
fn a_promoted_space_replaces_the_default_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = moved_to_wide(dir.path(), 20);
    let texts = live_texts(&store);
    let chunks = texts.len() as u64;
    assert_eq!(store.drop_space("default").expect("promote"), chunks);
    assert_eq!(live_texts(&store), texts);
    check_promoted(&store);
    assert!(store.wait_for_index(std::time::Duration::from_secs(60)));
    assert_eq!(store.index_info().live_vectors, chunks);
    check_promoted(&store);

    // Writes take the new vectors alone; the old dimension is refused as a mismatch, a
    // vector for the promoted space by its name as input naming the field; neither changes
    // anything.
    let before = store.documents(true).expect("documents");
    let old = Document::new("s", "new", Version::number(1))
        .with_chunk(Chunk::new("new text", crate::common::vector("new text")));
    match store.upsert(old).unwrap_err() {
        WriteError::DimensionMismatch {
            position: 0,
            expected,
            found: 3,
        } => assert_eq!(expected, WIDE),
        other => panic!("expected the old dimension refused, got {other:?}"),
    }
    let named = Document::new("s", "new", Version::number(1)).with_chunk(
        Chunk::new("new text", wide("new text")).with_space_vector("wide", wide("new text")),
    );
    assert_eq!(
        input_field(store.upsert(named).unwrap_err()),
        "chunks[0].spaces.wide"
    );
    assert_eq!(store.documents(true).expect("documents"), before);
    store
        .upsert(
            Document::new("s", "new", Version::number(1))
                .with_chunk(Chunk::new("new text", wide("new text"))),
        )
        .expect("a write with the new vectors alone");
    store
        .upsert(super::revision("d3", 2, 0).with_chunk(Chunk::new("d3 again", wide("d3 again"))))
        .expect("a rewrite");
    check_promoted(&store);
    // Nothing to promote now: the default space is the active one.
    assert_eq!(
        input_field(store.drop_space("default").unwrap_err()),
        "name"
    );
    assert_eq!(input_field(store.drop_space("wide").unwrap_err()), "name");
    // The promoted name is taken.
    assert_eq!(
        input_field(store.add_space("wide", "m", 4).unwrap_err()),
        "name"
    );

    // A graph persisted from the new vectors, then a reopen that loads it.
    store.build_index().expect("build");
    drop(store);
    let store = Store::open(dir.path().join("db.redb"), Options::default()).expect("reopen");
    assert!(store.wait_for_index(std::time::Duration::from_secs(60)));
    check_promoted(&store);
}
