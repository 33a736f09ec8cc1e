//! The search's inner kernels beside the ones they replaced, side by side in one process
//! (issue 17), so the ratio holds on a loaded machine:
//!
//! - `exact_scan/<set>`: the exact scan's distances over every row of a data set (the
//!   MiniLM 384-d, random 100k x 384-d and GloVe 50-d sets when `benches/data/fetch.sh`
//!   has fetched them, else a seeded random 40,000 x 384 and 100,000 x 50), one thread,
//!   into a top-10: one row at a
//!   time through `distance` (`one_by_one`, the scan before) against `scan_block`, the
//!   instruction set picked once per scan (`block`);
//! - `exact_search/<set>`: the whole exact search of a `Store` without the store (scan,
//!   top-10 with ids, split over every core above 32,768 rows), for the ratio to NumPy's
//!   `base @ q` then `argpartition` on the same set (`benches/peers/peers.py`'s exact scan);
//! - `code_distance/<set>` and `code_distance/<set>/l2` (sets of at least 128 dimensions):
//!   the graph traversal's cosine (or L2) estimates over every row's 4-bit code into a
//!   top-10, through the `f32` weights' kernel (`f32_weights`, before) and the integer
//!   weights' (`integer_weights`, now);
//! - `chunk_decode/<n>_chunks`: a search hit's text from an encoded chunks row of `n`
//!   chunks of ~500 bytes: the whole row decoded (`whole_row`, before) against only the
//!   hit's chunk (`one_chunk`), the position varying over the row.
//!
//! `cargo bench --bench search_kernels`.

mod common;
#[allow(dead_code)]
mod search_real;

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, BenchmarkId, Criterion};
use ratchetdb::testkit::{
    chunk_text_one_chunk, chunk_text_whole_row, encode_chunks_row, scan_rows_block,
    scan_rows_one_by_one, CodedRows, ExactScan, SplitMix64,
};
use ratchetdb::Metric;
use std::hint::black_box;
use std::time::Duration;

/// Keeps the 10 smallest distances (as the scan's top-k does, without the ids' tie-break).
struct Top10(Vec<(f32, usize)>);

