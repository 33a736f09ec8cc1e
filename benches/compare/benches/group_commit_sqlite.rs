//! Durable batches of 256 documents, ratchetdb beside SQLite, in one run: documents of 8
//! chunks (about 1 KB of text and a 384-d f32 vector each), all durable (ratchetdb
//! `Durability::Immediate`; SQLite WAL with `synchronous=FULL`). Every path writes into files
//! of its own, and starts a new, empty file (closing and deleting the last) before a file would
//! hold more than [`STORE_DOCS`] documents, outside the timed part, so both are measured on
//! stores of the same sizes (see the root crate's `benches/group_commit.rs`, which measures
//! ratchetdb's other write paths and the redb floor).
//!
//! - `ratchet_write_batch_256`: `Store::write_batch`, 256 documents per transaction from one
//!   thread.
//! - `sqlite_batch_256`: the same 256 documents per transaction; SQLite does the conditional
//!   upsert of the document row (`INSERT … ON CONFLICT DO UPDATE … WHERE excluded.version >
//!   version RETURNING`), the chunk replace and the surplus delete in one transaction, vectors
//!   in a sqlite-vec `vec0` virtual table (rowid = document rowid × 100 000 + position).

#[path = "../../common/mod.rs"]
mod common;

use common::rotation::{Rotation, STORE_DOCS};
use common::{fresh, timed_write_batches, DIMENSION};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ratchetdb::{Document, Options, Store};
use rusqlite::{params, Connection};
use std::path::Path;
use std::time::{Duration, Instant};

fn open_store(path: &Path) -> Store {
    Store::open(path.with_extension("redb"), Options::default()).expect("open")
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

fn group_commit_sqlite(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let dir = dir.path();
    println!(
        "chunks per document: {}; at most {STORE_DOCS} documents per file",
        common::CHUNKS_PER_DOC
    );

    let mut group = c.benchmark_group("durable_ingest");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    group.warm_up_time(Duration::from_secs(2));

    const BATCH: u64 = 256;
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
    group.finish();
}

criterion_group!(benches, group_commit_sqlite);
criterion_main!(benches);
