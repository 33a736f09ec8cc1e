//! Issue 44 item 6: the in-memory text index cost about 224 bytes per (term, chunk) on text
//! of distinct terms (identifiers, hashes, log lines), where the README says about 16: a
//! `String`, a hash-map entry and a posting vector per distinct term. Its accounted heap per
//! (term, chunk) must stay within 32 bytes on such text, when the first text search builds it
//! and after later commits bring it up, and so must it on a shared vocabulary; searches for a
//! rare identifier still find exactly its live chunk.

use ratchetdb::testkit::text_index_footprint;
use ratchetdb::{Chunk, Document, Options, SearchOptions, Store, Version};

const BOUND: f64 = 32.0;
const CHUNKS_PER_DOC: u64 = 8;

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// About 1 KB of log lines: a level and a few shared words, a request id and a user id
/// that no other line has.
fn log_lines(seed: u64) -> String {
    let mut state = seed;
    let mut out = String::new();
    while out.len() < 1000 {
        let level = ["info", "warn", "error"][(splitmix(&mut state) % 3) as usize];
        let request = splitmix(&mut state);
        let user = splitmix(&mut state) as u32;
        let took = splitmix(&mut state) % 500;
        out.push_str(&format!(
            "{level} req {request:016x} user u{user:08x} took {took}ms\n"
        ));
    }
    out
}

/// About 1 KB of words from a skewed 5,000-word vocabulary.
fn prose(seed: u64) -> String {
    let mut state = seed;
    let mut out = String::new();
    while out.len() < 1000 {
        let u = (splitmix(&mut state) % 1_000_000) as f64 / 1_000_000.0;
        out.push_str(&format!("w{} ", (u * u * u * 5_000.0) as u64));
    }
    out
}

fn document(doc: u64, version: u64, text: fn(u64) -> String) -> Document {
    let mut d = Document::new("logs", format!("doc-{doc}"), Version::number(version));
    for c in 0..CHUNKS_PER_DOC {
        let seed = doc * 1_000_003 + version * 7_919 + c;
        d = d.with_chunk(Chunk::new(text(seed), vec![1.0, c as f32]));
    }
    d
}

fn write(store: &Store, docs: std::ops::Range<u64>, version: u64, text: fn(u64) -> String) {
    let ops = docs
        .map(|d| ratchetdb::Op::Upsert(document(d, version, text)))
        .collect();
    for outcome in store.write_batch(ops).expect("batch") {
        outcome.expect("write");
    }
}

/// The index's bytes per (term, chunk) after a search, which brings it to the last commit.
fn bytes_per_pair(store: &Store, what: &str) -> f64 {
    store
        .search_text("error", 1, &SearchOptions::default())
        .expect("search");
    let footprint = text_index_footprint(store).expect("the search built the index");
    assert!(footprint.pairs > 0, "{what}: no pairs indexed");
    let per_pair = footprint.heap_bytes as f64 / footprint.pairs as f64;
    assert!(
        per_pair <= BOUND,
        "{what}: {per_pair:.1} bytes per (term, chunk) ({footprint:?}); the bound is {BOUND}"
    );
    per_pair
}

/// The request id of the first line of `doc`'s chunk `c` at `version`.
fn first_request(doc: u64, version: u64, c: u64) -> String {
    let text = log_lines(doc * 1_000_003 + version * 7_919 + c);
    text.split_whitespace()
        .nth(2)
        .expect("a request id")
        .to_string()
}

#[test]
fn text_index_memory_per_term_and_chunk_is_bounded() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path().join("logs.redb"), Options::default()).expect("open");
    write(&store, 0..100, 1, log_lines);
    bytes_per_pair(&store, "distinct terms, built");
    // Brought up by the changelog: new documents and a revision of an old one.
    write(&store, 100..150, 1, log_lines);
    write(&store, 3..4, 2, log_lines);
    bytes_per_pair(&store, "distinct terms, caught up");
    let options = SearchOptions::default();
    for (doc, version, live) in [(3, 1, false), (3, 2, true), (120, 1, true), (7, 1, true)] {
        let id = first_request(doc, version, 5);
        let hits = store.search_text(&id, 5, &options).expect("search id");
        if live {
            assert_eq!(hits.len(), 1, "{id}: one live chunk has it");
            assert_eq!(hits[0].id, format!("doc-{doc}"));
            assert_eq!(hits[0].position, 5);
        } else {
            assert!(hits.is_empty(), "{id}: only a superseded chunk had it");
        }
    }

    let prose_dir = tempfile::tempdir().expect("tempdir");
    let prose_store =
        Store::open(prose_dir.path().join("prose.redb"), Options::default()).expect("open");
    write(&prose_store, 0..100, 1, prose);
    bytes_per_pair(&prose_store, "shared vocabulary, built");
}
