//! Many writers, one fsync: durable ingestion throughput.
//!
//! Documents of 8 chunks (about 1 KB of text and a 384-d f32 vector each), all durable
//! (`Durability::Immediate`), measured side by side in one run. Every path writes into files
//! of its own, and starts a new, empty file (closing and deleting the last) before a file
//! would hold more than [`STORE_DOCS`] documents, outside the timed part. So every path is
//! measured on stores of the same sizes, 0 to 32,768 documents (about 1.1 GB), whatever its
//! speed: with one file per path for the whole run, a path twice as fast writes a file twice
//! as large, and on this VM sustained writing into a file past about 3 GB slows every writer
//! down, redb alone included (see docs/history/benchmarks-writes.md). A closed ratchetdb store also stops its
//! background index work. SQLite with sqlite-vec on the same batches is in `benches/compare/`
//! (`cargo bench -p ratchetdb-bench-compare --bench group_commit_sqlite`).
//!
//! - `ratchet_one_commit_per_doc`: `Store::upsert`, one transaction and fsync per document.
//! - `ratchet_writer_8_producers`: 8 threads through one `Writer` (group commit), each keeping
//!   up to 64 operations in flight, as a consumer that acknowledges on outcome does; 8,192
//!   documents per timed run (1,024 per producer), so that starting and draining the
//!   pipeline is a small part of each run, as it is for a long-running consumer.
//! - `ratchet_write_batch_256`: 256 documents per transaction from one thread.
//! - `ratchet_write_batch_256_stale`: the same batch where every revision is older than the
//!   stored one, for the cost of a refused write relative to an accepted one.
//! - `redb_floor_same_rows_256` / `redb_floor_two_blobs_256` / `redb_floor_spilled_256`: the
//!   floor under ratchetdb's write path. The same documents' bytes go straight into redb, 256
//!   per durable transaction, with no guard, hashing, reuse planning, changelog or index:
//!   first as the 18 rows schema 1 wrote for a new document (document row, key row, 8 chunk
//!   rows, 8 vector rows, at their sizes), then as the 4 rows schema 2 wrote (document row,
//!   key row, the texts in one value, the vectors in another), then as the 4 rows schema 3
//!   writes (the texts' last bytes moved after the vectors, into the slack of their pages).
//!   The floor's files get the same page cache size as ratchetdb's
//!   ([`ratchetdb::DEFAULT_CACHE_SIZE`]).

mod common;

use common::floor::{self, Layout};
use common::rotation::{Rotation, STORE_DOCS};
use common::{document, fresh, timed_write_batches, CHUNKS_PER_DOC};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ratchetdb::{Document, Op, Options, Store, WriterOptions};
use std::path::Path;
use std::time::{Duration, Instant};

fn open_store(path: &Path) -> Store {
    Store::open(path.with_extension("redb"), Options::default()).expect("open")
}

/// A store's `Writer`, which holds the store open; closing it shuts the writer down (its last
/// batch committed) and closes the store.
struct WriterStore {
    writer: ratchetdb::Writer,
}

impl Drop for WriterStore {
    fn drop(&mut self) {
        let stats = self.writer.stats();
        println!(
            "writer: {} ops in {} transactions, {:.1} ops per transaction, largest {}",
            stats.ops,
            stats.batches,
            stats.ops as f64 / stats.batches.max(1) as f64,
            stats.max_batch_ops
        );
        self.writer.shutdown();
    }
}

fn open_writer(path: &Path) -> WriterStore {
    let store = open_store(path);
    let writer = store.writer_with(WriterOptions::for_store(&store).max_batch_ops(1024));
    WriterStore { writer }
}

