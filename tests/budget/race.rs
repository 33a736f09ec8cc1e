//! One writer racing searches over a store of one-chunk documents `s/d{doc}` (the racing
//! writer scenarios share it): each revision's text names its version and its vector is
//! drawn from (document, version), so a hit can be checked whole against the revision it
//! reports.

use crate::search_support::{dot, normalized, random_vector, Rng};
use ratchetdb::{Chunk, Document, Op, SearchOptions, Store, Version};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// Dimension of the raced documents' vectors.
pub const DIM: usize = 64;

/// Revision `version` of document `doc`'s one vector.
pub fn vector(doc: u64, version: u64) -> Vec<f32> {
    normalized(random_vector(&mut Rng::new(doc * 1_000_003 + version), DIM))
}

/// Revision `version` of document `doc`.
pub fn revision(doc: u64, version: u64) -> Op {
    Op::Upsert(
        Document::new("s", format!("d{doc}"), Version::number(version)).with_chunk(Chunk::new(
            format!("d{doc} v{version}"),
            vector(doc, version),
        )),
    )
}

/// How a race runs.
pub struct Race {
    /// Documents `0..docs`, all at revision 1 when the race starts.
    pub docs: u64,
    /// Batches the writer commits, of 100 revisions each (rounds `2..rounds + 2`).
    pub rounds: u64,
    /// Searches run at least (and more until the writer is done).
    pub searches: usize,
    /// Seeds of the writer's documents and of the queries.
    pub seeds: (u64, u64),
    /// Every this many searches, one restricted to the even documents.
    pub filter_every: Option<usize>,
}

/// Runs `race` on `store`: a writer thread commits its batches, acknowledging each
/// revision once its batch committed, while this thread searches (`k` 10, `ef` 64). Every
/// hit must be one revision whole (its text names the version it reports, its score is
/// the exact score of that version's vector), never older than the revision acknowledged
/// before the search began, and inside the documents a restricted search asked for.
pub fn run(store: &Arc<Store>, race: Race) {
    let Race {
        docs,
        rounds,
        searches: at_least,
        seeds: (writer_seed, query_seed),
        filter_every,
    } = race;
    let acknowledged: Arc<Mutex<HashMap<u64, u64>>> =
        Arc::new(Mutex::new((0..docs).map(|d| (d, 1)).collect()));
    let done = Arc::new(AtomicBool::new(false));
    let writer = {
        let (store, acknowledged, done) = (store.clone(), acknowledged.clone(), done.clone());
        std::thread::spawn(move || {
            let mut rng = Rng::new(writer_seed);
            for round in 2..rounds + 2 {
                let written: Vec<u64> = (0..100).map(|_| rng.below(docs)).collect();
                let ops = written.iter().map(|&d| revision(d, round)).collect();
                for result in store.write_batch(ops).expect("write") {
                    result.expect("a revision");
                }
                let mut acked = acknowledged.lock().expect("lock");
                for d in written {
                    acked.insert(d, round);
                }
            }
            done.store(true, Ordering::SeqCst);
        })
    };
    let mut rng = Rng::new(query_seed);
    let mut searches = 0;
    while searches < at_least || !done.load(Ordering::SeqCst) {
        let query = normalized(random_vector(&mut rng, DIM));
        let before = acknowledged.lock().expect("lock").clone();
        let filtered = filter_every.is_some_and(|every| searches.is_multiple_of(every));
        let mut options = SearchOptions::default().ef(64);
        if filtered {
            for d in (0..docs).step_by(2) {
                options = options.document("s", format!("d{d}"));
            }
        }
        let hits = store.search(&query, 10, &options).expect("search");
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
            assert!(
                !filtered || doc.is_multiple_of(2),
                "d{doc} passed a filter it fails"
            );
        }
        searches += 1;
    }
    writer.join().expect("writer");
}
