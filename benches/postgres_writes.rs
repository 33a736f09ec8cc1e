//! Guarded documents per second on PostgreSQL (`Store::open` on a `postgres://` URL, the `postgres` feature) with 1, 4
//! and 16 concurrent writers, each on its own connection. Run by hand against a server:
//! `RATCHETDB_PG_URL=... cargo bench --features postgres --bench postgres_writes`
//! (`scripts/postgres.sh start` prints the URL); without it the bench says so and measures
//! nothing.
//!
//! Documents of 8 chunks with 384-d vectors, every revision newer than the stored one (so
//! every write replaces 8 chunks and their vectors), one document per transaction
//! (`Store::upsert`, the seed's recipe's granularity), into a store whose HNSW index is
//! present. 64 documents per timed round, split over the writers; each writer revises its own
//! documents, so writers never wait on each other's document locks.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ratchetdb::testkit::{self, SplitMix64};
use ratchetdb::{Chunk, Document, Options, Store, Version};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

const ROUND: u64 = 64;
const DIMENSION: usize = 384;
const SCHEMA: &str = "bench_postgres_writes";

fn document(writer: u64, doc: u64, version: u64, rng: &mut SplitMix64) -> Document {
    let mut d = Document::new(
        format!("w{writer}"),
        format!("doc{doc}"),
        Version::number(version),
    );
    for position in 0..8 {
        let vector: Vec<f32> = (0..DIMENSION)
            .map(|_| (rng.below(2000) as f32 - 1000.0) / 1000.0)
            .collect();
        d = d.with_chunk(Chunk::new(
            format!(
                "writer {writer} document {doc} revision {version} chunk {position}: {}",
                "text ".repeat(20)
            ),
            vector,
        ));
    }
    d
}

fn bench(c: &mut Criterion) {
    let Ok(url) = std::env::var("RATCHETDB_PG_URL") else {
        eprintln!("postgres_writes: RATCHETDB_PG_URL is not set; nothing measured");
        return;
    };
    testkit::pg_execute(&url, &format!("DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")).expect("drop");
    let options = Options::default().dimension(DIMENSION);
    let separator = if url.contains('?') { '&' } else { '?' };
    let address = format!("{url}{separator}schema={SCHEMA}");
    let stores: Vec<Store> = (0..16)
        .map(|_| Store::open(&address, options.clone()).expect("open"))
        .collect();
    let version = AtomicU64::new(1);
    let mut group = c.benchmark_group("postgres_guarded_writes");
    group.throughput(Throughput::Elements(ROUND));
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    for writers in [1u64, 4, 16] {
        group.bench_with_input(
            BenchmarkId::from_parameter(writers),
            &writers,
            |b, &writers| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        let v = version.fetch_add(1, Ordering::SeqCst);
                        let start = Instant::now();
                        std::thread::scope(|scope| {
                            for w in 0..writers {
                                let store = &stores[w as usize];
                                scope.spawn(move || {
                                    let mut rng = SplitMix64::new(v * 100 + w);
                                    for doc in 0..ROUND / writers {
                                        store
                                            .upsert(document(w, doc, v, &mut rng))
                                            .expect("upsert");
                                    }
                                });
                            }
                        });
                        total += start.elapsed();
                    }
                    total
                })
            },
        );
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
