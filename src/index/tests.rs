//! Tests of the `VectorIndex` facade: graph quality, deletion, concurrent builds,
//! snapshots and their corruption.

use std::collections::HashSet;
use std::sync::Arc;

use super::test_support::{low_rank_vectors, on_one_thread, random_unit_vectors, SplitMix64};
use super::*;

const DIM: usize = 64;
const N: usize = 2000;

fn filled(metric: Metric, vectors: &[Vec<f32>]) -> VectorIndex {
    filled_at(DIM, metric, vectors)
}

/// An index of `dim` dimensions holding `vectors` under ids `0..`.
fn filled_at(dim: usize, metric: Metric, vectors: &[Vec<f32>]) -> VectorIndex {
    let index = VectorIndex::new(dim, metric).unwrap();
    let items: Vec<(u64, &[f32])> = vectors
        .iter()
        .enumerate()
        .map(|(i, v)| (i as u64, v.as_slice()))
        .collect();
    index.insert_batch(&items).unwrap();
    index
}

/// Builds `index`'s graph on a one-thread pool: the links then depend only on the vectors
/// and the seeded levels, so a test that asserts what one particular graph answers sees the
/// same graph on every run. (A parallel build links points in whatever order the threads
/// reach them; on a loaded machine about one build in fifteen left a point that a
/// self-search at the default `ef` missed, which HNSW never promises.)
fn build_on_one_thread(index: &VectorIndex) {
    on_one_thread(|| index.build_graph()).unwrap();
}

/// Absorbs every outside id into `index`'s graph in rounds of `max`, calling `after_round`
/// after each, on one thread as [`build_on_one_thread`] builds (the background pool's
/// parallel inserts would make the links, and the recall the tests assert, depend on
/// thread timing).
fn absorb_on_one_thread(index: &VectorIndex, max: usize, mut after_round: impl FnMut() + Send) {
    on_one_thread(|| {
        while index.absorb_outside_with(max, Workers::Foreground).unwrap() > 0 {
            after_round();
        }
    });
}

fn ids(hits: &[(u64, f32)]) -> Vec<u64> {
    hits.iter().map(|h| h.0).collect()
}

const ANN: SearchMode = SearchMode::Ann {
    ef: DEFAULT_EF_SEARCH,
};

/// The invariants, checked after every scenario.
fn assert_consistent(index: &VectorIndex) {
    if let Err(problem) = index.verify() {
        panic!("{problem}");
    }
}

#[test]
fn normalize_scales_to_unit_and_refuses_zero() {
    let mut v = vec![3.0f32, 4.0];
    assert!(normalize(&mut v));
    assert!((v[0] - 0.6).abs() < 1e-7 && (v[1] - 0.8).abs() < 1e-7);
    let mut zero = vec![0.0f32; 4];
    assert!(!normalize(&mut zero));
    let mut bad = vec![f32::NAN, 1.0];
    assert!(!normalize(&mut bad));
    assert!(bad[0].is_nan() && bad[1] == 1.0, "left unchanged");
}

#[test]
fn bad_vectors_are_refused_and_change_nothing() {
    let index = VectorIndex::new(4, Metric::Cosine).unwrap();
    assert!(matches!(
        VectorIndex::new(0, Metric::L2),
        Err(IndexError::ZeroDimension)
    ));
    let good = [1.0f32, 0.0, 0.0, 0.0];
    let batch: Vec<(u64, &[f32])> = vec![(1, &good), (2, &[1.0, f32::NAN, 0.0, 0.0])];
    assert!(matches!(
        index.insert_batch(&batch),
        Err(IndexError::NonFinite { position: 1 })
    ));
    assert_eq!(
        index.len_live(),
        0,
        "the good half of a bad batch is not applied"
    );
    assert!(matches!(
        index.insert(3, &[1.0, 0.0]),
        Err(IndexError::DimensionMismatch {
            expected: 4,
            got: 2
        })
    ));
    assert!(matches!(
        index.insert(3, &[2.0, 0.0, 0.0, 0.0]),
        Err(IndexError::NotNormalized { .. })
    ));
    assert!(index
        .search(&[0.5, 0.0, 0.0, 0.0], 1, SearchMode::Auto, None)
        .is_err());
    // L2 takes any finite vector.
    let l2 = VectorIndex::new(2, Metric::L2).unwrap();
    assert_eq!(l2.insert(1, &[2.0, 0.0]).unwrap(), InsertOutcome::Added);
    let hits = l2.search(&[5.0, 4.0], 1, SearchMode::Exact, None).unwrap();
    assert_eq!(
        hits,
        vec![(1, 5.0)],
        "L2 reports the (non-squared) distance"
    );
}

#[test]
fn no_graph_means_exact_answers() {
    let vectors = random_unit_vectors(1, 300, DIM);
    let index = filled(Metric::Cosine, &vectors);
    assert!(!index.graph_ready());
    let exact = index
        .search(&vectors[7], 5, SearchMode::Exact, None)
        .unwrap();
    let ann = index.search(&vectors[7], 5, ANN, None).unwrap();
    assert_eq!(exact, ann);
    assert_eq!(exact[0].0, 7);
    assert!(
        (exact[0].1 - 1.0).abs() < 1e-5,
        "cosine similarity of a self-match"
    );
    assert!(exact.windows(2).all(|w| w[0].1 >= w[1].1), "best first");
}

#[test]
fn graph_finds_every_vector_itself() {
    for metric in [Metric::Cosine, Metric::L2] {
        let vectors = low_rank_vectors(42, N, DIM);
        let index = filled(metric, &vectors);
        build_on_one_thread(&index);
        assert!(index.graph_ready());
        for (i, v) in vectors.iter().enumerate() {
            let hits = index.search(v, 1, ANN, None).unwrap();
            assert_eq!(ids(&hits), vec![i as u64], "{metric:?}: self-search of {i}");
        }
        assert_consistent(&index);
    }
}

#[test]
fn graph_recall_at_10_is_at_least_095() {
    let vectors = low_rank_vectors(7, N, DIM);
    let index = filled(Metric::Cosine, &vectors);
    build_on_one_thread(&index);
    // Queries are fresh points from the same distribution.
    let queries = low_rank_vectors(7_000, 200, DIM);
    let mut found = 0;
    for q in &queries {
        let truth: HashSet<u64> = ids(&index.search(q, 10, SearchMode::Exact, None).unwrap())
            .into_iter()
            .collect();
        let ann = index.search(q, 10, ANN, None).unwrap();
        found += ann.iter().filter(|h| truth.contains(&h.0)).count();
    }
    let recall = found as f64 / (10 * queries.len()) as f64;
    assert!(recall >= 0.95, "recall@10 = {recall}");
}

#[test]
fn removed_and_replaced_ids_never_come_back() {
    let vectors = low_rank_vectors(3, N, DIM);
    let index = filled(Metric::Cosine, &vectors);
    index.build_graph().unwrap();
    // A parallel build may leave a few points no search reaches: they are dead (their ids
    // scored outside) from the start.
    let unreachable: HashSet<u64> = index
        .graph
        .read()
        .clone()
        .unwrap()
        .unreachable_ids()
        .into_iter()
        .collect();
    let mut rng = SplitMix64::new(5);
    let mut removed = HashSet::new();
    while removed.len() < N / 2 {
        let id = rng.below(N) as u64;
        if removed.insert(id) {
            assert!(index.remove(id));
        }
    }
    assert!(!index.remove(*removed.iter().next().unwrap()));
    let dead = removed.union(&unreachable).count();
    assert!((index.dead_fraction() - dead as f64 / N as f64).abs() < 1e-9);
    assert!(index.needs_rebuild(0.2));
    assert!(!index.needs_rebuild(0.6));
    // Replace ten live vectors: their old points must never answer again, their new
    // vectors must (scored outside the graph).
    let fresh = low_rank_vectors(11, 10, DIM);
    let replaced: Vec<u64> = (0..N as u64)
        .filter(|id| !removed.contains(id))
        .take(10)
        .collect();
    for (&id, v) in replaced.iter().zip(&fresh) {
        assert_eq!(index.insert(id, v).unwrap(), InsertOutcome::Replaced);
        assert_eq!(index.insert(id, v).unwrap(), InsertOutcome::Unchanged);
    }
    assert_consistent(&index);
    for (i, v) in vectors.iter().enumerate() {
        for mode in [ANN, SearchMode::Exact] {
            let hits = index.search(v, 10, mode, None).unwrap();
            assert!(hits.iter().all(|h| !removed.contains(&h.0)), "{mode:?}");
            assert_eq!(hits.len(), 10, "{mode:?}: k live hits despite half dead");
            let old_self = replaced.contains(&(i as u64)) && hits[0].0 == i as u64;
            assert!(!old_self || hits[0].1 < 0.999, "an outdated point answered");
        }
    }
    for (&id, v) in replaced.iter().zip(&fresh) {
        let hits = index.search(v, 1, ANN, None).unwrap();
        assert_eq!(hits[0].0, id);
        assert!((hits[0].1 - 1.0).abs() < 1e-5);
    }
    // A rebuild drops every dead point (only the new graph's unreachable ones are dead).
    index.build_graph().unwrap();
    let unreachable = index.graph.read().clone().unwrap().unreachable_ids().len();
    assert_eq!(
        index.dead_fraction(),
        unreachable as f64 / index.len_live() as f64
    );
    assert_consistent(&index);
    assert!(!index.needs_rebuild(0.2));
}

