//! Text query latency on 100,000 chunks: `Store::search_text` (BM25 over the text tables of a
//! snapshot, resolving each hit's text and metadata), k = 10. SQLite FTS5's `bm25()` on the
//! same chunks and queries is in `benches/compare/`
//! (`cargo bench -p ratchetdb-bench-compare --bench text_search_fts5`).
//!
//! The chunks are `common::prose` (about 1 KB each, a skewed 20,000-word vocabulary), 8 to a
//! document. Queries mix common and rare words: two and three words, 16 of each; one
//! iteration runs all 32. `RATCHET_TEXT_BENCH_CHUNKS` shrinks the corpus for a quick run.

mod common;

use criterion::{criterion_group, criterion_main, Criterion};
use ratchetdb::{Durability, Op, Options, SearchOptions, Store};
use std::hint::black_box;

const K: usize = 10;

fn text_search(c: &mut Criterion) {
    let n = common::text_bench_chunks();
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(
        dir.path().join("text.redb"),
        Options::default().durability(Durability::None),
    )
    .expect("open");
    for batch in common::text_corpus(n) {
        let ops = batch.into_iter().map(Op::Upsert).collect();
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
