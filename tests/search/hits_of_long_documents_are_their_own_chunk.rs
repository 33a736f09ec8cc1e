//! A hit is resolved by decoding just its own chunk of its document's chunks row (the other
//! chunks are skipped in place; issue 17). Documents of 1 to 24 chunks of 384-d vectors,
//! whose chunks rows are split between the chunks table and the slack of their vectors
//! rows' pages (the spill) from three chunks up: searching each chunk's own vector returns
//! that chunk (text, metadata, position, version, generation) as `get` has it, in every
//! search mode; a filter on chunk metadata is checked on the resolved chunk's own
//! metadata; after a revision the hits are the new revision's chunks, and after a delete
//! the document is gone.

use crate::search_support;

use ratchetdb::{Chunk, Document, Filter, SearchOptions, Store, Version};
use search_support::{assert_verified, normalized, open, random_vector, settle, Rng};

const DIM: usize = 384;
const DOCS: usize = 24;

fn text(doc: usize, position: usize, version: u64) -> String {
    format!("doc {doc} chunk {position} v{version} ").repeat(1 + (doc * 7 + position) % 40)
}

fn write(store: &Store, rng: &mut Rng, doc: usize, version: u64) -> Vec<Vec<f32>> {
    let vectors: Vec<Vec<f32>> = (0..=doc)
        .map(|_| normalized(random_vector(rng, DIM)))
        .collect();
    let mut document = Document::new("long", format!("d{doc}"), Version::number(version));
    for (p, v) in vectors.iter().enumerate() {
        document = document.with_chunk(
            Chunk::new(text(doc, p, version), v.clone())
                .with_meta(serde_json::json!({"position": p, "odd": p % 2 == 1})),
        );
    }
    store.upsert(document).expect("upsert");
    vectors
}

/// Every chunk's own vector finds that chunk first, equal to what `get` returns.
///
/// Regression (flaky, about one run in fifty): the graph search ran at `ef` 64, and on
/// these random 384-d vectors an approximate search now and then ranked another chunk
/// first, a recall miss, not a resolution error. The graph search now runs with a beam
/// wider than the graph (`ef` 1,000 over at most 600 points, live and superseded), so it
/// expands every point it can reach and its first hit is the exact one; what is tested is
/// still the graph's path and the hit's resolution.
fn check(store: &Store, docs: &[Vec<Vec<f32>>], when: &str) {
    let modes = [
        ("exact", SearchOptions::default().exact(true)),
        ("graph", SearchOptions::default().ef(1000)),
    ];
    for (doc, vectors) in docs.iter().enumerate() {
        let stored = store.get("long", &format!("d{doc}")).expect("get");
        let stored = stored.unwrap_or_else(|| panic!("{when}: d{doc} is missing"));
        for (p, vector) in vectors.iter().enumerate() {
            for (mode, options) in &modes {
                let hits = store.search(vector, 1, options).expect("search");
                let hit = &hits[0];
                let chunk = &stored.chunks[p];
                assert_eq!(
                    (hit.id.as_str(), hit.position, &hit.text, &hit.meta),
                    (stored.id.as_str(), p as u32, &chunk.text, &chunk.meta),
                    "{when}, {mode}: d{doc} chunk {p}"
                );
                assert_eq!(
                    (hit.version, hit.generation),
                    (stored.version, stored.generation),
                    "{when}, {mode}: d{doc} chunk {p}"
                );
            }
        }
    }
}

#[test]
fn hits_of_long_documents_are_their_own_chunk() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(dir.path());
    let mut rng = Rng::new(17);
    let mut docs: Vec<Vec<Vec<f32>>> = (0..DOCS).map(|d| write(&store, &mut rng, d, 1)).collect();
    settle(&store);
    store.build_index().expect("build");
    check(&store, &docs, "first revisions");

    // A filter on chunk metadata: every hit matches it on its own chunk.
    let odd = Filter::parse(&serde_json::json!({"odd": true})).expect("filter");
    let options = SearchOptions::default().filter(odd).exact(true);
    for vectors in &docs {
        for vector in vectors {
            for hit in store.search(vector, 5, &options).expect("search") {
                assert_eq!(hit.meta["odd"], serde_json::json!(true), "{hit:?}");
                assert_eq!(hit.meta["position"], serde_json::json!(hit.position));
            }
        }
    }

    // New revisions of every other document: hits are the new chunks, never the old ones.
    for doc in (0..DOCS).step_by(2) {
        docs[doc] = write(&store, &mut rng, doc, 2);
    }
    settle(&store);
    check(&store, &docs, "after revisions");

    // A deleted document's chunks are never hits.
    store
        .delete("long", "d23", Version::number(3))
        .expect("delete");
    for vector in &docs[23] {
        let hits = store
            .search(vector, 30, &SearchOptions::default().exact(true))
            .expect("search");
        assert!(
            hits.iter().all(|h| h.id != "d23"),
            "a deleted chunk came back"
        );
    }
    assert_verified(&store, "end");
}
