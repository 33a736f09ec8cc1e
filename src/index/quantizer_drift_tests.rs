//! Regression: the graph's quantiser (8 bits a value then) was fitted once, when the graph
//! first reached `QUANTIZE_AT` points, and never refitted. Data that drifted away after
//! the first build (near-identical vectors first, clustered ones later) was coded all at
//! the range's edges, and the traversal on those codes lost most of its recall (0.45
//! against 0.90 for the same data built in one go). And a snapshot whose quantiser could
//! not code the stored vectors (low = 1e30, or step = 1e-30, resealed) loaded and missed
//! every neighbour. Codes now follow the data (refitted when too many values are clamped,
//! or the graph doubled), and a loaded quantiser that does not represent the vectors is
//! damage.

use std::collections::HashSet;

use super::test_support::{on_one_thread, SplitMix64};
use super::*;

const DIM: usize = graph::QUANTIZE_MIN_DIM;
/// Near-identical vectors the graph is first built (and its quantiser fitted) on.
const FIRST: usize = 2000;
/// Clustered vectors written after that build.
const LATER: usize = 3000;
const CLUSTERS: usize = 64;

fn gaussian(rng: &mut SplitMix64) -> f32 {
    // Irwin-Hall: the sum of 12 uniforms on [0, 1) minus 6 (mean 0, variance 1).
    (0..12).map(|_| (rng.unit() + 1.0) / 2.0).sum::<f32>() - 6.0
}

/// `n` unit vectors, each `centre + noise * gaussian` for one of `centres` at random.
fn around(rng: &mut SplitMix64, centres: &[Vec<f32>], noise: f32, n: usize) -> Vec<Vec<f32>> {
    (0..n)
        .map(|_| {
            let centre = &centres[rng.below(centres.len())];
            let mut v: Vec<f32> = centre.iter().map(|c| c + noise * gaussian(rng)).collect();
            assert!(normalize(&mut v));
            v
        })
        .collect()
}

/// The drifting data: `FIRST` vectors around one point (noise 0.001), then `LATER` from
/// `CLUSTERS` Gaussian clusters (noise 0.5 per value), and queries from the clusters.
/// Before the fix: recall@10 0.43 after the drift, 0.81 built in one go.
fn drifting_data() -> (Vec<Vec<f32>>, Vec<Vec<f32>>) {
    let mut rng = SplitMix64::new(44);
    let unit = |rng: &mut SplitMix64| {
        let mut v: Vec<f32> = (0..DIM).map(|_| gaussian(rng)).collect();
        assert!(normalize(&mut v));
        v
    };
    let base = vec![unit(&mut rng)];
    let centres: Vec<Vec<f32>> = (0..CLUSTERS).map(|_| unit(&mut rng)).collect();
    let noise = 0.5;
    let mut vectors = around(&mut rng, &base, 0.001, FIRST);
    vectors.extend(around(&mut rng, &centres, noise, LATER));
    let queries = around(&mut rng, &centres, noise, 100);
    (vectors, queries)
}

fn index_of(vectors: &[Vec<f32>]) -> VectorIndex {
    index_under(Metric::Cosine, vectors)
}

/// An index of `metric` holding `vectors` (ids their positions), no graph yet.
fn index_under(metric: Metric, vectors: &[Vec<f32>]) -> VectorIndex {
    let index = VectorIndex::new(DIM, metric).unwrap();
    let items: Vec<(u64, &[f32])> = vectors
        .iter()
        .enumerate()
        .map(|(i, v)| (i as u64, v.as_slice()))
        .collect();
    index.insert_batch(&items).unwrap();
    index
}

/// Recall@10 of the graph at the default `ef` against the exact scan.
fn recall(index: &VectorIndex, queries: &[Vec<f32>]) -> f64 {
    let ann = SearchMode::Ann {
        ef: DEFAULT_EF_SEARCH,
    };
    let (mut found, mut wanted) = (0usize, 0usize);
    for q in queries {
        let exact: HashSet<u64> = index
            .search(q, 10, SearchMode::Exact, None)
            .unwrap()
            .into_iter()
            .map(|h| h.0)
            .collect();
        let hits = index.search(q, 10, ann, None).unwrap();
        found += hits.iter().filter(|h| exact.contains(&h.0)).count();
        wanted += exact.len();
    }
    found as f64 / wanted as f64
}

// Regression (flaky test): built in parallel, and grown in rounds of 2,048 of the 3,000 later
// vectors, each round's share picked and linked in the outside set's iteration order (its
// hash seed differs from process to process), the graphs depended on the run, and the
// drifted graph's recall against the one-shot build's varied; one run in about thirty,
// alone or under load, fell more than 0.05 below it (0.755 against 0.813, 0.764 against
// 0.817) and failed. Built on one thread, and absorbed in id order (a round takes the
// smallest outside ids), the drifted graph links its points in the one-shot build's order:
// what differs is only the quantiser's history (fitted to the near-identical first
// vectors, refitted as the clusters arrive), which is what this test is about.

