//! Regression: vectors committed while a background graph build or absorber was running
//! waited for the next commit before anything moved them into the graph. A commit's
//! applier pass that found the index "building" started nothing, and the running worker
//! did not look again before it finished, so after ingestion stopped those vectors stayed
//! scored exactly (correct, but every search paid for them) until someone wrote again.
//! Now the worker keeps going until no work is due. This test commits small batches while
//! the first graph build runs, and a last one just after the graph is installed, while the
//! worker is still busy persisting it; then it stops writing, lets the index settle, and
//! checks that every live vector has a point in the graph.

use crate::search_support;

use ratchetdb::{Chunk, Document, Op, Store, Version};
use search_support::{assert_verified, ingest_one_chunk_docs, open, settle, Structured};
use std::time::{Duration, Instant};

const DIM: usize = 16;
/// Past the exact-search threshold, so the store starts a background graph build.
const FIRST: usize = 10_500;
const PER_ROUND: usize = 8;
/// The shortest time between two rounds of commits during the build.
const ROUND_EVERY: Duration = Duration::from_millis(25);

fn commit_round(store: &Store, data: &Structured, round: usize) {
    let ops = data
        .vectors(1000 + round as u64, PER_ROUND)
        .into_iter()
        .enumerate()
        .map(|(j, v)| {
            let i = round * PER_ROUND + j;
            Op::Upsert(
                Document::new("more", format!("m{i}"), Version::number(1))
                    .with_chunk(Chunk::new(format!("more {i}"), v)),
            )
        })
        .collect();
    for result in store.write_batch(ops).expect("write a batch") {
        result.expect("write a document");
    }
}

#[test]
fn every_vector_written_during_background_work_ends_up_in_the_graph() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = Structured::new(91, DIM);
    let store = open(dir.path());
    ingest_one_chunk_docs(&store, "first", &data.vectors(92, FIRST));
    // The build has just started: keep committing while it runs, and once more as soon as
    // its graph is installed while the worker is still busy (persisting it).
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut rounds = 0;
    let mut last_round: Option<Instant> = None;
    loop {
        // A round at most every ROUND_EVERY (the install is still watched every 2 ms): a
        // round every 2 ms wrote 31,000 vectors during one slow build on a busy VM, more
        // than the absorber then moved in within `settle`'s minute.
        if last_round.is_none_or(|at| at.elapsed() >= ROUND_EVERY) {
            commit_round(&store, &data, rounds);
            rounds += 1;
            last_round = Some(Instant::now());
        }
        let info = store.index_info();
        if info.graph_ready && info.building {
            commit_round(&store, &data, rounds);
            rounds += 1;
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the build never installed a graph: {info:?}"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    // No more commits from here on: whatever is still outside must be absorbed anyway.
    settle(&store);
    let info = store.index_info();
    assert!(info.graph_ready, "{info:?}");
    assert_eq!(
        info.live_vectors as usize,
        FIRST + rounds * PER_ROUND,
        "{info:?}"
    );
    // Nothing was superseded, so every graph point is a live vector's: one point per live
    // vector means none is left waiting outside for a commit that will not come.
    assert_eq!(
        info.graph_points, info.live_vectors,
        "vectors left outside the graph after ingestion stopped: {info:?}"
    );
    assert_verified(&store, "after settling");
}
