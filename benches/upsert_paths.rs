//! What one guarded upsert costs on each path of the guard: an accepted write, a stale skip,
//! a duplicate skip and an unchanged-content version bump. Documents of 8 chunks (about 1 KB
//! of text and a 384-d vector each).
//!
//! The `text_index` group sets an accepted write and a stale skip with the full-text index
//! (the default) beside the same on a store opened with `Options::text_index(false)`,
//! interleaved operation by operation (the machine is shared: a load change must hit both
//! sides), on the bench's documents (24 distinct words) and on prose-like ones (about 90
//! distinct terms a chunk, `common::prose`), without fsync, and for prose durable too. It
//! prints each pair's medians and the median of the samples' ratios:
//! `cargo bench --bench upsert_paths -- text_index`.
//!
//! Durability::None isolates the engine's own work from the disk's fsync; the `durable`
//! group repeats the accepted write and the stale skip with Durability::Immediate, where
//! one fsync per commit dominates.

mod common;

use common::{document, prose_document};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use ratchetdb::{Durability, Options, Outcome, SkipReason, Store, Version};
use std::cell::{Cell, RefCell};
use std::time::{Duration, Instant};

fn open(durability: Durability) -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(
        dir.path().join("bench.redb"),
        Options::default().durability(durability),
    )
    .expect("open");
    // Some bulk so that lookups walk a real tree.
    for doc in 0..200 {
        store.upsert(document(doc, 1)).expect("preload");
    }
    (dir, store)
}

fn paths(c: &mut Criterion, durability: Durability, group_name: &str) {
    let (_dir, store) = open(durability);
    let mut group = c.benchmark_group(group_name);
    group.sample_size(if durability == Durability::None {
        50
    } else {
        20
    });

    // Accepted: a new version with new content each time (8 new chunks, 8 vectors replaced).
    let version = Cell::new(10u64);
    group.bench_function("accepted_write", |b| {
        b.iter_batched(
            || {
                version.set(version.get() + 1);
                document(7, version.get())
            },
            |doc| {
                let outcome = store.upsert(doc).expect("upsert");
                debug_assert!(matches!(outcome, Outcome::Written { .. }));
            },
            BatchSize::SmallInput,
        )
    });

    // Stale: an old revision with other content arrives after a newer one.
    store.upsert(document(8, 1_000_000)).expect("newer");
    group.bench_function("stale_skip", |b| {
        b.iter_batched(
            || document(8, 3),
            |doc| {
                let outcome = store.upsert(doc).expect("upsert");
                debug_assert_eq!(outcome.skip_reason(), Some(SkipReason::Older));
            },
            BatchSize::SmallInput,
        )
    });

    if durability == Durability::None {
        // Duplicate: the stored revision redelivered.
        store.upsert(document(9, 5)).expect("stored");
        group.bench_function("duplicate_skip", |b| {
            b.iter_batched(
                || document(9, 5),
                |doc| {
                    let outcome = store.upsert(doc).expect("upsert");
                    debug_assert_eq!(outcome.skip_reason(), Some(SkipReason::Duplicate));
                },
                BatchSize::SmallInput,
            )
        });

        // Unchanged: a newer version with identical content (a touch at the source).
        let base = document(10, 1);
        store.upsert(base.clone()).expect("stored");
        let bump = Cell::new(1u64);
        group.bench_function("unchanged_version_bump", |b| {
            b.iter_batched(
                || {
                    bump.set(bump.get() + 1);
                    let mut doc = base.clone();
                    doc.version = Version::number(bump.get());
                    doc
                },
                |doc| {
                    let outcome = store.upsert(doc).expect("upsert");
                    debug_assert!(matches!(outcome, Outcome::Unchanged { .. }));
                },
                BatchSize::SmallInput,
            )
        });
    }
    group.finish();
}

