//! Regression: under `Options::memory_budget` a search of a vector space other than the
//! default one loaded that space's whole index into memory (every vector in `f32`, outside
//! the budget). Under a budget such a space is searched by scanning its rows in the file:
//! no vector of it is held in memory (`IndexInfo::space_vectors` stays 0), and its hits are
//! exactly the exact search's. The same store opened without a budget does load the space's
//! index (the counter sees it).

use crate::search_support::{assert_verified, ingest_one_chunk_docs, open, settle, Structured};
use crate::{open_budgeted, BUDGET, DIM};
use ratchetdb::{EmbedError, Embedder, SearchOptions};

/// Vectors of the second space.
const WIDE: usize = 64;
/// Documents of the store.
const DOCS: usize = 1500;

/// Embeds `chunk {i}` (the texts `ingest_one_chunk_docs` writes) as vector `i` of a
/// structured set of [`WIDE`] dimensions.
struct Numbered(Vec<Vec<f32>>);

impl Embedder for Numbered {
    fn name(&self) -> &str {
        "numbered-test"
    }
    fn dimension(&self) -> usize {
        WIDE
    }
    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(texts
            .iter()
            .map(|t| {
                let i: usize = t
                    .strip_prefix("chunk ")
                    .and_then(|n| n.parse().ok())
                    .expect("a text ingest_one_chunk_docs wrote");
                self.0[i].clone()
            })
            .collect())
    }
}

#[test]
fn a_space_under_a_budget_is_scanned_from_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let wide = Structured::new(91, WIDE);
    let embedder = Numbered(wide.vectors(92, DOCS));
    let queries = wide.vectors(93, 20);
    {
        let store = open_budgeted(dir.path(), BUDGET);
        ingest_one_chunk_docs(&store, "s", &Structured::new(94, DIM).vectors(95, DOCS));
        store.add_space("wide", "numbered-test", WIDE).expect("add");
        store
            .reembed("wide", &embedder, 256, &mut |_| {})
            .expect("reembed");
        settle(&store);
        for query in &queries {
            let exact = store
                .search(
                    query,
                    10,
                    &SearchOptions::default().space("wide").exact(true),
                )
                .expect("exact");
            let searched = store
                .search(query, 10, &SearchOptions::default().space("wide").ef(10))
                .expect("search the space");
            let ids = |hits: &[ratchetdb::Hit]| {
                hits.iter()
                    .map(|h| (h.id.clone(), h.score.to_bits()))
                    .collect::<Vec<_>>()
            };
            assert_eq!(ids(&searched), ids(&exact));
        }
        assert_eq!(store.index_info().space_vectors, 0);
        assert_verified(&store, "after searching a space under a budget");
    }
    // Without a budget the space's index is loaded by its first search.
    let store = open(dir.path());
    store
        .search(&queries[0], 10, &SearchOptions::default().space("wide"))
        .expect("search the space");
    assert_eq!(store.index_info().space_vectors, DOCS as u64);
}