#[test]
fn caller_filter_applies_in_both_modes() {
    let vectors = low_rank_vectors(9, N, DIM);
    let index = filled(Metric::Cosine, &vectors);
    index.build_graph().unwrap();
    let multiple_of_3 = |id: u64| id.is_multiple_of(3);
    for q in vectors.iter().take(50) {
        for mode in [ANN, SearchMode::Exact] {
            let hits = index.search(q, 10, mode, Some(&multiple_of_3)).unwrap();
            assert_eq!(hits.len(), 10);
            assert!(hits.iter().all(|h| multiple_of_3(h.0)));
        }
    }
    let none = |_: u64| false;
    assert!(index
        .search(&vectors[0], 10, ANN, Some(&none))
        .unwrap()
        .is_empty());
}

// Regression (flaky test, 1 run in 30-40 before and after the slot bits): this test
// required every live vector to be its own nearest in a graph search, and a greedy graph
// search can miss a live, reachable point now and then. "Not lost" is what the exact search
// and `verify` (every live id a live graph point or scored outside) show; the graph search
// is held to finding nearly all of them, and to never returning a removed one.
#[test]
fn changes_during_a_build_are_not_lost() {
    let vectors = low_rank_vectors(21, N + 1000, DIM);
    let index = Arc::new(filled(Metric::Cosine, &vectors[..N]));
    index.build_graph().unwrap(); // the old graph keeps serving during the rebuild
                                  // Ids removed before anything starts: no search may ever return them.
    let gone: HashSet<u64> = (1900..N as u64).collect();
    for &id in &gone {
        assert!(index.remove(id));
    }
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let (index, done, gone) = (Arc::clone(&index), Arc::clone(&done), gone.clone());
        let queries: Vec<Vec<f32>> = vectors[1900..N].to_vec();
        std::thread::spawn(move || {
            let mut searches = 0;
            while !done.load(std::sync::atomic::Ordering::Relaxed) || searches == 0 {
                for q in &queries {
                    for mode in [ANN, SearchMode::Exact] {
                        let hits = index.search(q, 5, mode, None).unwrap();
                        assert_eq!(hits.len(), 5);
                        assert!(hits.iter().all(|h| !gone.contains(&h.0)));
                        searches += 1;
                    }
                }
            }
        })
    };
    let builder = {
        let index = Arc::clone(&index);
        std::thread::spawn(move || index.build_graph())
    };
    while index.journal.lock().is_none() {
        std::thread::yield_now(); // wait until the build has started journalling
    }
    // Insert 1000 new ids and remove 500 old ones while the build runs.
    for (i, v) in vectors.iter().enumerate().skip(N) {
        index.insert(i as u64, v).unwrap();
        if i % 2 == 0 {
            assert!(index.remove((i - N) as u64));
        }
    }
    builder.join().unwrap().unwrap();
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    reader.join().unwrap();
    assert_consistent(&index);
    let mut graph_misses = 0;
    let mut live = 0;
    for (i, v) in vectors.iter().enumerate() {
        let exact = index.search(v, 1, SearchMode::Exact, None).unwrap();
        let graph = index.search(v, 1, ANN, None).unwrap();
        let was_removed = (i < 1000 && i % 2 == 0) || gone.contains(&(i as u64));
        if was_removed {
            assert_ne!(exact[0].0, i as u64, "removed id {i} is live");
            assert_ne!(graph[0].0, i as u64, "removed id {i} returned");
        } else {
            assert_eq!(exact[0].0, i as u64, "id {i} lost by the build");
            live += 1;
            if graph[0].0 != i as u64 {
                graph_misses += 1;
            }
        }
    }
    assert!(
        graph_misses * 100 <= live,
        "the graph search missed {graph_misses} of {live} live vectors"
    );
}

#[test]
fn snapshot_round_trip_gives_identical_results() {
    for metric in [Metric::Cosine, Metric::L2] {
        let vectors = low_rank_vectors(13, N, DIM);
        let index = filled(metric, &vectors);
        assert!(
            index.snapshot_blobs().unwrap().is_none(),
            "no graph, no snapshot"
        );
        index.build_graph().unwrap();
        for id in 0..100 {
            index.remove(id);
        }
        let blobs = index.snapshot_blobs().unwrap().unwrap();
        assert!(blobs.len() >= 2 && blobs[0].len() == persisted::HEADER_LEN);

        let reopened = filled(metric, &vectors);
        for id in 0..100 {
            reopened.remove(id);
        }
        reopened.load_snapshot(&blobs).unwrap();
        assert_consistent(&reopened);
        assert_eq!(reopened.dead_fraction(), index.dead_fraction());
        let queries = low_rank_vectors(99, 100, DIM);
        for q in queries.iter().chain(&vectors[..100]) {
            assert_eq!(
                index.search(q, 10, ANN, None).unwrap(),
                reopened.search(q, 10, ANN, None).unwrap()
            );
        }
        // A reloaded graph snapshots again to the same graph.
        let again = reopened.snapshot_blobs().unwrap().unwrap();
        let third = filled(metric, &vectors);
        for id in 0..100 {
            third.remove(id);
        }
        third.load_snapshot(&again).unwrap();
        for q in queries.iter().take(20) {
            assert_eq!(
                index.search(q, 10, ANN, None).unwrap(),
                third.search(q, 10, ANN, None).unwrap()
            );
        }
        // And the reloaded graph keeps accepting inserts. (Same seed: the new vectors
        // follow the data's distribution. A far outlier can be unreachable in any HNSW:
        // its neighbours keep closer links and drop the reverse edge to it.)
        let extra = low_rank_vectors(13, N + 20, DIM);
        for (i, v) in extra.iter().enumerate().skip(N) {
            reopened.insert(i as u64, v).unwrap();
        }
        for (i, v) in extra.iter().enumerate().skip(N) {
            assert_eq!(reopened.search(v, 1, ANN, None).unwrap()[0].0, i as u64);
        }
        assert_consistent(&reopened);
    }
}

#[test]
fn an_old_snapshot_is_reconciled_with_the_live_vectors() {
    let vectors = low_rank_vectors(17, N, DIM);
    let index = filled(Metric::Cosine, &vectors[..N / 2]);
    index.build_graph().unwrap();
    let blobs = index.snapshot_blobs().unwrap().unwrap();

    // Since the snapshot: ids 0..100 removed, 100..110 replaced, N/2..N added.
    let reopened = filled(Metric::Cosine, &vectors);
    for id in 0..100 {
        reopened.remove(id);
    }
    let fresh = low_rank_vectors(18, 10, DIM);
    for (id, v) in (100..110).zip(&fresh) {
        reopened.insert(id, v).unwrap();
    }
    reopened.load_snapshot(&blobs).unwrap();
    assert_consistent(&reopened);
    let graph = reopened.graph.read().clone().unwrap();
    // Points no search reaches (the removed ones' links are dropped at load) are scored
    // outside too.
    let unreachable: std::collections::HashSet<u64> = graph
        .unreachable_ids()
        .into_iter()
        .filter(|&id| id >= 110)
        .collect();
    assert_eq!(graph.dead_count(), 110 + unreachable.len());
    // The replaced ids and the ids added since are scored outside the graph at once (the
    // graph serves immediately); the added ones wait for the absorber.
    assert_eq!(graph.outside_count(), 10 + N / 2 + unreachable.len());
    for id in 110..(N / 2) as u64 {
        assert!(graph.is_live(id) || unreachable.contains(&id), "{id}");
    }
    // Regression: this asserted that every graph self-search finds itself, which no
    // approximate graph promises (a local test run found id 229 for 198's vector, 1 run in
    // 17). What reconciliation promises: the exact scan finds every live vector as itself,
    // no search answers with a removed id or a replaced id's old vector, and the graph
    // finds nearly all of them.
    let every_vector_found = |index: &VectorIndex| {
        let mut missed = 0usize;
        let live = vectors
            .iter()
            .enumerate()
            .skip(110)
            .map(|(i, v)| (i as u64, v))
            .chain((100..110).zip(&fresh));
        for (id, v) in live {
            assert_eq!(
                index.search(v, 1, SearchMode::Exact, None).unwrap()[0].0,
                id
            );
            let hits = index.search(v, 10, ANN, None).unwrap();
            assert!(hits.iter().all(|h| h.0 >= 100), "a removed id answered");
            let old_self = (100..110).contains(&hits[0].0)
                && (1.0 - hits[0].1).abs() < 1e-6
                && hits[0].0 != id;
            assert!(!old_self, "a replaced id answered with its old vector");
            missed += usize::from(hits[0].0 != id);
        }
        assert!(missed * 100 <= N, "{missed} graph self-searches missed");
    };
    every_vector_found(&reopened);

    // Ids ever unreachable: at the load, and after each absorb (when absorb re-checks).
    // (This asserted "unreachable after the last round", which a later round's links can
    // make false: a point scored outside stays outside. CI once failed on id 1071.)
    let mut ever_unreachable: std::collections::HashSet<u64> =
        graph.unreachable_ids().into_iter().collect();
    absorb_on_one_thread(&reopened, 64, || {
        ever_unreachable.extend(graph.unreachable_ids())
    });
    assert_consistent(&reopened);
    assert!(reopened
        .graph
        .read()
        .as_ref()
        .is_some_and(|g| Arc::ptr_eq(g, &graph)));
    for id in (N / 2) as u64..N as u64 {
        assert!(graph.is_live(id) || ever_unreachable.contains(&id), "{id}");
    }
    // The replaced ids keep their dead point, so they stay outside until a rebuild; the
    // only others outside are points no search reached at some absorb.
    let outside = graph.outside_ids();
    for id in 100..110 {
        assert!(outside.contains(&id), "replaced {id} must stay outside");
    }
    for id in outside {
        assert!(
            (100..110).contains(&id) || ever_unreachable.contains(&id),
            "{id} is scored outside but was never unreachable"
        );
    }
    every_vector_found(&reopened);
}

