//! Every live vector is found by a search for itself (top-1) through the HNSW graph: a
//! guard against unreachable graph nodes (`hnsw_rs` has had them under parallel insert),
//! after a fresh build, after new vectors were absorbed into the built graph in the
//! background, after a rebuild triggered by dead points, and after a reopen that loads the
//! persisted graph.
//!
//! Regression (a flaky failure in a CI rehearsal): the check was "top-1 at ef 64 for every
//! vector", and failed about once in fifteen runs after a rebuild with 1 of 2,803 missed — a
//! reachable point the greedy search passed by, not an unreachable one. Unreachable is now
//! asserted exactly (a miss is searched again at a width that visits every reachable point),
//! and the greedy misses at ef 64 are bounded separately.
//!
//! The store is far below the size where search uses the graph by default, so
//! `build_index()` forces a graph and `ef(64)` forces the graph path (with a graph,
//! `SearchOptions::ef` always searches it, whatever the store's size).

use crate::search_support;

use ratchetdb::{Chunk, Document, Metric, Op, Options, SearchOptions, Store, Version};
use search_support::{
    assert_verified, doc_index, dot, ingest_one_chunk_docs, normalized, open, settle, Rng,
    Structured,
};

const DIM: usize = 96;
const N: usize = 3000;

/// Searches for every live vector and returns the ones whose own chunk is not the top hit
/// (a tie with an equally close vector counts as found).
fn unreachable(store: &Store, live: &[Option<Vec<f32>>], metric: Metric, ef: usize) -> Vec<usize> {
    let options = SearchOptions::default().ef(ef);
    let mut missed = Vec::new();
    for (i, vector) in live.iter().enumerate() {
        let Some(vector) = vector else { continue };
        let hits = store.search(vector, 1, &options).expect("search");
        let found = match hits.first() {
            Some(hit) if doc_index(hit) == i => true,
            // Another vector exactly as close (duplicates): not a miss.
            Some(hit) => match metric {
                Metric::L2 => hit.score <= 1e-6,
                _ => {
                    hit.score
                        >= dot(&normalized(vector.clone()), &normalized(vector.clone())) - 1e-6
                }
            },
            None => false,
        };
        if !found {
            missed.push(i);
        }
    }
    missed
}

fn assert_all_found(store: &Store, live: &[Option<Vec<f32>>], metric: Metric, when: &str) {
    assert!(store.index_info().graph_ready, "{when}: no graph");
    let count = live.iter().flatten().count();
    let missed = unreachable(store, live, metric, 64);
    // A miss at width 64 is searched again at a width of every live vector, which visits every
    // point the graph reaches: a vector missed there too is unreachable.
    let only_here: Vec<Option<Vec<f32>>> = live
        .iter()
        .enumerate()
        .map(|(i, v)| if missed.contains(&i) { v.clone() } else { None })
        .collect();
    let lost = unreachable(store, &only_here, metric, count.max(64));
    assert!(
        lost.is_empty(),
        "{when}: {} of {count} live vectors are unreachable through the graph (first: {:?})",
        lost.len(),
        &lost[..lost.len().min(10)]
    );
    // Reachable but missed by the greedy search at width 64: an approximate search may do
    // that, rarely; more than one in 500 would be a recall regression.
    assert!(
        missed.len() * 500 <= count,
        "{when}: {} of {count} live vectors are not their own nearest neighbour at ef 64 \
         (first: {:?})",
        missed.len(),
        &missed[..missed.len().min(10)]
    );
}

/// Rewrites (new vector) or deletes `count` random live documents.
fn churn(
    store: &Store,
    live: &mut [Option<Vec<f32>>],
    rng: &mut Rng,
    data: &Structured,
    count: usize,
    version: u64,
) {
    let mut ops = Vec::new();
    let mut touched = std::collections::HashSet::new();
    for _ in 0..count {
        let i = rng.below(live.len() as u64) as usize;
        // One operation per document (a second one in the same batch would be refused).
        if live[i].is_none() || !touched.insert(i) {
            continue;
        }
        if rng.below(4) == 0 {
            ops.push(Op::Delete {
                source: "s".into(),
                id: format!("v{i}"),
                version: Version::number(version),
            });
            live[i] = None;
        } else {
            let vector = data.sample(rng);
            ops.push(Op::Upsert(
                Document::new("s", format!("v{i}"), Version::number(version))
                    .with_chunk(Chunk::new(format!("chunk {i} v{version}"), vector.clone())),
            ));
            live[i] = Some(vector);
        }
    }
    for result in store.write_batch(ops).expect("batch") {
        result.expect("op");
    }
}

#[test]
fn every_live_vector_is_its_own_nearest_neighbour_through_the_graph() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = Structured::new(21, DIM);
    let vectors = data.vectors(22, N);
    let mut live: Vec<Option<Vec<f32>>> = vectors.iter().cloned().map(Some).collect();
    let store = open(dir.path());
    ingest_one_chunk_docs(&store, "s", &vectors);
    store.build_index().expect("build");
    assert_all_found(&store, &live, Metric::Cosine, "after a build");

    // New vectors go outside the graph (scored exactly), then a background absorber
    // inserts them into it: they must be reachable there too.
    let mut rng = Rng::new(23);
    churn(&store, &mut live, &mut rng, &data, N / 10, 2);
    settle(&store);
    let info = store.index_info();
    assert!(
        info.dead_fraction > 0.0 && info.dead_fraction <= 0.2,
        "{info:?}"
    );
    assert_verified(&store, "after absorbing");
    assert_all_found(&store, &live, Metric::Cosine, "after absorbing new vectors");

    // More than 20% dead: the store rebuilds the graph in the background.
    churn(&store, &mut live, &mut rng, &data, N / 5, 3);
    settle(&store);
    let info = store.index_info();
    assert!(info.dead_fraction <= 0.2, "no rebuild: {info:?}");
    assert_verified(&store, "after the rebuild");
    assert_all_found(&store, &live, Metric::Cosine, "after a rebuild");

    // Reopen: the persisted graph is loaded (the store is too small to build one itself).
    drop(store);
    let store = open(dir.path());
    settle(&store);
    assert_verified(&store, "after reopening");
    assert_all_found(&store, &live, Metric::Cosine, "after reopening");
}

/// An L2 store whose vectors have norms from 0.5 to 4.5: the long ones are outliers that
/// `hnsw_rs` tends to prune out of every neighbour list (about 2% of them were left with no
/// incoming link). The store scores such points exactly instead, so each one is still found
/// by a search wide enough to visit every point the graph reaches.
#[test]
fn outliers_pruned_out_of_the_graph_are_still_found() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = Structured::new(31, DIM);
    let mut rng = Rng::new(32);
    let n = N / 2;
    let vectors: Vec<Vec<f32>> = (0..n)
        .map(|_| {
            let scale = 0.5 + rng.uniform() as f32 * 4.0;
            data.sample(&mut rng)
                .into_iter()
                .map(|x| x * scale)
                .collect()
        })
        .collect();
    let store = Store::open(
        dir.path().join("l2.redb"),
        Options::default()
            .metric(Metric::L2)
            .durability(ratchetdb::Durability::None),
    )
    .expect("open");
    ingest_one_chunk_docs(&store, "s", &vectors);
    store.build_index().expect("build");
    let live: Vec<Option<Vec<f32>>> = vectors.into_iter().map(Some).collect();
    // `ef` = every point: the search visits everything reachable.
    let missed = unreachable(&store, &live, Metric::L2, n);
    assert!(
        missed.is_empty(),
        "{} unreachable live vectors: {missed:?}",
        missed.len()
    );
    assert_verified(&store, "l2");
}
