//! Filtered search racing a writer (issue 19): the filter index is derived and caught up
//! from the changelog by searches, so readers racing revisions must still never get a chunk
//! that does not match the filter, nor a superseded one. Half of the revisions change only
//! metadata (same texts and vectors), the case the changelog used not to record.
//!
//! Every hit must match the filter in its own revision's metadata, carry that revision's
//! metadata and text (`rev` equals the hit's version), and be of a revision not older than
//! the one acknowledged before the search began. Once the writer stops, every strategy
//! returns exactly the filtered ground truth read from `get`.

use ratchetdb::{
    Chunk, Document, Filter, FilterStrategy, Hit, Options, SearchOptions, Store, Version,
};
use serde_json::json;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const DOCS: u64 = 12;
const CHUNKS: u32 = 4;

/// Revision `version` of document `doc`: odd versions change only metadata (texts and
/// vectors as in the even version before them).
fn revision(doc: u64, version: u64) -> Document {
    let content = version & !1;
    let mut d = Document::new("s", format!("d{doc}"), Version::number(version));
    for p in 0..CHUNKS {
        let x = (doc * 7 + u64::from(p) * 3 + content) % 29;
        d = d.with_chunk(
            Chunk::new(
                format!("d{doc} c{content} p{p}"),
                vec![1.0 + x as f32, 1.0 + p as f32, 2.0],
            )
            .with_meta(json!({"rev": version, "parity": (version + u64::from(p)) % 2})),
        );
    }
    d
}

fn options() -> Vec<(&'static str, SearchOptions)> {
    let filter = Filter::parse(&json!({"parity": 0})).unwrap();
    let base = SearchOptions::default().filter(filter);
    vec![
        ("auto", base.clone()),
        ("exact", base.clone().exact(true)),
        (
            "graph",
            base.clone().ef(32).filter_strategy(FilterStrategy::Graph),
        ),
        (
            "scan",
            base.clone().filter_strategy(FilterStrategy::ScanMatching),
        ),
    ]
}

fn check(hit: &Hit, acked: &[AtomicU64], before: &[u64], mode: &str) {
    let doc: usize = hit.id[1..].parse().unwrap();
    let version = hit.version.value;
    assert_eq!(hit.meta["parity"], 0, "{mode}: non-matching hit {hit:?}");
    assert_eq!(
        hit.meta["rev"], version,
        "{mode}: metadata of another revision {hit:?}"
    );
    assert_eq!(
        hit.text,
        format!("d{doc} c{} p{}", version & !1, hit.position),
        "{mode}: text of another revision"
    );
    assert!(
        version >= before[doc],
        "{mode}: superseded: {version} < {}",
        before[doc]
    );
    let _ = acked;
}

#[test]
fn filtered_readers_racing_a_writer_see_only_matching_current_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(
        Store::open(
            dir.path().join("race.redb"),
            Options::default().dimension(3),
        )
        .unwrap(),
    );
    let acked: Arc<Vec<AtomicU64>> = Arc::new((0..DOCS).map(|_| AtomicU64::new(0)).collect());
    for doc in 0..DOCS {
        store.upsert(revision(doc, 1)).unwrap();
        acked[doc as usize].store(1, Ordering::SeqCst);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (store, acked, stop) = (store.clone(), acked.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut version = 2;
            while !stop.load(Ordering::SeqCst) {
                for doc in 0..DOCS {
                    store.upsert(revision(doc, version)).unwrap();
                    acked[doc as usize].store(version, Ordering::SeqCst);
                }
                if version == 20 {
                    store.build_index().unwrap();
                }
                version += 1;
            }
            version
        })
    };
    let readers: Vec<_> = (0..2)
        .map(|r| {
            let (store, acked, stop) = (store.clone(), acked.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut searches = 0u64;
                let query = [3.0 + r as f32, 2.0, 2.0];
                while !stop.load(Ordering::SeqCst) {
                    for (mode, options) in options() {
                        let before: Vec<u64> =
                            acked.iter().map(|a| a.load(Ordering::SeqCst)).collect();
                        let hits = store.search(&query, 100, &options).unwrap();
                        for hit in &hits {
                            check(hit, &acked, &before, mode);
                        }
                        searches += 1;
                    }
                }
                searches
            })
        })
        .collect();
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(3) {
        std::thread::sleep(Duration::from_millis(50));
    }
    stop.store(true, Ordering::SeqCst);
    let last = writer.join().unwrap();
    let searches: u64 = readers.into_iter().map(|r| r.join().unwrap()).sum();
    assert!(
        last > 4 && searches > 8,
        "too little happened: {last} versions, {searches} searches"
    );

    // Quiet: every strategy returns exactly the matching live chunks.
    let snapshot = store.snapshot().unwrap();
    let mut truth = Vec::new();
    for doc in 0..DOCS {
        let stored = snapshot.get("s", &format!("d{doc}")).unwrap().unwrap();
        for chunk in &stored.chunks {
            if chunk.meta["parity"] == 0 {
                truth.push((stored.id.clone(), chunk.position));
            }
        }
    }
    truth.sort();
    for (mode, options) in options() {
        let mut got: Vec<_> = store
            .search(&[1.0, 1.0, 1.0], 1000, &options)
            .unwrap()
            .into_iter()
            .map(|h| (h.id, h.position))
            .collect();
        got.sort();
        assert_eq!(got, truth, "{mode}");
    }
    assert!(store.verify().unwrap().is_ok());
}
