//! Vector search at 100k x 384-d structured vectors (low-rank clusters plus noise, see
//! `Structured` in `tests/search_support`, which the benches include), measured side by
//! side in one run:
//!
//! - latency of the graph search at several `ef` with its recall@10 (200 queries, against
//!   the exact scan), and of the exact scan; the exact scan's GB/s against this machine's
//!   read bandwidth over a 1 GB buffer with the same number of threads;
//! - the crossover where the graph gets faster than the exact scan (1k..20k vectors), the
//!   measurement behind `EXACT_THRESHOLD`;
//! - the graph as the store builds it while ingesting (a build once the store passes the
//!   size threshold, then new vectors absorbed in the background), and its build time;
//! - open to first graph search without a snapshot (the open builds the graph on the
//!   store's background pool and persists it) versus with the persisted snapshot, each in a
//!   fresh child process, which also reports resident memory per vector;
//! - graph search with 19% of the vectors deleted (dead graph points are filtered at query
//!   time; the store rebuilds in the background only above 20%), versus after a rebuild
//!   (`build_index`, timed).
//!
//! - on real data (`search_real`, after `bash benches/data/fetch.sh`): GloVe 50-d, MiniLM
//!   embeddings of Wikipedia sentences, random 384-d of intrinsic dimension 64: recall@10
//!   and single-thread QPS over an `ef` sweep, criterion groups `real_<set>` at the widths
//!   reaching recall 0.95 and 0.99 beside the exact scan, time from the last write to a
//!   searchable graph, file size. Sets whose files are missing are skipped with a message;
//!   `RATCHETDB_SEARCH_BENCH_SETS=glove-100k,minilm` picks sets (`none`: no real data),
//!   `RATCHETDB_SEARCH_BENCH_SYNTHETIC=0` skips everything else.
//!
//! `cargo bench --bench search`; a summary table is printed at the end. Takes several
//! minutes, most of it HNSW builds (each reported).

mod common;
mod search_real;

use common::search_support::Structured;
use common::{memory, run_child, NAN_NOTE};
use criterion::Criterion;
use ratchetdb::{Durability, Op, Options, SearchOptions, Store, Version};
use std::path::Path;
use std::time::{Duration, Instant};

const DIM: usize = 384;
const N: usize = 100_000;
/// Overrides `N` (e.g. a quick smoke run); the sizes above it are skipped.
const N_ENV: &str = "RATCHETDB_SEARCH_BENCH_N";
const CHUNKS_PER_DOC: usize = 8;
const QUERIES: usize = 200;
const K: usize = 10;
const EF_SWEEP: [usize; 6] = [16, 24, 32, 48, 64, 128];
const CROSSOVER_SIZES: [usize; 5] = [1_000, 5_000, 10_000, 15_000, 20_000];
/// Share of documents deleted for the tombstone measurement: just under the store's 20%
/// background-rebuild trigger, so that the dead points stay in the graph.
const DELETED_PERCENT: u64 = 19;
const CHILD_ENV: &str = "RATCHETDB_SEARCH_BENCH_CHILD";

fn open(path: &Path) -> Store {
    Store::open(path, Options::default().durability(Durability::None)).expect("open")
}

/// Writes `vectors` as documents of 8 chunks, 500 documents per transaction.
fn ingest(store: &Store, vectors: &[Vec<f32>]) {
    common::ingest_docs(store, vectors, CHUNKS_PER_DOC, |_| None);
}

fn wait(store: &Store) {
    assert!(store.wait_for_index(Duration::from_secs(3600)), "index");
}

fn key(hit: &ratchetdb::Hit) -> (String, u32) {
    (hit.id.clone(), hit.position)
}

/// The exact top-k of every query (the ground truth).
fn truth(store: &Store, queries: &[Vec<f32>]) -> Vec<Vec<(String, u32)>> {
    let exact = SearchOptions::default().exact(true);
    queries
        .iter()
        .map(|q| {
            store
                .search(q, K, &exact)
                .expect("exact")
                .iter()
                .map(key)
                .collect()
        })
        .collect()
}

