//! Filtered vector search at 100k x 384-d structured vectors (see `Structured` in
//! `tests/search_support`), k = 10, measured side by side in one run.
//!
//! Every chunk carries `{"bucket": b}` with `b` in 0..1000, spread independently of the
//! vectors (a hash of the chunk's number), so a filter's selectivity says nothing about
//! where its vectors are. Selectivities 50 %, 10 %, 1 % (`{"bucket": {"$lt": n}}`) and
//! 0.1 % (`{"bucket": 0}`); for each:
//!
//! - `auto`: the store's default (`FilterStrategy::Auto`: by selectivity, the graph or a
//!   scan of just the matching vectors), with its recall@10 against the exact answer;
//! - `graph`: `FilterStrategy::Graph` (the graph, post-filtered, over-fetching);
//! - `scan_matching`: `FilterStrategy::ScanMatching` (a scan of just the matching vectors);
//! - `exact`: `SearchOptions::exact` with the filter (every live vector scanned, each tested
//!   against the filter): the filtered exact scan;
//!
//! beside the unfiltered graph search. All timings include evaluating the filter on the
//! store's filter index and resolving the hits against the snapshot.
//!
//! One thread: queries run one at a time, and the exact scan splits itself over
//! `available_parallelism()` threads, so once the store is built (on every core) the bench
//! pins its main thread, and so the scan's threads, to one core (`taskset -p -c 0`, from
//! util-linux); the summary prints the parallelism the searches saw.
//! `cargo bench --bench filtered_search`; `RATCHETDB_FILTERED_BENCH_N` overrides 100k;
//! `RATCHETDB_FILTERED_BENCH_STORE=FILE` keeps the store in FILE (built when missing,
//! reopened otherwise), so repeated runs skip the ingest.

mod common;

use common::search_support::Structured;
use common::NAN_NOTE;
use criterion::Criterion;
use ratchetdb::{Durability, Filter, FilterStrategy, Options, SearchOptions, Store};
use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};

const DIM: usize = 384;
const N: usize = 100_000;
const N_ENV: &str = "RATCHETDB_FILTERED_BENCH_N";
const STORE_ENV: &str = "RATCHETDB_FILTERED_BENCH_STORE";
const CHUNKS_PER_DOC: usize = 8;
const QUERIES: usize = 200;
const K: usize = 10;
const BUCKETS: u64 = 1000;

fn bucket(chunk: u64) -> u64 {
    let mut z = chunk.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (z ^ (z >> 31)) % BUCKETS
}

fn ingest(store: &Store, vectors: &[Vec<f32>]) {
    common::ingest_docs(store, vectors, CHUNKS_PER_DOC, |chunk| {
        Some(json!({ "bucket": bucket(chunk) }))
    });
}

fn key(hit: &ratchetdb::Hit) -> (String, u32) {
    (hit.id.clone(), hit.position)
}

/// [`common::bench_search`] at this bench's `K`.
fn bench_search(
    c: &mut Criterion,
    group: &str,
    name: &str,
    store: &Store,
    queries: &[Vec<f32>],
    options: &SearchOptions,
) -> f64 {
    common::bench_search(c, group, name, store, queries, K, options)
}

fn recall(store: &Store, queries: &[Vec<f32>], options: &SearchOptions) -> f64 {
    let exact = options.clone().exact(true);
    let (mut found, mut total) = (0usize, 0usize);
    for q in queries {
        let truth: Vec<_> = store.search(q, K, &exact).expect("exact");
        let truth: Vec<_> = truth.iter().map(key).collect();
        let hits = store.search(q, K, options).expect("search");
        found += hits.iter().filter(|h| truth.contains(&key(h))).count();
        total += truth.len();
    }
    found as f64 / total.max(1) as f64
}

