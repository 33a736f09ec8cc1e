//! A PostgreSQL store written without the text index (`Options::text_index(false)`) has
//! none (text search is `NoTextIndex`, `has_text_index` false, no text rows); reopened with
//! the default options it gains one on open, built from the chunks already there: text
//! search finds the earlier documents, later writes are indexed too, verify passes; and
//! opening without the index again removes it.

use crate::pg;
use ratchetdb::{Chunk, Document, Options, ReadError, SearchOptions, Store, Version};

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

#[test]
fn store_without_text_index_gains_it_on_postgres() {
    let Some(store_url) = pg::fresh_url("gains_text") else {
        return;
    };
    let url = pg::url("gains_text").expect("url");
    let schema = pg::schema("gains_text");
    let rows = |table: &str| {
        ratchetdb::testkit::pg_query_i64(&url, &format!("SELECT count(*) FROM {schema}.{table}"))
            .expect("count rows")
    };

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
        assert_eq!((rows("chunk_lengths"), rows("chunk_terms")), (0, 0));
        pg::assert_store_verified(&store);
    }

    let store = Store::open(&store_url, Options::default()).expect("reopen with defaults");
    assert!(store.has_text_index());
    assert_eq!(ids(&store, "ratchets"), ["a", "b"]);
    assert_eq!(ids(&store, "gears"), ["c"]);
    assert_eq!(rows("chunk_lengths"), 3);
    store.upsert(doc("d", 1, "more gears")).expect("upsert");
    assert_eq!(ids(&store, "gears"), ["c", "d"]);
    pg::assert_store_verified(&store);
    // A read-only open sees the index the writer built.
    let reader = Store::open_read_only(&store_url).expect("read-only open");
    assert!(reader.has_text_index());
    assert_eq!(ids(&reader, "gears"), ["c", "d"]);
    drop(reader);
    drop(store);

    // Opened without the index again: the rows go, and text search says so.
    let store = Store::open(&store_url, without).expect("open without the index");
    assert!(!store.has_text_index());
    assert_eq!((rows("chunk_lengths"), rows("chunk_terms")), (0, 0));
    pg::assert_store_verified(&store);
}
