//! BM25 over the text index of one snapshot, and rank fusion with the vector search.
//!
//! Invariant: a text hit is scored on the inverted index of exactly the commit of the
//! snapshot it is resolved against (the text cache, `derived/text_cache.rs`), and the rows
//! it inverts change in the transaction that changes the chunks: a superseded, deleted or
//! orphaned chunk has no posting in any snapshot where it is not live. Every hit is still resolved
//! (`search::resolve`) like a vector hit, which re-checks the metadata filter on the
//! snapshot's rows.

use crate::backend::redb::derived::filter_index::Matching;
use crate::backend::redb::derived::search::{allowed_documents, resolve};
use crate::backend::redb::derived::text_cache::{InvertedIndex, Rows, TextCache};
use crate::backend::redb::read::Snapshot;
use crate::backend::redb::schema::{meta_key, seq_key, split_vector_id, text_key, COUNTERS, META};
use crate::error::ReadError;
use crate::search::SearchOptions;
use crate::text::{Analyzer, Bm25, TextOptions};
use crate::types::Hit;
use parking_lot::Mutex;
use std::collections::HashSet;
use std::sync::Arc;

/// The analyzer of the snapshot's text index, from a one-entry cache.
pub(crate) fn analyzer_of(
    snapshot: &Snapshot,
    cache: &Mutex<Option<Arc<Analyzer>>>,
) -> Result<Arc<Analyzer>, ReadError> {
    let meta = snapshot.txn.open_table(META).map_err(ReadError::storage)?;
    let Some(bytes) = meta.get(meta_key::TEXT_INDEX).map_err(ReadError::storage)? else {
        if meta
            .get(meta_key::LEGACY_TEXT_ANALYZER)
            .map_err(ReadError::storage)?
            .is_some()
        {
            return Err(ReadError::NoTextIndex {
                detail: "this store's text index is in the format of an earlier build; open \
                         the store for writing once to rebuild it"
                    .to_string(),
            });
        }
        return Err(ReadError::NoTextIndex {
            detail: "this store has no text index (it was opened for writing with \
                     Options::text_index(false), or only by a build without one, since)"
                .to_string(),
        });
    };
    let options: TextOptions =
        serde_json::from_slice(bytes.value()).map_err(|e| ReadError::Corrupted {
            what: "text analyzer".to_string(),
            detail: e.to_string(),
        })?;
    drop(bytes);
    // The index must cover the snapshot's commit: a build that does not keep it may have
    // written the file since (the next writer to open it rebuilds it).
    let counters = snapshot
        .txn
        .open_table(COUNTERS)
        .map_err(ReadError::storage)?;
    let commit = counters
        .get(seq_key::COMMIT)
        .map_err(ReadError::storage)?
        .map_or(0, |v| v.value());
    let covered = counters
        .get(text_key::COMMIT)
        .map_err(ReadError::storage)?
        .map_or(0, |v| v.value());
    if covered != commit {
        return Err(ReadError::NoTextIndex {
            detail: format!(
                "the text index covers commit {covered} but the documents are at commit \
                 {commit} (a build without the text index wrote the file); open the store \
                 for writing once to rebuild it"
            ),
        });
    }
    let mut cached = cache.lock();
    match cached.as_ref() {
        Some(analyzer) if analyzer.options() == &options => Ok(analyzer.clone()),
        _ => {
            let analyzer = Arc::new(Analyzer::new(&options));
            *cached = Some(analyzer.clone());
            Ok(analyzer)
        }
    }
}

/// Every chunk with at least one of `query`'s terms and its BM25 score, best first (ties
/// by vector id), among the chunks `keep` passes. `rows`: the text rows of the snapshot
/// `index` covers.
pub(crate) fn score(
    index: &InvertedIndex,
    rows: &Rows,
    analyzer: &Analyzer,
    query: &str,
    bm25: &Bm25,
    keep: &dyn Fn(u64) -> bool,
) -> Result<Vec<(u64, f32)>, ReadError> {
    let (terms, _) = analyzer.term_counts(query);
    let n = index.chunk_count();
    if terms.is_empty() || n == 0 {
        return Ok(Vec::new());
    }
    let avg_len = index.total_terms() as f32 / n as f32;
    let mut scores: hashbrown::HashMap<u32, f32, foldhash::fast::RandomState> =
        hashbrown::HashMap::default();
    let mut terms: Vec<&String> = terms.keys().collect();
    terms.sort();
    for term in terms {
        let postings = index.postings(term, rows)?;
        if postings.is_empty() {
            continue;
        }
        let idf = Bm25::idf(n, postings.len() as u64);
        for (number, tf) in postings {
            if keep(index.vector_id(number)) {
                *scores.entry(number).or_insert(0.0) +=
                    bm25.term_score(idf, tf, index.len_of(number), avg_len);
            }
        }
    }
    let mut ranked: Vec<(u64, f32)> = scores
        .into_iter()
        .map(|(number, score)| (index.vector_id(number), score))
        .collect();
    ranked.sort_unstable_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    Ok(ranked)
}

/// The `k` best live chunks for `query` by BM25 on `snapshot`. `matching`: the chunks the
/// filter passes, from the store's filter index (`None`: every candidate's metadata is
/// checked on resolving it).
pub(crate) fn search_text(
    snapshot: &Snapshot,
    cache: &TextCache,
    analyzer: &Analyzer,
    query: &str,
    k: usize,
    options: &SearchOptions,
    matching: Option<&Matching<'_>>,
) -> Result<Vec<Hit>, ReadError> {
    options.bm25.check()?;
    if k == 0 {
        return Ok(Vec::new());
    }
    let allowed: Option<HashSet<u64>> = allowed_documents(snapshot, options)?;
    let keep = |id: u64| {
        matching.is_none_or(|m| m.contains(id))
            && allowed
                .as_ref()
                .is_none_or(|docs| docs.contains(&split_vector_id(id).0))
    };
    let rows = Rows::open(snapshot)?;
    let ranked = cache.with(snapshot, analyzer.options(), |index| {
        score(index, &rows, analyzer, query, &options.bm25, &keep)
    })??;
    let mut hits = Vec::with_capacity(k.min(ranked.len()));
    // Per document: the internal ids of the documents that have their hit already.
    let mut documents = HashSet::new();
    for (id, score) in ranked {
        let owner = split_vector_id(id).0;
        if options.per_document && documents.contains(&owner) {
            continue;
        }
        if let Some(hit) = resolve(snapshot, id, score, options.filter.as_ref())? {
            if options.per_document {
                documents.insert(owner);
            }
            hits.push(hit);
            if hits.len() == k {
                break;
            }
        }
    }
    Ok(hits)
}
