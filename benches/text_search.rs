//! Text query latency on 100,000 chunks: `Store::search_text` (BM25 over the text tables of a
//! snapshot, resolving each hit's text and metadata), k = 10. SQLite FTS5's `bm25()` on the
//! same chunks and queries is in `benches/compare/`
//! (`cargo bench -p ratchetdb-bench-compare --bench text_search_fts5`).
//!
//! The chunks are `common::prose` (about 1 KB each, a skewed 20,000-word vocabulary), 8 to a
//! document. Queries mix common and rare words: two and three words, 16 of each; one
//! iteration runs all 32. `RATCHET_TEXT_BENCH_CHUNKS` shrinks the corpus for a quick run.

mod common;

use common::{prose, CHUNKS_PER_DOC};
use criterion::{criterion_group, criterion_main, Criterion};
use ratchetdb::{Chunk, Document, Durability, Op, Options, SearchOptions, Store, Version};
use std::hint::black_box;

const K: usize = 10;

fn chunk_count() -> u64 {
    std::env::var("RATCHET_TEXT_BENCH_CHUNKS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000)
}

fn text_search(c: &mut Criterion) {
    let n = chunk_count();
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(
        dir.path().join("text.redb"),
        Options::default().durability(Durability::None),
    )
    .expect("open");
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
                let text = prose((doc * 1_000_003) ^ c);
                d = d.with_chunk(Chunk::new(text, vec![1.0, c as f32]));
                written += 1;
            }
            ops.push(Op::Upsert(d));
        }
        for outcome in store.write_batch(ops).expect("batch") {
            outcome.expect("op");
        }
    }
    let queries = common::text_queries();
    let texts: Vec<String> = queries.iter().map(|q| q.join(" ")).collect();
    let options = SearchOptions::default();
    let mut group = c.benchmark_group(format!("text_search_{n}"));
    group.sample_size(20);
    group.bench_function("ratchetdb_search_text", |b| {
        b.iter(|| {
            for text in &texts {
                black_box(store.search_text(text, K, &options).expect("search"));
            }
        })
    });
    group.finish();
}

criterion_group!(benches, text_search);
criterion_main!(benches);
