//! Search through pgvector never returns a superseded chunk (I5 on the Postgres backend):
//! while one connection keeps revising documents (each revision's chunks carry the
//! revision's version in their text, and vectors that sit near the query), searches on
//! another connection, through the HNSW index and exact, return only chunks of the revision
//! their document holds in that same statement's snapshot: the hit's generation is its
//! document's, the text names a version the document has had, no deleted document appears,
//! and once writes stop every hit is of the document's current revision.

use crate::pg;
use ratchetdb::{Chunk, Document, Options, PgStore, SearchOptions, Version};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

const DOCS: u64 = 12;
const ROUNDS: u64 = 25;

fn revision(doc: u64, version: u64) -> Document {
    let mut d = Document::new("src", format!("doc{doc}"), Version::number(version));
    // Revisions alternate between 3 and 1 chunks, so surplus chunks come and go.
    let chunks = if version.is_multiple_of(2) { 3 } else { 1 };
    for position in 0..chunks {
        let angle = (doc * 7 + position) as f32 * 0.01 + version as f32 * 0.001;
        d = d.with_chunk(Chunk::new(
            format!("doc{doc} v{version} p{position}"),
            vec![1.0, angle, 0.5 * angle],
        ));
    }
    d
}

fn check_hits(store: &PgStore, exact: bool) -> usize {
    let options = SearchOptions::default().exact(exact);
    let hits = store
        .search(&[1.0, 0.05, 0.02], 20, &options)
        .expect("search");
    for hit in &hits {
        let expected_prefix = format!("{} v{} ", hit.id, hit.version.value);
        assert!(
            hit.text.starts_with(&expected_prefix),
            "hit {:?} is not of the revision its document held ({})",
            hit.text,
            hit.version.value
        );
        assert_ne!(hit.id, "doc0", "a deleted document was returned");
    }
    hits.len()
}

#[test]
fn search_never_returns_superseded_chunks_on_postgres() {
    let Some((store, url)) = pg::fresh("search_superseded", Options::default()) else {
        return;
    };
    for doc in 0..DOCS {
        store.upsert(revision(doc, 1)).expect("first revision");
    }
    store
        .delete("src", "doc0", Version::number(2))
        .expect("delete");
    let writer = PgStore::open_in(&url, store.schema(), Options::default()).expect("writer");
    let done = Arc::new(AtomicBool::new(false));
    let writing = {
        let done = done.clone();
        std::thread::spawn(move || {
            for version in 2..2 + ROUNDS {
                for doc in 1..DOCS {
                    writer.upsert(revision(doc, version)).expect("revision");
                }
            }
            done.store(true, Ordering::SeqCst);
            writer
        })
    };
    let mut searches = 0;
    while !done.load(Ordering::SeqCst) {
        check_hits(&store, searches % 2 == 0);
        searches += 1;
    }
    let writer = writing.join().expect("writer thread");
    assert!(searches > 0);
    // At rest: every hit is of the current revision, and a superseded text never matches.
    for exact in [false, true] {
        let options = SearchOptions::default().exact(exact);
        let hits = writer
            .search(&[1.0, 0.05, 0.02], 30, &options)
            .expect("search");
        let last = 1 + ROUNDS;
        // Live chunks: 11 documents of 3 chunks (the last version is even).
        assert_eq!(hits.len(), if last.is_multiple_of(2) { 30 } else { 11 });
        for hit in hits {
            assert_eq!(hit.version, Version::number(last), "{hit:?}");
            let stored = writer.get("src", &hit.id).expect("get").expect("live");
            assert_eq!(hit.generation, stored.generation);
        }
    }
    pg::assert_verified(&writer);
    drop(writer);
    store.destroy().expect("drop the schema");
}
