//! Search under `Options::memory_budget` beside the same store without one, at equal
//! recall, measured side by side in one run (issue 48).
//!
//! 20k structured 384-d vectors (see `Structured` in `tests/search_support`), k = 10, one
//! query at a time. Two stores of the same vectors: one unbudgeted (every vector in memory),
//! one under a budget of the vectors' bytes over 4.5 (what 64 MiB is to 200k x 384-d) (PQ codes in memory, the candidates
//! scored again on the vectors read from the file). For each, the smallest swept `ef`
//! reaching recall@10 0.95 against the exact answer is found first, then criterion times
//! the search at that `ef`; the summary prints both medians, their ratio, the recalls and
//! the budgeted index's own byte count.
//!
//! Beside the searches, both stores' build (ingest and `build_index`, wall clock, once
//! each) and reopen -> first search (open, wait for the index, one search: the median of
//! [`REOPENS`] reopens) are printed side by side.
//!
//! `cargo bench --bench memory_budget`; `RATCHETDB_BUDGET_BENCH_N` overrides 20k. The
//! 200k x 384-d figures (RSS, reopen, build) come from `benches/peers/memory_budget.sh`.

mod common;

use common::search_support::{exact_top_k, Structured};
use common::{bench_search, NAN_NOTE};
use criterion::Criterion;
use ratchetdb::{Chunk, Document, Durability, Op, Options, SearchOptions, Store, Version};
use std::path::Path;

const DIM: usize = 384;
const N: usize = 20_000;
const K: usize = 10;
const QUERIES: usize = 200;
const TARGET: f64 = 0.95;
/// Reopens timed per store.
const REOPENS: usize = 5;
const EF_SWEEP: [usize; 10] = [10, 16, 24, 32, 48, 64, 96, 128, 192, 256];

fn open(path: &Path, budget: Option<u64>) -> Store {
    let options = Options::default().durability(Durability::None);
    let options = match budget {
        Some(bytes) => options.memory_budget(bytes),
        None => options,
    };
    Store::open(path, options).expect("open")
}

fn ingest(store: &Store, vectors: &[Vec<f32>]) {
    for (b, batch) in vectors.chunks(1000).enumerate() {
        let ops = batch
            .iter()
            .enumerate()
            .map(|(j, v)| {
                Op::Upsert(
                    Document::new("b", format!("v{}", b * 1000 + j), Version::number(1))
                        .with_chunk(Chunk::new("t", v.clone())),
                )
            })
            .collect();
        for result in store.write_batch(ops).expect("batch") {
            result.expect("write");
        }
    }
    store.build_index().expect("build");
    assert!(store.wait_for_index(std::time::Duration::from_secs(3600)));
}

/// Seconds from opening `path` to the first answer of the loaded index, over
/// [`REOPENS`] reopens: the median.
fn reopen_to_first_search(path: &Path, budget: Option<u64>, query: &[f32]) -> f64 {
    let mut times: Vec<f64> = (0..REOPENS)
        .map(|_| {
            let start = std::time::Instant::now();
            let store = open(path, budget);
            assert!(store.wait_for_index(std::time::Duration::from_secs(3600)));
            let hits = store
                .search(query, K, &SearchOptions::default())
                .expect("search");
            assert_eq!(hits.len(), K);
            let took = start.elapsed().as_secs_f64();
            drop(store);
            took
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

fn recall(store: &Store, queries: &[Vec<f32>], truth: &[Vec<usize>], ef: usize) -> f64 {
    let mut found = 0;
    for (query, truth) in queries.iter().zip(truth) {
        let hits = store
            .search(query, K, &SearchOptions::default().ef(ef))
            .expect("search");
        found += hits
            .iter()
            .filter_map(|h| h.id[1..].parse::<usize>().ok())
            .filter(|i| truth.contains(i))
            .count();
    }
    found as f64 / (queries.len() * K) as f64
}

/// The smallest swept `ef` reaching [`TARGET`], with its recall (the last one if none does).
fn ef_at_target(store: &Store, queries: &[Vec<f32>], truth: &[Vec<usize>]) -> (usize, f64) {
    let mut last = (0, 0.0);
    for ef in EF_SWEEP {
        last = (ef, recall(store, queries, truth, ef));
        if last.1 >= TARGET {
            break;
        }
    }
    last
}

fn main() {
    let n: usize = std::env::var("RATCHETDB_BUDGET_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(N);
    let data = Structured::new(91, DIM);
    let vectors = data.vectors(92, n);
    let queries = data.vectors(93, QUERIES);
    let truth: Vec<Vec<usize>> = queries
        .iter()
        .map(|q| exact_top_k(&vectors, q, K))
        .collect();
    // The vectors' bytes over 4.5: what 64 MiB is to 200k x 384-d.
    let budget = (n * DIM * 4) as u64 * 2 / 9;
    let dir = tempfile::tempdir().expect("tempdir");
    let (full_path, budget_path) = (dir.path().join("full.redb"), dir.path().join("budget.redb"));
    let started = std::time::Instant::now();
    let full = open(&full_path, None);
    ingest(&full, &vectors);
    let full_build = started.elapsed().as_secs_f64();
    let started = std::time::Instant::now();
    let budgeted = open(&budget_path, Some(budget));
    ingest(&budgeted, &vectors);
    let budget_build = started.elapsed().as_secs_f64();
    drop((full, budgeted));
    let full_reopen = reopen_to_first_search(&full_path, None, &queries[0]);
    let budget_reopen = reopen_to_first_search(&budget_path, Some(budget), &queries[0]);
    let full = open(&full_path, None);
    let budgeted = open(&budget_path, Some(budget));
    assert!(full.wait_for_index(std::time::Duration::from_secs(3600)));
    assert!(budgeted.wait_for_index(std::time::Duration::from_secs(3600)));
    let (full_ef, full_recall) = ef_at_target(&full, &queries, &truth);
    let (budget_ef, budget_recall) = ef_at_target(&budgeted, &queries, &truth);
    let mut c = Criterion::default().configure_from_args();
    let group = "memory_budget";
    let full_s = bench_search(
        &mut c,
        group,
        "unbudgeted",
        &full,
        &queries,
        K,
        &SearchOptions::default().ef(full_ef),
    );
    let budget_s = bench_search(
        &mut c,
        group,
        "budgeted",
        &budgeted,
        &queries,
        K,
        &SearchOptions::default().ef(budget_ef),
    );
    let info = budgeted.index_info();
    println!(
        "memory_budget {n} x {DIM}, k {K}, budget {budget} bytes (vectors {} bytes):\n  \
         unbudgeted ef {full_ef} recall {full_recall:.3} median {:.1} us\n  \
         budgeted   ef {budget_ef} recall {budget_recall:.3} median {:.1} us, index {} bytes\n  \
         QPS ratio budgeted / unbudgeted at recall {TARGET}: {:.2}\n  \
         build (ingest + build_index): unbudgeted {full_build:.2} s, budgeted \
         {budget_build:.2} s, ratio {:.2}\n  \
         reopen -> first search (median of {REOPENS}): unbudgeted {full_reopen:.3} s, \
         budgeted {budget_reopen:.3} s\n{NAN_NOTE}",
        n * DIM * 4,
        full_s * 1e6,
        budget_s * 1e6,
        info.budgeted_bytes,
        full_s / budget_s,
        budget_build / full_build,
    );
}
