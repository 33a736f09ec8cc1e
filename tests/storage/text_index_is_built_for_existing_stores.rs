//! Stores without a (current) text index gain one when a writer opens them, in one
//! transaction, and `verify()` then finds the postings in agreement with the chunks:
//! - a store kept without it (`Options::text_index(false)`, which removes it: text search
//!   is then `ReadError::NoTextIndex`, for a reader process too);
//! - the committed schema-2 fixture, converted on open;
//! - a store whose documents moved past the commit the index covers (what a build without
//!   the text index leaves), which text search refuses until a writer rebuilds it;
//! - a store reopened with another analysis (English stemming), rebuilt for it.

use ratchetdb::{
    Chunk, Document, Options, ReadError, SearchOptions, Store, TextLanguage, TextOptions, Version,
};
use redb::TableDefinition;

const COUNTERS: TableDefinition<&str, u64> = TableDefinition::new("counters");

/// A two-chunk note (also used by `a_text_index_in_the_row_per_chunk_format_is_rebuilt`).
pub(crate) fn doc(id: &str, text: &str) -> Document {
    Document::new("notes", id, Version::number(1))
        .with_chunk(Chunk::new(text, vec![1.0, 0.5]))
        .with_chunk(Chunk::new(format!("{id} second part"), vec![0.5, 1.0]))
}

fn assert_verified(store: &Store, when: &str) {
    let report = store.verify().expect("verify");
    assert!(report.is_ok(), "{when}: {:?}", report.violations);
}

/// The ids of the documents a text search for `query` finds, sorted.
pub(crate) fn ids(store: &Store, query: &str) -> Vec<String> {
    let mut ids: Vec<String> = store
        .search_text(query, 10, &SearchOptions::default())
        .expect("search_text")
        .into_iter()
        .map(|h| h.id)
        .collect();
    ids.sort();
    ids
}

#[test]
fn a_store_kept_without_the_text_index_gains_it_on_open() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("plain.redb");
    {
        let store = Store::open(&path, Options::default().text_index(false)).expect("open");
        store
            .upsert(doc("a", "the pawl stops the gear"))
            .expect("a");
        store.upsert(doc("b", "coffee beans")).expect("b");
        store
            .delete("notes", "b", Version::number(2))
            .expect("delete");
        store.upsert(doc("c", "a gear train")).expect("c");
        assert!(!store.has_text_index());
        assert!(matches!(
            store.search_text("gear", 5, &SearchOptions::default()),
            Err(ReadError::NoTextIndex { .. })
        ));
        assert_verified(&store, "without the text index");
    }
    {
        let reader = Store::open_read_only(&path).expect("read-only");
        assert!(matches!(
            reader.search_text("gear", 5, &SearchOptions::default()),
            Err(ReadError::NoTextIndex { .. })
        ));
    }
    let store = Store::open(&path, Options::default()).expect("reopen");
    assert!(store.has_text_index());
    assert_verified(&store, "after the build on open");
    assert_eq!(ids(&store, "gear"), ["a", "c"]);
    assert!(ids(&store, "coffee").is_empty(), "a deleted document");
    drop(store);
    let reader = Store::open_read_only(&path).expect("read-only");
    assert_eq!(ids(&reader, "gear"), ["a", "c"]);
}

#[test]
fn the_schema_2_fixture_gains_the_text_index_when_converted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("schema2.redb");
    std::fs::copy(
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/schema2-store.redb"
        ),
        &path,
    )
    .expect("copy the fixture");
    let store = Store::open(&path, Options::default()).expect("open");
    assert_verified(&store, "converted");
    // Every chunk whose text has the word, and only those.
    let snapshot = store.snapshot().expect("snapshot");
    let mut expected = 0;
    for doc in snapshot.documents(false).expect("documents") {
        let doc = doc.expect("document");
        expected += doc
            .chunks
            .iter()
            .filter(|c| {
                c.text
                    .split(|ch: char| !ch.is_alphanumeric())
                    .any(|w| w == "pawl")
            })
            .count();
    }
    assert!(expected > 0, "the fixture has the word");
    let hits = store
        .search_text("pawl", 10_000, &SearchOptions::default())
        .expect("search_text");
    assert_eq!(hits.len(), expected);
}

#[test]
fn a_text_index_behind_the_documents_is_refused_then_rebuilt() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("behind.redb");
    {
        let store = Store::open(&path, Options::default()).expect("open");
        store.upsert(doc("a", "ratchet")).expect("a");
    }
    // What a build without the text index leaves: documents at a commit the index does
    // not cover.
    {
        let db = redb::Database::open(&path).expect("redb");
        let txn = db.begin_write().expect("write");
        txn.open_table(COUNTERS)
            .expect("totals")
            .insert("text.commit", 0)
            .expect("insert");
        txn.commit().expect("commit");
    }
    {
        let reader = Store::open_read_only(&path).expect("read-only");
        assert!(matches!(
            reader.search_text("ratchet", 5, &SearchOptions::default()),
            Err(ReadError::NoTextIndex { .. })
        ));
        assert!(!reader.verify().expect("verify").is_ok(), "verify sees it");
    }
    let store = Store::open(&path, Options::default()).expect("reopen");
    assert_verified(&store, "rebuilt");
    assert_eq!(ids(&store, "ratchet"), ["a"]);
}

#[test]
fn another_analysis_rebuilds_the_text_index() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("english.redb");
    {
        let store = Store::open(&path, Options::default()).expect("open");
        store
            .upsert(doc("a", "the runners were running"))
            .expect("a");
        assert!(ids(&store, "run").is_empty(), "no stemming by default");
    }
    let english = Options::default().text(TextOptions::language(TextLanguage::English));
    let store = Store::open(&path, english).expect("reopen in English");
    assert_verified(&store, "rebuilt in English");
    assert_eq!(ids(&store, "run"), ["a"]);
    assert!(ids(&store, "the").is_empty(), "a stop word");
    store.upsert(doc("b", "she runs")).expect("b");
    assert_eq!(ids(&store, "running"), ["a", "b"]);
    drop(store);
    // Reopened without text options: the recorded analysis stays.
    let store = Store::open(&path, Options::default()).expect("reopen");
    assert_eq!(ids(&store, "run"), ["a", "b"]);
    assert_verified(&store, "reopened");
}
