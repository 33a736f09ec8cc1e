//! Text query latency on PostgreSQL beside the embedded store, on the same chunks and
//! queries, in one run: `Store::search_text` (k = 10) through `Store::open("postgres://...")`
//! (the server's `chunk_terms`/`chunk_lengths` rows read in one snapshot, BM25 in the
//! client) and on a redb file (the in-memory inverted index). One iteration runs 32 queries
//! of two or three words drawn like `text_search`'s (skewed: some are common). The chunks are
//! `common::prose` (about 1 KB each), 8 to a document; `RATCHET_PG_TEXT_BENCH_CHUNKS` sets
//! how many (default 16,000). By hand, against a server:
//!
//! `RATCHETDB_PG_URL=... cargo bench --features postgres --bench postgres_text_search`
//!
//! Without the URL it says so and measures nothing. `RATCHET_PG_TEXT_BENCH_KEEP=1` keeps the
//! server's schema afterwards (to look at the plans).

mod common;

use common::{prose, CHUNKS_PER_DOC};
use criterion::{criterion_group, criterion_main, Criterion};
use ratchetdb::{testkit, Chunk, Document, Durability, Op, Options, SearchOptions, Store, Version};
use std::hint::black_box;

const K: usize = 10;
const SCHEMA: &str = "bench_postgres_text_search";

fn chunk_count() -> u64 {
    std::env::var("RATCHET_PG_TEXT_BENCH_CHUNKS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(16_000)
}

fn postgres_text_search(c: &mut Criterion) {
    let Ok(url) = std::env::var("RATCHETDB_PG_URL") else {
        eprintln!("postgres_text_search: RATCHETDB_PG_URL is not set; nothing measured");
        return;
    };
    let n = chunk_count();
    testkit::pg_execute(&url, &format!("DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")).expect("drop");
    let separator = if url.contains('?') { '&' } else { '?' };
    let server = Store::open(
        format!("{url}{separator}schema={SCHEMA}"),
        Options::default(),
    )
    .expect("open the server's store");
    let dir = tempfile::tempdir().expect("tempdir");
    let file = Store::open(
        dir.path().join("text.redb"),
        Options::default().durability(Durability::None),
    )
    .expect("open the file");
    let docs = n.div_ceil(CHUNKS_PER_DOC as u64);
    let mut written = 0u64;
    for batch in 0..docs.div_ceil(64) {
        let mut ops = Vec::new();
        for doc in batch * 64..((batch + 1) * 64).min(docs) {
            let mut d = Document::new("bench", format!("doc-{doc}"), Version::number(1));
            for c in 0..CHUNKS_PER_DOC as u64 {
                if written == n {
                    break;
                }
                d = d.with_chunk(Chunk::new(
                    prose((doc * 1_000_003) ^ c),
                    vec![1.0, c as f32],
                ));
                written += 1;
            }
            ops.push(Op::Upsert(d));
        }
        for store in [&file, &server] {
            for outcome in store.write_batch(ops.clone()).expect("batch") {
                outcome.expect("op");
            }
        }
    }
    let queries: Vec<String> = common::text_queries().iter().map(|q| q.join(" ")).collect();
    let options = SearchOptions::default();
    // Both stores rank alike (a sanity check: the same hits, scores within 1e-4).
    for text in &queries {
        let ours = file.search_text(text, K, &options).expect("file search");
        let theirs = server
            .search_text(text, K, &options)
            .expect("server search");
        assert_eq!(ours.len(), theirs.len(), "{text}: hit counts differ");
        for (a, b) in ours.iter().zip(&theirs) {
            assert!((a.score - b.score).abs() < 1e-4, "{text}: scores differ");
        }
    }
    let mut group = c.benchmark_group(format!("postgres_text_search_{n}"));
    group.sample_size(20);
    group.bench_function("embedded_search_text", |b| {
        b.iter(|| {
            for text in &queries {
                black_box(file.search_text(text, K, &options).expect("search"));
            }
        })
    });
    group.bench_function("postgres_search_text", |b| {
        b.iter(|| {
            for text in &queries {
                black_box(server.search_text(text, K, &options).expect("search"));
            }
        })
    });
    group.finish();
    drop(server);
    // `RATCHET_PG_TEXT_BENCH_KEEP=1` keeps the schema, to look at the queries' plans.
    if std::env::var_os("RATCHET_PG_TEXT_BENCH_KEEP").is_none() {
        testkit::pg_execute(&url, &format!("DROP SCHEMA IF EXISTS {SCHEMA} CASCADE"))
            .expect("drop");
    }
}

criterion_group!(benches, postgres_text_search);
criterion_main!(benches);