impl Top10 {
    fn push(&mut self, row: usize, d: f32) {
        if self.0.len() < 10 {
            self.0.push((d, row));
            self.0.sort_by(|a, b| a.0.total_cmp(&b.0));
        } else if d < self.0[9].0 {
            self.0[9] = (d, row);
            self.0.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
    }
}

/// (name, dimension, rows, queries) of the scan sets.
fn scan_sets() -> Vec<(String, usize, Vec<f32>, Vec<f32>)> {
    let mut out = Vec::new();
    for (name, dim, n) in [
        ("minilm", 384, 40_000),
        ("random384", 384, 100_000),
        ("glove-100k", 50, 100_000),
    ] {
        match search_real::Set::load(name, true) {
            Ok(set) => out.push((name.to_string(), set.dim, set.base, set.queries)),
            // One seeded stand-in per dimension is enough.
            Err(why) if name == "random384" => println!("# {name}: {why}; skipped"),
            Err(why) => {
                println!("# {name}: {why}; a seeded random {n} x {dim} instead");
                let mut rng = SplitMix64::new(17);
                let mut unit = |len: usize| -> Vec<f32> {
                    let mut v: Vec<f32> = (0..len)
                        .map(|_| (rng.below(2000) as f32 / 1000.0) - 1.0)
                        .collect();
                    for row in v.chunks_mut(dim) {
                        let norm = row.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
                        row.iter_mut().for_each(|x| *x /= norm);
                    }
                    v
                };
                out.push((format!("random-{dim}"), dim, unit(n * dim), unit(100 * dim)));
            }
        }
    }
    out
}

/// Times `scan` (every row of a set into a top-10) as `id` in `group`, the queries taken in
/// turn.
fn bench_top10(
    group: &mut BenchmarkGroup<'_, WallTime>,
    id: &str,
    queries: &[f32],
    dim: usize,
    mut scan: impl FnMut(&[f32], &mut Top10),
) {
    let count = queries.len() / dim;
    let mut i = 0;
    group.bench_function(BenchmarkId::from_parameter(id), |b| {
        b.iter(|| {
            i += 1;
            let query = &queries[(i % count) * dim..(i % count + 1) * dim];
            let mut top = Top10(Vec::with_capacity(11));
            scan(query, &mut top);
            black_box(top.0)
        })
    });
}

fn main() {
    let mut c = Criterion::default()
        .configure_from_args()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .sample_size(20);

    for (name, dim, rows, queries) in scan_sets() {
        let mut g = c.benchmark_group(format!("exact_scan/{name}"));
        bench_top10(&mut g, "one_by_one", &queries, dim, |query, top| {
            scan_rows_one_by_one(Metric::Cosine, query, &rows, |r, d| top.push(r, d))
        });
        bench_top10(&mut g, "block", &queries, dim, |query, top| {
            scan_rows_block(Metric::Cosine, query, &rows, |r, d| top.push(r, d))
        });
        // `block` on two threads, each over half the rows (as `ExactStore::search` splits
        // a scan above 32,768 rows: a thread spawned per half, the halves' top-10s merged).
        bench_top10(&mut g, "block_2_threads", &queries, dim, |query, top| {
            let half = rows.len() / dim / 2 * dim;
            let (a, b) = rows.split_at(half);
            let tops = std::thread::scope(|s| {
                let ha = s.spawn(|| {
                    let mut top = Top10(Vec::with_capacity(11));
                    scan_rows_block(Metric::Cosine, query, a, |r, d| top.push(r, d));
                    top
                });
                let hb = s.spawn(|| {
                    let mut top = Top10(Vec::with_capacity(11));
                    scan_rows_block(Metric::Cosine, query, b, |r, d| top.push(r, d));
                    top
                });
                (ha.join().expect("a"), hb.join().expect("b"))
            });
            for (d, r) in tops.0 .0.into_iter().chain(tops.1 .0) {
                top.push(r, d);
            }
        });
        g.finish();
        // The traversal's code estimates (sets of at least 128 dimensions, which the graph
        // codes), every row's in turn into a top-10: the `f32` kernel before, the integer
        // one now.
        for (metric, suffix) in [(Metric::Cosine, ""), (Metric::L2, "/l2")] {
            let Some(coded) = (dim >= 128)
                .then(|| CodedRows::new(dim, &rows, metric))
                .flatten()
            else {
                continue;
            };
            let mut g = c.benchmark_group(format!("code_distance/{name}{suffix}"));
            bench_top10(&mut g, "f32_weights", &queries, dim, |query, top| {
                coded.scan_f32(query, |r, d| top.push(r, d))
            });
            bench_top10(&mut g, "integer_weights", &queries, dim, |query, top| {
                coded.scan_integer(query, |r, d| top.push(r, d))
            });
            g.finish();
        }
        // The whole exact search as a `Store` runs it (scan, top-10 with ids, on both
        // cores above 32,768 rows), for the ratio to NumPy's `base @ q` + argpartition.
        let scan = ExactScan::new(dim, &rows).expect("index");
        let mut g = c.benchmark_group(format!("exact_search/{name}"));
        let count = queries.len() / dim;
        let mut i = 0;
        g.bench_function(BenchmarkId::from_parameter("top10"), |b| {
            b.iter(|| {
                i += 1;
                let query = &queries[(i % count) * dim..(i % count + 1) * dim];
                black_box(scan.search(query, 10).expect("search"))
            })
        });
        g.finish();
    }

    for n in [1usize, 16] {
        let texts: Vec<String> = (0..n)
            .map(|p| format!("document chunk {p}: ").repeat(25))
            .collect();
        let bytes = encode_chunks_row(3, &texts, r#"{"chunk":1,"lang":"en"}"#);
        let mut g = c.benchmark_group(format!("chunk_decode/{n}_chunks"));
        for (decode, one) in [("whole_row", false), ("one_chunk", true)] {
            let mut i = 0;
            g.bench_function(BenchmarkId::from_parameter(decode), |b| {
                b.iter(|| {
                    i += 1;
                    let position = i % n;
                    let text = if one {
                        chunk_text_one_chunk(&bytes, position)
                    } else {
                        chunk_text_whole_row(&bytes, position)
                    };
                    black_box(text)
                })
            });
        }
        g.finish();
    }
    c.final_summary();
}
