//! Shared by the tests of the changelog a closing store trims
//! (`closing_a_store_trims_its_changelog.rs`,
//! `a_closing_store_keeps_16_kib_of_a_bulk_load_s_changelog.rs`): their documents, a read of
//! the `changelog` table with raw redb, and a reader's exact search for a document.

use ratchetdb::{Chunk, Document, SearchOptions, Store, Version};
use redb::{ReadableDatabase, ReadableTable, TableDefinition};
use std::path::Path;

const CHANGELOG: TableDefinition<u64, &[u8]> = TableDefinition::new("changelog");
const DIM: usize = 8;

/// Document `n`'s vector: splitmix64 of `n` and the dimension, so no two documents share a
/// direction.
pub fn vector(n: u64) -> Vec<f32> {
    (0..DIM as u64)
        .map(|d| {
            let mut z = (n * DIM as u64 + d).wrapping_add(0x9E37_79B9_7F4A_7C15);
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            ((z ^ (z >> 31)) >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        })
        .collect()
}

/// Document `d{n}` of source `s` at version 1: one chunk.
pub fn doc(n: u64) -> Document {
    Document::new("s", format!("d{n}"), Version::number(1))
        .with_chunk(Chunk::new(format!("chunk of d{n}"), vector(n)))
}

/// Each changelog row's key and length, read from the closed file at `path`.
pub fn changelog_rows(path: &Path) -> Vec<(u64, usize)> {
    let db = redb::Database::open(path).expect("redb open");
    let txn = db.begin_read().expect("read");
    let table = txn.open_table(CHANGELOG).expect("changelog");
    table
        .iter()
        .expect("iter")
        .map(|row| {
            let (key, value) = row.expect("row");
            (key.value(), value.value().len())
        })
        .collect()
}

/// Whether `store`'s best exact hit for document `n`'s vector is `n`'s chunk.
pub fn finds(store: &Store, n: u64) -> bool {
    store
        .search(&vector(n), 1, &SearchOptions::default().exact(true))
        .expect("search")
        .first()
        .is_some_and(|hit| hit.id == format!("d{n}"))
}

/// Writes documents `d1` on in `batches` batches of `per_batch` (`d0` is the caller's);
/// returns the last document's number.
pub fn write_in_batches(writer: &Store, batches: u64, per_batch: u64) -> u64 {
    for batch in 0..batches {
        let ops = (1..=per_batch)
            .map(|i| ratchetdb::Op::Upsert(doc(batch * per_batch + i)))
            .collect();
        for outcome in writer.write_batch(ops).expect("batch") {
            outcome.expect("upsert");
        }
    }
    batches * per_batch
}

/// Whether `store` finds the first document, the second, one halfway and the `last`.
pub fn finds_probes(store: &Store, last: u64) -> bool {
    [0, 1, last / 2, last].into_iter().all(|n| finds(store, n))
}

/// The store at `path`, reopened for writing, finds every probe, counts `last + 1`
/// documents and verifies clean.
pub fn assert_reopened_whole(path: &Path, last: u64) {
    let store = Store::open(path, ratchetdb::Options::default()).expect("reopen");
    assert!(
        finds_probes(&store, last),
        "the reopened store lost a document"
    );
    assert_eq!(store.stats().expect("stats").documents, last + 1);
    let report = store.verify().expect("verify");
    assert!(report.violations.is_empty(), "{report:?}");
}

/// Waits (up to 60 s) until `reader`'s own index holds `live` vectors, whether it followed
/// the commits as they came or reloaded from the vectors rows where the changelog it
/// needed was trimmed (a search meanwhile scans the file, so finding the documents alone
/// does not show that the index caught up).
pub fn assert_reader_index_holds(reader: &Store, live: u64) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let info = reader.index_info();
        if info.live_vectors == live {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the reader's index holds {} vectors, {live} are live: {info:?}",
            info.live_vectors
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
