//! A store written without the text index (`Options::text_index(false)`) has none (text
//! search is `NoTextIndex`, `has_text_index` false; on PostgreSQL no text rows); reopened
//! with the default options it gains one on open, built from the chunks already there: text
//! search finds the earlier documents, later writes are indexed too, a read-only open sees
//! it, verify passes; and opening without the index again removes it. (The file's other
//! ways to lack a current index are `tests/storage/text_index_is_built_for_existing_stores.rs`.)

use crate::common::assert_verified;
use crate::fixture::Fixture;
use ratchetdb::{Chunk, Document, Options, ReadError, SearchOptions, Store, Version};

crate::conformance!(a_store_without_the_text_index_gains_it_on_open);

fn doc(id: &str, version: u64, text: &str) -> Document {
    Document::new("wiki", id, Version::number(version))
        .with_chunk(Chunk::new(text, vec![1.0, 0.5, 0.25]))
}

fn ids(store: &Store, query: &str) -> Vec<String> {
    let mut ids: Vec<String> = store
        .search_text(query, 10, &SearchOptions::default())
        .expect("text search")
        .into_iter()
        .map(|h| h.id)
        .collect();
    ids.sort();
    ids
}

/// The rows of the server's text tables `chunk_lengths` and `chunk_terms`, on PostgreSQL.
#[cfg(feature = "postgres")]
fn text_rows(b: &dyn Fixture) -> Option<(i64, i64)> {
    let pg = b.as_postgres()?;
    let rows = |table: &str| {
        ratchetdb::testkit::pg_query_i64(
            pg.url(),
            &format!("SELECT count(*) FROM {}.{table}", pg.schema("db")),
        )
        .expect("count rows")
    };
    Some((rows("chunk_lengths"), rows("chunk_terms")))
}

/// No server, no rows to count.
#[cfg(not(feature = "postgres"))]
fn text_rows(_: &dyn Fixture) -> Option<(i64, i64)> {
    None
}

fn a_store_without_the_text_index_gains_it_on_open(b: &dyn Fixture) {
    let store_url = b.address("db");

    let without = Options::default().dimension(3).text_index(false);
    {
        let store = Store::open(&store_url, without.clone()).expect("open without the index");
        store
            .upsert(doc("a", 1, "ratchets turn one way"))
            .expect("upsert");
        store
            .upsert(doc("b", 1, "pawls stop ratchets"))
            .expect("upsert");
        store.upsert(doc("c", 1, "gears mesh")).expect("upsert");
        assert!(!store.has_text_index());
        let error = store
            .search_text("ratchets", 10, &SearchOptions::default())
            .expect_err("no text index");
        assert!(matches!(error, ReadError::NoTextIndex { .. }), "{error:?}");
        if let Some(rows) = text_rows(b) {
            assert_eq!(rows, (0, 0));
        }
        assert_verified(&store);
    }

    let store = Store::open(&store_url, Options::default()).expect("reopen with defaults");
    assert!(store.has_text_index());
    assert_eq!(ids(&store, "ratchets"), ["a", "b"]);
    assert_eq!(ids(&store, "gears"), ["c"]);
    if let Some((lengths, _)) = text_rows(b) {
        assert_eq!(lengths, 3);
    }
    store.upsert(doc("d", 1, "more gears")).expect("upsert");
    assert_eq!(ids(&store, "gears"), ["c", "d"]);
    assert_verified(&store);
    // A read-only open sees the index the writer built.
    let reader = Store::open_read_only(&store_url).expect("read-only open");
    assert!(reader.has_text_index());
    assert_eq!(ids(&reader, "gears"), ["c", "d"]);
    drop(reader);
    drop(store);

    // Opened without the index again: the rows go, and text search says so.
    let store = Store::open(&store_url, without).expect("open without the index");
    assert!(!store.has_text_index());
    if let Some(rows) = text_rows(b) {
        assert_eq!(rows, (0, 0));
    }
    assert_verified(&store);
}
