//! Readers racing a writer over a budgeted index loaded from the file (saved by an earlier
//! open, brought up to date from the changelog, saved again as the store grows): every hit
//! is one revision's chunk whole, of a revision not older than the one acknowledged before
//! the search began; after the race and a reopen, the loaded index agrees with the file.

use crate::search_support::{assert_verified, dot, normalized, random_vector, settle, Rng};
use crate::{open_budgeted, BUDGET};
use ratchetdb::{Chunk, Document, Op, SearchOptions, Version};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

const DIM: usize = 64;
const DOCS: u64 = 3000;
const ROUNDS: u64 = 60;
const SEARCHES: usize = 300;

fn vector(doc: u64, version: u64) -> Vec<f32> {
    normalized(random_vector(&mut Rng::new(doc * 1_000_003 + version), DIM))
}

fn revision(doc: u64, version: u64) -> Op {
    Op::Upsert(
        Document::new("s", format!("d{doc}"), Version::number(version)).with_chunk(Chunk::new(
            format!("d{doc} v{version}"),
            vector(doc, version),
        )),
    )
}

#[test]
fn hits_over_a_reloaded_budgeted_index_are_never_superseded() {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let store = open_budgeted(dir.path(), BUDGET);
        store
            .write_batch((0..DOCS).map(|d| revision(d, 1)).collect())
            .expect("first revisions");
        store.build_index().expect("build and save");
        settle(&store);
    }
    let store = Arc::new(open_budgeted(dir.path(), BUDGET));
    settle(&store);
    assert!(
        store.index_info().loaded_from_file,
        "{:?}",
        store.index_info()
    );
    let acknowledged: Arc<Mutex<HashMap<u64, u64>>> =
        Arc::new(Mutex::new((0..DOCS).map(|d| (d, 1)).collect()));
    let done = Arc::new(AtomicBool::new(false));
    let writer = {
        let (store, acknowledged, done) = (store.clone(), acknowledged.clone(), done.clone());
        std::thread::spawn(move || {
            let mut rng = Rng::new(15);
            for round in 2..ROUNDS + 2 {
                let docs: Vec<u64> = (0..100).map(|_| rng.below(DOCS)).collect();
                let ops = docs.iter().map(|&d| revision(d, round)).collect();
                for result in store.write_batch(ops).expect("write") {
                    result.expect("a revision");
                }
                let mut acked = acknowledged.lock().expect("lock");
                for d in docs {
                    acked.insert(d, round);
                }
            }
            done.store(true, Ordering::SeqCst);
        })
    };
    let mut rng = Rng::new(19);
    let mut searches = 0;
    while searches < SEARCHES || !done.load(Ordering::SeqCst) {
        let query = normalized(random_vector(&mut rng, DIM));
        let before = acknowledged.lock().expect("lock").clone();
        let hits = store
            .search(&query, 10, &SearchOptions::default().ef(64))
            .expect("search");
        assert_eq!(hits.len(), 10);
        for hit in hits {
            let doc: u64 = hit.id[1..].parse().expect("doc id");
            let version = hit.version.value;
            assert_eq!(hit.text, format!("d{doc} v{version}"), "a mixed revision");
            assert!(
                version >= before[&doc],
                "d{doc}: v{version} is older than acknowledged"
            );
            assert!(
                (dot(&vector(doc, version), &query) - hit.score).abs() < 1e-5,
                "d{doc}: the score is not the exact one of v{version}"
            );
        }
        searches += 1;
    }
    writer.join().expect("writer");
    settle(&store);
    assert_verified(&store, "after the race");
    // The writer has joined: this is the last handle, and dropping it closes the store.
    assert_eq!(Arc::strong_count(&store), 1);
    drop(store);
    let store = open_budgeted(dir.path(), BUDGET);
    settle(&store);
    assert!(
        store.index_info().loaded_from_file,
        "{:?}",
        store.index_info()
    );
    assert_eq!(store.index_info().live_vectors, DOCS);
    assert_verified(&store, "after reopening");
}
