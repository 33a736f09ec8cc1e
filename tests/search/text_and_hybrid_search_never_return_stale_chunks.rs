//! Text and hybrid searches racing a writer never return a superseded, deleted or orphaned
//! chunk: every hit is a chunk of a revision not older than what was acknowledged before
//! the search began, with exactly that revision's text at its position. The writer rewrites
//! documents with revisions that grow, shrink, empty out and delete them; every revision's
//! text carries the common word the readers search for.

use crate::search_support::{assert_verified, settle};
use ratchetdb::{Chunk, Document, Fusion, Hit, Options, SearchOptions, Store, Version};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

const DOCS: usize = 6;
const VERSIONS: u64 = 60;

/// Chunk count of a revision: documents grow, shrink and empty out.
fn chunk_count(d: usize, version: u64) -> usize {
    ((version as usize * 7 + d * 3) % 5) + usize::from(version.is_multiple_of(4))
}

/// Every third-or-so revision is a delete.
fn is_delete(d: usize, version: u64) -> bool {
    (version + d as u64) % 7 == 3
}

fn text(d: usize, version: u64, position: usize) -> String {
    format!("ratchet doc{d} revision{version} part{position} pawl")
}

fn revision(d: usize, version: u64) -> Document {
    let mut doc = Document::new("race", format!("doc{d}"), Version::number(version));
    for p in 0..chunk_count(d, version) {
        let angle = (version as f32 * 0.37 + p as f32 * 1.1 + d as f32).sin();
        doc = doc.with_chunk(Chunk::new(
            text(d, version, p),
            vec![angle, 1.0 - angle, 0.5],
        ));
    }
    doc
}

fn check_hit(hit: &Hit, floors: &[u64], what: &str) {
    let d: usize = hit.id.trim_start_matches("doc").parse().expect("doc id");
    let version = hit.version.value;
    assert!(
        version >= floors[d],
        "{what}: {}/{} at version {version}, but version {} was acknowledged before the search",
        hit.source,
        hit.id,
        floors[d]
    );
    assert!(
        !is_delete(d, version),
        "{what}: a hit of deleted revision {version}"
    );
    assert!(
        (hit.position as usize) < chunk_count(d, version),
        "{what}: position {} of a revision of {} chunks",
        hit.position,
        chunk_count(d, version)
    );
    assert_eq!(
        hit.text,
        text(d, version, hit.position as usize),
        "{what}: the text of another revision or position"
    );
}

#[test]
fn text_and_hybrid_search_never_return_stale_chunks() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path().join("race.redb"), Options::default()).expect("open");
    let acknowledged: Arc<Vec<AtomicU64>> =
        Arc::new((0..DOCS).map(|_| AtomicU64::new(0)).collect());
    let done = Arc::new(AtomicBool::new(false));
    let writer = {
        let store = store.clone();
        let acknowledged = acknowledged.clone();
        let done = done.clone();
        std::thread::spawn(move || {
            for version in 1..=VERSIONS {
                for d in 0..DOCS {
                    if is_delete(d, version) {
                        store
                            .delete("race", &format!("doc{d}"), Version::number(version))
                            .expect("delete");
                    } else {
                        store.upsert(revision(d, version)).expect("upsert");
                    }
                    acknowledged[d].store(version, Ordering::SeqCst);
                }
            }
            done.store(true, Ordering::SeqCst);
        })
    };
    let readers: Vec<_> = (0..2)
        .map(|reader| {
            let store = store.clone();
            let acknowledged = acknowledged.clone();
            let done = done.clone();
            std::thread::spawn(move || {
                let mut searches = 0u64;
                while !done.load(Ordering::SeqCst) || searches < 20 {
                    let floors: Vec<u64> = acknowledged
                        .iter()
                        .map(|a| a.load(Ordering::SeqCst))
                        .collect();
                    let options = if reader == 0 {
                        SearchOptions::default()
                    } else {
                        SearchOptions::default().fusion(Fusion::Weighted { vector_weight: 0.5 })
                    };
                    let text_hits = store
                        .search_text("ratchet pawl", 40, &options)
                        .expect("search_text");
                    for hit in &text_hits {
                        check_hit(hit, &floors, "text");
                    }
                    let hybrid = store
                        .search_hybrid("ratchet", &[0.3, 0.7, 0.5], 20, &options)
                        .expect("search_hybrid");
                    for hit in &hybrid {
                        check_hit(hit, &floors, "hybrid");
                    }
                    searches += 1;
                }
                searches
            })
        })
        .collect();
    writer.join().expect("writer");
    for reader in readers {
        assert!(reader.join().expect("reader") >= 20);
    }
    settle(&store);
    assert_verified(&store, "after the race");
    // At rest: exactly the live chunks match the common word.
    let live: usize = (0..DOCS)
        .filter(|&d| !is_delete(d, VERSIONS))
        .map(|d| chunk_count(d, VERSIONS))
        .sum();
    let hits = store
        .search_text("ratchet", 1000, &SearchOptions::default())
        .expect("search_text");
    assert_eq!(hits.len(), live);
    let floors = vec![VERSIONS; DOCS];
    for hit in &hits {
        check_hit(hit, &floors, "at rest");
    }
}
