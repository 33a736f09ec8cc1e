//! A file written by the schema-6 build (one vector space: the store's own vectors) is
//! converted to schema 10 when this build opens it (the original kept beside it as a
//! backup): the conversion only adds the vector spaces' tables, so every document row, the
//! chunks and vectors rows, the changelog and the graph snapshot are kept byte for byte,
//! and the store's vectors are its `default` space, active and complete. A second space
//! can then be added, filled from the walk and activated on the converted file, which
//! verifies clean and reopens. Opening is one transaction: an I/O failure at any point of
//! it leaves a file that opens with the fixture's contents. The fixture and how it was
//! made: `tests/fixtures/schema6-README.md`.

use crate::support;
use ratchetdb::{Options, SearchOptions, SpaceVector, Store};

use support::converted::table_rows;

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/schema6-store.redb"
);
/// The schema-6 fixture holds the schema-5 one's documents, exported as the schema-3 one.
const EXPORT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/schema3-export.json"
);

const CHANGELOG: redb::TableDefinition<u64, &[u8]> = redb::TableDefinition::new("changelog");
const INDEX_SNAPSHOT: redb::TableDefinition<u32, &[u8]> =
    redb::TableDefinition::new("index_snapshot");

/// A deterministic 8-dimensional vector for a text (the new space's "model").
fn embed(text: &str) -> Vec<f32> {
    let mut v = vec![0.5f32; 8];
    for (i, b) in text.bytes().enumerate() {
        v[i % 8] += f32::from(b) / 255.0;
    }
    v
}

#[test]
fn schema_6_file_is_converted_on_open() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("old.redb");
    std::fs::copy(FIXTURE, &path).expect("copy the fixture");
    assert_eq!(support::schema_version(&path), 6);
    let old_rows = support::revision_rows(&path);
    let old_docs = support::doc_rows(&path);
    let old_changelog = table_rows(&path, CHANGELOG);
    let old_graph = table_rows(&path, INDEX_SNAPSHOT);
    assert!(
        !old_graph.is_empty(),
        "the fixture carries a graph snapshot"
    );

    let store = Store::open(&path, Options::default()).expect("the fixture opens");
    support::assert_same_contents_as_export(&store, EXPORT, "after the conversion");
    let spaces = store.spaces().expect("spaces");
    assert_eq!(spaces.len(), 1, "{spaces:?}");
    assert_eq!(spaces[0].name, "default");
    assert!(spaces[0].active && spaces[0].is_complete(), "{spaces:?}");
    assert_eq!(spaces[0].dimension, Some(32));
    assert_eq!(spaces[0].live_chunks, 132);
    drop(store);

    assert_eq!(
        support::schema_version(&path),
        10,
        "the file is stamped schema 10"
    );
    let backup = dir.path().join("old.redb.schema6-backup");
    assert_eq!(support::schema_version(&backup), 6, "the backup's schema");
    // Nothing but the new tables: every old row byte for byte.
    assert_eq!(
        support::revision_rows(&path),
        old_rows,
        "chunks and vectors rows"
    );
    assert_eq!(support::doc_rows(&path), old_docs, "document rows");
    assert_eq!(table_rows(&path, CHANGELOG), old_changelog, "the changelog");
    assert_eq!(
        table_rows(&path, INDEX_SNAPSHOT),
        old_graph,
        "the graph snapshot"
    );
    let tables = support::table_names(&path);
    for table in ["spaces", "space_vectors", "space_changelog"] {
        assert!(tables.contains(&table.to_string()), "{table}: {tables:?}");
    }

    // A second space on the converted file: filled from the walk, activated, searched.
    let store = Store::open(&path, Options::default()).expect("reopen");
    store.add_space("wide", "test-8", 8).expect("add a space");
    let mut after = None;
    let mut written = 0;
    loop {
        let chunks = store
            .chunks_missing_vectors("wide", after, 50)
            .expect("walk");
        let Some(last) = chunks.last() else { break };
        after = Some(last.revision);
        let vectors: Vec<SpaceVector> = chunks
            .iter()
            .map(|c| SpaceVector::for_chunk(c, embed(&c.text)))
            .collect();
        written += store
            .write_space_vectors("wide", vectors)
            .expect("write")
            .written;
    }
    assert_eq!(written, 132);
    store.activate("wide").expect("activate");
    let doc = store.get("notes", "long").expect("get").expect("long");
    let text = &doc.chunks[3].text;
    let hits = store
        .search(&embed(text), 1, &SearchOptions::default().exact(true))
        .expect("search the new space");
    assert_eq!(&hits[0].text, text);
    let report = store.verify().expect("verify");
    assert!(report.is_ok(), "{:#?}", report.violations);
    drop(store);
    support::reopen_verified(&path);
}

/// Opening is one transaction: fail each of its writes, syncs and length changes in turn;
/// whatever the durable image then is, it opens with the fixture's contents.
#[test]
fn a_failed_conversion_of_a_schema_6_file_leaves_a_file_that_opens_whole() {
    support::converted::assert_failed_conversions_reopen_whole(FIXTURE, EXPORT);
}
