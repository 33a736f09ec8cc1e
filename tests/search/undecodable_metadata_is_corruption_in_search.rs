//! Regression: a search read stored metadata with `unwrap_or(null)`, so a document whose
//! metadata no longer decoded was searched (and filtered) as if it had none, while `get`
//! reported the same row as corrupted. Metadata that does not decode is now a corruption in
//! every read path: a filtered search and `get` both answer `ReadError::Corrupted`.

use ratchetdb::testkit::set_document_meta;
use ratchetdb::{Chunk, Document, Filter, Options, ReadError, SearchOptions, Store, Version};
use serde_json::json;

#[test]
fn undecodable_metadata_is_corruption_in_search() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("store.redb");
    {
        let store = Store::open(&path, Options::default().dimension(2)).expect("open");
        for (id, lang) in [("a", "en"), ("b", "fr")] {
            let doc = Document::new("s", id, Version::number(1))
                .with_meta(json!({ "lang": lang }))
                .with_chunk(Chunk::new(format!("text {id}"), vec![1.0, 0.5]));
            store.upsert(doc).expect("upsert");
        }
    }
    set_document_meta(&path, "s", "b", "{\"lang\": ").expect("damage the metadata");

    let store = Store::open(&path, Options::default()).expect("reopen");
    let filter = Filter::parse(&json!({ "lang": "fr" })).expect("filter");
    let filtered = store.search(&[1.0, 0.5], 2, &SearchOptions::default().filter(filter));
    assert!(
        matches!(filtered, Err(ReadError::Corrupted { ref what, .. }) if what == "metadata"),
        "a filtered search over damaged metadata: {filtered:?}"
    );
    let got = store.get("s", "b");
    assert!(
        matches!(got, Err(ReadError::Corrupted { ref what, .. }) if what == "metadata"),
        "get of the same document: {got:?}"
    );
    // The document whose metadata decodes is still read whole.
    let a = store.get("s", "a").expect("get a").expect("a is stored");
    assert_eq!(a.meta, json!({ "lang": "en" }));
}