#[test]
fn an_empty_graph_snapshots_and_loads() {
    let index = VectorIndex::new(DIM, Metric::L2).unwrap();
    index.build_graph().unwrap();
    let blobs = index.snapshot_blobs().unwrap().unwrap();
    // The header, and a payload of one byte: no quantiser (format 6).
    assert_eq!(blobs.len(), 2);
    assert_eq!(blobs[1], [0]);
    let vectors = random_unit_vectors(2, 10, DIM);
    let reopened = filled(Metric::L2, &vectors);
    reopened.load_snapshot(&blobs).unwrap();
    assert_consistent(&reopened);
    assert_eq!(reopened.search(&vectors[3], 1, ANN, None).unwrap()[0].0, 3);
}

/// A load walks the links it takes over for the points no search reaches (on a thread of
/// its own, beside the vectors' gather): the same points as the graph's own walk once
/// loaded, with every vector present and with some gone (their points then have no links,
/// and are among them).
#[test]
fn the_points_a_load_finds_unreachable_are_those_of_the_loaded_graphs_walk() {
    let vectors = low_rank_vectors(23, N, DIM);
    let index = filled(Metric::Cosine, &vectors);
    index.build_graph().unwrap();
    let blobs = index.snapshot_blobs().unwrap().unwrap();
    for gone in [0usize, 150] {
        let live: Vec<u64> = (gone as u64..N as u64).collect();
        let parsed = parse_snapshot(&blobs, Metric::Cosine, DIM).unwrap();
        let (graph, unreachable) = parsed
            .into_graph(&live, |id| {
                (id >= gone as u64)
                    .then(|| vectors.get(id as usize).map(Vec::as_slice))
                    .flatten()
            })
            .unwrap();
        let found: HashSet<u64> = unreachable.iter().copied().collect();
        assert_eq!(found.len(), unreachable.len(), "an id reported twice");
        let walked: HashSet<u64> = graph.unreachable_ids().into_iter().collect();
        assert_eq!(found, walked, "{gone} vectors gone");
        assert!(
            (0..gone as u64).all(|id| found.contains(&id)),
            "{gone} vectors gone"
        );
    }
}

fn small_snapshot() -> (VectorIndex, Vec<Vec<u8>>) {
    let vectors = low_rank_vectors(31, 150, DIM);
    let index = filled(Metric::Cosine, &vectors);
    build_on_one_thread(&index);
    let blobs = index.snapshot_blobs().unwrap().unwrap();
    (index, blobs)
}

#[test]
fn a_damaged_snapshot_is_an_error_not_a_panic() {
    let (index, blobs) = small_snapshot();
    let fresh = || filled(Metric::Cosine, &low_rank_vectors(31, 150, DIM));
    let expect_err = |blobs: &[Vec<u8>], what: &str| {
        let target = fresh();
        let result = target.load_snapshot(blobs);
        assert!(result.is_err(), "{what}: accepted");
        assert!(
            !target.graph_ready(),
            "{what}: a failed load changed the index"
        );
        result.err()
    };
    // A flipped bit anywhere: header or payload.
    let mut rng = SplitMix64::new(77);
    for _ in 0..40 {
        let mut damaged = blobs.clone();
        let part = rng.below(damaged.len());
        let at = rng.below(damaged[part].len());
        damaged[part][at] ^= 1 << rng.below(8);
        expect_err(&damaged, "flipped bit");
    }
    // Torn: truncated payload, missing part, truncated or missing header.
    let mut torn = blobs.clone();
    let last = torn.len() - 1;
    let cut = torn[last].len() / 2;
    torn[last].truncate(cut);
    assert!(matches!(
        expect_err(&torn, "truncated part"),
        Some(IndexError::Corrupted { .. })
    ));
    expect_err(&blobs[..1], "missing part");
    let mut short_header = blobs.clone();
    short_header[0].truncate(40);
    expect_err(&short_header, "short header");
    expect_err(&Vec::<Vec<u8>>::new(), "no blob");
    // Intact, but for another index.
    let other_dim = VectorIndex::new(DIM + 1, Metric::Cosine).unwrap();
    assert!(matches!(
        other_dim.load_snapshot(&blobs),
        Err(IndexError::Incompatible { .. })
    ));
    let other_metric = VectorIndex::new(DIM, Metric::L2).unwrap();
    assert!(matches!(
        other_metric.load_snapshot(&blobs),
        Err(IndexError::Incompatible { .. })
    ));
    // The original still loads.
    let ok = fresh();
    ok.load_snapshot(&blobs).unwrap();
    drop(index);
}

/// Re-seals `payload` under a valid header: what a bug in our writer would produce. The
/// checksum passes; the parser must object.
fn reseal(header: &[u8], payload: &[u8]) -> Vec<Vec<u8>> {
    reseal_parts(header, &[payload])
}

/// [`reseal`] with the payload in `parts`.
fn reseal_parts(header: &[u8], parts: &[&[u8]]) -> Vec<Vec<u8>> {
    let mut header = header[..64].to_vec();
    header[44..48].copy_from_slice(&(parts.len() as u32).to_le_bytes());
    let mut hasher = blake3::Hasher::new();
    hasher.update(&header);
    for part in parts {
        hasher.update(part);
    }
    header.extend_from_slice(hasher.finalize().as_bytes());
    let mut blobs = vec![header];
    blobs.extend(parts.iter().map(|p| p.to_vec()));
    blobs
}

/// Regression (issue 17): format 5 writes only the links a row has, where format 3 wrote
/// every row at its capacity. The snapshots earlier builds wrote (format 3) must still
/// load, to the same graph, and format 5's must be the smaller.
#[test]
fn a_format_3_snapshot_of_an_earlier_build_still_loads() {
    let (index, blobs) = small_snapshot();
    let vectors = low_rank_vectors(31, 150, DIM);
    let old = persisted::as_fixed_rows(&blobs, Metric::Cosine, DIM, |id| {
        vectors[id as usize].clone()
    });
    assert_eq!(old[0][8..12], 3u32.to_le_bytes());
    let payload = |b: &[Vec<u8>]| b[1..].iter().map(Vec::len).sum::<usize>();
    let (new_bytes, old_bytes) = (payload(&blobs), payload(&old));
    assert!(
        new_bytes * 2 < old_bytes,
        "format 6: {new_bytes} bytes, format 3: {old_bytes}"
    );
    let from_new = filled(Metric::Cosine, &vectors);
    from_new.load_snapshot(&blobs).unwrap();
    let from_old = filled(Metric::Cosine, &vectors);
    from_old.load_snapshot(&old).unwrap();
    for loaded in [&from_new, &from_old] {
        assert_consistent(loaded);
        assert!(loaded.graph_ready());
    }
    for q in low_rank_vectors(32, 40, DIM).iter().chain(&vectors) {
        let expected = index.search(q, 10, ANN, None).unwrap();
        assert_eq!(from_new.search(q, 10, ANN, None).unwrap(), expected);
        assert_eq!(from_old.search(q, 10, ANN, None).unwrap(), expected);
    }
}