/// The drifted store: built on the first vectors, the later ones absorbed.
fn drifted(vectors: &[Vec<f32>]) -> VectorIndex {
    drifted_under(Metric::Cosine, vectors)
}

/// [`drifted`] under `metric`.
fn drifted_under(metric: Metric, vectors: &[Vec<f32>]) -> VectorIndex {
    on_one_thread(|| drifted_here(metric, vectors))
}

/// [`drifted_under`] on the calling thread's pool.
fn drifted_here(metric: Metric, vectors: &[Vec<f32>]) -> VectorIndex {
    let index = index_under(metric, &vectors[..FIRST]);
    index.build_graph().unwrap();
    assert!(index.graph.read().clone().unwrap().links().is_quantized());
    let later: Vec<(u64, &[f32])> = vectors
        .iter()
        .enumerate()
        .skip(FIRST)
        .map(|(i, v)| (i as u64, v.as_slice()))
        .collect();
    index.insert_batch(&later).unwrap();
    while index
        .absorb_outside_with(2048, Workers::Foreground)
        .unwrap()
        > 0
    {}
    assert!(!index.has_absorbable(), "every later vector absorbed");
    index
}

/// Under L2 as under cosine: an L2 graph's codes end with their norm term, which a refit
/// must code again (a review found no test drove an L2 graph through a refit; one that
/// dropped the norm term there would estimate every distance without it). The vectors are
/// unit length, so both metrics rank them alike.
#[test]
fn recall_after_the_data_drifts_matches_a_one_shot_build() {
    let (vectors, queries) = drifting_data();
    for metric in [Metric::Cosine, Metric::L2] {
        let one_shot = index_under(metric, &vectors);
        on_one_thread(|| one_shot.build_graph()).unwrap();
        let expected = recall(&one_shot, &queries);
        let index = drifted_under(metric, &vectors);
        let got = recall(&index, &queries);
        assert!(
            got >= expected - 0.05,
            "{metric:?}: recall@10 after the drift {got:.3}, one-shot build {expected:.3}"
        );
        if let Err(problem) = index.verify() {
            panic!("{metric:?}: {problem}");
        }
    }
}

/// The payload of `blobs` with its quantiser's `low` (or `step`) values all set to
/// `value`, resealed: only the values can tell the snapshot is not one the index wrote.
fn with_quantizer_values(blobs: &[Vec<u8>], step: bool, value: f32) -> Vec<Vec<u8>> {
    let mut payload: Vec<u8> = blobs[1..].concat();
    let len = payload.len();
    assert_eq!(payload[len - 1], 2, "the quantiser is present");
    let start = len - 1 - 8 * DIM + if step { 4 * DIM } else { 0 };
    for at in (start..start + 4 * DIM).step_by(4) {
        payload[at..at + 4].copy_from_slice(&value.to_le_bytes());
    }
    let mut header = blobs[0][..64].to_vec();
    header[44..48].copy_from_slice(&1u32.to_le_bytes());
    let mut hasher = blake3::Hasher::new();
    hasher.update(&header);
    hasher.update(&payload);
    header.extend_from_slice(hasher.finalize().as_bytes());
    vec![header, payload]
}

#[test]
fn a_resealed_snapshot_with_an_unrepresentative_quantizer_is_damage() {
    let (vectors, queries) = drifting_data();
    let index = drifted(&vectors);
    let blobs = index.snapshot_blobs().unwrap().unwrap();
    // The snapshot as written loads, and answers as the graph did.
    let reloaded = index_of(&vectors);
    reloaded.load_snapshot(&blobs).unwrap();
    let before = recall(&index, &queries);
    assert_eq!(recall(&reloaded, &queries), before);
    for (what, step, value) in [("low 1e30", false, 1e30f32), ("step 1e-30", true, 1e-30)] {
        let target = index_of(&vectors);
        match target.load_snapshot(&with_quantizer_values(&blobs, step, value)) {
            Err(IndexError::Corrupted { .. }) => {}
            other => panic!("{what}: expected Corrupted, got {other:?}"),
        }
        assert!(
            !target.graph_ready(),
            "{what}: a refused load changed the index"
        );
        // As the store does with a damaged snapshot: rebuilt from the vectors.
        on_one_thread(|| target.build_graph()).unwrap();
        let got = recall(&target, &queries);
        assert!(
            got >= before - 0.05,
            "{what}: recall@10 after the rebuild {got:.3}, before {before:.3}"
        );
    }
}
