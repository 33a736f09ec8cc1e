//! What a search asks for, shared by both backends: [`SearchOptions`], the bounds on `k`, `ef` and
//! `rerank`, the query vector's validation, and one hit per document.

use crate::error::{InputError, ReadError};
use crate::options::{Limits, Metric};
use crate::policy::filter::Filter;
use crate::policy::prepare::prepare_vector;
use crate::types::Hit;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;

/// How to search. `SearchOptions::default()`: no filter, default effort, exact below the
/// size where a scan is as fast as the graph. Read from serde (a config file), every field
/// left out takes its default, and a field it does not have is an error naming it (a
/// misspelt option would otherwise be its default without a word).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct SearchOptions {
    /// Graph search width (`ef`): higher is slower and finds more of the true neighbours.
    /// `None`: the default (64), or exact search for small stores.
    pub ef: Option<usize>,
    /// Scan every live vector (the ground truth) instead of the graph.
    pub exact: bool,
    /// Only chunks of these sources (empty: all).
    pub sources: Vec<String>,
    /// Only chunks of these `(source, id)` documents (empty: all).
    pub documents: Vec<(String, String)>,
    /// Only chunks whose metadata (the chunk's, then its document's) matches this filter
    /// (see [`Filter`]).
    pub filter: Option<Filter>,
    /// How a filtered search that is not exact finds its candidates. Default
    /// [`FilterStrategy::Auto`].
    pub filter_strategy: FilterStrategy,
    /// BM25's parameters for [`Store::search_text`](crate::Store::search_text) and
    /// [`Store::search_hybrid`](crate::Store::search_hybrid) (default k1 1.2, b 0.75).
    pub bm25: crate::text::Bm25,
    /// How [`Store::search_hybrid`](crate::Store::search_hybrid) merges its two rankings
    /// (default reciprocal rank fusion, k 60).
    pub fusion: crate::text::Fusion,
    /// One hit per document: the best-scoring chunk of each document, and `k` distinct
    /// documents (fewer only when fewer match). The candidate set widens until it holds `k`
    /// documents or every matching chunk has been seen, so a document whose chunks crowd
    /// the top of the ranking never hides the others. Applies to vector, text and hybrid
    /// search, exact and graph search, with or without filters, on both backends. Hybrid
    /// search fuses the chunk rankings first, then keeps each document's best fused chunk.
    pub per_document: bool,
    /// The vector space searched (see [`Store::add_space`](crate::Store::add_space));
    /// `None`: the store's active space, as of the search's snapshot. Filters and the text
    /// ranking are the same in every space. A space the store does not have is an
    /// `InputError` naming `space`; on PostgreSQL, any space but `default` is
    /// `Unsupported`.
    pub space: Option<String>,
    /// Under a memory budget ([`Options::memory_budget`](crate::Options::memory_budget)):
    /// how many of the graph search's best candidates, ranked by their compact codes, are
    /// scored again exactly on their vectors in the file (each such score reads a vectors
    /// row). `None`: `40 x max(n, 10)` for a search needing `n` candidates (`k`; more for
    /// hybrid, filtered and per-document searches), which at 1M vectors kept recall@10
    /// within 0.003 of scoring all `ef` candidates, at 2.0-2.9x the queries per second;
    /// `10 x max(n, 10)` where the budget leaves codes of at most 4 dimensions a byte,
    /// which rank the candidates finely enough (`docs/design.md`). Never fewer than the
    /// hits needed; no more than `ef`. Without a budget the index holds the vectors and
    /// scores every candidate exactly; this is then unused, as it is by text search (no
    /// vectors) and on PostgreSQL. Bounded like `ef` on every search path: 0 or above
    /// [`Limits::max_k`] is an `InputError` naming `rerank`.
    pub rerank: Option<usize>,
}

/// Hits asked for below which the rerank width stays that of this many (the width measured).
pub(crate) const RERANK_MIN_HITS: usize = 10;