/// Format 7 (varint ids, 4-byte fingerprints, varint counts, each row's slots sorted and
/// stored as bit-packed differences) writes the graph in fewer bytes than format 6 did,
/// and a format-6 snapshot of an earlier build still loads: both to the same rows (as
/// sets) and the same answers as the graph saved.
#[test]
fn format_7_is_smaller_than_format_6_and_both_load_the_same_graph() {
    let dim = 8;
    let vectors = low_rank_vectors(79, 8000, dim);
    let index = filled_at(dim, Metric::Cosine, &vectors);
    build_on_one_thread(&index);
    let blobs = index.snapshot_blobs().unwrap().unwrap();
    assert_eq!(blobs[0][8..12], 7u32.to_le_bytes());
    let old = persisted::as_format_6(&blobs, Metric::Cosine, dim).unwrap();
    assert_eq!(old[0][8..12], 6u32.to_le_bytes());
    let payload = |b: &[Vec<u8>]| b[1..].iter().map(Vec::len).sum::<usize>();
    let (new_bytes, old_bytes) = (payload(&blobs), payload(&old));
    assert!(
        new_bytes * 4 <= old_bytes * 3,
        "format 7: {new_bytes} bytes, format 6: {old_bytes}"
    );
    // Each row's slots as a set (sorted), every row in the graph's order.
    let sorted_rows = |index: &VectorIndex| {
        let graph = index.graph.read().clone().unwrap();
        let mut rows = Vec::new();
        graph.links().for_each_row(|row, _| {
            let count = row[0].load(std::sync::atomic::Ordering::Relaxed) as usize;
            let mut slots: Vec<u32> = row[1..=count]
                .iter()
                .map(|s| s.load(std::sync::atomic::Ordering::Relaxed))
                .collect();
            slots.sort_unstable();
            rows.push(slots);
        });
        rows
    };
    let loaded = |blobs: &[Vec<u8>]| {
        let index = filled_at(dim, Metric::Cosine, &vectors);
        index
            .install_snapshot(parse_snapshot(blobs, Metric::Cosine, dim).unwrap())
            .unwrap();
        index
    };
    let (from_new, from_old) = (loaded(&blobs), loaded(&old));
    let saved_rows = sorted_rows(&index);
    assert_eq!(sorted_rows(&from_new), saved_rows);
    assert_eq!(sorted_rows(&from_old), saved_rows);
    for loaded in [&from_new, &from_old] {
        assert_consistent(loaded);
    }
    for q in low_rank_vectors(80, 60, dim)
        .iter()
        .chain(vectors.iter().step_by(131))
    {
        let expected = index.search(q, 10, ANN, None).unwrap();
        assert_eq!(from_new.search(q, 10, ANN, None).unwrap(), expected);
        assert_eq!(from_old.search(q, 10, ANN, None).unwrap(), expected);
    }
}

/// The fuzz target's sealing (`persisted::sealed`: a payload under a well-formed format-7
/// header, as `testkit::row_decoding` reads its bytes) gives a real snapshot's payload back
/// its graph, so the target's seed reaches past the header into the links.
#[test]
fn a_real_payload_sealed_as_the_fuzz_target_seals_it_loads() {
    let vectors = low_rank_vectors(60, 60, 8);
    let index = filled_at(8, Metric::Cosine, &vectors);
    build_on_one_thread(&index);
    let blobs = index.snapshot_blobs().unwrap().unwrap();
    let m = u32::from_le_bytes(blobs[0][32..36].try_into().unwrap());
    let entry = u32::from_le_bytes(blobs[0][40..44].try_into().unwrap());
    let sealed = persisted::sealed(&blobs[1..].concat(), 60, m, 8, entry);
    assert_eq!(sealed[0], blobs[0], "the same header");
    let reloaded = filled_at(8, Metric::Cosine, &vectors);
    reloaded.load_snapshot(&sealed).unwrap();
    for q in &vectors {
        assert_eq!(
            reloaded.search(q, 5, ANN, None).unwrap(),
            index.search(q, 5, ANN, None).unwrap()
        );
    }
}

/// A snapshot announcing an `M` no store option allows (above `MAX_INDEX_M`) is refused
/// before its rows are sized from it: at `M` 256 a resealed payload of a few bytes a point
/// asked for about 4 KB of link words a point.
#[test]
fn a_snapshot_announcing_an_m_no_option_allows_is_refused() {
    let (_, blobs) = small_snapshot();
    let payload: Vec<u8> = blobs[1..].concat();
    for m in [crate::options::MAX_INDEX_M as u32 + 1, 256] {
        let mut header = blobs[0].clone();
        header[32..36].copy_from_slice(&m.to_le_bytes());
        match filled(Metric::Cosine, &low_rank_vectors(31, 150, DIM))
            .load_snapshot(&reseal(&header, &payload))
        {
            Err(IndexError::Corrupted { detail }) => {
                assert_eq!(detail, format!("M {m}"))
            }
            other => panic!("M {m}: expected Corrupted, got {other:?}"),
        }
    }
}

/// Format 5 spends two bytes on a row that the graph holds at its capacity (`M + 1` words
/// in an upper layer): levels that sum far above what `n` points can have would make a
/// small, well-sealed payload ask for rows of gigabytes. Refused before anything is
/// allocated.
#[test]
fn a_snapshot_whose_levels_no_graph_has_is_refused() {
    let (_, blobs) = small_snapshot();
    let n = 150;
    let format_6 = persisted::as_format_6(&blobs, Metric::Cosine, DIM).unwrap();
    for (format, blobs, levels) in [
        (7, &blobs, persisted::levels_at(&blobs[1..].concat(), n)),
        (6, &format_6, 16 * n..17 * n),
    ] {
        let mut payload: Vec<u8> = blobs[1..].concat();
        for level in &mut payload[levels] {
            *level = graph::MAX_LEVEL as u8;
        }
        match filled(Metric::Cosine, &low_rank_vectors(31, n, DIM))
            .load_snapshot(&reseal(&blobs[0], &payload))
        {
            Err(IndexError::Corrupted { detail }) => {
                assert!(detail.contains("levels"), "format {format}: {detail}")
            }
            other => panic!("format {format}: expected Corrupted, got {other:?}"),
        }
    }
}

/// The writer streams the payload into its parts (hashing as it goes) rather than cutting
/// one whole buffer: every part but the last is exactly `MAX_PART_BYTES`, the header
/// announces their total, and the snapshot loads to the same answers.
#[test]
fn a_snapshot_of_several_parts_is_cut_at_the_part_size_and_loads() {
    let dim = 8;
    let vectors = low_rank_vectors(79, 8000, dim);
    let index = filled_at(dim, Metric::Cosine, &vectors);
    build_on_one_thread(&index);
    let blobs = index.snapshot_blobs().unwrap().unwrap();
    assert!(
        blobs.len() > 2,
        "{} blobs: the payload fits one part",
        blobs.len()
    );
    let (last, whole) = blobs[1..].split_last().unwrap();
    assert!(whole.iter().all(|p| p.len() == persisted::MAX_PART_BYTES));
    assert!(!last.is_empty() && last.len() <= persisted::MAX_PART_BYTES);
    let total: usize = blobs[1..].iter().map(Vec::len).sum();
    let announced = u64::from_le_bytes(blobs[0][48..56].try_into().unwrap());
    assert_eq!(announced, total as u64);
    let reloaded = filled_at(dim, Metric::Cosine, &vectors);
    reloaded.load_snapshot(&blobs).unwrap();
    assert_consistent(&reloaded);
    for q in vectors.iter().step_by(97) {
        assert_eq!(
            index.search(q, 10, ANN, None).unwrap(),
            reloaded.search(q, 10, ANN, None).unwrap()
        );
    }
}

/// The payload may come in any number of parts of any length (the writer cuts it at
/// `MAX_PART_BYTES`); the reader joins them.
#[test]
fn a_snapshot_in_uneven_parts_loads() {
    let (index, blobs) = small_snapshot();
    let payload: Vec<u8> = blobs[1..].concat();
    let cuts = [
        0,
        1,
        payload.len() / 3,
        payload.len() / 3 + 7,
        payload.len(),
    ];
    let parts: Vec<&[u8]> = cuts.windows(2).map(|w| &payload[w[0]..w[1]]).collect();
    let vectors = low_rank_vectors(31, 150, DIM);
    let target = filled(Metric::Cosine, &vectors);
    target
        .load_snapshot(&reseal_parts(&blobs[0], &parts))
        .unwrap();
    assert_consistent(&target);
    for q in &vectors {
        assert_eq!(
            target.search(q, 5, ANN, None).unwrap(),
            index.search(q, 5, ANN, None).unwrap()
        );
    }
}

#[test]
fn a_well_sealed_but_malformed_snapshot_is_refused_or_loads_consistently() {
    let (_, blobs) = small_snapshot();
    let payload: Vec<u8> = blobs[1..].concat();
    let n = 150;
    let fresh = || filled(Metric::Cosine, &low_rank_vectors(31, n, DIM));
    // Sanity: resealing the untouched payload loads.
    fresh().load_snapshot(&reseal(&blobs[0], &payload)).unwrap();

    let vectors = low_rank_vectors(31, n, DIM);
    let mut rng = SplitMix64::new(1234);
    let levels = persisted::levels_at(&payload, n);
    let (mut refused, mut loaded, mut misses) = (0, 0, 0);
    for round in 0..300 {
        let mut damaged = payload.clone();
        // Ids and fingerprints, then the levels, then anywhere (mostly links).
        let at = match round % 3 {
            0 => rng.below(levels.start),
            1 => levels.start + rng.below(n),
            _ => rng.below(damaged.len()),
        };
        damaged[at] = damaged[at].wrapping_add(1 + rng.below(255) as u8);
        let target = fresh();
        // Must return (Ok or Err), never panic. A changed id or fingerprint makes a point
        // dead (its id scored outside); a link to another valid slot is still a graph, if
        // not the one written: a search may then miss a vector as any approximate search
        // can, but every hit is a stored vector with its true distance.
        match target.load_snapshot(&reseal(&blobs[0], &damaged)) {
            Err(_) => refused += 1,
            Ok(()) => {
                assert_consistent(&target);
                loaded += 1;
                let mut round_misses = 0;
                for (i, v) in vectors.iter().enumerate() {
                    let (hit, distance) = target.search(v, 1, ANN, None).unwrap()[0];
                    assert!((hit as usize) < n, "round {round}: vector {i} hit {hit}");
                    let exact = target.search_among(v, 1, [hit]).unwrap();
                    assert_eq!(exact, [(hit, distance)], "round {round}: vector {i}");
                    if hit != i as u64 {
                        round_misses += 1;
                    }
                }
                // One damaged link strands few searches, if any. (In format 7 a damaged
                // count or width shifts the reading of every later row; the stream's end and
                // the slot checks refuse nearly all of those.)
                assert!(
                    round_misses * 10 <= n,
                    "round {round}: {round_misses} of {n} self-searches missed"
                );
                misses += round_misses;
            }
        }
    }
    // Across the loaded rounds, nearly every vector is still its own nearest hit.
    assert!(
        misses * 100 <= loaded * n,
        "{misses} of {} self-searches missed",
        loaded * n
    );
    // Every level change (a third of the rounds) and most link changes are refused.
    assert!(
        refused > 100,
        "only {refused} of 300 malformed snapshots refused"
    );
    // Truncations anywhere.
    for cut in [0, 1, 4, 30, levels.start, levels.end + 3, payload.len() - 1] {
        assert!(fresh()
            .load_snapshot(&reseal(&blobs[0], &payload[..cut]))
            .is_err());
    }
}

