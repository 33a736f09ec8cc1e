//! Search never returns a superseded chunk (I5): while one thread keeps revising documents
//! (each revision's chunks carry the revision's version in their text, and vectors that
//! sit near the query), searches in another (on PostgreSQL on another connection), through
//! the index and exact, return only chunks of the revision their document holds in that
//! same search's snapshot: the hit's generation is its document's, the text names a
//! version the document has had, no deleted document appears, and once writes stop every
//! hit is of the document's current revision. (The embedded store's own version, with the
//! graph's lifecycle, is `tests/search/search_never_returns_superseded_chunks.rs`.)

use crate::common::assert_verified;
use crate::fixture::Fixture;
use ratchetdb::{Chunk, Document, Options, SearchOptions, Store, Version};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

crate::conformance!(search_never_returns_a_superseded_chunk);

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

fn check_hits(store: &Store, exact: bool) -> usize {
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

fn search_never_returns_a_superseded_chunk(b: &dyn Fixture) {
    let store = b.open_with("db", Options::default());
    for doc in 0..DOCS {
        store.upsert(revision(doc, 1)).expect("first revision");
    }
    store
        .delete("src", "doc0", Version::number(2))
        .expect("delete");
    // The writer: on PostgreSQL a connection of its own (a second opening of the store), on
    // a file a clone of the store (one writer per file).
    let writer = if b.is_postgres() {
        b.open_with("db", Options::default())
    } else {
        store.clone()
    };
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
    assert_verified(&writer);
}
