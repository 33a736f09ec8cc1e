//! Schema 3's layout assumption, measured through redb itself rather than re-derived from our
//! own constants: redb stores a value larger than a page in a leaf of its own whose page run
//! is a power of two (its buddy allocator), so a document of 8 chunks of about 1 KB of text
//! and 8 × 384-d vectors costs a 16 KiB run for the vectors row (12.3 KB of vectors plus the
//! chunks row's tail in the slack) and an 8 KiB run for the rest of the chunks row: 6 pages.
//! Without the spill it would cost 16 + 16 KiB, 8 pages. A redb upgrade that changes how large
//! values are allocated (and so silently loses the gain) fails here.
//!
//! The per-document cost is the difference in redb's allocated pages between a store of 128
//! documents and one of 64, each written in one transaction, which cancels the fixed cost of
//! an empty store. The stores keep no text index (`Options::text_index(false)`): its postings
//! are pages of their own, proportional to the distinct words (0.75 pages a document here),
//! and not what this layout is about. The texts are drawn printable characters, which the
//! store's text compression (schema 9) leaves as they are: this is about the rows' layout.

use ratchetdb::{Chunk, Document, Version};

const DIMENSION: usize = 384;
const CHUNKS: usize = 8;

fn document(d: usize) -> Document {
    let mut doc = Document::new("wiki", format!("doc-{d:04}"), Version::number(1));
    for c in 0..CHUNKS {
        let head = format!("document {d} chunk {c}: ");
        let text = format!("{head}{}", drawn_text((d * CHUNKS + c) as u64, 44 * 23));
        let vector = (0..DIMENSION)
            .map(|i| ((i * 31 + c * 7 + d * 3) % 97) as f32 - 48.0)
            .collect();
        doc = doc.with_chunk(Chunk::new(text, vector));
    }
    doc
}

/// `len` printable ASCII characters drawn from `seed`: text FSST does not shorten.
fn drawn_text(seed: u64, len: usize) -> String {
    let mut rng = ratchetdb::testkit::SplitMix64::new(seed);
    (0..len)
        .map(|_| char::from(b' ' + rng.below(95) as u8))
        .collect()
}

/// redb's allocated pages (in units of its page size) after writing `documents` documents
/// in one transaction, and that page size.
fn allocated_pages(documents: usize) -> (u64, u64) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("layout.redb");
    let docs = (0..documents).map(document).collect();
    drop(crate::support::store_of_one_batch(&path, DIMENSION, docs));
    crate::support::allocated_pages(&path)
}

#[test]
fn a_spilled_document_costs_six_pages_not_eight() {
    let (small, page_size) = allocated_pages(64);
    let (large, _) = allocated_pages(128);
    assert_eq!(page_size, 4096, "the layout is planned for 4 KiB pages");
    let per_document = (large - small) as f64 / 64.0;
    eprintln!("redb allocated {per_document:.2} pages of {page_size} bytes per document");
    // 6 pages for the two rows; the small rows (document, key, changelog) add a little.
    assert!(
        (6.0..6.5).contains(&per_document),
        "expected 6 pages per document (16 KiB vectors row with the chunks row's tail, 8 KiB \
         rest of the chunks row), redb allocated {per_document:.2}"
    );
}
