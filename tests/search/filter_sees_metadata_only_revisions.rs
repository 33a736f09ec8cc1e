//! Regression (issue 19): the in-memory filter index must see revisions that change only
//! metadata. Such a revision keeps every vector (same text and vector: same vector ids) and
//! used to write no changelog row, so an index kept up to date from the changelog would
//! have gone on answering with the old metadata. Every revision now lists all its vector
//! ids in its changelog row (re-inserting an identical vector changes nothing in the vector
//! index), and the filter index re-reads the documents named there.

use ratchetdb::{Chunk, Document, Filter, Op, Options, SearchOptions, Store, Version};
use serde_json::{json, Value};

fn doc(version: u64, doc_meta: Value, chunk_meta: Value) -> Document {
    Document::new("s", "a", Version::number(version))
        .with_meta(doc_meta)
        .with_chunk(Chunk::new("same text", vec![1.0, 2.0, 3.0]).with_meta(chunk_meta))
        .with_chunk(Chunk::new("other text", vec![3.0, 2.0, 1.0]))
}

fn matching(store: &Store, filter: Value) -> Vec<(String, u32)> {
    let options = SearchOptions::default().filter(Filter::parse(&filter).unwrap());
    let mut hits: Vec<_> = store
        .search(&[1.0, 1.0, 1.0], 10, &options)
        .unwrap()
        .into_iter()
        .map(|h| (h.id, h.position))
        .collect();
    hits.sort();
    hits
}

#[test]
fn metadata_only_revisions_reach_the_filter_index() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("db.redb"), Options::default().dimension(3)).unwrap();
    let other = Document::new("s", "b", Version::number(1))
        .with_chunk(Chunk::new("b text", vec![1.0, 1.0, 1.0]).with_meta(json!({"lang": "fr"})));
    store.upsert(other).unwrap();
    store
        .upsert(doc(1, json!({"team": "red"}), json!({"lang": "en"})))
        .unwrap();
    // The first filtered search builds the filter index.
    assert_eq!(matching(&store, json!({"lang": "en"})), [("a".into(), 0)]);
    assert_eq!(matching(&store, json!({"team": "red"})).len(), 2);

    // Chunk metadata only: same texts, same vectors.
    let outcome = store
        .upsert(doc(2, json!({"team": "red"}), json!({"lang": "de"})))
        .unwrap();
    assert!(
        matches!(
            outcome,
            ratchetdb::Outcome::Written {
                chunks_written: 0,
                ..
            }
        ),
        "{outcome:?}"
    );
    assert!(matching(&store, json!({"lang": "en"})).is_empty());
    assert_eq!(matching(&store, json!({"lang": "de"})), [("a".into(), 0)]);

    // Document metadata only.
    store
        .upsert(doc(3, json!({"team": "blue"}), json!({"lang": "de"})))
        .unwrap();
    assert!(matching(&store, json!({"team": "red"})).is_empty());
    assert_eq!(matching(&store, json!({"team": "blue"})).len(), 2);

    // Through a batch of the concurrent writer's kind, then a delete.
    for r in store
        .write_batch(vec![Op::Upsert(doc(
            4,
            json!({"team": "green"}),
            json!({}),
        ))])
        .unwrap()
    {
        r.unwrap();
    }
    assert!(matching(&store, json!({"lang": "de"})).is_empty());
    assert_eq!(matching(&store, json!({"team": "green"})).len(), 2);
    store.delete("s", "a", Version::number(5)).unwrap();
    assert!(matching(&store, json!({"team": {"$exists": true}})).is_empty());
    assert_eq!(matching(&store, json!({"lang": "fr"})), [("b".into(), 0)]);
    assert!(store.verify().unwrap().is_ok());
}
