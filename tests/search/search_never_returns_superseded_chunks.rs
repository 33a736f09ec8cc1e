//! Index agreement (I5): the vectors a search can return are exactly the live chunk rows,
//! and a hit is always the chunk its own read snapshot holds, never a superseded one.
//!
//! 1. Random histories on a small store (upserts that change, shrink and grow documents,
//!    keep some chunks unchanged so that their vector is reused and only restamped,
//!    stale upserts, deletes, `retain` sweeps, reopens, forced graph builds): after every
//!    step `verify()` (which compares the index's id set with the `vectors` table) is clean,
//!    and a search asking for every chunk returns exactly the live chunks, each equal to
//!    what `get()` returns, in every search mode.
//! 2. Readers racing a writer (and graph builds): every hit is one revision's chunk whole —
//!    text, position, score, version and generation all of the same revision — of a
//!    revision not older than what was acknowledged before the search began; a
//!    one-document search returns that document's chunks of exactly one revision, all of
//!    them (never a mix, never none).

use crate::search_support;

use ratchetdb::{Chunk, Document, Hit, Op, Outcome, SearchOptions, Store, Version};
use search_support::{assert_verified, dot, normalized, open, random_vector, settle, Rng};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const DIM: usize = 8;

/// The search modes every check runs in: the graph is used by `ef` whenever one is built.
fn modes() -> [(&'static str, SearchOptions); 3] {
    [
        ("exact", SearchOptions::default().exact(true)),
        ("auto", SearchOptions::default()),
        ("ann", SearchOptions::default().ef(64)),
    ]
}

/// A chunk as the model holds it.
#[derive(Clone, Debug, PartialEq)]
struct ModelChunk {
    text: String,
    vector: Vec<f32>,
}

/// Part 1's reference: the live documents and their chunks.
type Model = BTreeMap<(String, String), (u64, Vec<ModelChunk>)>;

fn revision(
    rng: &mut Rng,
    source: &str,
    id: &str,
    version: u64,
    reuse: &[ModelChunk],
) -> Vec<ModelChunk> {
    let count = rng.below(6) as usize; // 0..=5 chunks: documents grow, shrink, and empty out
    (0..count)
        .map(|p| {
            // Keep the old chunk at this position now and then (same text and vector: the
            // store restamps it and keeps its vector id).
            match reuse.get(p) {
                Some(old) if rng.below(3) == 0 => old.clone(),
                _ => ModelChunk {
                    text: format!("{source}/{id} rev {version} pos {p}"),
                    vector: random_vector(rng, DIM),
                },
            }
        })
        .collect()
}

/// Checks `store` against `model`: verify clean, and for each mode a search for all chunks
/// returns exactly the live ones, each equal to `get()`'s view; a small-k exact search is
/// the brute-force top k.
fn check(store: &Store, model: &Model, rng: &mut Rng, step: &str) {
    settle(store);
    // The index loads once the dimension is known (the first vector written).
    assert!(
        store.index_info().loaded || store.dimension().is_none(),
        "{step}: index not loaded"
    );
    assert_verified(store, step);
    let total: usize = model.values().map(|(_, chunks)| chunks.len()).sum();
    assert_eq!(store.index_info().live_vectors as usize, total, "{step}");
    let query = random_vector(rng, DIM);
    for (mode, options) in modes() {
        let hits = store.search(&query, total + 3, &options).expect("search");
        let mut seen: BTreeMap<(String, String, u32), Hit> = BTreeMap::new();
        for hit in &hits {
            let key = (hit.source.clone(), hit.id.clone(), hit.position);
            assert!(
                seen.insert(key, hit.clone()).is_none(),
                "{step} {mode}: duplicate hit {hit:?}"
            );
        }
        for pair in hits.windows(2) {
            assert!(
                pair[0].score >= pair[1].score,
                "{step} {mode}: hits out of order"
            );
        }
        let mut expected = BTreeMap::new();
        for ((source, id), (version, chunks)) in model {
            let stored = store
                .get(source, id)
                .expect("get")
                .expect("a live document");
            assert_eq!(stored.version, Version::number(*version), "{step}");
            for (p, chunk) in chunks.iter().enumerate() {
                let got = &stored.chunks[p];
                assert_eq!(got.text, chunk.text, "{step}");
                expected.insert(
                    (source.clone(), id.clone(), p as u32),
                    (
                        got.text.clone(),
                        stored.version,
                        stored.generation,
                        chunk.vector.clone(),
                    ),
                );
            }
        }
        let returned: Vec<_> = seen.keys().cloned().collect();
        let live: Vec<_> = expected.keys().cloned().collect();
        assert_eq!(
            returned, live,
            "{step} {mode}: the returnable chunks are not the live ones"
        );
        let query = normalized(query.clone());
        for (key, hit) in &seen {
            let (text, version, generation, vector) = &expected[key];
            assert_eq!(&hit.text, text, "{step} {mode}");
            assert_eq!(hit.version, *version, "{step} {mode}");
            assert_eq!(hit.generation, *generation, "{step} {mode}");
            let score = dot(&query, &normalized(vector.clone()));
            assert!(
                (hit.score - score).abs() < 1e-4,
                "{step} {mode}: score {} for {score}",
                hit.score
            );
        }
    }
    // The 3 nearest, exactly.
    let query = normalized(random_vector(rng, DIM));
    let mut all: Vec<(f32, (String, String, u32))> = model
        .iter()
        .flat_map(|((source, id), (_, chunks))| {
            chunks.iter().enumerate().map(|(p, c)| {
                (
                    1.0 - dot(&query, &normalized(c.vector.clone())),
                    (source.clone(), id.clone(), p as u32),
                )
            })
        })
        .collect();
    all.sort_by(|a, b| a.0.total_cmp(&b.0));
    let hits = store
        .search(&query, 3, &SearchOptions::default().exact(true))
        .expect("search");
    assert_eq!(hits.len(), all.len().min(3), "{step}");
    for (hit, (distance, _)) in hits.iter().zip(&all) {
        assert!(
            (1.0 - hit.score - distance).abs() < 1e-4,
            "{step}: not the exact top 3"
        );
    }
}

#[test]
fn random_histories_keep_the_index_equal_to_the_live_chunks() {
    for seed in 0..4u64 {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut store = open(dir.path());
        let mut rng = Rng::new(0x5EA2C4 + seed);
        let mut model: Model = BTreeMap::new();
        let mut clock = 0u64;
        for step in 0..60 {
            clock += 1;
            let source = format!("s{}", rng.below(2));
            let id = format!("d{}", rng.below(8));
            let key = (source.clone(), id.clone());
            let label = format!("seed {seed} step {step}");
            match rng.below(20) {
                0..=10 => {
                    let old = model.get(&key).map(|(_, c)| c.clone()).unwrap_or_default();
                    let chunks = revision(&mut rng, &source, &id, clock, &old);
                    let mut doc = Document::new(&source, &id, Version::number(clock));
                    for c in &chunks {
                        doc = doc.with_chunk(Chunk::new(c.text.clone(), c.vector.clone()));
                    }
                    store.upsert(doc).expect("upsert");
                    model.insert(key, (clock, chunks));
                }
                11 => {
                    // A stale revision: refused, changes nothing.
                    if let Some((version, _)) = model.get(&key) {
                        let stale = Document::new(&source, &id, Version::number(version - 1))
                            .with_chunk(Chunk::new("stale", random_vector(&mut rng, DIM)));
                        let outcome = store.upsert(stale).expect("upsert");
                        assert!(outcome.skip_reason().is_some(), "{label}: {outcome:?}");
                    }
                }
                12..=14 => {
                    store
                        .delete(&source, &id, Version::number(clock))
                        .expect("delete");
                    model.remove(&key);
                }
                15 => {
                    let present: Vec<String> = (0..8)
                        .filter(|_| rng.below(2) == 0)
                        .map(|i| format!("d{i}"))
                        .collect();
                    store
                        .retain(&source, present.clone(), Version::number(clock))
                        .expect("retain");
                    model.retain(|(s, id), _| s != &source || present.contains(id));
                }
                16 | 17 => {
                    drop(store);
                    store = open(dir.path());
                }
                _ => {
                    // A graph now (the store would only build one above its size threshold):
                    // later changes are scored outside it, absorbed, or force a rebuild.
                    store.build_index().expect("build the index");
                    let built = store.index_info().graph_ready;
                    assert!(built || store.dimension().is_none(), "{label}");
                }
            }
            check(&store, &model, &mut rng, &label);
        }
    }
}

// ---- 2. readers racing a writer ----

const RACE_DOCS: u64 = 6;
/// Documents `0..NEVER_DELETED` are never deleted, so a search filtered to one of them,
/// once it has been written, must always find it.
const NEVER_DELETED: u64 = 4;
const RACE_DIM: usize = 16;

fn mix(a: u64, b: u64, c: u64) -> u64 {
    let mut rng =
        Rng::new(a.wrapping_mul(0x1_0000_01B3) ^ b.wrapping_mul(0x9E37) ^ c.rotate_left(17));
    rng.next_u64()
}

/// Whether revision `version` of `doc` is a delete.
fn is_delete(doc: u64, version: u64) -> bool {
    doc >= NEVER_DELETED && mix(doc, version, 1).is_multiple_of(5)
}

/// The chunk count of revision `version` of `doc` (1..=5).
fn chunk_count(doc: u64, version: u64) -> u32 {
    1 + (mix(doc, version, 2) % 5) as u32
}

/// Odd positions keep the same text and vector in every revision (the store reuses the
/// vector and restamps the chunk); the others carry their revision.
fn stable(position: u32) -> bool {
    position % 2 == 1
}

fn chunk_text(doc: u64, version: u64, position: u32) -> String {
    if stable(position) {
        format!("race d{doc} stable pos {position}")
    } else {
        format!("race d{doc} rev {version} pos {position}")
    }
}

fn chunk_vector(doc: u64, version: u64, position: u32) -> Vec<f32> {
    let seed = if stable(position) {
        mix(doc, u64::from(position), 3)
    } else {
        mix(doc, version, 4 + u64::from(position))
    };
    random_vector(&mut Rng::new(seed), RACE_DIM)
}

fn race_document(doc: u64, version: u64) -> Document {
    let mut d = Document::new("race", format!("d{doc}"), Version::number(version));
    for p in 0..chunk_count(doc, version) {
        d = d.with_chunk(Chunk::new(
            chunk_text(doc, version, p),
            chunk_vector(doc, version, p),
        ));
    }
    d
}

fn doc_of(hit: &Hit) -> u64 {
    hit.id
        .strip_prefix('d')
        .and_then(|d| d.parse().ok())
        .expect("a race document id")
}

/// What one reader saw, checked against the writer's record at the end.
struct Seen {
    doc: u64,
    version: u64,
    generation: u64,
}

/// Checks one hit on its own; returns what to check against the writer's record later.
fn check_hit(hit: &Hit, query: &[f32], acked_before: &[u64], submitted_after: &[u64]) -> Seen {
    let doc = doc_of(hit);
    let version = hit.version.value;
    assert!(
        !is_delete(doc, version),
        "hit on a deleted revision: {hit:?}"
    );
    assert!(
        hit.position < chunk_count(doc, version),
        "hit at a position revision {version} does not have: {hit:?}"
    );
    assert_eq!(
        hit.text,
        chunk_text(doc, version, hit.position),
        "text of another revision: {hit:?}"
    );
    let score = dot(query, &normalized(chunk_vector(doc, version, hit.position)));
    assert!(
        (hit.score - score).abs() < 1e-4,
        "scored against another vector: {hit:?}, expected {score}"
    );
    let d = doc as usize;
    assert!(
        version >= acked_before[d],
        "superseded chunk: revision {version} of d{doc}, but {} was acknowledged before the search: {hit:?}",
        acked_before[d]
    );
    assert!(
        version <= submitted_after[d],
        "a revision never written: {hit:?}"
    );
    Seen {
        doc,
        version,
        generation: hit.generation,
    }
}

#[test]
fn readers_racing_a_writer_never_see_a_superseded_or_mixed_chunk() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(dir.path());
    let acked: Arc<Vec<AtomicU64>> = Arc::new((0..RACE_DOCS).map(|_| AtomicU64::new(0)).collect());
    let submitted: Arc<Vec<AtomicU64>> =
        Arc::new((0..RACE_DOCS).map(|_| AtomicU64::new(0)).collect());
    let generations: Arc<Mutex<HashMap<(u64, u64), u64>>> = Arc::default();
    let done = Arc::new(AtomicBool::new(false));
    let load =
        |v: &[AtomicU64]| -> Vec<u64> { v.iter().map(|a| a.load(Ordering::SeqCst)).collect() };

    let writer = {
        let (store, acked, submitted, generations) = (
            store.clone(),
            acked.clone(),
            submitted.clone(),
            generations.clone(),
        );
        std::thread::spawn(move || {
            let mut rng = Rng::new(11);
            for version in 1..=400u64 {
                let doc = rng.below(RACE_DOCS);
                submitted[doc as usize].store(version, Ordering::SeqCst);
                let outcome = if is_delete(doc, version) {
                    store.delete("race", &format!("d{doc}"), Version::number(version))
                } else {
                    store.upsert(race_document(doc, version))
                }
                .expect("write");
                if let Outcome::Written { generation, .. } = outcome {
                    generations
                        .lock()
                        .expect("lock")
                        .insert((doc, version), generation);
                }
                acked[doc as usize].store(version, Ordering::SeqCst);
            }
        })
    };
    let builder = {
        let (store, done) = (store.clone(), done.clone());
        std::thread::spawn(move || {
            // Graph builds (and their swaps) while readers search and the writer writes.
            while !done.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(150));
                store.build_index().expect("build");
            }
        })
    };
    let readers: Vec<_> = (0..2u64)
        .map(|r| {
            let (store, acked, submitted, done) = (
                store.clone(),
                acked.clone(),
                submitted.clone(),
                done.clone(),
            );
            std::thread::spawn(move || {
                let mut rng = Rng::new(100 + r);
                let mut seen = Vec::new();
                let mut searches = 0u64;
                while !done.load(Ordering::SeqCst) {
                    searches += 1;
                    let query = normalized(random_vector(&mut rng, RACE_DIM));
                    let (_, base) = &modes()[rng.below(3) as usize];
                    let acked_before = load(&acked);
                    if rng.below(2) == 0 {
                        let k = 1 + rng.below(12) as usize;
                        let hits = store.search(&query, k, base).expect("search");
                        let submitted_after = load(&submitted);
                        for hit in &hits {
                            seen.push(check_hit(hit, &query, &acked_before, &submitted_after));
                        }
                    } else {
                        // One document: all its chunks, of exactly one revision.
                        let doc = rng.below(NEVER_DELETED);
                        let options = base.clone().document("race", format!("d{doc}"));
                        let hits = store.search(&query, 10, &options).expect("search");
                        let submitted_after = load(&submitted);
                        if acked_before[doc as usize] > 0 {
                            assert!(
                                !hits.is_empty(),
                                "d{doc} is live but a search filtered to it found nothing"
                            );
                        }
                        if let Some(first) = hits.first() {
                            let version = first.version.value;
                            assert!(
                                hits.iter().all(|h| h.version.value == version
                                    && h.generation == first.generation),
                                "chunks of two revisions in one search: {hits:?}"
                            );
                            assert_eq!(
                                hits.len() as u32,
                                chunk_count(doc, version),
                                "not every chunk of the revision: {hits:?}"
                            );
                        }
                        for hit in &hits {
                            assert_eq!(
                                doc_of(hit),
                                doc,
                                "the document filter let another document through"
                            );
                            seen.push(check_hit(hit, &query, &acked_before, &submitted_after));
                        }
                    }
                }
                (seen, searches)
            })
        })
        .collect();

    // A watchdog: a lock-order deadlock between the writer's index update and a filtered
    // search hung this test once; fail instead of hanging.
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while !writer.is_finished() {
        assert!(
            std::time::Instant::now() < deadline,
            "the writer is stuck: a deadlock?"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    writer.join().expect("the writer");
    done.store(true, Ordering::SeqCst);
    builder.join().expect("the builder");
    let generations = generations.lock().expect("lock").clone();
    let mut total_hits = 0;
    for reader in readers {
        let (seen, searches) = reader.join().expect("a reader");
        assert!(
            searches > 20,
            "the readers hardly ran ({searches} searches)"
        );
        total_hits += seen.len();
        for s in seen {
            assert_eq!(
                generations.get(&(s.doc, s.version)),
                Some(&s.generation),
                "a hit of d{} revision {} with another revision's generation",
                s.doc,
                s.version
            );
        }
    }
    assert!(
        total_hits > 100,
        "too few hits to mean anything: {total_hits}"
    );
    settle(&store);
    assert_verified(&store, "after the race");
}

#[test]
fn write_batches_keep_agreement() {
    // Many documents changing in one transaction: one changelog entry, applied whole.
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(dir.path());
    let mut rng = Rng::new(7);
    let mut model: Model = BTreeMap::new();
    for round in 1..=12u64 {
        let mut ops = Vec::new();
        for d in 0..20 {
            let (source, id) = ("batch".to_string(), format!("d{d}"));
            let key = (source.clone(), id.clone());
            if rng.below(4) == 0 {
                ops.push(Op::Delete {
                    source,
                    id,
                    version: Version::number(round),
                });
                model.remove(&key);
            } else {
                let old = model.get(&key).map(|(_, c)| c.clone()).unwrap_or_default();
                let chunks = revision(&mut rng, &source, &id, round, &old);
                let mut doc = Document::new(&source, &id, Version::number(round));
                for c in &chunks {
                    doc = doc.with_chunk(Chunk::new(c.text.clone(), c.vector.clone()));
                }
                ops.push(Op::Upsert(doc));
                model.insert(key, (round, chunks));
            }
        }
        for result in store.write_batch(ops).expect("batch") {
            result.expect("op");
        }
        if round == 4 {
            store.build_index().expect("build");
        }
        check(&store, &model, &mut rng, &format!("round {round}"));
    }
}
