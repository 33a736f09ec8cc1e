//! A coded vectors row (schema 8) damaged on disk where its coding is checked: its table
//! repeating a value, its dimension word's coded flag cleared, an escaped value one of the
//! table's, the row cut short. Opening the store, reading the document, exact search and
//! `verify` each give a typed corruption naming the vectors row (or, for `verify`, a
//! violation), never a panic; the other documents still read.

use crate::support;
use ratchetdb::{Chunk, Document, OpenError, Options, ReadError, SearchOptions, Store, Version};
use redb::ReadableTable;

const DIMENSION: usize = 384;
const VECTORS: redb::TableDefinition<u64, &[u8]> = redb::TableDefinition::new("doc_vectors");

fn document(d: u64) -> Document {
    Document::new("s", format!("d{d}"), Version::number(1)).with_chunk(Chunk::new(
        format!("chunk {d}"),
        support::minilm_like(d, DIMENSION),
    ))
}

/// The kinds of damage, each to a copy of a coded row (`count | dimension | slots | table
/// | blocks | escapes | spill`, `docs/design.md`).
fn damaged(row: &[u8], kind: usize) -> Vec<u8> {
    let mut row = row.to_vec();
    let count = u32::from_le_bytes([row[0], row[1], row[2], row[3]]) as usize;
    let table = 8 + 4 * count;
    let escapes = table + 3 + count * (DIMENSION * 3 + DIMENSION / 8 + DIMENSION / 4);
    match kind {
        0 => row[table + 1] = row[table],
        1 => row[7] &= 0x7f,
        2 => row[escapes] = row[table + 2],
        _ => row.truncate(escapes - 1),
    }
    row
}

#[test]
fn a_damaged_coded_vectors_row_is_corruption_not_a_panic() {
    let dir = tempfile::tempdir().expect("tempdir");
    let clean = dir.path().join("clean.redb");
    {
        let store = Store::open(&clean, Options::default()).expect("open");
        for d in 0..10 {
            store.upsert(document(d)).expect("upsert");
        }
    }
    assert_eq!(ratchetdb::testkit::vectors_row_layouts(&clean), Ok((0, 10)));
    for kind in 0..4 {
        let path = dir.path().join(format!("damaged-{kind}.redb"));
        std::fs::copy(&clean, &path).expect("copy");
        {
            let db = redb::Database::open(&path).expect("redb");
            let txn = db.begin_write().expect("begin_write");
            {
                let mut table = txn.open_table(VECTORS).expect("doc_vectors");
                let (key, row) = {
                    let (key, row) = table.first().expect("first").expect("a row");
                    (key.value(), row.value().to_vec())
                };
                table
                    .insert(key, damaged(&row, kind).as_slice())
                    .expect("insert");
            }
            txn.commit().expect("commit");
        }
        let opened = support::no_panic("open", || Store::open(&path, Options::default()));
        let store = match opened {
            Err(OpenError::Corrupted { detail, .. }) => {
                assert!(detail.contains("vector"), "{kind}: {detail}");
                continue;
            }
            Err(other) => panic!("{kind}: {other}"),
            Ok(store) => store,
        };
        // The damaged row is the first document's (the lowest internal id).
        let read = support::no_panic("get", || {
            store.snapshot().and_then(|s| s.get_with_vectors("s", "d0"))
        });
        assert!(
            matches!(read, Err(ReadError::Corrupted { .. })),
            "{kind}: {read:?}"
        );
        let search = support::no_panic("search", || {
            store.search(
                &support::minilm_like(99, DIMENSION),
                3,
                &SearchOptions::default().exact(true),
            )
        });
        assert!(
            matches!(search, Err(ReadError::Corrupted { .. })),
            "{kind}: {search:?}"
        );
        let report = support::no_panic("verify", || store.verify()).expect("verify");
        assert!(
            report
                .violations
                .iter()
                .any(|v| format!("{v:?}").contains("vectors row")),
            "{kind}: {:#?}",
            report.violations
        );
        let other = store.get("s", "d5").expect("another document");
        assert!(other.is_some(), "{kind}");
    }
}
