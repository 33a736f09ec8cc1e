//! Closing a store repacks a documents table that a load of ten thousand ids left half
//! empty, not only one of megabytes: the Node side-by-side's store (`c0` … `c9999`, written
//! in numeric order) kept 0.47 MB spare in 0.98 MB of documents pages because the repack
//! waited for a full MiB spare. The threshold is now 64 pages; the table is copied in key
//! order, in one transaction, and every document reads as before.

use ratchetdb::{Chunk, Document, Op, Options, Store, Version};
use redb::{ReadableDatabase, ReadableTableMetadata, TableDefinition};
use std::path::Path;

const DOCS: u64 = 10_000;
const DIM: usize = 4;
const DOCS_TABLE: TableDefinition<(&str, &str), &[u8]> = TableDefinition::new("docs");

fn vector(n: u64) -> Vec<f32> {
    (0..DIM as u64)
        .map(|d| 1.0 + ((n * 31 + d * 7) % 13) as f32)
        .collect()
}

fn id(n: u64) -> String {
    format!("c{n}")
}

/// Writes `c0` … `c9999` in numeric order (not their byte order) in batches of 1,000, with
/// the side-by-side's metadata, then closes.
fn load(path: &Path, options: Options) {
    let store = Store::open(path, options.dimension(DIM)).expect("open");
    let ids: Vec<u64> = (0..DOCS).collect();
    for batch in ids.chunks(1000) {
        let ops = batch
            .iter()
            .map(|&n| {
                Op::Upsert(
                    Document::new("bench", id(n), Version::number(1)).with_chunk(
                        Chunk::new(format!("word {n}"), vector(n))
                            .with_meta(serde_json::json!({ "group": format!("g{}", n % 10) })),
                    ),
                )
            })
            .collect();
        for outcome in store.write_batch(ops).expect("batch") {
            outcome.expect("upsert");
        }
    }
}

/// The documents table's spare bytes and all the bytes of its pages, from the closed file.
fn docs_table_pages(path: &Path) -> (u64, u64) {
    let db = redb::Database::open(path).expect("redb open");
    let txn = db.begin_read().expect("read");
    let stats = txn
        .open_table(DOCS_TABLE)
        .expect("docs table")
        .stats()
        .expect("stats");
    let spare = stats.fragmented_bytes();
    (spare, stats.stored_bytes() + stats.metadata_bytes() + spare)
}

#[test]
fn closing_a_store_repacks_the_documents_table_of_ten_thousand_ids() {
    let dir = tempfile::tempdir().expect("tempdir");

    // The premise: without the close's work a quarter of the table is spare.
    let kept = dir.path().join("kept.redb");
    load(&kept, Options::default().compact_on_close(false));
    let (spare_kept, pages_kept) = docs_table_pages(&kept);
    println!("without repack: {spare_kept} of {pages_kept} bytes spare");
    assert!(
        spare_kept * 4 >= pages_kept,
        "the load did not leave the table sparse ({spare_kept} of {pages_kept}): the test \
         shows nothing"
    );

    let path = dir.path().join("db.redb");
    load(&path, Options::default());
    let (spare, pages) = docs_table_pages(&path);
    println!("after close: {spare} of {pages} bytes spare");
    assert!(
        spare * 4 < pages && pages < pages_kept,
        "the table is still sparse after close: {spare} of {pages} bytes spare \
         ({spare_kept} of {pages_kept} without the repack)"
    );

    let store = Store::open(&path, Options::default().compact_on_close(false)).expect("reopen");
    for n in 0..DOCS {
        let doc = store
            .get("bench", &id(n))
            .expect("get")
            .unwrap_or_else(|| panic!("{} lost", id(n)));
        assert_eq!(doc.chunks[0].text, format!("word {n}"));
    }
    let report = store.verify().expect("verify");
    assert!(report.violations.is_empty(), "{report:?}");
    assert_eq!(report.documents, DOCS);
}