/// Regression (issue 17): earlier builds persisted `hnsw_rs`'s dump (format version 2),
/// every vector written a second time. Such a snapshot is recognised as incompatible,
/// never parsed, and the store rebuilds the graph.
#[test]
fn an_hnsw_rs_dump_snapshot_is_incompatible() {
    let (_, blobs) = small_snapshot();
    let mut old = vec![0u8; 88];
    old[..8].copy_from_slice(&persisted::MAGIC);
    old[8..12].copy_from_slice(&2u32.to_le_bytes());
    let target = filled(Metric::Cosine, &low_rank_vectors(31, 150, DIM));
    match target.load_snapshot(&[old, blobs[1].clone()]) {
        Err(IndexError::Incompatible { detail }) => assert!(detail.contains("hnsw_rs"), "{detail}"),
        other => panic!("expected Incompatible, got {other:?}"),
    }
    assert!(!target.graph_ready());
}

#[test]
fn a_snapshot_holds_links_only_and_loads_vectors_from_the_store() {
    let vectors = low_rank_vectors(21, N, DIM);
    let queries = low_rank_vectors(22, 50, DIM);
    let index = filled(Metric::Cosine, &vectors);
    index.build_graph().unwrap();
    let blobs = index.snapshot_blobs().unwrap().unwrap();
    // Links (2M + 1 words of layer 0 per point, a few upper rows), ids, fingerprints,
    // levels: no vector is in it (they alone would be N * DIM * 4 bytes).
    let bytes: usize = blobs.iter().map(Vec::len).sum();
    let m = crate::options::DEFAULT_INDEX_M;
    let links_only = N * (8 + 8 + 1 + (2 * m + 1) * 4) * 5 / 4 + persisted::HEADER_LEN;
    assert!(bytes <= links_only, "{bytes} bytes > {links_only}");
    assert!(
        bytes < N * DIM * 4,
        "{bytes} bytes: as large as the vectors"
    );

    let reopened = filled(Metric::Cosine, &vectors);
    reopened
        .install_snapshot(parse_snapshot(&blobs, Metric::Cosine, DIM).unwrap())
        .unwrap();
    assert_consistent(&reopened);
    for q in &queries {
        assert_eq!(
            index.search(q, 10, ANN, None).unwrap(),
            reopened.search(q, 10, ANN, None).unwrap()
        );
    }
}

#[test]
fn writes_racing_a_snapshot_load_never_come_back() {
    let vectors = low_rank_vectors(23, N, DIM);
    let index = filled(Metric::L2, &vectors);
    index.build_graph().unwrap();
    let blobs = index.snapshot_blobs().unwrap().unwrap();

    let reopened = Arc::new(filled(Metric::L2, &vectors));
    let parsed = parse_snapshot(&blobs, Metric::L2, DIM).unwrap();
    let loader = {
        let reopened = reopened.clone();
        std::thread::spawn(move || reopened.install_snapshot(parsed))
    };
    // Writes racing the load: removals and replacements never come back from a search,
    // whether the exact scan or the loaded graph answers it.
    let fresh = low_rank_vectors(24, 50, DIM);
    for (j, v) in fresh.iter().enumerate() {
        let id = (j * 7) as u64;
        reopened.remove(id + 1);
        reopened.insert(id, v).unwrap();
        let hit = reopened.search(v, 1, ANN, None).unwrap()[0];
        assert_eq!(hit.0, id);
        assert!(reopened
            .search(&vectors[id as usize + 1], 10, ANN, None)
            .unwrap()
            .iter()
            .all(|(found, _)| *found != id + 1));
    }
    loader.join().unwrap().unwrap();
    assert!(reopened.graph_ready());
    assert_consistent(&reopened);
    for (j, v) in fresh.iter().enumerate() {
        assert_eq!(
            reopened.search(v, 1, ANN, None).unwrap()[0].0,
            (j * 7) as u64
        );
    }
}

// Regression: this test asserted that a beam of the default `ef` finds every point itself,
// and failed once in CI under load (the search for 1748 returned 419): a point linked into
// a graph built in parallel and reachable from its entry, missed by a beam of 64. What the
// index promises is that every point is found by a walk that reaches every linked point,
// or scored outside; the beam's self-recall is checked as a rate.
// Regression: it also asserted `outside_count() <= unreachable_ids().len()` after the
// last absorb, and failed once under load. A point no search reached when its batch was
// absorbed is scored outside; a later batch's links may make it reachable, and it stays
// outside (harmless: it is still found, scored exactly). The true invariants are: every
// point no search reaches is scored outside, and only points that were unreachable at some
// absorb are.
#[test]
fn points_absorbed_into_a_graph_are_searched_in_place() {
    let vectors = low_rank_vectors(25, N, DIM);
    let index = graph_of_the_first_half(&vectors);
    let graph = index.graph.read().clone().unwrap();
    let unreachable_at_build = graph.unreachable_ids().len();
    assert_eq!(index.outside_count(), N / 2 + unreachable_at_build);
    // Ids ever unreachable: at the build, and after each absorb (when absorb re-checks).
    let mut ever_unreachable: std::collections::HashSet<u64> =
        graph.unreachable_ids().into_iter().collect();
    absorb_on_one_thread(&index, 256, || {
        ever_unreachable.extend(graph.unreachable_ids())
    });
    assert_consistent(&index);
    // Every point was linked into the same graph (no export, no copy).
    assert_eq!(graph.links().linked_count(), N);
    let outside: std::collections::HashSet<u64> = graph.outside_ids().into_iter().collect();
    for id in graph.unreachable_ids() {
        assert!(
            outside.contains(&id),
            "unreachable id {id} is not scored outside"
        );
    }
    for id in &outside {
        assert!(
            ever_unreachable.contains(id),
            "id {id} is scored outside but was never unreachable"
        );
    }
    // Every point is found: in the graph by a walk wide enough to reach every point linked
    // to the entry (the beam never fills), or scored outside.
    let walk = SearchMode::Ann { ef: N };
    let mut missed_by_the_beam = Vec::new();
    for (i, v) in vectors.iter().enumerate() {
        assert_eq!(
            index.search(v, 1, walk, None).unwrap()[0].0,
            i as u64,
            "{i}"
        );
        if index.search(v, 1, ANN, None).unwrap()[0].0 != i as u64 {
            missed_by_the_beam.push(i);
        }
    }
    // The default beam's self-recall is a quality, not an invariant: at most 1 in 1000 missed.
    assert!(
        missed_by_the_beam.len() * 1000 <= N,
        "the default beam missed {missed_by_the_beam:?}"
    );
}

/// Live vectors the exact store holds in its own rows (a copy beside the graph's array).
fn own_rows(index: &VectorIndex) -> usize {
    index.exact.read().own_len()
}

/// The exact answer computed from `expected` (id -> vector), k = 10.
fn brute_force(expected: &std::collections::HashMap<u64, Vec<f32>>, query: &[f32]) -> Vec<u64> {
    let mut all: Vec<(f32, u64)> = expected
        .iter()
        .map(|(&id, v)| (distance::distance(Metric::Cosine, query, v), id))
        .collect();
    all.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    all.into_iter().take(10).map(|(_, id)| id).collect()
}

/// The scan cuts the graph's runs of live slots and the own rows into pieces that threads
/// take from a shared counter: with pieces of a few rows, across runs broken by dead slots,
/// on one thread and several, it is exactly the brute-force top k.
#[test]
fn a_scan_in_small_pieces_across_backed_runs_is_exact() {
    let vectors = low_rank_vectors(43, N, DIM);
    let index = graph_of_the_first_half(&vectors);
    absorb_on_one_thread(&index, 256, || {});
    let mut expected: std::collections::HashMap<u64, Vec<f32>> = vectors
        .iter()
        .enumerate()
        .map(|(i, v)| (i as u64, v.clone()))
        .collect();
    // Dead slots break the backed runs; replaced vectors go to the own rows.
    for id in (0..N as u64).step_by(7) {
        assert!(index.remove(id));
        expected.remove(&id);
    }
    let fresh = low_rank_vectors(44, 20, DIM);
    for (id, v) in (1..N as u64).step_by(97).zip(&fresh) {
        if expected.contains_key(&id) {
            index.insert(id, v).unwrap();
            expected.insert(id, v.clone());
        }
    }
    assert_consistent(&index);
    assert!(
        index.exact.read().own_len() > 0,
        "some vectors are in the own rows"
    );
    for query in vectors.iter().step_by(131).chain(fresh.iter().take(3)) {
        let truth = brute_force(&expected, query);
        for block in [1, 3, 7, 64] {
            for threads in [1, 2, 5] {
                let got: Vec<u64> = index
                    .exact
                    .read()
                    .search_in_blocks(query, 10, None, threads, block)
                    .iter()
                    .map(|c| c.id)
                    .collect();
                assert_eq!(got, truth, "block {block}, {threads} threads");
            }
        }
    }
}

