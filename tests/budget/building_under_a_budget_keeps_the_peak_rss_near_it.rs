//! Regression (issue 48): a foreground `Store::build_index()` under a memory budget loaded
//! the new budgeted index while the old one was still published, so the process held two
//! indexes at once (plus what the load's threads freed, kept by the allocator): its peak
//! RSS grew by more than the whole budget across the call.
//!
//! The bound: the old index (its `budgeted_bytes`, `old`) is unpublished and freed before
//! the new one loads, and the new one's bytes plus its page cache fit the budget, so the
//! peak resident set may grow by `budget - old`, plus one page-cache share (`budget / 8`)
//! of slack for the load's temporaries. Two indexes at once (the bug) grow it by the whole
//! new index (about `old` again) and the temporaries: more, since `old` is over half the
//! budget here (asserted).
//!
//! RSS is a process's, and this binary runs its tests side by side in one process: the
//! measurement runs in a child process of its own (this test's binary again, running
//! only this test, with [`CHILD`] set), which prints the growth for the parent to check.

use crate::search_support::{ingest_one_chunk_docs, settle, Structured};
use crate::{open_budgeted, BUDGET, DIM, N};

/// Set in the child process that measures.
const CHILD: &str = "RATCHETDB_TEST_FOREGROUND_BUILD_RSS_CHILD";

/// The process's resident set and its peak (`VmRSS`, `VmHWM`), in bytes.
fn resident() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").expect("read /proc/self/status");
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<u64>().ok())
            .map(|kb| kb * 1024)
            .unwrap_or_else(|| panic!("no {name} in /proc/self/status"))
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// The child: reopens the store at `dir` under the budget, and prints how far the peak
/// resident set rose above the resident set before `build_index()`.
fn measure(dir: &std::path::Path, budget: u64) {
    let store = open_budgeted(dir, budget);
    settle(&store);
    let old = store.index_info().budgeted_bytes;
    let (before, _) = resident();
    // Resets the peak to the current resident set (proc(5), `clear_refs`).
    std::fs::write("/proc/self/clear_refs", "5").expect("reset the peak resident set");
    store.build_index().expect("build");
    let (_, peak) = resident();
    // On a line of its own: the harness prints the test's name before it.
    println!("\ngrowth={} old={old}", peak.saturating_sub(before));
}

#[test]
#[cfg(target_os = "linux")]
fn peak_rss_grows_by_at_most_the_budget_across_a_foreground_build() {
    // Eight times the other tests' store under six times their budget, so the budget's
    // bytes dwarf the allocator's noise.
    let (budget, n) = (6 * BUDGET, 8 * N);
    assert!(
        (n * DIM * 4) as u64 > budget,
        "the vectors alone must not fit"
    );
    if let Some(dir) = std::env::var_os(CHILD) {
        measure(std::path::Path::new(&dir), budget);
        return;
    }
    // Filled here, so the child's resident set holds only what reopening and building
    // take, not what writing the vectors left with the allocator.
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let vectors = Structured::new(71, DIM).vectors(72, n);
        let store = open_budgeted(dir.path(), budget);
        ingest_one_chunk_docs(&store, "s", &vectors);
        // Built and saved in the foreground: no wait on a background load racing the
        // binary's other tests for the cores.
        store.build_index().expect("build");
    }
    let name = "a_foreground_build_under_a_budget_holds_one_index::\
                peak_rss_grows_by_at_most_the_budget_across_a_foreground_build";
    let output = std::process::Command::new(std::env::current_exe().expect("test binary"))
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, dir.path())
        .output()
        .expect("run the child");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "the child failed: {stdout}");
    let field = |name: &str| -> u64 {
        stdout
            .split_whitespace()
            .find_map(|w| w.strip_prefix(name))
            .and_then(|g| g.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in the child's output: {stdout}"))
    };
    let (growth, old) = (field("growth="), field("old="));
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
