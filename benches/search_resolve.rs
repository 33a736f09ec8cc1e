//! What resolving a search's hits against its snapshot costs (issue 17): the same 16,000
//! chunks (384-d, structured vectors from `tests/search_support`, about 500 bytes of text
//! and a small metadata object each) stored as one-chunk documents and as documents of 16
//! chunks, searched with `k` 10 at `ef` 10, so the graph's traversal is short and the
//! search's time is mostly the ten hits' resolution (their vectors row, document key,
//! document row and chunk, read from the snapshot). Measured side by side in one run:
//! `resolve/one_chunk_docs` and `resolve/sixteen_chunk_docs` (criterion medians), and
//! `resolve/one_chunk_docs_short_text`: one-chunk documents of about 150 bytes of text (a
//! sentence, as the MiniLM sets hold), whose chunks row rides whole in the vectors row's
//! share of its leaf (`schema/spill.rs`). Run it
//! on two builds (before and after a change to `search::resolve`) to compare.
//!
//! `cargo bench --bench search_resolve`.

mod common;

use common::search_support::Structured;
use criterion::Criterion;
use ratchetdb::{Chunk, Document, Durability, Op, Options, SearchOptions, Store, Version};
use std::time::Duration;

const DIM: usize = 384;
const N: usize = 16_000;
const QUERIES: usize = 200;
const K: usize = 10;
const EF: usize = 10;

/// Writes `vectors` as documents of `per_doc` chunks, each with `repeat` times ~25 bytes of
/// text.
fn ingest(store: &Store, vectors: &[Vec<f32>], per_doc: usize, repeat: usize) {
    let docs: Vec<&[Vec<f32>]> = vectors.chunks(per_doc).collect();
    for (b, batch) in docs.chunks(500).enumerate() {
        let ops = batch
            .iter()
            .enumerate()
            .map(|(j, chunks)| {
                let d = b * 500 + j;
                let mut doc = Document::new("bench", format!("d{d}"), Version::number(1));
                for (p, v) in chunks.iter().enumerate() {
                    let text = format!("document {d} chunk {p}: ").repeat(repeat);
                    doc = doc.with_chunk(
                        Chunk::new(text, v.clone())
                            .with_meta(serde_json::json!({"chunk": p, "lang": "en"})),
                    );
                }
                Op::Upsert(doc)
            })
            .collect();
        for result in store.write_batch(ops).expect("batch") {
            result.expect("write");
        }
    }
    store.sync().expect("sync");
}

fn main() {
    let mut c = Criterion::default()
        .configure_from_args()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .sample_size(30);
    let data = Structured::new(1, DIM);
    let vectors = data.vectors(2, N);
    let queries = data.vectors(3, QUERIES);
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, per_doc, repeat) in [
        ("one_chunk_docs", 1, 20),
        ("sixteen_chunk_docs", 16, 20),
        ("one_chunk_docs_short_text", 1, 6),
    ] {
        let store = Store::open(
            dir.path().join(format!("{name}.redb")),
            Options::default().durability(Durability::None),
        )
        .expect("open");
        ingest(&store, &vectors, per_doc, repeat);
        assert!(store.wait_for_index(Duration::from_secs(600)), "index");
        store.build_index().expect("build");
        let options = SearchOptions::default().ef(EF);
        let mut g = c.benchmark_group("resolve");
        let mut i = 0;
        g.bench_function(name, |b| {
            b.iter(|| {
                i += 1;
                let hits = store
                    .search(&queries[i % QUERIES], K, &options)
                    .expect("search");
                assert_eq!(hits.len(), K);
                hits
            })
        });
        g.finish();
        drop(store);
    }
    c.final_summary();
}
