//! The Rust side of the Python binding's measurements (`benches/peers/python_overhead.py`
//! runs this bench and the same calls through `ratchetdb` for Python, in one run):
//!
//! - `search_rust`: `Store::search` (k 10, default ef, graph ready) over the store the
//!   Python script built (20,000 chunks), with its queries; the script times the same call
//!   through Python on the same file and reports the difference per call (the binding's
//!   overhead); `search_small_rust` the same on a store of one document of 100 chunks (an
//!   exact scan), where the binding's share is largest and least drowned in noise;
//! - `write_batch_100k_rust`: 100,000 chunks (1,000 documents of 100 chunks, 384-d) written
//!   with `write_batch`, 100 documents per transaction, into a fresh store; the script
//!   writes the same chunks from NumPy through `Store.write_batch`.
//!
//! Data comes from the directory in `RATCHETDB_PY_BENCH_DIR` (`store.redb`, `small.redb`, `queries.f32`,
//! `base.f32`: raw little-endian f32, 384 per row); without it, the bench makes random data
//! of the same shapes itself so that it runs on its own. Texts and metadata are the ones the
//! script writes: `doc {d} chunk {c}`, `{"chunk": c}`.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use ratchetdb::{Chunk, Document, Op, Options, SearchOptions, Store, Version};
use std::path::{Path, PathBuf};
use std::time::Duration;

const DIM: usize = 384;
const DOCS: usize = 1_000;
const CHUNKS: usize = 100;
const DOCS_PER_BATCH: usize = 100;
const SEARCH_DOCS: usize = 200;
const SMALL_DOCS: usize = 1;
const QUERIES: usize = 100;
const K: usize = 10;

fn read_f32(path: &Path) -> Vec<f32> {
    let bytes = std::fs::read(path).expect("read data file");
    bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

fn random(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = ratchetdb::testkit::SplitMix64::new(seed);
    (0..n)
        .map(|_| (rng.next_u64() >> 40) as f32 / (1u64 << 24) as f32 - 0.5)
        .collect()
}

fn doc(d: usize, vectors: &[f32]) -> Document {
    let mut doc = Document::new("bench", format!("doc{d}"), Version::number(1));
    for c in 0..CHUNKS {
        let row = &vectors[(d * CHUNKS + c) * DIM..(d * CHUNKS + c + 1) * DIM];
        doc = doc.with_chunk(
            Chunk::new(format!("doc {d} chunk {c}"), row.to_vec())
                .with_meta(serde_json::json!({ "chunk": c })),
        );
    }
    doc
}

struct Data {
    _dir: tempfile::TempDir,
    store: PathBuf,
    small: PathBuf,
    queries: Vec<f32>,
    base: Vec<f32>,
}

fn data() -> Data {
    let dir = tempfile::tempdir().expect("tempdir");
    match std::env::var_os("RATCHETDB_PY_BENCH_DIR") {
        Some(given) => {
            let given = PathBuf::from(given);
            Data {
                store: given.join("store.redb"),
                small: given.join("small.redb"),
                queries: read_f32(&given.join("queries.f32")),
                base: read_f32(&given.join("base.f32")),
                _dir: dir,
            }
        }
        None => {
            let base = random(DOCS * CHUNKS * DIM, 1);
            let write = |name: &str, docs: usize| {
                let path = dir.path().join(name);
                let store = Store::open(&path, Options::default()).expect("open");
                let ops = (0..docs).map(|d| Op::Upsert(doc(d, &base))).collect();
                store.write_batch(ops).expect("write");
                store.build_index().expect("build index");
                path
            };
            let (store, small) = (
                write("store.redb", SEARCH_DOCS),
                write("small.redb", SMALL_DOCS),
            );
            Data {
                store,
                small,
                queries: random(QUERIES * DIM, 2),
                base,
                _dir: dir,
            }
        }
    }
}

fn python_overhead(c: &mut Criterion) {
    let data = data();
    let queries: Vec<&[f32]> = data.queries.chunks_exact(DIM).collect();
    let options = SearchOptions::default();
    let mut group = c.benchmark_group("python_overhead");
    for (name, path) in [
        ("search_rust", &data.store),
        ("search_small_rust", &data.small),
    ] {
        let store = Store::open(path, Options::default()).expect("open the search store");
        assert!(
            store.wait_for_index(Duration::from_secs(600)),
            "index ready"
        );
        let mut i = 0;
        group.bench_function(name, |b| {
            b.iter(|| {
                i = (i + 1) % queries.len();
                store.search(queries[i], K, &options).expect("search")
            })
        });
    }

    group.sample_size(10);
    group.measurement_time(Duration::from_secs(60));
    let base = &data.base;
    group.bench_function("write_batch_100k_rust", |b| {
        b.iter_batched(
            || {
                let dir = tempfile::tempdir().expect("tempdir");
                let store =
                    Store::open(dir.path().join("bulk.redb"), Options::default()).expect("open");
                let batches: Vec<Vec<Op>> = (0..DOCS / DOCS_PER_BATCH)
                    .map(|batch| {
                        (batch * DOCS_PER_BATCH..(batch + 1) * DOCS_PER_BATCH)
                            .map(|d| Op::Upsert(doc(d, base)))
                            .collect()
                    })
                    .collect();
                (dir, store, batches)
            },
            |(dir, store, batches)| {
                for ops in batches {
                    store.write_batch(ops).expect("write_batch");
                }
                (dir, store)
            },
            BatchSize::PerIteration,
        )
    });
    group.finish();
}

criterion_group!(benches, python_overhead);
criterion_main!(benches);
