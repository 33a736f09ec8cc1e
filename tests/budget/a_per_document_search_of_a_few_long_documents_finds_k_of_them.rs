//! A per-document search under a budget, restricted to a source of a few long documents,
//! returns `k` distinct documents when the source has them.
//!
//! Regression: under a budget a search took its candidates as exhausted whenever the graph
//! held fewer than `ef` points passing the restriction, and returned what the first `fetch`
//! chunks scored resolved to. Restricted to a source of 3 documents of 20 chunks each (60
//! points, under `ef` 64), the 3 nearest chunks all belonged to one document, and a
//! per-document search for 3 returned 1.

use crate::search_support::{assert_verified, ingest_one_chunk_docs, settle, Structured};
use crate::{open_budgeted, BUDGET, DIM, N};
use ratchetdb::{Chunk, Document, Op, SearchOptions, Version};

const CHUNKS: usize = 20;

/// `base` moved a little, differently for each `i`.
fn near(base: &[f32], i: usize) -> Vec<f32> {
    base.iter()
        .enumerate()
        .map(|(j, x)| x + 0.002 * (((i * 7 + j * 13) % 11) as f32 - 5.0))
        .collect()
}

#[test]
fn a_per_document_search_of_a_few_long_documents_finds_k_of_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = Structured::new(91, DIM);
    let vectors = data.vectors(92, N);
    let store = open_budgeted(dir.path(), BUDGET);
    ingest_one_chunk_docs(&store, "s", &vectors);
    store.build_index().expect("build");
    settle(&store);
    assert!(store.index_info().budgeted_bytes > 0);

    // Three long documents around three of the set's vectors; the query is the first's.
    let bases = data.vectors(93, 3);
    let ops = bases
        .iter()
        .enumerate()
        .map(|(d, base)| {
            let document = Document::new("few", format!("d{d}"), Version::number(1));
            Op::Upsert((0..CHUNKS).fold(document, |document, i| {
                document.with_chunk(Chunk::new(format!("doc {d} chunk {i}"), near(base, i)))
            }))
        })
        .collect();
    for result in store.write_batch(ops).expect("write") {
        result.expect("write a document");
    }
    settle(&store);

    for options in [
        SearchOptions::default().source("few").per_document(true),
        SearchOptions::default()
            .source("few")
            .per_document(true)
            .rerank(3),
    ] {
        let hits = store.search(&bases[0], 3, &options).expect("search");
        let mut ids: Vec<&str> = hits.iter().map(|hit| hit.id.as_str()).collect();
        assert_eq!(ids.first(), Some(&"d0"), "{options:?}");
        ids.sort_unstable();
        assert_eq!(ids, ["d0", "d1", "d2"], "{options:?}");
    }
    assert_verified(&store, "after the searches");
}