#[test]
fn each_live_vector_is_held_once_and_scans_stay_exact() {
    let vectors = low_rank_vectors(41, N, DIM);
    let index = graph_of_the_first_half(&vectors);
    let mut expected: std::collections::HashMap<u64, Vec<f32>> = vectors
        .iter()
        .enumerate()
        .map(|(i, v)| (i as u64, v.clone()))
        .collect();
    let check = |index: &VectorIndex, expected: &std::collections::HashMap<u64, Vec<f32>>| {
        assert_consistent(index);
        assert_eq!(index.len_live(), expected.len());
        for query in vectors.iter().step_by(97) {
            for threads in [1, 3] {
                let got: Vec<u64> = index
                    .exact
                    .read()
                    .search_with_threads(query, 10, None, threads)
                    .iter()
                    .map(|c| c.id)
                    .collect();
                assert_eq!(got, brute_force(expected, query));
            }
        }
    };
    // After a build, only the vectors written since are held outside the graph's array
    // (and the few points no search reaches).
    let unreachable = index.graph.read().clone().unwrap().unreachable_ids().len();
    assert_eq!(own_rows(&index), N / 2 + unreachable);
    check(&index, &expected);
    // Absorbing moves them into the graph's array: their own rows are freed. Only ids
    // scored outside keep an own row (not all of them: a backed point a later absorb
    // leaves unreachable is scored outside and stays backed, its slot holding its vector).
    absorb_on_one_thread(&index, 256, || {});
    let own_only_outside = |index: &VectorIndex| {
        let outside: HashSet<u64> = index
            .graph
            .read()
            .clone()
            .unwrap()
            .outside_ids()
            .into_iter()
            .collect();
        let own = index.exact.read().own_ids();
        assert!(own.len() <= outside.len());
        for id in own {
            assert!(
                outside.contains(&id),
                "id {id} has an own row but is not outside"
            );
        }
    };
    own_only_outside(&index);
    check(&index, &expected);
    // A replaced vector is held in the own rows (the graph keeps the old one, dead); a
    // removed one nowhere; neither is ever scored with the graph's copy.
    let replacement = vectors[7].clone();
    index.insert(3, &replacement).unwrap();
    expected.insert(3, replacement);
    assert!(index.remove(5));
    expected.remove(&5);
    own_only_outside(&index);
    assert!(index.exact.read().own_ids().contains(&3));
    check(&index, &expected);
    // A rebuild backs every live vector by the new graph; the snapshot of it, loaded
    // into a fresh index, too.
    index.build_graph().unwrap();
    assert_eq!(own_rows(&index), index.outside_count());
    assert!(own_rows(&index) < N / 50, "{}", own_rows(&index));
    check(&index, &expected);
    let blobs = index.snapshot_blobs().unwrap().unwrap();
    let reopened = VectorIndex::new(DIM, Metric::Cosine).unwrap();
    let mut items: Vec<(u64, &[f32])> =
        expected.iter().map(|(&id, v)| (id, v.as_slice())).collect();
    items.sort_by_key(|item| item.0);
    reopened.insert_batch(&items).unwrap();
    assert_eq!(own_rows(&reopened), expected.len());
    reopened.load_snapshot(&blobs).unwrap();
    assert_eq!(own_rows(&reopened), reopened.outside_count());
    check(&reopened, &expected);
    // A graph dropped after a failed insert still backs the vectors it holds: searches
    // stay exact and complete.
    index.insert(N as u64 + 1, &vectors[11]).unwrap();
    expected.insert(N as u64 + 1, vectors[11].clone());
    assert!(index.fail_graph_inserts_after(Some(0)));
    assert!(index.absorb_outside(256).is_err());
    assert!(!index.graph_ready());
    check(&index, &expected);
}

#[test]
fn a_closed_index_stops_building_and_absorbing_but_still_searches() {
    let vectors = random_unit_vectors(71, 600, DIM);
    let index = filled(Metric::Cosine, &vectors);
    index.build_graph().unwrap();
    let more = random_unit_vectors(72, 50, DIM);
    let items: Vec<(u64, &[f32])> = more
        .iter()
        .enumerate()
        .map(|(i, v)| (10_000 + i as u64, v.as_slice()))
        .collect();
    index.insert_batch(&items).unwrap();
    // The new vectors, and the graph's points no search reaches (scored exactly).
    let unreachable = index.graph.read().clone().unwrap().unreachable_ids().len();
    assert_eq!(index.outside_count(), 50 + unreachable);

    index.close();
    assert!(matches!(index.build_graph(), Err(IndexError::Closed)));
    assert_eq!(index.absorb_outside(64).unwrap(), 0);
    assert_eq!(
        index.outside_count(),
        50 + unreachable,
        "nothing absorbed after close"
    );
    // The graph built before keeps serving, and the new vectors are scored exactly.
    let hits = index.search(&more[7], 1, ANN, None).unwrap();
    assert_eq!(hits[0].0, 10_007);
}

/// An index holding all of `vectors`, with a graph built over the first half only (the
/// second half is scored outside it, waiting to be absorbed).
fn graph_of_the_first_half(vectors: &[Vec<f32>]) -> VectorIndex {
    let index = filled(Metric::Cosine, &vectors[..vectors.len() / 2]);
    build_on_one_thread(&index);
    for (id, v) in vectors.iter().enumerate().skip(vectors.len() / 2) {
        index.insert(id as u64, v).unwrap();
    }
    index
}

// Regression: points registered for insertion (dead until settled) counted as dead, so a
// graph of N/2 points absorbing N/2 new vectors reported half of itself dead while the
// insertion ran, and `index_info` showed 11-14 % dead during a plain ingestion with no
// deletes. The steps are `absorb_outside`'s, with the count read while they are in flight.
#[test]
fn points_being_inserted_are_not_counted_dead() {
    let vectors = low_rank_vectors(23, N, DIM);
    let index = graph_of_the_first_half(&vectors);
    let before = index.dead_fraction();
    let graph = index.graph.read().clone().unwrap();
    let items: Vec<(u64, &[f32])> = (N / 2..N)
        .map(|id| (id as u64, vectors[id].as_slice()))
        .collect();
    let new_ids: Vec<u64> = items.iter().map(|(id, _)| *id).collect();
    graph.register_pending(&new_ids);
    assert_eq!(
        index.dead_fraction(),
        before,
        "registered: in flight, not dead"
    );
    graph.insert_registered(&items).unwrap();
    assert_eq!(
        index.dead_fraction(),
        before,
        "inserted, not settled: not dead"
    );
    // One of them is removed before it settles: that one is dead once settled.
    assert!(index.remove(new_ids[0]));
    graph.settle(&new_ids, |id| id != new_ids[0]);
    // (New points no search reaches keep a dead point too, as `absorb_outside` leaves
    // them; how many there are depends on the graph, so the count is bounded, not exact.)
    graph.score_outside(&graph.unreachable_ids());
    let settled = index.dead_fraction();
    let dead_before = before * (N / 2) as f64;
    assert!(
        settled * N as f64 >= dead_before + 1.0 - 1e-9,
        "{settled}: the removed one is dead"
    );
    assert!(settled < 0.1, "{settled}: the settled points are live");
    assert_consistent(&index);
}

/// Regression: a panic inside `hnsw_rs` while absorbing unwound through
/// `absorb_outside`: the points it had registered stayed counted as pending for good, the
/// graph kept whatever the insertion had half done, and the background worker died with
/// its `building` flag set. Now the panic comes back as an error and the graph is dropped:
/// searches score every vector exactly (so each is still found) until a rebuild.
#[test]
fn a_panicking_graph_insert_is_an_error_and_drops_the_graph() {
    let vectors = low_rank_vectors(29, N, DIM);
    let index = graph_of_the_first_half(&vectors);
    let graph = index.graph.read().clone().unwrap();
    let unreachable_at_build = graph.unreachable_ids().len();
    assert_eq!(index.outside_count(), N / 2 + unreachable_at_build);
    // Half way through the batch, on the background pool's rayon worker.
    assert!(index.fail_graph_inserts_after(Some(N as u64 / 4)));
    match index.absorb_outside(N) {
        Err(IndexError::Graph { detail }) => assert!(detail.contains("injected"), "{detail}"),
        other => panic!("expected the insert's panic as an error, got {other:?}"),
    }
    let points = graph.links().linked_count();
    assert!(points > N / 2 && points < N, "partly inserted: {points}");
    assert!(!index.graph_ready());
    assert_consistent(&index);
    for (id, v) in vectors.iter().enumerate() {
        let hits = index.search(v, 1, ANN, None).unwrap();
        assert_eq!(ids(&hits), vec![id as u64], "vector {id}");
    }
    // A rebuild puts every live vector into a fresh graph.
    index.build_graph().unwrap();
    assert_consistent(&index);
    // Only the new graph's points no search reaches are scored outside it (and dead).
    let unreachable = index.graph.read().clone().unwrap().unreachable_ids().len();
    assert_eq!(index.outside_count(), unreachable);
    assert_eq!(index.dead_fraction(), unreachable as f64 / N as f64);
    assert_eq!(index.graph_point_count(), N);
}