fn group_commit(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let dir = dir.path();
    println!("chunks per document: {CHUNKS_PER_DOC}; at most {STORE_DOCS} documents per file");

    let mut group = c.benchmark_group("durable_ingest");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    group.warm_up_time(Duration::from_secs(2));

    const SINGLE: u64 = 32;
    group.throughput(Throughput::Elements(SINGLE));
    let mut stores = Rotation::new(dir, "one_commit", open_store);
    group.bench_function("ratchet_one_commit_per_doc", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let docs = fresh(SINGLE);
                let store = stores.room_for(SINGLE);
                let start = Instant::now();
                for doc in docs {
                    store.upsert(doc).expect("upsert");
                }
                total += start.elapsed();
            }
            total
        })
    });
    stores.close();

    const PER_RUN: u64 = 8192;
    const PRODUCERS: u64 = 8;
    group.throughput(Throughput::Elements(PER_RUN));
    // A run is about a second. At 40 s criterion samples linearly: samples of 1 to 10 runs,
    // 55 runs (about 14 files) in all. At 20 s it took flat samples of 2 runs each, and
    // those varied by 2x.
    group.measurement_time(Duration::from_secs(40));
    let mut writers = Rotation::new(dir, "writer", open_writer);
    group.bench_function("ratchet_writer_8_producers", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let shares: Vec<Vec<Document>> =
                    (0..PRODUCERS).map(|_| fresh(PER_RUN / PRODUCERS)).collect();
                let writer = &writers.room_for(PER_RUN).writer;
                let start = Instant::now();
                std::thread::scope(|scope| {
                    for share in shares {
                        let writer = writer.clone();
                        scope.spawn(move || {
                            let mut in_flight = std::collections::VecDeque::new();
                            for doc in share {
                                if in_flight.len() >= 64 {
                                    let pending: ratchetdb::Pending =
                                        in_flight.pop_front().expect("pending");
                                    pending.wait().expect("outcome");
                                }
                                in_flight
                                    .push_back(writer.submit(Op::Upsert(doc)).expect("submit"));
                            }
                            for pending in in_flight {
                                pending.wait().expect("outcome");
                            }
                        });
                    }
                });
                total += start.elapsed();
            }
            total
        })
    });
    writers.close();

    const BATCH: u64 = 256;
    group.measurement_time(Duration::from_secs(20));
    group.throughput(Throughput::Elements(BATCH));
    let mut stores = Rotation::new(dir, "batch", open_store);
    group.bench_function("ratchet_write_batch_256", |b| {
        b.iter_custom(|iters| timed_write_batches(&mut stores, iters, BATCH))
    });
    stores.close();

    // Stale: the stored revisions are newer than every one in the batch. The file does not
    // grow (a refusal writes only counters and the bounded skip log), so one store serves
    // the whole path.
    let store = open_store(&dir.join("stale"));
    let stale_ids: Vec<u64> = (0..BATCH).map(|i| 50_000_000 + i).collect();
    let newer: Vec<Op> = stale_ids
        .iter()
        .map(|&d| Op::Upsert(document(d, 1_000_000)))
        .collect();
    store.write_batch(newer).expect("newer");
    group.bench_function("ratchet_write_batch_256_stale", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for i in 0..iters {
                let ops: Vec<Op> = stale_ids
                    .iter()
                    .map(|&d| Op::Upsert(document(d, 1 + i % 1000)))
                    .collect();
                let start = Instant::now();
                store.write_batch(ops).expect("batch");
                total += start.elapsed();
            }
            total
        })
    });
    drop(store);

    // The floor: the same bytes straight into redb (files of its own, default durability).
    for (name, layout) in [
        ("redb_floor_same_rows_256", Layout::RowPerChunk),
        ("redb_floor_two_blobs_256", Layout::TwoBlobs),
        ("redb_floor_spilled_256", Layout::Spilled),
    ] {
        let mut floors = Rotation::new(dir, name, floor::open);
        let mut next_key = 0u64;
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                floor::timed_writes(&mut floors, iters, BATCH, &mut next_key, layout)
            })
        });
        floors.close();
    }
    group.finish();
}

criterion_group!(benches, group_commit);
criterion_main!(benches);
