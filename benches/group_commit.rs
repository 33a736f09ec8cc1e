//! Many writers, one fsync: durable ingestion throughput.
//!
//! Documents of 8 chunks (about 1 KB of text and a 384-d f32 vector each), all durable
//! (ratchetdb `Durability::Immediate`; SQLite WAL with `synchronous=FULL`), measured side by
//! side in one run. Every path writes into files of its own, and starts a new, empty file
//! (closing and deleting the last) before a file would hold more than [`STORE_DOCS`]
//! documents, outside the timed part. So every path is measured on stores of the same sizes,
//! 0 to 32,768 documents (about 1.1 GB), whatever its speed: with one file per path for the
//! whole run, a path twice as fast writes a file twice as large, and on this VM sustained
//! writing into a file past about 3 GB slows every writer down, redb alone included (see
//! docs/history/benchmarks-writes.md). A closed ratchetdb store also stops its background index
//! work.
//!
//! - `ratchet_one_commit_per_doc`: `Store::upsert`, one transaction and fsync per document.
//! - `ratchet_writer_8_producers`: 8 threads through one `Writer` (group commit), each keeping
//!   up to 64 operations in flight, as a consumer that acknowledges on outcome does; 8,192
//!   documents per timed run (1,024 per producer), so that starting and draining the
//!   pipeline is a small part of each run, as it is for a long-running consumer.
//! - `ratchet_write_batch_256` / `sqlite_batch_256`: 256 documents per transaction from one
//!   thread; SQLite does the conditional upsert of the document row
//!   (`INSERT … ON CONFLICT DO UPDATE … WHERE excluded.version > version RETURNING`), the
//!   chunk replace and the surplus delete in one transaction, vectors in a sqlite-vec `vec0`
//!   virtual table (rowid = document rowid × 100 000 + position).
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
use common::{document, fresh, timed_write_batches, CHUNKS_PER_DOC, DIMENSION};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ratchetdb::{Document, Op, Options, Store, WriterOptions};
use rusqlite::{params, Connection};
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

fn sqlite_open(path: &Path) -> Connection {
    let path = path.with_extension("sqlite");
    // sqlite-vec registers itself for every connection opened after this call.
    // SAFETY: `sqlite3_vec_init` is the extension's entry point with the signature SQLite's
    // auto-extension mechanism expects; this is the registration sqlite-vec documents.
    unsafe {
        rusqlite::ffi::sqlite3_auto_extension(Some(std::mem::transmute::<
            *const (),
            unsafe extern "C" fn(
                *mut rusqlite::ffi::sqlite3,
                *mut *mut std::os::raw::c_char,
                *const rusqlite::ffi::sqlite3_api_routines,
            ) -> std::os::raw::c_int,
        >(
            sqlite_vec::sqlite3_vec_init as *const ()
        )));
    }
    let conn = Connection::open(&path).expect("sqlite open");
    conn.execute_batch(&format!(
        "PRAGMA journal_mode=WAL;
         PRAGMA synchronous=FULL;
         CREATE TABLE IF NOT EXISTS documents (
             source TEXT NOT NULL, id TEXT NOT NULL, version INTEGER NOT NULL,
             generation INTEGER NOT NULL, chunk_count INTEGER NOT NULL, content_hash BLOB NOT NULL,
             PRIMARY KEY (source, id));
         CREATE TABLE IF NOT EXISTS chunks (
             source TEXT NOT NULL, id TEXT NOT NULL, position INTEGER NOT NULL,
             generation INTEGER NOT NULL, text TEXT NOT NULL, meta TEXT NOT NULL,
             PRIMARY KEY (source, id, position));
         CREATE VIRTUAL TABLE IF NOT EXISTS chunk_vectors USING vec0(embedding float[{DIMENSION}]);
         CREATE TABLE IF NOT EXISTS sequences (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
         INSERT OR IGNORE INTO sequences VALUES ('generation', 0);"
    ))
    .expect("sqlite schema");
    let version: String = conn
        .query_row("SELECT vec_version()", [], |row| row.get(0))
        .expect("sqlite-vec loaded");
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| println!("sqlite-vec {version}"));
    conn
}

