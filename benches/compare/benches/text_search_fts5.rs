//! Text query latency on 100,000 chunks: `Store::search_text` (BM25 over the text tables of a
//! snapshot, resolving each hit's text and metadata) beside SQLite FTS5's `bm25()` over the
//! same chunks, in one run, on the same queries (k = 10, terms OR-ed as BM25 scores them).
//!
//! The chunks are `common::prose` (about 1 KB each, a skewed 20,000-word vocabulary), 8 to a
//! document. Queries mix common and rare words: two and three words, 16 of each; one
//! iteration runs all 32. FTS5 fetches the text column too, as a search returns text.
//! `RATCHET_TEXT_BENCH_CHUNKS` shrinks the corpus for a quick run. (The root crate's
//! `benches/text_search.rs` measures ratchetdb alone.)

#[path = "../../common/mod.rs"]
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
    let sqlite = rusqlite::Connection::open(dir.path().join("fts.sqlite")).expect("sqlite");
    sqlite
        .execute_batch(
            "PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF;
             CREATE VIRTUAL TABLE chunks USING fts5(text);",
        )
        .expect("fts5");
    for batch in common::text_corpus(n) {
        let tx = sqlite.unchecked_transaction().expect("tx");
        for chunk in batch.iter().flat_map(|d| &d.chunks) {
            tx.execute("INSERT INTO chunks(text) VALUES (?1)", [&chunk.text])
                .expect("insert");
        }
        tx.commit().expect("commit");
        let ops = batch.into_iter().map(Op::Upsert).collect();
        for outcome in store.write_batch(ops).expect("batch") {
            outcome.expect("op");
        }
    }
    let queries = common::text_queries();
    let texts: Vec<String> = queries.iter().map(|q| q.join(" ")).collect();
    let fts: Vec<String> = queries.iter().map(|q| q.join(" OR ")).collect();
    let options = SearchOptions::default();
    let mut statement = sqlite
        .prepare("SELECT text, bm25(chunks) FROM chunks WHERE chunks MATCH ?1 ORDER BY bm25(chunks) LIMIT ?2")
        .expect("prepare");
    // The same top hit count both ways (a sanity check, not a ranking comparison).
    for (text, fts) in texts.iter().zip(&fts) {
        let ours = store.search_text(text, K, &options).expect("search").len();
        let theirs = statement
            .query_map(rusqlite::params![fts, K as i64], |row| {
                row.get::<_, String>(0)
            })
            .expect("query")
            .count();
        assert_eq!(ours, theirs, "{text}: hit counts differ");
    }
    let mut group = c.benchmark_group(format!("text_search_{n}"));
    group.sample_size(20);
    group.bench_function("ratchetdb_search_text", |b| {
        b.iter(|| {
            for text in &texts {
                black_box(store.search_text(text, K, &options).expect("search"));
            }
        })
    });
    group.bench_function("sqlite_fts5_bm25", |b| {
        b.iter(|| {
            for fts in &fts {
                let hits: Vec<(String, f64)> = statement
                    .query_map(rusqlite::params![fts, K as i64], |row| {
                        Ok((row.get(0)?, row.get(1)?))
                    })
                    .expect("query")
                    .map(|r| r.expect("row"))
                    .collect();
                black_box(hits);
            }
        })
    });
    group.finish();
}

criterion_group!(benches, text_search);
criterion_main!(benches);
