//! What the documents-table repack scenarios share: one-chunk documents written in numeric
//! order (not their byte order), loaded twice (once without the close's repack, the
//! premise, once with it), and the documents table's pages read from the closed file.

use ratchetdb::{Chunk, Document, Op, Options, Store, Version};
use redb::{ReadableDatabase, ReadableTableMetadata, TableDefinition};
use std::path::{Path, PathBuf};

const DIM: usize = 4;
const DOCS_TABLE: TableDefinition<(&str, &str), &[u8]> = TableDefinition::new("docs");

/// The documents a scenario loads: `{prefix}0` … under `source`, `docs` of them, each with
/// the text `word {n}` and, with `meta`, the Node side-by-side's metadata.
pub struct Load {
    pub source: &'static str,
    pub prefix: &'static str,
    pub docs: u64,
    pub meta: bool,
}

impl Load {
    /// Document `n`'s id.
    pub fn id(&self, n: u64) -> String {
        format!("{}{n}", self.prefix)
    }

    /// Writes every document in numeric order, in batches of 1,000, then closes.
    fn write(&self, path: &Path, options: Options) {
        let store = Store::open(path, options.dimension(DIM)).expect("open");
        let ids: Vec<u64> = (0..self.docs).collect();
        for batch in ids.chunks(1000) {
            let ops = batch
                .iter()
                .map(|&n| {
                    let mut chunk = Chunk::new(format!("word {n}"), vector(n));
                    if self.meta {
                        chunk =
                            chunk.with_meta(serde_json::json!({ "group": format!("g{}", n % 10) }));
                    }
                    Op::Upsert(
                        Document::new(self.source, self.id(n), Version::number(1))
                            .with_chunk(chunk),
                    )
                })
                .collect();
            for outcome in store.write_batch(ops).expect("batch") {
                outcome.expect("upsert");
            }
        }
    }
}

/// Document `n`'s vector.
pub fn vector(n: u64) -> Vec<f32> {
    (0..DIM as u64)
        .map(|d| 1.0 + ((n * 31 + d * 7) % 13) as f32)
        .collect()
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

/// Loads `load` into `dir` twice and checks the repack: without the close's work at least
/// a quarter of the table is spare (else the scenario shows nothing); with it, less than a
/// quarter is, in fewer pages. Returns the repacked file.
pub fn repacked(dir: &Path, load: &Load) -> PathBuf {
    let kept = dir.join("kept.redb");
    load.write(&kept, Options::default().compact_on_close(false));
    let (spare_kept, pages_kept) = docs_table_pages(&kept);
    println!("without repack: {spare_kept} of {pages_kept} bytes spare");
    assert!(
        spare_kept * 4 >= pages_kept,
        "the load did not leave the table sparse ({spare_kept} of {pages_kept}): the test \
         shows nothing"
    );

    let path = dir.join("db.redb");
    load.write(&path, Options::default());
    let (spare, pages) = docs_table_pages(&path);
    println!("after close: {spare} of {pages} bytes spare");
    assert!(
        spare * 4 < pages && pages < pages_kept,
        "the table is still sparse after close: {spare} of {pages} bytes spare \
         ({spare_kept} of {pages_kept} without the repack)"
    );
    path
}