const POSITIONS: i64 = 100_000;

/// The same guarded write in SQLite: conditional upsert, chunk and vector replace, surplus
/// delete, in one transaction.
fn sqlite_write(conn: &mut Connection, docs: &[Document]) {
    let tx = conn.transaction().expect("begin");
    {
        let mut upsert = tx
            .prepare_cached(
                "INSERT INTO documents (source, id, version, generation, chunk_count, content_hash)
                 VALUES (?1, ?2, ?3, (SELECT value + 1 FROM sequences WHERE name = 'generation'), ?4, ?5)
                 ON CONFLICT (source, id) DO UPDATE SET
                     version = excluded.version, generation = excluded.generation,
                     chunk_count = excluded.chunk_count, content_hash = excluded.content_hash
                 WHERE excluded.version > documents.version
                 RETURNING rowid, generation",
            )
            .expect("prepare upsert");
        let mut bump = tx
            .prepare_cached("UPDATE sequences SET value = value + 1 WHERE name = 'generation'")
            .expect("prepare bump");
        let mut chunk = tx
            .prepare_cached(
                "INSERT OR REPLACE INTO chunks (source, id, position, generation, text, meta)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )
            .expect("prepare chunk");
        let mut drop_vector = tx
            .prepare_cached("DELETE FROM chunk_vectors WHERE rowid = ?1")
            .expect("prepare vector delete");
        let mut vector = tx
            .prepare_cached("INSERT INTO chunk_vectors (rowid, embedding) VALUES (?1, ?2)")
            .expect("prepare vector");
        let mut surplus = tx
            .prepare_cached("DELETE FROM chunks WHERE source = ?1 AND id = ?2 AND position >= ?3")
            .expect("prepare surplus");
        let mut old_count = tx
            .prepare_cached("SELECT chunk_count FROM documents WHERE source = ?1 AND id = ?2")
            .expect("prepare old count");
        for doc in docs {
            let mut hasher = blake3::Hasher::new();
            for c in &doc.chunks {
                hasher.update(c.text.as_bytes());
            }
            let hash = hasher.finalize();
            // vec0 deletes by rowid only (a range constraint scans the table), so read the
            // old chunk count first and delete exactly the vectors being replaced.
            let old: i64 = old_count
                .query_row(params![doc.source, doc.id], |row| row.get(0))
                .unwrap_or(0);
            let written: Option<(i64, i64)> = upsert
                .query_row(
                    params![
                        doc.source,
                        doc.id,
                        doc.version.value as i64,
                        doc.chunks.len() as i64,
                        hash.as_bytes().as_slice()
                    ],
                    |row| Ok((row.get(0)?, row.get(1)?)),
                )
                .ok();
            let Some((doc_rowid, generation)) = written else {
                continue;
            };
            bump.execute([]).expect("bump");
            let base = doc_rowid * POSITIONS;
            for (position, c) in doc.chunks.iter().enumerate() {
                chunk
                    .execute(params![
                        doc.source,
                        doc.id,
                        position as i64,
                        generation,
                        c.text,
                        "null"
                    ])
                    .expect("chunk");
                let values = c.vector.as_deref().unwrap_or(&[]);
                let bytes: Vec<u8> = values.iter().flat_map(|x| x.to_le_bytes()).collect();
                let rowid = base + position as i64;
                if (position as i64) < old {
                    drop_vector.execute([rowid]).expect("vector delete");
                }
                vector.execute(params![rowid, bytes]).expect("vector");
            }
            let n = doc.chunks.len() as i64;
            surplus
                .execute(params![doc.source, doc.id, n])
                .expect("surplus");
            for position in n..old {
                drop_vector
                    .execute([base + position])
                    .expect("surplus vector");
            }
        }
    }
    tx.commit().expect("commit");
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

    let mut sqlite = Rotation::new(dir, "sqlite", sqlite_open);
    group.bench_function("sqlite_batch_256", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let docs = fresh(BATCH);
                let conn = sqlite.room_for(BATCH);
                let start = Instant::now();
                sqlite_write(conn, &docs);
                total += start.elapsed();
            }
            total
        })
    });
    sqlite.close();

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