#[test]
fn graph_params_set_the_links_per_point_of_new_graphs() {
    // Layer 0 keeps at most 2 * m links per point; the default (16) would allow 32.
    let vectors = random_unit_vectors(41, N, DIM);
    let max_links = |index: &VectorIndex| {
        let graph = index.graph.read().clone().unwrap();
        let links = graph.links();
        (0..links.ids().len() as u32)
            .map(|slot| links.links0(slot).len())
            .max()
            .unwrap()
    };
    let mut narrow = VectorIndex::new(DIM, Metric::Cosine).unwrap();
    narrow.set_graph_params(4, 32);
    let items: Vec<(u64, &[f32])> = vectors
        .iter()
        .enumerate()
        .map(|(i, v)| (i as u64, v.as_slice()))
        .collect();
    narrow.insert_batch(&items).unwrap();
    // On one thread, as the filter test below: the self-search rate (1,944-1,972 of 2,000
    // in 60 parallel builds run four at a time) is the vectors' own, not thread timing's.
    build_on_one_thread(&narrow);
    let wide = filled(Metric::Cosine, &vectors);
    build_on_one_thread(&wide);
    assert!(max_links(&narrow) <= 8, "m 4: {}", max_links(&narrow));
    assert!(max_links(&wide) > 8, "m 16: {}", max_links(&wide));
    // The narrow graph still answers: every vector finds itself.
    let found = vectors
        .iter()
        .enumerate()
        .filter(|(i, v)| {
            narrow
                .search(v, 1, ANN, None)
                .unwrap()
                .first()
                .is_some_and(|h| h.0 == *i as u64)
        })
        .count();
    assert!(found as f64 >= 0.95 * N as f64, "{found} of {N}");
    assert_consistent(&narrow);
}

// Regression (flaky test): built in parallel, the graph depended on thread timing; one run
// failed this traversal's filtered recall (it, unlike `VectorIndex::search`, does not score
// the points no search reaches) below 0.95. Reproduced four runs at a time, the lowest of
// 60 was 0.966 (every quiet run 1.0). Built on one thread, the graph is the vectors' alone.
#[test]
fn the_view_applies_a_filter_inside_its_traversal() {
    // Ids passing 1 in 50, spread independently of the vectors: a post-filter of a width-10
    // search would keep about none of them; the in-traversal filter widens until it holds
    // 10 admitted points, nearly all of them the true filtered top 10.
    let vectors = low_rank_vectors(61, N, DIM);
    let index = filled(Metric::Cosine, &vectors);
    build_on_one_thread(&index);
    let graph = index.graph.read().clone().unwrap();
    let view = graph.links();
    let admit = |id: u64| id.wrapping_mul(0x9E37_79B9_7F4A_7C15).is_multiple_of(50);
    let queries = low_rank_vectors(6_100, 100, DIM);
    let mut found = 0;
    for q in &queries {
        let filter: &(dyn Fn(u64) -> bool + Sync) = &admit;
        let truth: HashSet<u64> = ids(&index
            .search(q, 10, SearchMode::Exact, Some(filter))
            .unwrap())
        .into_iter()
        .collect();
        let (hits, ending) = view.search_admitting(q, 10, 10, usize::MAX, |_| true, Some(filter));
        assert_eq!(ending, graph::Ending::Converged, "10 admitted points found");
        assert_eq!(hits.len(), 10);
        assert!(
            hits.iter().all(|&(id, _)| admit(id)),
            "a hit the filter refuses"
        );
        assert!(
            hits.windows(2).all(|w| w[0].1 <= w[1].1),
            "hits nearest first"
        );
        found += hits.iter().filter(|h| truth.contains(&h.0)).count();
    }
    let recall = found as f64 / (10 * queries.len()) as f64;
    assert!(recall >= 0.95, "filtered recall@10 = {recall}");
    // A filter nothing passes drains the traversal and returns nothing; a budget stops it
    // early, and says so.
    let (none, ending) = view.search_admitting(&queries[0], 10, 10, usize::MAX, |_| false, None);
    assert!(none.is_empty());
    assert_eq!(ending, graph::Ending::Drained);
    let (_, ending) = view.search_admitting(&queries[0], 10, 10, 100, |_| false, None);
    assert_eq!(ending, graph::Ending::OverBudget);
}

// Regression (speed): once any graph point was dead (and some always are: the points no
// search reaches are scored outside), every point a traversal reached was admitted by a
// hash lookup of its id, a third of an unfiltered search's time. Liveness is now a bit per
// slot; this pins that the bits follow every change of the membership: deletes, vectors
// scored outside, absorbed points settling live or dead.
#[test]
fn dead_points_stay_out_of_results_by_their_slot_bits() {
    let vectors = low_rank_vectors(31, N, DIM);
    let index = graph_of_the_first_half(&vectors);
    let late = N as u64 / 2 + 1;
    let removed: HashSet<u64> = (0..N as u64 / 2)
        .filter(|id| id % 7 == 3)
        .chain([late])
        .collect();
    for &id in &removed {
        assert!(index.remove(id));
    }
    assert_consistent(&index);
    let queries = low_rank_vectors(3_100, 50, DIM);
    let live_search = |index: &VectorIndex, q: &[f32]| {
        let hits = ids(&index.search(q, 10, ANN, None).unwrap());
        assert!(
            hits.iter().all(|id| !removed.contains(id)),
            "a removed id was returned"
        );
        hits
    };
    for q in &queries {
        live_search(&index, q);
    }
    // The second half (scored outside so far) is absorbed into the graph, but for `late`,
    // removed before: it never gets a point. Absorbed on one thread, as the first half was
    // built, so the recall below is the same on every run (a parallel graph's links, and so
    // its recall and its missed self-searches, depend on thread timing).
    absorb_on_one_thread(&index, N, || {});
    assert_consistent(&index);
    let graph = index.graph.read().clone().unwrap();
    assert!(graph.dead_count() > 0, "the test needs dead points");
    let mut found = 0;
    for q in &queries {
        let hits = live_search(&index, q);
        let exact = ids(&index.search(q, 10, SearchMode::Exact, None).unwrap());
        found += hits.iter().filter(|id| exact.contains(id)).count();
    }
    let recall = found as f64 / (10 * queries.len()) as f64;
    assert!(recall >= 0.9, "recall@10 {recall} with dead points");
    // Live vectors of both halves are found by their own vectors (their slot bits are
    // set; a greedy search may still miss one now and then, so nearly all, not all).
    let live: Vec<u64> = (0..N as u64).filter(|id| !removed.contains(id)).collect();
    let missed = live
        .iter()
        .filter(|&&id| live_search(&index, &vectors[id as usize]).first() != Some(&id))
        .count();
    assert!(
        missed * 100 <= live.len(),
        "{missed} of {} live ids are not their own nearest",
        live.len()
    );
}

/// Dimensions of the quantised graphs' tests (`graph::QUANTIZE_MIN_DIM`).
const QDIM: usize = graph::QUANTIZE_MIN_DIM;

/// [`filled`] at [`QDIM`] dimensions.
fn filled_q(metric: Metric, vectors: &[Vec<f32>]) -> VectorIndex {
    filled_at(QDIM, metric, vectors)
}

/// A graph that grew past `QUANTIZE_AT` by absorbing points (its quantiser fitted when it
/// crossed, from the points it held then) and whose later points come from elsewhere.
///
/// Regression: built and grown in parallel, the graph's links depended on thread timing,
/// and so did which absorbed points were scored outside for being unreachable when they
/// came in (they stay outside; a reload, which walks the final links, may find them
/// reachable and leave them to the traversal). A CI run under load saw
/// `a_reloaded_quantized_graph_answers_identically` miss id 656's self-search after the
/// reload for that reason. Built and grown on one thread, the graph and its history are
/// those of the vectors alone.
fn grown_quantized_graph(metric: Metric) -> (VectorIndex, Vec<Vec<f32>>) {
    let mut vectors = low_rank_vectors(41, 700, QDIM);
    vectors.extend(random_unit_vectors(42, 900, QDIM));
    let index = filled_q(metric, &vectors[..700]);
    build_on_one_thread(&index);
    for (id, v) in vectors.iter().enumerate().skip(700) {
        index.insert(id as u64, v).unwrap();
    }
    // (In the foreground: the background pool would not be the one-thread pool.)
    absorb_on_one_thread(&index, 200, || {});
    let graph = index.graph.read().clone().unwrap();
    assert!(graph.links().is_quantized(), "1,600 points: quantised");
    (index, vectors)
}