/// How many of a budgeted search's candidates (best first by code distance) are scored
/// exactly, when `fetch` hits are needed and the index's codes call for `per_hit` each
/// (`index::budget::rerank_per_hit`; see [`SearchOptions::rerank`]).
pub(crate) fn rerank_width(options: &SearchOptions, fetch: usize, per_hit: usize) -> usize {
    options
        .rerank
        .unwrap_or_else(|| per_hit.saturating_mul(fetch.max(RERANK_MIN_HITS)))
        .max(fetch)
}

/// How a filtered search (not [`SearchOptions::exact`]) finds its candidates, once the
/// filter has been evaluated on the in-memory filter index (which gives the matching
/// vectors and their number).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FilterStrategy {
    /// By the filter's selectivity: the graph when the filter passes many vectors, a scan
    /// of just the matching ones when that computes fewer distances (see `search.rs`).
    #[default]
    Auto,
    /// The graph, with the filter applied inside its traversal: every point reached routes
    /// the search, only matching ones enter the results, and the search widens until
    /// `max(k, ef)` matching ones are found (if it runs out of reachable points first, the
    /// exact scan answers instead).
    Graph,
    /// A scan of just the matching vectors: exact.
    ScanMatching,
}

impl SearchOptions {
    /// Searches the vector space `name` rather than the active one.
    pub fn space(mut self, name: impl Into<String>) -> SearchOptions {
        self.space = Some(name.into());
        self
    }

    /// Sets the graph search width.
    pub fn ef(mut self, ef: usize) -> SearchOptions {
        self.ef = Some(ef);
        self
    }

    /// Sets how many candidates a search under a memory budget scores exactly (see the
    /// field `rerank`).
    ///
    /// ```
    /// use ratchetdb::SearchOptions;
    /// let options = SearchOptions::default().ef(2000).rerank(800);
    /// assert_eq!(options.rerank, Some(800));
    /// ```
    pub fn rerank(mut self, candidates: usize) -> SearchOptions {
        self.rerank = Some(candidates);
        self
    }

    /// Asks for an exact scan.
    pub fn exact(mut self, exact: bool) -> SearchOptions {
        self.exact = exact;
        self
    }

    /// Restricts to one more source.
    pub fn source(mut self, source: impl Into<String>) -> SearchOptions {
        self.sources.push(source.into());
        self
    }

    /// Restricts to chunks matching `filter`.
    ///
    /// ```
    /// use ratchetdb::{Filter, SearchOptions};
    /// let filter = Filter::parse(&serde_json::json!({"ext": "md"}))?;
    /// let options = SearchOptions::default().filter(filter);
    /// assert!(options.filter.is_some());
    /// # Ok::<(), ratchetdb::InputError>(())
    /// ```
    pub fn filter(mut self, filter: Filter) -> SearchOptions {
        self.filter = Some(filter);
        self
    }

    /// Sets how a filtered search finds its candidates.
    pub fn filter_strategy(mut self, strategy: FilterStrategy) -> SearchOptions {
        self.filter_strategy = strategy;
        self
    }

    /// Sets BM25's parameters (text and hybrid search).
    pub fn bm25(mut self, k1: f32, b: f32) -> SearchOptions {
        self.bm25 = crate::text::Bm25 { k1, b };
        self
    }

    /// Sets how hybrid search merges the vector and the text ranking.
    pub fn fusion(mut self, fusion: crate::text::Fusion) -> SearchOptions {
        self.fusion = fusion;
        self
    }