fn main() {
    let n: usize = std::env::var(N_ENV)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(N);
    let dir = tempfile::tempdir().expect("tempdir");
    // A kept store (`RATCHETDB_FILTERED_BENCH_STORE`): built on the first run, reopened by
    // the next ones, which then skip the ingest and the graph build (minutes on a loaded
    // machine) and measure the same data.
    let kept = std::env::var_os(STORE_ENV).map(std::path::PathBuf::from);
    let path = kept
        .clone()
        .unwrap_or_else(|| dir.path().join("filtered.redb"));
    let reuse = kept.is_some() && path.exists();
    let store = Store::open(&path, Options::default().durability(Durability::None)).expect("open");
    let data = Structured::new(7, DIM);
    let start = Instant::now();
    if reuse {
        assert_eq!(
            store.stats().expect("stats").chunks,
            n as u64,
            "the kept store holds another N"
        );
    } else {
        ingest(&store, &data.vectors(1, n));
    }
    assert!(store.wait_for_index(Duration::from_secs(3600)), "index");
    let what = if reuse {
        "reopen + index load"
    } else {
        "ingest + graph build"
    };
    eprintln!("{what} of {n}: {:.1?}", start.elapsed());
    let queries = data.vectors(2, QUERIES);
    let cases: [(&str, serde_json::Value, f64); 4] = [
        ("50%", json!({"bucket": {"$lt": 500}}), 0.5),
        ("10%", json!({"bucket": {"$lt": 100}}), 0.1),
        ("1%", json!({"bucket": {"$lt": 10}}), 0.01),
        ("0.1%", json!({"bucket": 0}), 0.001),
    ];
    // The filter index is built by the first filtered search: not timed.
    let first = Filter::parse(&cases[0].1).expect("filter");
    let start = Instant::now();
    store
        .search(&queries[0], K, &SearchOptions::default().filter(first))
        .expect("warm");
    eprintln!(
        "filter index built by the first filtered search: {:.1?}",
        start.elapsed()
    );

    // One thread from here on (see the module documentation).
    let pinned = std::process::Command::new("taskset")
        .args(["-p", "-c", "0", &std::process::id().to_string()])
        .output()
        .is_ok_and(|o| o.status.success());
    eprintln!("pinned to one core: {pinned}");
    let mut c = Criterion::default()
        .configure_from_args()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    let unfiltered = bench_search(
        &mut c,
        "filtered_search",
        "unfiltered_graph",
        &store,
        &queries,
        &SearchOptions::default(),
    );
    let mut rows = Vec::new();
    for (name, filter, share) in &cases {
        let filter = Filter::parse(filter).expect("filter");
        let base = SearchOptions::default().filter(filter);
        let strategies = [
            ("auto", base.clone()),
            ("graph", base.clone().filter_strategy(FilterStrategy::Graph)),
            (
                "scan_matching",
                base.clone().filter_strategy(FilterStrategy::ScanMatching),
            ),
            ("exact", base.clone().exact(true)),
        ];
        let mut medians = Vec::new();
        for (strategy, options) in &strategies {
            let group = format!("filtered_search_{name}");
            medians.push(bench_search(
                &mut c, &group, strategy, &store, &queries, options,
            ));
        }
        let recall_auto = recall(&store, &queries[..50], &base);
        let recall_graph = recall(
            &store,
            &queries[..50],
            &base.clone().filter_strategy(FilterStrategy::Graph),
        );
        rows.push((*name, *share, medians, recall_auto, recall_graph));
    }
    let parallelism = std::thread::available_parallelism().map_or(0, |p| p.get());
    println!();
    println!(
        "filtered_search: {n} x {DIM}-d, k = {K}, threads available: {parallelism}; medians in ms per query"
    );
    println!("unfiltered graph search: {:.3} ms", unfiltered * 1e3);
    println!(
        "| selectivity | auto | graph | scan matching | exact (filtered scan) | exact / auto | scan matching / auto | unfiltered / auto | recall@10 auto | recall@10 graph |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for (name, _, m, recall_auto, recall_graph) in rows {
        println!(
            "| {name} | {:.3} | {:.3} | {:.3} | {:.3} | {:.2}x | {:.2}x | {:.2}x | {recall_auto:.3} | {recall_graph:.3} |",
            m[0] * 1e3,
            m[1] * 1e3,
            m[2] * 1e3,
            m[3] * 1e3,
            m[3] / m[0],
            m[2] / m[0],
            unfiltered / m[0],
        );
    }
    println!("{NAN_NOTE}");
    drop(store);
    let _ = Path::new(&path);
}
