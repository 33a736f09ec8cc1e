//! Issue 44, "not yet tried by anyone": a document of 10^5 chunks. The default limit
//! (10,000 chunks, `Limits::max_chunks_per_document`) refuses it with an `InputError` on
//! `chunks` and changes nothing; raised to 10^5 it is accepted (10^5 + 1 still refused), and
//! the document is written, read back whole, found by vector search (graph and exact) and
//! by text search, then revised to 10 chunks: the 99,990 surplus chunks and their vectors
//! are gone from reads, searches, the text index and the stats, and `verify` is clean.
//! Time and the process's peak RSS are printed (not asserted: performance lives in benches).

use ratchetdb::testkit::{store_rows, SplitMix64};
use ratchetdb::{
    Chunk, Document, Limits, Options, Outcome, SearchOptions, Store, Version, WriteError,
};
use std::time::Instant;

const CHUNKS: usize = 100_000;
const DIM: usize = 8;

/// Chunk `i`'s vector: pseudo-random, so every chunk is its own nearest neighbour.
fn vector(i: usize) -> Vec<f32> {
    let mut rng = SplitMix64::new(i as u64 * 0x9e37_79b9 + 1);
    (0..DIM)
        .map(|_| (rng.below(2_000_001) as f32 / 1_000_000.0) - 1.0)
        .collect()
}

fn text(i: usize, version: u64) -> String {
    format!(
        "chunk {i} of version {version} word{} tag{}",
        i % 1000,
        i % 7
    )
}

fn document(chunks: usize, version: u64) -> Document {
    let mut doc = Document::new("big", "doc", Version::number(version));
    for i in 0..chunks {
        doc = doc.with_chunk(Chunk::new(text(i, version), vector(i)));
    }
    doc
}

fn peak_rss_mib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        })
        .map_or(0, |kib| kib / 1024)
}

#[test]
fn hostile_document_of_100k_chunks() {
    let dir = tempfile::tempdir().expect("tempdir");
    let options = Options::default().dimension(DIM);

    // The default limit refuses it, naming the field, and writes nothing.
    let defaults = Store::open(dir.path().join("defaults.redb"), options.clone()).expect("open");
    let before = store_rows(&defaults).expect("rows");
    match defaults.upsert(document(CHUNKS, 1)) {
        Err(WriteError::Input(e)) => {
            assert_eq!(e.field, "chunks", "{e}");
            assert!(e.to_string().contains("the limit is 10000"), "{e}");
        }
        other => panic!("the default limit let 10^5 chunks through: {other:?}"),
    }
    assert_eq!(store_rows(&defaults).expect("rows"), before);
    drop(defaults);

    // Raised: accepted at 10^5, refused one past it.
    let mut limits = Limits::default();
    limits.max_chunks_per_document = CHUNKS;
    let store = Store::open(dir.path().join("big.redb"), options.limits(limits)).expect("open");
    match store.upsert(document(CHUNKS + 1, 1)) {
        Err(WriteError::Input(e)) => assert_eq!(e.field, "chunks", "{e}"),
        other => panic!("10^5 + 1 chunks: {other:?}"),
    }
    let started = Instant::now();
    let written = store
        .upsert(document(CHUNKS, 1))
        .expect("write 10^5 chunks");
    assert!(matches!(written, Outcome::Written { .. }), "{written:?}");
    let write_seconds = started.elapsed().as_secs_f64();

    // Read back whole.
    let got = store.get("big", "doc").expect("get").expect("the document");
    assert_eq!(got.chunks.len(), CHUNKS);
    assert!(got
        .chunks
        .iter()
        .enumerate()
        .all(|(i, c)| c.text == text(i, 1)));
    drop(got);
    let stats = store.stats().expect("stats");
    assert_eq!(
        (stats.chunks, stats.vectors),
        (CHUNKS as u64, CHUNKS as u64)
    );

    // Searched: exact finds each probed chunk itself; the graph returns live chunks only,
    // each with its own text.
    let started = Instant::now();
    for probe in [0, 1, 4_999, 50_000, 99_999] {
        let hits = store
            .search(&vector(probe), 5, &SearchOptions::default().exact(true))
            .expect("exact search");
        assert_eq!(hits[0].position as usize, probe, "{:?}", hits[0]);
        assert_eq!(hits[0].text, text(probe, 1));
        let hits = store
            .search(&vector(probe), 5, &SearchOptions::default())
            .expect("graph search");
        assert_eq!(hits.len(), 5);
        for hit in &hits {
            assert_eq!(hit.text, text(hit.position as usize, 1), "{hit:?}");
        }
    }
    let hits = store
        .search_text("word417 tag4", 10, &SearchOptions::default())
        .expect("text search");
    assert!(!hits.is_empty());
    assert!(hits[0].text.contains("word417"), "{:?}", hits[0]);
    let search_seconds = started.elapsed().as_secs_f64();

    // Revised to 10 chunks: the surplus is gone everywhere.
    let started = Instant::now();
    let revised = store.upsert(document(10, 2)).expect("revise to 10 chunks");
    assert!(matches!(revised, Outcome::Written { .. }), "{revised:?}");
    let revise_seconds = started.elapsed().as_secs_f64();
    let got = store.get("big", "doc").expect("get").expect("the document");
    assert_eq!(got.chunks.len(), 10);
    assert!(got
        .chunks
        .iter()
        .enumerate()
        .all(|(i, c)| c.text == text(i, 2)));
    let stats = store.stats().expect("stats");
    assert_eq!((stats.chunks, stats.vectors), (10, 10));
    for exact in [false, true] {
        let hits = store
            .search(&vector(50_000), 50, &SearchOptions::default().exact(exact))
            .expect("search");
        assert_eq!(hits.len(), 10, "exact {exact}: only the live chunks");
        assert!(hits
            .iter()
            .all(|h| h.version == Version::number(2) && (h.position as usize) < 10));
    }
    assert!(store
        .search_text("word417", 10, &SearchOptions::default())
        .expect("text search")
        .is_empty());
    assert_eq!(
        store
            .search_text("word7", 10, &SearchOptions::default())
            .expect("text search")
            .len(),
        1
    );
    let report = store.verify().expect("verify");
    assert!(report.is_ok(), "{:?}", report.violations);
    drop(store);

    // And after a reopen.
    let store = Store::open_read_only(dir.path().join("big.redb")).expect("reopen");
    assert_eq!(store.stats().expect("stats").vectors, 10);
    assert!(store.verify().expect("verify").is_ok());
    println!(
        "10^5 chunks: written in {write_seconds:.2} s, probed in {search_seconds:.2} s, \
         revised to 10 in {revise_seconds:.2} s; peak RSS of the test process {} MiB",
        peak_rss_mib()
    );
}
