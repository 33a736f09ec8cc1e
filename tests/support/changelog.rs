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
