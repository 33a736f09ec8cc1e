//! Regressions (issue 48): building the budgeted index took the process's peak RSS well
//! past the budget.
//!
//! - A foreground `Store::build_index()` loaded the new index while the old one was still
//!   published, so the process held two indexes at once (plus what the load's threads freed,
//!   kept by the allocator): its peak grew by more than the whole budget across the call.
//! - The first background build after writes (a store filled from empty, its index loaded
//!   again from the vectors rows each time it outgrew its plan) kept the heap it had freed
//!   (the index it replaced, the writes' buffers, the linking threads' temporaries) resident
//!   beside the index as it filled, with a 4,096-vector batch in `f32` and a second copy of
//!   each batch's codes: a peak of 1.8x the budget at 40k x 384-d.
//!
//! The bounds, from the budget alone:
//! - filling and settling: the index and its page cache fit the budget, so the peak may rise
//!   above the resident set before the open by the budget, plus a page-cache share
//!   (`budget / 8`) for the batch being written (1,000 vectors in `f32` and their rows) and
//!   another for the build's temporaries (a training sample of at most that share, freed
//!   before the index fills; a stream batch; what the linking threads free). Before the fix
//!   it rose by 1.6x the budget (release build: from 5 to 44 MiB);
//! - `build_index()`: the old index (its `budgeted_bytes`, `old`) is unpublished and freed
//!   before the new one loads, so the peak may grow by `budget - old`, plus the same share
//!   of slack. Two indexes at once grow it by the whole new index (about `old` again) and the
//!   temporaries: more, since `old` is over half the budget here (asserted).
//!
//! RSS is a process's, and this binary runs its tests side by side in one process: the
//! measurement runs in a child process of its own (this test's binary again, running only
//! this test, with [`CHILD`] set), which prints both figures for the parent to check.

use crate::search_support::{child_dir, child_field, run_child, settle, Rng, Structured};
use crate::{open_budgeted, resident, resident_from_here, write_drawn_documents, BUDGET, DIM, N};
use std::time::Duration;

/// Set in the child process that measures.
const CHILD: &str = "RATCHETDB_TEST_BUILD_RSS_CHILD";

/// The child: fills a store at `dir` with `n` vectors under `budget` (drawn a batch at a
/// time, so the process holds no copy of the set) and waits for its index; then reopens it
/// and builds the index again in the foreground. Prints how far the peak resident set rose
/// above the resident set before each.
fn measure(dir: &std::path::Path, budget: u64, n: usize) {
    let vectors = Structured::new(71, DIM);
    let mut rng = Rng::new(72);
    let before = resident_from_here();
    {
        let store = open_budgeted(dir, budget);
        write_drawn_documents(&store, n, 1000, &vectors, &mut rng, |i| {
            format!("chunk {i}")
        });
        assert!(
            store.wait_for_index(Duration::from_secs(900)),
            "the index did not settle: {:?}",
            store.index_info()
        );
        let (_, peak) = resident();
        println!("\nfill_growth={}", peak.saturating_sub(before));
    }
    let store = open_budgeted(dir, budget);
    settle(&store);
    let old = store.index_info().budgeted_bytes;
    let before = resident_from_here();
    store.build_index().expect("build");
    let (_, peak) = resident();
    // On lines of their own: the harness prints the test's name before them.
    println!("\nbuild_growth={} old={old}", peak.saturating_sub(before));
}

#[test]
#[cfg(target_os = "linux")]
fn peak_rss_stays_near_the_budget_while_filling_and_rebuilding() {
    // Eight times the other tests' store under six times their budget, so the budget's
    // bytes dwarf the allocator's noise.
    let (budget, n) = (6 * BUDGET, 8 * N);
    assert!(
        (n * DIM * 4) as u64 > budget,
        "the vectors alone must not fit"
    );
    if let Some(dir) = child_dir(CHILD) {
        measure(&dir, budget, n);
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let name = "building_under_a_budget_keeps_the_peak_rss_near_it::\
                peak_rss_stays_near_the_budget_while_filling_and_rebuilding";
    let stdout = run_child(name, CHILD, dir.path());
    let field = |name: &str| child_field(&stdout, name);
    let fill = field("fill_growth=");
    let fill_bound = budget + budget / 4;
    println!("peak RSS growth while filling: {fill} bytes, bound {fill_bound}");
    assert!(
        fill <= fill_bound,
        "peak RSS grew by {fill} bytes while filling a store under a {budget}-byte budget: \
         more than {fill_bound}"
    );
    let (growth, old) = (field("build_growth="), field("old="));
    assert!(
        old > budget / 2,
        "the old index ({old} bytes) must take over half the budget"
    );
    let bound = budget - old + budget / 8;
    println!("peak RSS growth across build_index(): {growth} bytes, bound {bound}");
    assert!(
        growth <= bound,
        "peak RSS grew by {growth} bytes across build_index() under a {budget}-byte budget \
         (old index {old} bytes): more than {bound}"
    );
}
