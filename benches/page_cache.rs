//! What the size of redb's page cache (`Options::cache_size`) costs and buys, side by side in
//! one run, at ratchetdb's default (64 MiB) and at redb's own default (1 GiB):
//!
//! - `durable_write/write_batch_256_*`: durable `write_batch`es of 256 new documents (8 chunks
//!   of about 1 KB of text and a 384-d vector each), into files of at most 32,768 documents
//!   (about 1.1 GB) rotated as in `benches/group_commit.rs`. A commit's written pages stay in
//!   the cache until it is full; every one of them is a fresh allocation the process faults
//!   in.
//! - `durable_write/redb_floor_spilled_*`: the same documents' bytes straight into redb as
//!   schema 3's four rows each (`redb_floor_spilled_256` of `benches/group_commit.rs`), at
//!   both cache sizes.
//! - `point_read/get_*`: `Store::get` of a random document of a store of 8,192 such
//!   documents (about 290 MB of rows; with the persisted vector graph, the file is larger),
//!   after every document was read once. With the smaller cache most reads miss it and go
//!   to the file (the operating system's page cache). Building this store's vector graph
//!   (65,536 vectors) takes most of the bench's time; the measurements wait until the
//!   store's background index work is done.
//!
//! - memory: in a fresh child process per cache size, the resident memory after durably
//!   writing 32,768 documents (about 1.1 GB) into a new store, and after then reading each
//!   once (`VmRSS`, and the peak `VmHWM`). It includes the vector index, the same in both
//!   up to how far the background graph build got.
//!
//! `cargo bench --bench page_cache`; a summary with the ratios is printed at the end.

mod common;

use common::floor::Layout;
use common::rotation::Rotation;
use common::rotation::STORE_DOCS;
use common::{
    document, floor, memory, or_nan, run_child, timed_write_batches, Estimates, NAN_NOTE,
};
use criterion::{criterion_group, Criterion, Throughput};
use ratchetdb::{Op, Options, Store, DEFAULT_CACHE_SIZE};
use std::path::Path;
use std::time::{Duration, Instant};

const REDB_DEFAULT: usize = 1 << 30;
const BATCH: u64 = 256;
const READ_DOCS: u64 = 8_192;
/// Set (to a cache size in bytes) in the child process of the memory measurement.
const CHILD_ENV: &str = "RATCHETDB_PAGE_CACHE_CHILD";

/// How a path opens its files: `Rotation` takes a plain function.
type OpenFn = fn(&Path) -> Store;
type FloorOpenFn = fn(&Path) -> redb::Database;

fn open_default(path: &Path) -> Store {
    Store::open(path.with_extension("redb"), Options::default()).expect("open")
}

fn open_redb_default(path: &Path) -> Store {
    let options = Options::default().cache_size(REDB_DEFAULT);
    Store::open(path.with_extension("redb"), options).expect("open")
}

fn label(bytes: usize) -> String {
    format!("cache_{}MiB", bytes >> 20)
}

/// Waits until the store's background index work is done, so that it does not share the
/// CPU with the measurement.
fn wait_for_index(store: &Store) {
    assert!(
        store.wait_for_index(Duration::from_secs(1800)),
        "index still busy: {:?}",
        store.index_info()
    );
}

/// Durable writes at both cache sizes: ratchetdb's `write_batch`, and the schema-3 redb floor
/// of `benches/group_commit.rs`. Run in the order ratchetdb 64 MiB, ratchetdb 1 GiB, floor
/// 1 GiB, floor 64 MiB, so that a drift of this VM's speed during the run does not favour
/// one size. Returns the medians of (ratchetdb, floor), per cache size.
fn durable_write(c: &mut Criterion, dir: &Path) -> Vec<(usize, f64, f64)> {
    let mut group = c.benchmark_group("durable_write");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    group.warm_up_time(Duration::from_secs(2));
    group.throughput(Throughput::Elements(BATCH));
    let paths: [(usize, OpenFn); 2] = [
        (DEFAULT_CACHE_SIZE, open_default),
        (REDB_DEFAULT, open_redb_default),
    ];
    let mut ratchet = Vec::new();
    for (bytes, open) in paths {
        let name = format!("write_batch_256_{}", label(bytes));
        let mut stores = Rotation::new(dir, "write", open);
        let estimates = Estimates::before_run("durable_write", &name);
        group.bench_function(&name, |b| {
            b.iter_custom(|iters| timed_write_batches(&mut stores, iters, BATCH))
        });
        stores.close();
        ratchet.push(or_nan(estimates.median()));
    }
    let floors: [(usize, FloorOpenFn); 2] = [
        (REDB_DEFAULT, floor::open_redb_default),
        (DEFAULT_CACHE_SIZE, floor::open),
    ];
    let mut floor_medians = Vec::new();
    for (bytes, open) in floors {
        let name = format!("redb_floor_spilled_{}", label(bytes));
        let mut files = Rotation::new(dir, "floor", open);
        let mut next_key = 0u64;
        let estimates = Estimates::before_run("durable_write", &name);
        group.bench_function(&name, |b| {
            b.iter_custom(|iters| {
                floor::timed_writes(&mut files, iters, BATCH, &mut next_key, Layout::Spilled)
            })
        });
        files.close();
        floor_medians.push(or_nan(estimates.median()));
    }
    group.finish();
    vec![
        (DEFAULT_CACHE_SIZE, ratchet[0], floor_medians[1]),
        (REDB_DEFAULT, ratchet[1], floor_medians[0]),
    ]
}