fn recall(store: &Store, queries: &[Vec<f32>], truth: &[Vec<(String, u32)>], ef: usize) -> f64 {
    let options = SearchOptions::default().ef(ef);
    let mut found = 0;
    for (q, t) in queries.iter().zip(truth) {
        let hits = store.search(q, K, &options).expect("ann");
        found += hits.iter().filter(|h| t.contains(&key(h))).count();
    }
    found as f64 / (queries.len() * K) as f64
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

/// Read bandwidth over a 1 GB buffer with `threads` threads, in bytes/s (median of 5).
fn read_bandwidth(buffer: &[f32], threads: usize) -> f64 {
    let mut times = Vec::new();
    for _ in 0..5 {
        let start = Instant::now();
        let part = buffer.len().div_ceil(threads);
        let total: f32 = std::thread::scope(|s| {
            let handles: Vec<_> = buffer
                .chunks(part)
                .map(|chunk| {
                    s.spawn(move || {
                        let mut acc = [0f32; 16];
                        for block in chunk.chunks_exact(16) {
                            for l in 0..16 {
                                acc[l] += block[l];
                            }
                        }
                        acc.iter().sum::<f32>()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().expect("sum")).sum()
        });
        std::hint::black_box(total);
        times.push(start.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    std::mem::size_of_val(buffer) as f64 / times[2]
}

/// memcpy of a 1 GB buffer, in bytes copied per second (median of 3).
fn copy_bandwidth(buffer: &[f32]) -> f64 {
    let mut target = vec![0f32; buffer.len()];
    let mut times = Vec::new();
    for _ in 0..3 {
        let start = Instant::now();
        target.copy_from_slice(buffer);
        std::hint::black_box(&target);
        times.push(start.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    std::mem::size_of_val(buffer) as f64 / times[1]
}

/// In a fresh process: opens the store, waits until the graph is ready, runs one graph
/// search; prints timings and memory as JSON.
fn child_open(path: &Path) {
    let query = Structured::new(1, DIM).vectors(9, 1).remove(0);
    let (rss_before, _) = memory();
    let start = Instant::now();
    let store = open(path);
    let opened = start.elapsed().as_secs_f64();
    // The first search answers at once (an exact scan of the file while the index loads).
    store
        .search(&query, K, &SearchOptions::default())
        .expect("first search");
    let first_search = start.elapsed().as_secs_f64();
    // Wait for the graph while one may still come: until the index has loaded and its
    // background work is over. Below the store's size threshold that work builds none,
    // and the first graph search is then reported as NaN at once (it used to wait out a
    // 900 s deadline). The deadline stays only against a load that never finishes.
    let deadline = start + Duration::from_secs(900);
    loop {
        let info = store.index_info();
        if info.graph_ready || (info.loaded && !info.building) || Instant::now() >= deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    store
        .search(&query, K, &SearchOptions::default().ef(64))
        .expect("ann");
    let first_ann = if store.index_info().graph_ready {
        start.elapsed().as_secs_f64()
    } else {
        f64::NAN
    };
    let (rss_ready, _) = memory();
    // A build persists its snapshot before it is done: let it finish.
    wait(&store);
    let (rss, hwm) = memory();
    let live = store.index_info().live_vectors;
    println!(
        "{}",
        serde_json::json!({
            "opened_s": opened, "first_search_s": first_search, "first_ann_s": first_ann,
            "rss_before": rss_before, "rss_ready": rss_ready, "rss": rss, "hwm": hwm,
            "live": live,
        })
    );
}

fn delete_snapshot(path: &Path) {
    let table: redb::TableDefinition<u32, &[u8]> = redb::TableDefinition::new("index_snapshot");
    let db = redb::Database::open(path).expect("redb");
    let txn = db.begin_write().expect("write");
    txn.open_table(table)
        .expect("table")
        .retain(|_, _| false)
        .expect("clear");
    txn.commit().expect("commit");
}

fn main() {
    if let Some(path) = std::env::var_os(CHILD_ENV) {
        child_open(Path::new(&path));
        return;
    }
    if let Ok(spec) = std::env::var(search_real::CHILD_ENV) {
        search_real::child(&spec);
        return;
    }
    let mut c = Criterion::default()
        .configure_from_args()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .sample_size(20);
    let mut report: Vec<String> = Vec::new();
    let mut line = |s: String| {
        println!("# {s}");
        report.push(s);
    };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());

    // ---- real data sets ----
    for name in search_real::wanted_sets() {
        match search_real::Set::load(&name, true) {
            Ok(set) => real_set(&mut c, &set, &mut line),
            Err(why) => line(format!("{name}: skipped: {why}")),
        }
    }
    if std::env::var("RATCHETDB_SEARCH_BENCH_SYNTHETIC").as_deref() == Ok("0") {
        finish(c, &report);
        return;
    }

    // ---- memory bandwidth reference ----
    let buffer: Vec<f32> = (0..(1usize << 28)).map(|i| (i % 7) as f32).collect();
    let read_1 = read_bandwidth(&buffer, 1);
    let read_n = read_bandwidth(&buffer, threads);
    let copy = copy_bandwidth(&buffer);
    drop(buffer);
    line(format!(
        "memory bandwidth (1 GB buffer): read {:.1} GB/s on 1 thread, {:.1} GB/s on {threads}; memcpy {:.1} GB/s",
        read_1 / 1e9,
        read_n / 1e9,
        copy / 1e9
    ));

    let n_total: usize = std::env::var(N_ENV)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(N);
    let data = Structured::new(1, DIM);
    let generated = Instant::now();
    let vectors = data.vectors(2, n_total);
    let queries = data.vectors(3, QUERIES);
    line(format!(
        "generated {n_total} x {DIM} in {:.1} s",
        generated.elapsed().as_secs_f64()
    ));
    let dir = tempfile::tempdir().expect("tempdir");

    // ---- crossover: exact scan vs graph at small sizes ----
    let mut crossover = Vec::new();
    for &n in CROSSOVER_SIZES.iter().filter(|&&n| n < n_total) {
        let path = dir.path().join(format!("small-{n}.redb"));
        let store = open(&path);
        ingest(&store, &vectors[..n]);
        wait(&store);
        store.build_index().expect("build");
        let t = truth(&store, &queries);
        let r = recall(&store, &queries, &t, 64);
        let group = format!("search_{n}");
        let exact = bench_search(
            &mut c,
            &group,
            "exact",
            &store,
            &queries,
            &SearchOptions::default().exact(true),
        );
        let ann = bench_search(
            &mut c,
            &group,
            "ann_ef64",
            &store,
            &queries,
            &SearchOptions::default().ef(64),
        );
        crossover.push((n, exact, ann, r));
        drop(store);
        let _ = std::fs::remove_file(&path);
    }
    for (n, exact, ann, r) in &crossover {
        line(format!(
            "crossover n={n}: exact {:.0} us, graph ef64 {:.0} us (recall {r:.3}); exact/graph = {:.2}",
            exact * 1e6,
            ann * 1e6,
            exact / ann
        ));
    }

    // ---- 100k ----
    let path = dir.path().join("search-100k.redb");
    let store = open(&path);
    let started = Instant::now();
    ingest(&store, &vectors);
    let ingested = started.elapsed().as_secs_f64();
    wait(&store);
    let ready = started.elapsed().as_secs_f64();
    line(format!(
        "100k ingest: {ingested:.1} s; the graph (built and extended in the background while \
         ingesting) ready {ready:.1} s after the first write"
    ));
    let file_bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    line(format!(
        "file: {:.0} MB, {:.0} bytes/vector",
        file_bytes as f64 / 1e6,
        file_bytes as f64 / n_total as f64
    ));

    let t = truth(&store, &queries);
    let mut sweep = Vec::new();
    for ef in EF_SWEEP {
        sweep.push((ef, recall(&store, &queries, &t, ef)));
    }
    let exact = bench_search(
        &mut c,
        "search_100k",
        "exact",
        &store,
        &queries,
        &SearchOptions::default().exact(true),
    );
    let mut ann = Vec::new();
    for (ef, r) in &sweep {
        let m = bench_search(
            &mut c,
            "search_100k",
            &format!("ann_ef{ef}"),
            &store,
            &queries,
            &SearchOptions::default().ef(*ef),
        );
        ann.push((*ef, *r, m));
    }
    let auto = bench_search(
        &mut c,
        "search_100k",
        "default",
        &store,
        &queries,
        &SearchOptions::default(),
    );
    let scanned = (n_total * DIM * 4) as f64;
    line(format!(
        "100k exact scan: {:.2} ms median = {:.0} QPS; {:.1} GB/s scanned ({threads} threads) = {:.2} of read bandwidth on {threads} threads, {:.2} of 1-thread",
        exact * 1e3,
        1.0 / exact,
        scanned / exact / 1e9,
        scanned / exact / read_n,
        scanned / exact / read_1
    ));
    for (ef, r, m) in &ann {
        line(format!(
            "100k graph ef={ef}: recall@10 {r:.3}, {:.0} us median = {:.0} QPS, {:.1}x exact",
            m * 1e6,
            1.0 / m,
            exact / m
        ));
    }
    line(format!(
        "100k default options: {:.0} us median ({:.1}x exact)",
        auto * 1e6,
        exact / auto
    ));
    drop(store);

    // ---- open to first graph search: snapshot vs full build; memory ----
    // Without a snapshot first: that open builds the graph and persists it, which the
    // second open loads.
    delete_snapshot(&path);
    let without = run_child(CHILD_ENV, &path);
    let with_snapshot = run_child(CHILD_ENV, &path);
    let f = |v: &serde_json::Value, k: &str| v[k].as_f64().unwrap_or(f64::NAN);
    for (label, v) in [
        ("with the persisted snapshot", &with_snapshot),
        ("without a snapshot (full build)", &without),
    ] {
        line(format!(
            "open {label}: open {:.3} s, first search (exact from the file) {:.3} s, first graph search {:.2} s",
            f(v, "opened_s"),
            f(v, "first_search_s"),
            f(v, "first_ann_s")
        ));
    }
    let live = f(&with_snapshot, "live");
    line(format!(
        "memory after loading the snapshot: RSS {:.0} bytes/vector ({:.0} MB), peak (VmHWM) {:.0} bytes/vector; \
         after a full build: RSS {:.0}, peak {:.0} bytes/vector",
        (f(&with_snapshot, "rss") - f(&with_snapshot, "rss_before")) / live,
        (f(&with_snapshot, "rss") - f(&with_snapshot, "rss_before")) / 1e6,
        (f(&with_snapshot, "hwm") - f(&with_snapshot, "rss_before")) / live,
        (f(&without, "rss") - f(&without, "rss_before")) / live,
        (f(&without, "hwm") - f(&without, "rss_before")) / live,
    ));

    // ---- tombstones: 19% deleted, then rebuilt ----
    let store = open(&path);
    wait(&store);
    let ops: Vec<Op> = (0..n_total / CHUNKS_PER_DOC)
        .filter(|d| (*d as u64 % 100) < DELETED_PERCENT)
        .map(|d| Op::Delete {
            source: "bench".into(),
            id: format!("d{d}"),
            version: Version::number(2),
        })
        .collect();
    for result in store.write_batch(ops).expect("deletes") {
        result.expect("delete");
    }
    wait(&store);
    let info = store.index_info();
    let t = truth(&store, &queries);
    let r_dead = recall(&store, &queries, &t, 64);
    let dead = bench_search(
        &mut c,
        "search_100k_tombstoned",
        "ann_ef64",
        &store,
        &queries,
        &SearchOptions::default().ef(64),
    );
    let rebuild_start = Instant::now();
    store.build_index().expect("rebuild");
    let rebuild = rebuild_start.elapsed().as_secs_f64();
    let r_rebuilt = recall(&store, &queries, &t, 64);
    let rebuilt = bench_search(
        &mut c,
        "search_100k_rebuilt",
        "ann_ef64",
        &store,
        &queries,
        &SearchOptions::default().ef(64),
    );
    line(format!(
        "{DELETED_PERCENT}% deleted ({} live, dead fraction {:.3}): ef64 {:.0} us (recall {r_dead:.3}); \
         after a rebuild ({rebuild:.1} s): {:.0} us (recall {r_rebuilt:.3}); tombstoned/rebuilt = {:.2}",
        info.live_vectors,
        info.dead_fraction,
        dead * 1e6,
        rebuilt * 1e6,
        dead / rebuilt
    ));
    drop(store);
    finish(c, &report);
}

fn finish(c: Criterion, report: &[String]) {
    c.final_summary();
    println!("\n==== search bench summary ====");
    for l in report {
        println!("{l}");
    }
    if report.iter().any(|l| l.contains("NaN")) {
        println!("{NAN_NOTE}");
    }
}

/// One real data set: ingest, wait for the graph, sweep `ef`, criterion at the widths
/// reaching recall 0.95 and 0.99 and for the exact scan.
fn real_set(c: &mut Criterion, set: &search_real::Set, line: &mut impl FnMut(String)) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(format!("{}.redb", set.name));
    let store = Store::open(&path, search_real::options()).expect("open");
    let ingest_s = search_real::ingest(&store, set);
    let last_write = Instant::now();
    search_real::wait(&store);
    let ready = last_write.elapsed().as_secs_f64();
    let disk = std::fs::metadata(&path).map_or(0, |m| m.len());
    let n = set.len();
    let raw = (n * set.dim * 4) as f64;
    line(format!(
        "{}: {n} x {}: ingest {ingest_s:.1} s; graph searchable {ready:.1} s after the last write; \
         file {:.0} MB = {:.1}x the raw vectors",
        set.name,
        set.dim,
        disk as f64 / 1e6,
        disk as f64 / raw
    ));
    let sweep = search_real::sweep(&store, set);
    for (ef, recall, qps, distances) in &sweep {
        line(format!(
            "{}: ef {ef}: recall@10 {recall:.3}, {qps:.0} QPS (one pass), {distances:.0} distances/query",
            set.name
        ));
    }
    let group = format!("real_{}", set.name);
    let queries: Vec<Vec<f32>> = (0..set.query_count())
        .map(|i| set.query(i).to_vec())
        .collect();
    let exact = bench_search(
        c,
        &group,
        "exact",
        &store,
        &queries,
        &SearchOptions::default().exact(true),
    );
    line(format!(
        "{}: exact scan {:.0} us median = {:.0} QPS",
        set.name,
        exact * 1e6,
        1.0 / exact
    ));
    for target in [0.95, 0.99] {
        match search_real::at_recall(&sweep, target) {
            Some((ef, recall, _, _)) => {
                let m = bench_search(
                    c,
                    &group,
                    &format!("ann_ef{ef}"),
                    &store,
                    &queries,
                    &SearchOptions::default().ef(ef),
                );
                line(format!(
                    "{}: recall {target}: ef {ef} (recall {recall:.3}) {:.0} us median = {:.0} QPS, {:.1}x exact",
                    set.name,
                    m * 1e6,
                    1.0 / m,
                    exact / m
                ));
            }
            None => line(format!(
                "{}: recall {target} not reached up to ef {}",
                set.name,
                sweep.last().map_or(0, |s| s.0)
            )),
        }
    }
}