/// Every live id's score for `query` from the exact scan.
fn exact_scores(
    index: &VectorIndex,
    query: &[f32],
    n: usize,
) -> std::collections::HashMap<u64, f32> {
    index
        .search(query, n, SearchMode::Exact, None)
        .unwrap()
        .into_iter()
        .collect()
}

/// The quantiser only steers the traversal: every hit a quantised graph returns carries
/// the exact scan's distance for that vector, bit for bit, under every metric, and the
/// graph still finds what the exact scan finds.
#[test]
fn a_quantized_graph_returns_exact_distances() {
    for metric in [Metric::Cosine, Metric::L2, Metric::Dot] {
        let (index, vectors) = grown_quantized_graph(metric);
        assert_consistent(&index);
        let (mut found, mut wanted) = (0usize, 0usize);
        for q in low_rank_vectors(43, 60, QDIM)
            .iter()
            .chain(&vectors[690..760])
        {
            let ann = index.search(q, 10, ANN, None).unwrap();
            let exact = index.search(q, 10, SearchMode::Exact, None).unwrap();
            let every = exact_scores(&index, q, vectors.len());
            for &(id, score) in &ann {
                assert_eq!(score.to_bits(), every[&id].to_bits(), "{metric:?}: id {id}");
            }
            let exact_ids: HashSet<u64> = ids(&exact).into_iter().collect();
            found += ids(&ann).iter().filter(|id| exact_ids.contains(id)).count();
            wanted += exact.len();
        }
        let recall = found as f64 / wanted as f64;
        assert!(recall >= 0.9, "{metric:?}: recall@10 {recall}");
    }
}

/// A snapshot carries the graph's quantiser (format 6): a graph reloaded from it codes its
/// vectors as the saved one did, so every search answers identically, even for a graph
/// whose quantiser was fitted on its first points and would fit otherwise on all of them.
#[test]
fn a_reloaded_quantized_graph_answers_identically() {
    // L2 too: its codes end with a norm term the snapshot does not hold (the loaded
    // quantiser must be made for the graph's metric again, or every estimate moves).
    for metric in [Metric::Cosine, Metric::L2] {
        let (index, vectors) = grown_quantized_graph(metric);
        let blobs = index.snapshot_blobs().unwrap().unwrap();
        assert_eq!(blobs[0][8..12], persisted::FORMAT_VERSION.to_le_bytes());
        let reloaded = filled_q(metric, &vectors);
        reloaded.load_snapshot(&blobs).unwrap();
        assert_consistent(&reloaded);
        let graph = reloaded.graph.read().clone().unwrap();
        assert!(graph.links().is_quantized());
        for q in low_rank_vectors(44, 60, QDIM)
            .iter()
            .chain(&vectors[650..800])
        {
            assert_eq!(
                index.search(q, 10, ANN, None).unwrap(),
                reloaded.search(q, 10, ANN, None).unwrap(),
                "{metric:?}"
            );
        }
    }
}

/// A format-5 snapshot (earlier builds: no quantiser) still loads: the quantiser is fitted
/// anew to the loaded vectors, and the hits keep their exact distances.
#[test]
fn a_format_5_snapshot_loads_with_a_quantizer_fitted_anew() {
    let (index, vectors) = grown_quantized_graph(Metric::Cosine);
    let blobs = persisted::as_format_6(
        &index.snapshot_blobs().unwrap().unwrap(),
        Metric::Cosine,
        QDIM,
    )
    .unwrap();
    let mut payload: Vec<u8> = blobs[1..].concat();
    assert_eq!(payload.last(), Some(&2), "the quantiser is present");
    payload.truncate(payload.len() - 1 - 8 * QDIM);
    // Format 5's fingerprints are blake3's (format 6's are CRC-32s).
    let n = vectors.len();
    for slot in 0..n {
        let id = u64::from_le_bytes(payload[8 * slot..8 * slot + 8].try_into().unwrap());
        let fp = persisted::fingerprint_blake3(&vectors[id as usize]);
        payload[8 * (n + slot)..8 * (n + slot) + 8].copy_from_slice(&fp.to_le_bytes());
    }
    let mut header = blobs[0].clone();
    header[8..12].copy_from_slice(&5u32.to_le_bytes());
    header[48..56].copy_from_slice(&(payload.len() as u64).to_le_bytes());
    let old = reseal(&header, &payload);
    assert_loads_with_a_quantizer_fitted_anew(&index, &vectors, &old, 45);
}

/// `old`, a snapshot of `index` (over `vectors`) whose quantiser this build cannot use,
/// loads into a fresh index: quantised by a fit of its own, every hit with its exact
/// distance, and 8 in 10 of the `seed`ed queries answered as `index` answers them.
fn assert_loads_with_a_quantizer_fitted_anew(
    index: &VectorIndex,
    vectors: &[Vec<f32>],
    old: &[Vec<u8>],
    seed: u64,
) {
    let reloaded = filled_q(Metric::Cosine, vectors);
    reloaded.load_snapshot(old).unwrap();
    assert_consistent(&reloaded);
    let graph = reloaded.graph.read().clone().unwrap();
    assert!(graph.links().is_quantized(), "fitted anew on load");
    let mut same = 0usize;
    let queries = low_rank_vectors(seed, 60, QDIM);
    for q in &queries {
        let hits = reloaded.search(q, 10, ANN, None).unwrap();
        let every = exact_scores(&reloaded, q, vectors.len());
        for &(id, score) in &hits {
            assert_eq!(score.to_bits(), every[&id].to_bits(), "id {id}");
        }
        same += usize::from(hits == index.search(q, 10, ANN, None).unwrap());
    }
    assert!(
        same * 10 >= queries.len() * 8,
        "{same} of {} alike",
        queries.len()
    );
}

/// A format-6 snapshot of an earlier build, whose quantiser coded 8 bits a value (its last
/// byte 1), loads: that quantiser's steps do not fit 4-bit codes, so it is fitted anew to
/// the loaded vectors, and the hits keep their exact distances.
#[test]
fn a_snapshot_with_an_8_bit_quantizer_loads_with_one_fitted_anew() {
    let (index, vectors) = grown_quantized_graph(Metric::Cosine);
    let blobs = index.snapshot_blobs().unwrap().unwrap();
    let mut payload: Vec<u8> = blobs[1..].concat();
    let last = payload.len() - 1;
    assert_eq!(payload[last], 2, "the quantiser is present");
    // An 8-bit fit of the same range: 255 steps where the 4-bit one has 15.
    let steps = last - 4 * QDIM..last;
    for at in steps.step_by(4) {
        let step = f32::from_le_bytes(payload[at..at + 4].try_into().unwrap());
        payload[at..at + 4].copy_from_slice(&(step * 15.0 / 255.0).to_le_bytes());
    }
    payload[last] = 1;
    let old = reseal(&blobs[0], &payload);
    assert_loads_with_a_quantizer_fitted_anew(&index, &vectors, &old, 46);
}

/// A damaged quantiser section is `Corrupted`, and the index is left without a graph.
#[test]
fn a_damaged_quantizer_in_a_snapshot_is_refused() {
    let (index, vectors) = grown_quantized_graph(Metric::Cosine);
    let blobs = index.snapshot_blobs().unwrap().unwrap();
    let payload: Vec<u8> = blobs[1..].concat();
    let len = payload.len();
    let mut flag = payload.clone();
    flag[len - 1] = 7;
    let mut nan_step = payload.clone();
    nan_step[len - 5..len - 1].copy_from_slice(&f32::NAN.to_le_bytes());
    let mut zero_step = payload.clone();
    zero_step[len - 5..len - 1].copy_from_slice(&0f32.to_le_bytes());
    for (what, damaged) in [
        ("flag", flag),
        ("NaN step", nan_step),
        ("zero step", zero_step),
    ] {
        let target = filled_q(Metric::Cosine, &vectors);
        match target.load_snapshot(&reseal(&blobs[0], &damaged)) {
            Err(IndexError::Corrupted { .. }) => {}
            other => panic!("{what}: expected Corrupted, got {other:?}"),
        }
        assert!(
            !target.graph_ready(),
            "{what}: a failed load changed the index"
        );
    }
}

/// Graphs of fewer than `QUANTIZE_MIN_DIM` dimensions are not quantised, however many points
/// they hold (their vectors stay in the caches, where codes only add work); one of at least
/// that many is, from `QUANTIZE_AT` points on.
#[test]
fn only_graphs_of_many_dimensions_and_points_are_quantized() {
    let small_dim = filled(Metric::Cosine, &low_rank_vectors(46, 1500, DIM));
    small_dim.build_graph().unwrap();
    let graph = small_dim.graph.read().clone().unwrap();
    assert!(!graph.links().is_quantized(), "{DIM} dimensions");
    let few = filled_q(Metric::Cosine, &low_rank_vectors(47, 500, QDIM));
    few.build_graph().unwrap();
    let graph = few.graph.read().clone().unwrap();
    assert!(!graph.links().is_quantized(), "500 points");
    let many = filled_q(Metric::Cosine, &low_rank_vectors(48, 1500, QDIM));
    many.build_graph().unwrap();
    let graph = many.graph.read().clone().unwrap();
    assert!(
        graph.links().is_quantized(),
        "1,500 points of {QDIM} dimensions"
    );
}
