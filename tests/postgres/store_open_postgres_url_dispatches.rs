//! `Store::open("postgres://...")` is the PostgreSQL backend behind the same `Store` API
//! (the API itself, on every backend, is `tests/conformance/`): the store says it is on
//! PostgreSQL and names its URL as its path, and what it writes is on the server's tables,
//! read back through a second, independent `Store` on its own connection (the same documents, content hashes and
//! totals).

use crate::pg;
use ratchetdb::{Chunk, Document, Options, Store, Version};

fn doc(id: &str, version: u64, texts: &[&str]) -> Document {
    let mut d = Document::new("wiki", id, Version::number(version));
    for (i, text) in texts.iter().enumerate() {
        d = d.with_chunk(Chunk::new(*text, vec![1.0, i as f32, 0.5]));
    }
    d
}

#[test]
fn store_open_postgres_url_dispatches() {
    let Some(url) = pg::fresh_url("facade") else {
        return;
    };
    let store = Store::open(&url, Options::default()).expect("open by URL");
    assert!(store.is_postgres());
    assert!(!store.is_read_only());
    assert!(store.path().to_str().unwrap().starts_with("postgres"));
    store
        .upsert(doc("a", 2, &["alpha one", "alpha two"]))
        .expect("upsert");
    store.upsert(doc("b", 1, &["beta"])).expect("upsert b");
    store
        .delete("wiki", "b", Version::number(2))
        .expect("delete");

    // Reads through the façade agree with an independent connection to the same tables.
    let independent = Store::open(
        pg::address(&pg::url("facade").unwrap(), &pg::schema("facade")),
        Options::default(),
    )
    .expect("second connection");
    let a = store.get("wiki", "a").expect("get").expect("a is stored");
    assert_eq!(
        independent
            .get("wiki", "a")
            .expect("get")
            .expect("a")
            .content_hash,
        a.content_hash
    );
    assert!(
        independent
            .get("wiki", "b")
            .expect("get")
            .expect("b")
            .deleted
    );
    let stats = independent.stats().expect("stats");
    assert_eq!((stats.documents, stats.tombstones), (1, 1));
    assert_eq!(
        independent.documents(true).expect("export"),
        store.documents(true).expect("documents")
    );
    pg::assert_store_verified(&store);
}