/// Two stores of `make`'s documents, with the text index and without, 200 preloaded each.
fn text_pair(
    make: fn(u64, u64) -> ratchetdb::Document,
    durability: Durability,
) -> (tempfile::TempDir, [Store; 2]) {
    let dir = tempfile::tempdir().expect("tempdir");
    let stores = [true, false].map(|text| {
        let name = if text { "with.redb" } else { "without.redb" };
        let store = Store::open(
            dir.path().join(name),
            Options::default().durability(durability).text_index(text),
        )
        .expect("open");
        for doc in 0..200 {
            store.upsert(make(doc, 1)).expect("preload");
        }
        store
    });
    (dir, stores)
}

/// The median of `values` (sorted in place).
fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

/// Accepted writes and stale skips with and without the text index, interleaved: each
/// iteration of a sample upserts one document into each store, the two in alternating
/// order, and times both. Criterion's samples time the store with the index; the store
/// without it is timed in the same samples, so a change of the machine's load hits both
/// sides of a pair. After each bench the paired figures of criterion's measured samples are
/// printed: each side's median per operation and the median of the samples' ratios.
fn text_index(c: &mut Criterion) {
    let mut group = c.benchmark_group("text_index");
    const SAMPLES: usize = 30;
    group.sample_size(SAMPLES);
    type Make = fn(u64, u64) -> ratchetdb::Document;
    for (words, make, durability) in [
        ("bench_words", document as Make, Durability::None),
        ("prose", prose_document as Make, Durability::None),
        (
            "prose_durable",
            prose_document as Make,
            Durability::Immediate,
        ),
    ] {
        let (_dir, stores) = text_pair(make, durability);
        stores.iter().for_each(|s| {
            s.upsert(make(8, 1_000_000)).expect("newer");
        });
        let version = Cell::new(10u64);
        for path in ["accepted_write", "stale_skip"] {
            // (with, without) time of each sample, per operation.
            let pairs: RefCell<Vec<(f64, f64)>> = RefCell::new(Vec::new());
            group.bench_function(format!("{path}/{words}/paired_with_text"), |b| {
                b.iter_custom(|iters| {
                    let mut spent = [Duration::ZERO; 2];
                    for i in 0..iters {
                        let doc = if path == "accepted_write" {
                            version.set(version.get() + 1);
                            make(7, version.get())
                        } else {
                            make(8, 3)
                        };
                        let order = if i % 2 == 0 { [0, 1] } else { [1, 0] };
                        for side in order {
                            let doc = doc.clone();
                            let start = Instant::now();
                            let outcome = stores[side].upsert(doc).expect("upsert");
                            spent[side] += start.elapsed();
                            debug_assert_eq!(
                                matches!(outcome, Outcome::Written { .. }),
                                path == "accepted_write"
                            );
                        }
                    }
                    let per = |d: Duration| d.as_secs_f64() / iters as f64;
                    pairs.borrow_mut().push((per(spent[0]), per(spent[1])));
                    spent[0]
                })
            });
            // Criterion's measured samples are the last SAMPLES (warm-up runs come first).
            let pairs = pairs.into_inner();
            if pairs.is_empty() {
                continue; // filtered out on the command line: nothing was measured
            }
            let measured = &pairs[pairs.len().saturating_sub(SAMPLES)..];
            let mut with: Vec<f64> = measured.iter().map(|p| p.0).collect();
            let mut without: Vec<f64> = measured.iter().map(|p| p.1).collect();
            let mut ratios: Vec<f64> = measured.iter().map(|p| p.0 / p.1).collect();
            println!(
                "paired {path}/{words}: with the text index {:.1} us, without {:.1} us \
                 (medians per operation of {} samples); median ratio {:.2}x",
                median(&mut with) * 1e6,
                median(&mut without) * 1e6,
                measured.len(),
                median(&mut ratios),
            );
        }
    }
    group.finish();
}

fn upsert_paths(c: &mut Criterion) {
    text_index(c);
    paths(c, Durability::None, "upsert_no_fsync");
    paths(c, Durability::Immediate, "upsert_durable");
}

criterion_group!(benches, upsert_paths);
criterion_main!(benches);