fn point_read(c: &mut Criterion, dir: &Path) -> Vec<(usize, f64)> {
    let path = dir.join("read.redb");
    {
        let store = Store::open(&path, Options::default()).expect("open");
        for batch in 0..READ_DOCS / BATCH {
            let ops: Vec<Op> = (batch * BATCH..(batch + 1) * BATCH)
                .map(|d| Op::Upsert(document(d, 1)))
                .collect();
            store.write_batch(ops).expect("batch");
        }
        let start = Instant::now();
        wait_for_index(&store);
        println!(
            "read store: {READ_DOCS} documents, file {:.0} MB, index settled in {:.0} s",
            std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0) as f64 / 1e6,
            start.elapsed().as_secs_f64()
        );
    }
    let mut group = c.benchmark_group("point_read");
    group.measurement_time(Duration::from_secs(10));
    let mut medians = Vec::new();
    for bytes in [DEFAULT_CACHE_SIZE, REDB_DEFAULT] {
        let options = Options::default().must_exist().cache_size(bytes);
        let store = Store::open(&path, options).expect("reopen");
        wait_for_index(&store);
        let ids: Vec<String> = (0..READ_DOCS).map(|d| format!("doc-{d}")).collect();
        for id in &ids {
            store
                .get("bench", id)
                .expect("warm-up read")
                .expect("stored");
        }
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let name = format!("get_{}", label(bytes));
        let estimates = Estimates::before_run("point_read", &name);
        group.bench_function(&name, |b| {
            b.iter(|| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                let id = &ids[(state % READ_DOCS) as usize];
                store.get("bench", id).expect("read").expect("stored")
            })
        });
        medians.push((bytes, or_nan(estimates.median())));
    }
    group.finish();
    medians
}

/// In a fresh process: writes [`STORE_DOCS`] documents durably into a new store with a cache
/// of `bytes`, then reads each once; prints the memory after each as JSON.
fn child_memory(bytes: usize) {
    let dir = tempfile::tempdir().expect("tempdir");
    let options = Options::default().cache_size(bytes);
    let store = Store::open(dir.path().join("memory.redb"), options).expect("open");
    for batch in 0..STORE_DOCS / BATCH {
        let ops: Vec<Op> = (batch * BATCH..(batch + 1) * BATCH)
            .map(|d| Op::Upsert(document(d, 1)))
            .collect();
        store.write_batch(ops).expect("batch");
    }
    let written = memory();
    for d in 0..STORE_DOCS {
        store
            .get("bench", &format!("doc-{d}"))
            .expect("read")
            .expect("stored");
    }
    let read = memory();
    println!(
        "{}",
        serde_json::json!({
            "written_rss": written.0, "written_hwm": written.1,
            "read_rss": read.0, "read_hwm": read.1,
        })
    );
}

fn page_cache(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let writes = durable_write(c, dir.path());
    let reads = point_read(c, dir.path());
    let memories: Vec<(usize, serde_json::Value)> = [DEFAULT_CACHE_SIZE, REDB_DEFAULT]
        .into_iter()
        .map(|bytes| (bytes, run_child(CHILD_ENV, bytes.to_string())))
        .collect();
    println!(
        "\npage cache size: durable writes (docs/s: write_batch, redb floor) and point reads \
         (µs per get), medians"
    );
    for ((bytes, write, floor), (_, read)) in writes.iter().zip(&reads) {
        println!(
            "  {:>5} MiB: {:>7.0} / {:>7.0} docs/s  {:>6.1} µs",
            bytes >> 20,
            BATCH as f64 / write,
            BATCH as f64 / floor,
            read * 1e6
        );
    }
    if let (
        [(_, small_write, small_floor), (_, large_write, large_floor)],
        [(_, small_read), (_, large_read)],
    ) = (writes.as_slice(), reads.as_slice())
    {
        println!(
            "  {} MiB / 1 GiB: write_batch {:.2}× the rate, floor {:.2}×, reads {:.2}× the time",
            DEFAULT_CACHE_SIZE >> 20,
            large_write / small_write,
            large_floor / small_floor,
            small_read / large_read
        );
    }
    let measured = writes.iter().flat_map(|&(_, w, f)| [w, f]);
    if measured
        .chain(reads.iter().map(|&(_, r)| r))
        .any(f64::is_nan)
    {
        println!("  {NAN_NOTE}");
    }
    println!("memory (MB) after writing {STORE_DOCS} documents / after reading each once:");
    let mb = |v: &serde_json::Value, field: &str| v[field].as_u64().unwrap_or(0) as f64 / 1e6;
    for (bytes, m) in &memories {
        println!(
            "  {:>5} MiB: RSS {:.0} / {:.0}, peak {:.0} / {:.0}",
            bytes >> 20,
            mb(m, "written_rss"),
            mb(m, "read_rss"),
            mb(m, "written_hwm"),
            mb(m, "read_hwm")
        );
    }
}

criterion_group!(benches, page_cache);

fn main() {
    if let Some(bytes) = std::env::var(CHILD_ENV).ok().and_then(|v| v.parse().ok()) {
        child_memory(bytes);
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
