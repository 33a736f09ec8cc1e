//! What a checksum kept per vectors row would cost, against what it would add to redb's own
//! page checksums (issue 18: decide with numbers). One run, side by side:
//!
//! - `write/upsert_durable` and `write/upsert_no_fsync`: one `Store::upsert` of a new
//!   document of 8 chunks (about 1 KB of text and a 384-d vector each), durable and with
//!   `Durability::None`: what a write costs today.
//! - `write/blake3_vectors_row`: blake3 over one such document's vectors row (8 + 8 × (4 +
//!   1,536) = 12,328 bytes): what a per-row checksum adds to every write, and to every
//!   vectors-row read that checks it (a search resolving its candidates, an export).
//! - `verify/rows_1024`: `Store::verify` over a store of 1,024 such documents, and
//!   `verify/blake3_1024_rows`: hashing 1,024 vectors rows (what checking a per-row checksum
//!   would add to it).
//! - `verify/deep_open_1024`: opening the same store with redb's integrity check
//!   (`check_integrity_on_open`, what `ratchet verify --deep` does): every page checksum,
//!   vectors rows included, verified.
//!
//! `cargo bench --bench vectors_checksum`; a summary with the ratios is printed at the end.

mod common;

use common::{document, or_nan, Estimates, CHUNKS_PER_DOC, DIMENSION, NAN_NOTE};
use criterion::{criterion_group, Criterion};
use ratchetdb::{Durability, Options, Store};
use std::hint::black_box;
use std::time::Duration;

const STORE_DOCS: u64 = 1_024;

/// Bytes of one vectors row of a bench document (count, dimension, slots, floats).
fn vectors_row(seed: u64) -> Vec<u8> {
    let mut row = Vec::with_capacity(8 + CHUNKS_PER_DOC * (4 + DIMENSION * 4));
    row.extend_from_slice(&(CHUNKS_PER_DOC as u32).to_le_bytes());
    row.extend_from_slice(&(DIMENSION as u32).to_le_bytes());
    for slot in 0..CHUNKS_PER_DOC as u32 {
        row.extend_from_slice(&slot.to_le_bytes());
    }
    for c in 0..CHUNKS_PER_DOC as u64 {
        for x in common::vector(seed ^ c) {
            row.extend_from_slice(&x.to_le_bytes());
        }
    }
    row
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut medians = Vec::new();

    let mut group = c.benchmark_group("vectors_checksum_write");
    group
        .sample_size(30)
        .measurement_time(Duration::from_secs(5));
    for (name, durability) in [
        ("upsert_durable", Durability::Immediate),
        ("upsert_no_fsync", Durability::None),
    ] {
        let store = Store::open(
            dir.path().join(format!("{name}.redb")),
            Options::default().durability(durability),
        )
        .expect("open");
        let mut next = 0u64;
        let estimates = Estimates::before_run("vectors_checksum_write", name);
        group.bench_function(name, |b| {
            b.iter(|| {
                next += 1;
                store.upsert(document(next, 1)).expect("upsert")
            })
        });
        medians.push((name, or_nan(estimates.median())));
    }
    let row = vectors_row(7);
    assert_eq!(row.len(), 12_328);
    let estimates = Estimates::before_run("vectors_checksum_write", "blake3_vectors_row");
    group.bench_function("blake3_vectors_row", |b| {
        b.iter(|| blake3::hash(black_box(&row)))
    });
    medians.push(("blake3_vectors_row", or_nan(estimates.median())));
    group.finish();

    // A store of STORE_DOCS documents, closed cleanly.
    let path = dir.path().join("verify.redb");
    {
        let store =
            Store::open(&path, Options::default().durability(Durability::None)).expect("open");
        for start in (0..STORE_DOCS).step_by(256) {
            let ops = (start..start + 256)
                .map(|d| ratchetdb::Op::Upsert(document(d, 1)))
                .collect();
            store.write_batch(ops).expect("write");
        }
        store.sync().expect("sync");
        // 8,192 vectors: below the exact threshold, so no graph is built.
        store.wait_for_index(Duration::from_secs(60));
    }
    let rows: Vec<Vec<u8>> = (0..STORE_DOCS).map(vectors_row).collect();
    let mut group = c.benchmark_group("vectors_checksum_verify");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(6));
    {
        let store = Store::open(&path, Options::default()).expect("open");
        let estimates = Estimates::before_run("vectors_checksum_verify", "rows_1024");
        group.bench_function("rows_1024", |b| {
            b.iter(|| {
                let report = store.verify().expect("verify");
                assert!(report.is_ok());
            })
        });
        medians.push(("rows_1024", or_nan(estimates.median())));
    }
    let estimates = Estimates::before_run("vectors_checksum_verify", "blake3_1024_rows");
    group.bench_function("blake3_1024_rows", |b| {
        b.iter(|| {
            for row in &rows {
                black_box(blake3::hash(row));
            }
        })
    });
    medians.push(("blake3_1024_rows", or_nan(estimates.median())));
    let estimates = Estimates::before_run("vectors_checksum_verify", "deep_open_1024");
    group.bench_function("deep_open_1024", |b| {
        b.iter(|| {
            Store::open(&path, Options::default().check_integrity_on_open(true)).expect("deep open")
        })
    });
    medians.push(("deep_open_1024", or_nan(estimates.median())));
    group.finish();

    let median = |name: &str| {
        medians
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(f64::NAN, |(_, m)| *m)
    };
    println!("\nvectors_checksum summary (medians of this run):");
    for (name, m) in &medians {
        println!("  {name:<22} {:>12.1} µs", m * 1e6);
    }
    println!(
        "  blake3 per row / durable upsert:    {:.4}",
        median("blake3_vectors_row") / median("upsert_durable")
    );
    println!(
        "  blake3 per row / upsert, no fsync:  {:.4}",
        median("blake3_vectors_row") / median("upsert_no_fsync")
    );
    println!(
        "  blake3 of 1024 rows / verify:       {:.4}",
        median("blake3_1024_rows") / median("rows_1024")
    );
    println!(
        "  deep open / verify:                 {:.4}",
        median("deep_open_1024") / median("rows_1024")
    );
    println!("{NAN_NOTE}");
}

criterion_group!(benches, bench);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
}