    /// Returns one hit per document: its best-scoring chunk, for `k` distinct documents
    /// (see the field `per_document`).
    ///
    /// ```
    /// use ratchetdb::{Chunk, Document, Options, SearchOptions, Store, Version};
    /// # let dir = tempfile::tempdir()?;
    /// let store = Store::open(dir.path().join("index.redb"), Options::default())?;
    /// store.upsert(Document::new("notes", "long", Version::number(1))
    ///     .with_chunk(Chunk::new("cats purr", vec![1.0, 0.1]))
    ///     .with_chunk(Chunk::new("cats nap", vec![1.0, 0.2])))?;
    /// store.upsert(Document::new("notes", "short", Version::number(1))
    ///     .with_chunk(Chunk::new("dogs bark", vec![0.1, 1.0])))?;
    /// let options = SearchOptions::default().per_document(true);
    /// let hits = store.search(&[1.0, 0.1], 2, &options)?;
    /// assert_eq!((hits[0].id.as_str(), hits[0].text.as_str()), ("long", "cats purr"));
    /// assert_eq!(hits[1].id, "short");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn per_document(mut self, per_document: bool) -> SearchOptions {
        self.per_document = per_document;
        self
    }

    /// Restricts to one more document.
    pub fn document(mut self, source: impl Into<String>, id: impl Into<String>) -> SearchOptions {
        self.documents.push((source.into(), id.into()));
        self
    }
}

/// The first hit of each `(source, id)` document in `hits` (ranked best first), at most
/// `k` of them: what `SearchOptions::per_document` returns from a chunk ranking.
pub(crate) fn best_per_document(hits: impl IntoIterator<Item = Hit>, k: usize) -> Vec<Hit> {
    let mut seen: HashSet<(String, String)> = HashSet::new();
    let mut best = Vec::new();
    for hit in hits {
        if best.len() == k {
            break;
        }
        if seen.insert((hit.source.clone(), hit.id.clone())) {
            best.push(hit);
        }
    }
    best
}

/// Validates and prepares a query vector.
pub(crate) fn prepare_query(
    query: &[f32],
    metric: Metric,
    dimension: Option<usize>,
    limits: &Limits,
) -> Result<Vec<f32>, ReadError> {
    if let Some(expected) = dimension {
        if query.len() != expected {
            return Err(InputError::new(
                "query",
                format!(
                    "has {} dimensions; this store holds {expected}-dimensional vectors",
                    query.len()
                ),
            )
            .into());
        }
    }
    prepare_vector(0, query.to_vec(), metric, limits).map_err(|e| {
        let field = e.field.replacen("chunks[0].vector", "query", 1);
        ReadError::Input(InputError::new(field, e.problem))
    })
}

/// Checks `k`, `ef` and `rerank` against `limits` (an [`InputError`] naming the field).
pub(crate) fn check_bounds(
    k: usize,
    options: &SearchOptions,
    limits: &Limits,
) -> Result<(), ReadError> {
    if k > limits.max_k {
        return Err(InputError::new(
            "k",
            format!(
                "is {k}; at most {} hits can be asked for (Limits::max_k)",
                limits.max_k
            ),
        )
        .into());
    }
    for (field, value) in [("ef", options.ef), ("rerank", options.rerank)] {
        match value {
            Some(0) => return Err(InputError::new(field, "must be at least 1").into()),
            Some(n) if n > limits.max_k => {
                return Err(InputError::new(
                    field,
                    format!("is {n}; at most {} (Limits::max_k)", limits.max_k),
                )
                .into())
            }
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{rerank_width, SearchOptions};

    #[test]
    fn the_rerank_width_is_per_hit_times_the_hits_unless_the_option_says() {
        let default = SearchOptions::default();
        assert_eq!(rerank_width(&default, 10, 10), 100);
        assert_eq!(rerank_width(&default, 10, 40), 400);
        // Fewer hits than 10 keep the width of 10; more widen it.
        assert_eq!(rerank_width(&default, 3, 10), 100);
        assert_eq!(rerank_width(&default, 50, 10), 500);
        // The option overrides both, never below the hits needed.
        assert_eq!(rerank_width(&default.clone().rerank(7), 10, 40), 10);
        assert_eq!(rerank_width(&default.rerank(250), 10, 10), 250);
    }
}
