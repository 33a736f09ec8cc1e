//! A one-chunk document of a 384-d MiniLM-like embedding: raw, its vectors row is 1,548
//! bytes and two share a 4 KiB leaf; the coded layout (schema 8: the low three bytes and the
//! sign of each float as they are, the exponent's high bits a 2-bit code) makes it about
//! 1,330 bytes, and three share a leaf (the chunks row then keeps its own table: the third
//! of a leaf has no room for it). The Node side-by-side's store of 10,000 such documents
//! was 24.1 MB, its vectors table two thirds of it.
//!
//! Measured through redb itself: the vectors table's leaf pages after 999 documents written
//! in one transaction (ascending keys: redb packs each leaf full), and every row coded.
//! Without a text index (`Options::text_index(false)`): not what this layout is about.

use crate::support;
use ratchetdb::{Chunk, Document, Version};
use redb::{ReadableDatabase, ReadableTableMetadata};

const DIMENSION: usize = 384;
const DOCUMENTS: u64 = 999;

#[test]
fn one_chunk_384_d_documents_take_a_third_of_a_leaf_each() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("third.redb");
    let docs = (0..DOCUMENTS)
        .map(|d| {
            Document::new("bench", format!("c{d:05}"), Version::number(1)).with_chunk(Chunk::new(
                format!("document {d}: ratchets turn one way."),
                support::minilm_like(d, DIMENSION),
            ))
        })
        .collect();
    drop(support::store_of_one_batch(&path, DIMENSION, docs));
    assert_eq!(
        ratchetdb::testkit::vectors_row_layouts(&path),
        Ok((0, DOCUMENTS)),
        "(raw, coded) vectors rows"
    );
    let db = redb::Database::open(&path).expect("open with redb");
    let txn = db.begin_read().expect("begin_read");
    let table = txn
        .open_table(redb::TableDefinition::<u64, &[u8]>::new("doc_vectors"))
        .expect("doc_vectors");
    let leaves = table.stats().expect("stats").leaf_pages();
    eprintln!("{DOCUMENTS} one-chunk documents: {leaves} vectors leaves");
    assert_eq!(
        leaves,
        DOCUMENTS / 3,
        "{DOCUMENTS} vectors rows take {leaves} leaves, not three to a leaf"
    );
}
