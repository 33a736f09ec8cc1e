//! What one guarded upsert costs on each path of the guard: an accepted write, a stale skip,
//! a duplicate skip and an unchanged-content version bump. Documents of 8 chunks (about 1 KB
//! of text and a 384-d vector each).
//!
//! The `text_index` group sets an accepted write and a stale skip with the full-text index
//! (the default) beside the same on a store opened with `Options::text_index(false)`, in one
//! run, on the bench's documents (24 distinct words) and on prose-like ones (about 90
//! distinct terms a chunk, `common::prose`), without fsync, and for prose durable too.
//!
//! Durability::None isolates the engine's own work from the disk's fsync; the `durable`
//! group repeats the accepted write and the stale skip with Durability::Immediate, where
//! one fsync per commit dominates.

mod common;

use common::{document, prose_document};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use ratchetdb::{Durability, Options, Outcome, SkipReason, Store, Version};
use std::cell::Cell;

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

/// Accepted writes and stale skips with and without the text index, side by side.
fn text_index(c: &mut Criterion) {
    let mut group = c.benchmark_group("text_index");
    group.sample_size(30);
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
        for text in [true, false] {
            let dir = tempfile::tempdir().expect("tempdir");
            let store = Store::open(
                dir.path().join("bench.redb"),
                Options::default().durability(durability).text_index(text),
            )
            .expect("open");
            for doc in 0..200 {
                store.upsert(make(doc, 1)).expect("preload");
            }
            let name = if text { "with_text" } else { "without_text" };
            let version = Cell::new(10u64);
            group.bench_function(format!("accepted_write/{words}/{name}"), |b| {
                b.iter_batched(
                    || {
                        version.set(version.get() + 1);
                        make(7, version.get())
                    },
                    |doc| {
                        let outcome = store.upsert(doc).expect("upsert");
                        debug_assert!(matches!(outcome, Outcome::Written { .. }));
                    },
                    BatchSize::SmallInput,
                )
            });
            store.upsert(make(8, 1_000_000)).expect("newer");
            group.bench_function(format!("stale_skip/{words}/{name}"), |b| {
                b.iter_batched(
                    || make(8, 3),
                    |doc| {
                        let outcome = store.upsert(doc).expect("upsert");
                        debug_assert_eq!(outcome.skip_reason(), Some(SkipReason::Older));
                    },
                    BatchSize::SmallInput,
                )
            });
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
