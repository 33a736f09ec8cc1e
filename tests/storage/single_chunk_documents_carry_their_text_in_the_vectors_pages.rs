//! A one-chunk document of a 384-d vector: its vectors row (1,548 bytes) shares a 4 KiB leaf
//! with one other, and each row's half of the leaf has 486 bytes the vectors leave unused.
//! The chunks row (text, metadata, source and id) rides there whole when it fits, so the
//! text costs no pages of its own: a document costs its half page of vectors and its
//! document row, not a chunks row in a table of its own beside them (the side-by-side's
//! store was 26.4 MB for 15.4 MB of vectors, 2.0 MB of it the chunks table).
//!
//! The bound, from the bytes the caller hands over: half a page for the vectors row (two
//! fit a leaf, and the spill never makes that one), plus the document's text, metadata,
//! source and id once more (the document row holds the keys again, with its version and
//! hash). A layout that keeps the chunks row in a table of its own pays the text, metadata
//! and keys a second time in that table's pages, and exceeds it.
//!
//! The per-document cost is the difference in redb's allocated pages between a store of
//! 1,024 documents and one of 512, each written in one transaction, which cancels the fixed
//! cost of an empty store. The vectors' floats span sixteen binades, so their rows stay raw
//! (the coded layout of schema 8 saves no page bytes on them); a MiniLM-like vector's row is
//! coded, three to a leaf, its chunks row in its own table
//! (`one_chunk_384_d_documents_take_a_third_of_a_leaf_each.rs`). Without a text index
//! (`Options::text_index(false)`): its rows are its own table's and not what this layout is
//! about.

use ratchetdb::{Chunk, Document, Version};
use serde_json::json;

const DIMENSION: usize = 384;
const PAGE: usize = 4096;

fn text(d: usize) -> String {
    format!("document {d}: {}", "ratchets turn one way. ".repeat(12))
}

fn meta(d: usize) -> serde_json::Value {
    json!({ "group": format!("g{}", d % 10) })
}

fn id(d: usize) -> String {
    format!("c{d:05}")
}

fn document(d: usize) -> Document {
    let vector = (0..DIMENSION)
        .map(|i| (((i * 31 + d * 3) % 97) as f32 - 48.0) * 2f32.powi((i % 16) as i32 - 8))
        .collect();
    Document::new("bench", id(d), Version::number(1))
        .with_chunk(Chunk::new(text(d), vector).with_meta(meta(d)))
}

/// redb's allocated pages after writing `documents` documents in one transaction, and the
/// page size.
fn allocated_pages(documents: usize) -> (u64, u64) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("single.redb");
    {
        let docs = (0..documents).map(document).collect();
        let store = crate::support::store_of_one_batch(&path, DIMENSION, docs);
        let back = store.get("bench", &id(7)).expect("get").expect("live");
        assert_eq!(back.chunks[0].text, text(7));
        assert_eq!(back.chunks[0].meta, meta(7));
    }
    crate::support::allocated_pages(&path)
}

#[test]
fn single_chunk_documents_carry_their_text_in_the_vectors_pages() {
    let (small, page_size) = allocated_pages(512);
    let (large, _) = allocated_pages(1024);
    assert_eq!(
        page_size as usize, PAGE,
        "the layout is planned for 4 KiB pages"
    );
    let per_document = (large - small) as f64 * page_size as f64 / 512.0;
    let d = 600; // a document of the larger half, as long as any of it
    let once_more = text(d).len() + meta(d).to_string().len() + "bench".len() + id(d).len();
    let bound = (PAGE / 2 + once_more) as f64;
    eprintln!("redb allocated {per_document:.0} bytes per document, bound {bound:.0}");
    assert!(
        per_document <= bound,
        "a one-chunk document cost {per_document:.0} bytes of pages, over half a page for its \
         vectors and its text, metadata and keys once more ({bound:.0})"
    );
}
