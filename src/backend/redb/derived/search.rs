//! k-nearest-neighbour search over the live chunks, resolved against one snapshot.
//!
//! Invariant: every hit is resolved against the read snapshot the search took first: a
//! candidate whose vector id is not in its document's vectors row there, or whose document
//! is deleted, re-keyed or at another generation, is dropped, and the search fetches more until `k`
//! live hits come back or none are left. A superseded chunk is never returned.

use crate::backend::redb::derived::filter_index::Matching;
use crate::backend::redb::read::Snapshot;
use crate::backend::redb::schema::{
    self, split_vector_id, vector_id, DocRow, RowVector, VectorsRow, DOCS, SPACE_VECTORS, VECTORS,
};
use crate::error::{Corruption, InputError, ReadError};
use crate::index::budget::BudgetIndex;
use crate::index::{self, SearchMode, VectorIndex};
use crate::options::Metric;
use crate::policy::filter::Filter;
use crate::search::{rerank_width, FilterStrategy, SearchOptions};
use crate::types::Hit;
use redb::ReadableTable;
use std::collections::HashSet;

/// The internal ids of the documents a filter allows (`None`: no filter).
pub(crate) fn allowed_documents(
    snapshot: &Snapshot,
    options: &SearchOptions,
) -> Result<Option<HashSet<u64>>, ReadError> {
    if options.sources.is_empty() && options.documents.is_empty() {
        return Ok(None);
    }
    let docs = snapshot.txn.open_table(DOCS).map_err(ReadError::storage)?;
    let mut allowed = HashSet::new();
    let source_ok =
        |source: &str| options.sources.is_empty() || options.sources.iter().any(|s| s == source);
    if !options.documents.is_empty() {
        for (source, id) in &options.documents {
            if !source_ok(source) {
                continue;
            }
            if let Some(bytes) = docs
                .get((source.as_str(), id.as_str()))
                .map_err(ReadError::storage)?
            {
                let row: DocRow = schema::decode("document row", bytes.value())?;
                allowed.insert(row.internal_id);
            }
        }
    } else {
        for (i, source) in options.sources.iter().enumerate() {
            let before = allowed.len();
            let mut known = false;
            for entry in docs
                .range((source.as_str(), "")..)
                .map_err(ReadError::storage)?
            {
                let (key, value) = entry.map_err(ReadError::storage)?;
                if key.value().0 != source {
                    break;
                }
                known = true;
                let row: DocRow = schema::decode("document row", value.value())?;
                allowed.insert(row.internal_id);
            }
            if !known && allowed.len() == before {
                return Err(InputError::new(
                    format!("sources[{i}]"),
                    format!("no document of source {source:?} is in this store"),
                )
                .into());
            }
        }
    }
    Ok(Some(allowed))
}

/// Resolves a candidate against the snapshot; `None` if it is not a live chunk there.
///
/// One lookup: the candidate's document's chunks row, which exists exactly while the
/// document is live and carries its version and key (schema 4), holds the chunk of the
/// candidate's vector slot or not; its other chunks are skipped in place
/// ([`Snapshot::chunk_of`]). (Two where the chunks row rides whole in the vectors row: its
/// empty head, then the vectors row, decoded in place.) A filter also reads the document row, for the document's
/// metadata.
pub(crate) fn resolve(
    snapshot: &Snapshot,
    vector_id: u64,
    score: f32,
    filter: Option<&Filter>,
) -> Result<Option<Hit>, ReadError> {
    let (owner, slot) = split_vector_id(vector_id);
    let hit = snapshot.chunk_of(owner, slot, |mut at| {
        let Some((position, chunk)) = at.chunk.take() else {
            return Ok(None);
        };
        // Metadata that does not decode is a corruption, as it is for `get`.
        let meta = schema::decode_meta(chunk.meta)?;
        // The filter index may cover another commit than the snapshot: the hit is checked
        // against the snapshot's own metadata, so a non-matching chunk is never returned.
        if let Some(filter) = filter {
            let doc_meta = document_meta(snapshot, owner, &at)?;
            if !filter.matches(&meta, &doc_meta) {
                return Ok::<_, ReadError>(None);
            }
        }
        Ok(Some(Hit {
            version: at.version()?,
            generation: at.generation,
            meta,
            text: chunk.text.into_owned(),
            source: at.source.to_owned(),
            id: at.id.to_owned(),
            position,
            score,
        }))
    })?;
    Ok(hit.transpose()?.flatten())
}

/// The metadata of the document whose chunks row `at` is (internal id `owner`), from its
/// document row, which must be the live revision the chunks row is of.
fn document_meta(
    snapshot: &Snapshot,
    owner: u64,
    at: &schema::ChunkAt<'_>,
) -> Result<serde_json::Value, ReadError> {
    match snapshot.doc_row(at.source, at.id)? {
        Some(row)
            if !row.deleted && row.internal_id == owner && row.generation == at.generation =>
        {
            Ok(schema::decode_meta(&row.meta)?)
        }
        _ => Err(Corruption::new(
            "chunk table",
            format!(
                "the chunks row of internal document {owner} names {}/{} at generation {}, \
                 whose document row is not that live revision",
                at.source, at.id, at.generation
            ),
        )
        .into()),
    }
}

/// The `k` nearest of the vectors offered, scored exactly (the exact scan's kernel on the
/// stored little-endian floats), best first with ties by id: the one accumulator of the
/// scans of the file and the re-ranking.
struct Nearest<'q> {
    query: &'q [f32],
    metric: Metric,
    k: usize,
    best: Vec<(f32, u64)>,
    vector: Vec<f32>,
}

impl<'q> Nearest<'q> {
    fn new(query: &'q [f32], metric: Metric, k: usize) -> Self {
        Nearest {
            query,
            metric,
            k,
            best: Vec::new(),
            vector: vec![0f32; query.len()],
        }
    }

    /// Scores `id`'s vector `bytes` (of the query's length: the caller checked it).
    fn offer(&mut self, id: u64, bytes: &[u8]) {
        for (x, b) in self.vector.iter_mut().zip(bytes.chunks_exact(4)) {
            *x = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        }
        self.offer_decoded(id);
    }

    /// [`Nearest::offer`] for a vector of a vectors row, in either layout (the caller has
    /// checked that the row's dimension is the query's).
    fn offer_vector(&mut self, id: u64, vector: &RowVector<'_>) {
        if vector.decode_into(&mut self.vector) {
            self.offer_decoded(id);
        }
    }

    /// Offers the vector decoded into `self.vector`.
    fn offer_decoded(&mut self, id: u64) {
        let distance = index::distance::distance(self.metric, self.query, &self.vector);
        self.best.push((distance, id));
        // Kept bounded: cut back to `k` whenever four times as many are held.
        if self.best.len() > self.k.max(16).saturating_mul(4) {
            self.cut();
        }
    }

    fn cut(&mut self) {
        self.best
            .sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        self.best.truncate(self.k);
    }

    /// The `k` nearest, best first, with their scores.
    fn finish(mut self) -> Vec<(u64, f32)> {
        self.cut();
        let metric = self.metric;
        self.best
            .into_iter()
            .map(|(d, id)| (id, metric.score(d)))
            .collect()
    }
}

/// Exact search straight from the snapshot's vector table: correct and slower; used
/// until the in-memory index has loaded after open.
fn scan_snapshot(
    snapshot: &Snapshot,
    query: &[f32],
    k: usize,
    metric: Metric,
    keep: &dyn Fn(u64) -> bool,
) -> Result<Vec<(u64, f32)>, ReadError> {
    let vectors = snapshot
        .txn
        .open_table(VECTORS)
        .map_err(ReadError::storage)?;
    let mut nearest = Nearest::new(query, metric, k);
    for entry in vectors.iter().map_err(ReadError::storage)? {
        let (key, value) = entry.map_err(ReadError::storage)?;
        let doc = key.value();
        let row = VectorsRow::parse(value.value())?;
        if row.dimension() != query.len() {
            continue;
        }
        for vector in row.vectors() {
            let id = vector_id(doc, vector.slot());
            if keep(id) {
                nearest.offer_vector(id, &vector);
            }
        }
    }
    Ok(nearest.finish())
}

/// The `k` nearest of space `space`'s vectors in `snapshot` that `keep` admits, scanned from
/// its rows (exact; what a search of a space other than the default one does under a
/// memory budget, where no index of it is held in memory).
fn scan_space(
    snapshot: &Snapshot,
    space: u32,
    query: &[f32],
    k: usize,
    metric: Metric,
    keep: &dyn Fn(u64) -> bool,
) -> Result<Vec<(u64, f32)>, ReadError> {
    let rows = snapshot
        .txn
        .open_table(SPACE_VECTORS)
        .map_err(ReadError::storage)?;
    let mut nearest = Nearest::new(query, metric, k);
    for entry in rows
        .range((space, 0u64)..=(space, u64::MAX))
        .map_err(ReadError::storage)?
    {
        let (key, value) = entry.map_err(ReadError::storage)?;
        let id = key.value().1;
        let bytes = value.value();
        // A row of another length is a damaged one `verify` reports; it is not a candidate.
        if bytes.len() == query.len() * 4 && keep(id) {
            nearest.offer(id, bytes);
        }
    }
    Ok(nearest.finish())
}

/// The `k` nearest of `ids` to `query`, scored exactly on their vectors in `snapshot`'s
/// file, best first (ties by id, as [`scan_snapshot`] ranks); ids without a vector there
/// (superseded since the index took them) are dropped. Each document's vectors row is read
/// once, in key order, through the snapshot's table handle.
pub(crate) fn rerank(
    snapshot: &Snapshot,
    query: &[f32],
    metric: Metric,
    mut ids: Vec<u64>,
    k: usize,
) -> Result<Vec<(u64, f32)>, ReadError> {
    ids.sort_unstable();
    ids.dedup();
    let mut nearest = Nearest::new(query, metric, k);
    let mut start = 0;
    while start < ids.len() {
        let doc = split_vector_id(ids[start]).0;
        let end = start
            + ids[start..]
                .iter()
                .take_while(|id| split_vector_id(**id).0 == doc)
                .count();
        let wanted = &ids[start..end];
        start = end;
        // The snapshot's own table handle: no table is opened per search.
        let Some(value) = snapshot.vectors_row(doc)? else {
            continue;
        };
        let row = VectorsRow::parse(value.value())?;
        if row.dimension() != query.len() {
            continue;
        }
        for vector in row.vectors() {
            let id = vector_id(doc, vector.slot());
            if wanted.binary_search(&id).is_ok() {
                nearest.offer_vector(id, &vector);
            }
        }
    }
    Ok(nearest.finish())
}

/// Resolves `candidates` (best first) against `snapshot` until `k` hits (per document: the
/// best chunk of each document only); the hits, and whether `k` were found.
fn resolve_candidates(
    snapshot: &Snapshot,
    candidates: Vec<(u64, f32)>,
    k: usize,
    filter: Option<&Filter>,
    per_document: bool,
) -> Result<(Vec<Hit>, bool), ReadError> {
    let mut hits = Vec::with_capacity(k.min(candidates.len()));
    let mut documents = HashSet::new();
    for (vector_id, score) in candidates {
        let owner = split_vector_id(vector_id).0;
        if per_document && documents.contains(&owner) {
            continue;
        }
        if let Some(hit) = resolve(snapshot, vector_id, score, filter)? {
            if per_document {
                documents.insert(owner);
            }
            hits.push(hit);
            if hits.len() == k {
                return Ok((hits, true));
            }
        }
    }
    Ok((hits, false))
}

/// Work a graph search of width `ef` does, in distance computations per unit of `ef`
/// (visited points): the cost model [`scan_is_cheaper`] uses.
const GRAPH_VISITS_PER_EF: f64 = 32.0;

/// How a filtered graph search's work grows as the filter's pass share `s` drops: as
/// `s^-GRAPH_SELECTIVITY_EXPONENT`. The filter is applied inside the traversal, which
/// widens until it holds `max(k, ef)` matching points. The exponent is fitted to
/// `benches/filtered_search.rs` (see docs/benchmarks.md), which measures the filtered graph
/// search against the unfiltered one at several selectivities.
const GRAPH_SELECTIVITY_EXPONENT: f64 = 0.75;

/// Whether scanning just the `matching` vectors costs less than a graph search that
/// admits only them: the graph computes about [`GRAPH_VISITS_PER_EF`] x `want` distances
/// times `s^-`[`GRAPH_SELECTIVITY_EXPONENT`] (`s` = `matching / live`, the share the filter
/// passes), the scan computes `matching` distances plus a hash lookup each (counted as one
/// more).
pub(crate) fn scan_is_cheaper(matching: u64, live: usize, want: usize) -> bool {
    let m = matching as f64;
    let pass = (m / live.max(1) as f64).max(f64::MIN_POSITIVE);
    2.0 * m <= GRAPH_VISITS_PER_EF * want as f64 * pass.powf(-GRAPH_SELECTIVITY_EXPONENT)
}

/// Runs a search on `snapshot` with `live` (a space's index, brought up to the snapshot by
/// the caller) or, without one, by scanning the snapshot's vectors: space `scan_space`'s
/// rows when given, else the default vectors. `matching`: the chunks `options.filter` matches,
/// from the store's filter index (`None`: evaluated here on an index of the snapshot built
/// for this search alone, a whole index of the store's chunks outside any memory budget:
/// callers pass the shared one's whenever it covers the snapshot).
#[allow(clippy::too_many_arguments)]
pub(crate) fn search(
    snapshot: &Snapshot,
    live: Option<&VectorIndex>,
    budget: Option<&BudgetIndex>,
    query: &[f32],
    k: usize,
    options: &SearchOptions,
    metric: Metric,
    matching: Option<Matching<'_>>,
    scan_space_rows: Option<u32>,
) -> Result<Vec<Hit>, ReadError> {
    if k == 0 {
        return Ok(Vec::new());
    }
    let allowed = allowed_documents(snapshot, options)?;
    if allowed.as_ref().is_some_and(HashSet::is_empty) {
        return Ok(Vec::new());
    }
    let mut matching = match (&options.filter, matching) {
        (Some(filter), None) => Some(Matching::from_snapshot(snapshot, filter)?),
        (Some(_), Some(matching)) => Some(matching),
        (None, _) => None,
    };
    // The filter's chunks restricted to the allowed documents, when both are given.
    if let (Some(matching), Some(docs)) = (matching.as_mut(), &allowed) {
        matching.retain(|id| docs.contains(&split_vector_id(id).0));
    }
    let matching = matching.as_ref();
    if matching.is_some_and(Matching::is_empty) {
        return Ok(Vec::new());
    }
    let mode = if options.exact {
        SearchMode::Exact
    } else {
        match options.ef {
            Some(ef) => SearchMode::Ann { ef },
            None => SearchMode::Auto,
        }
    };
    let keep = |id: u64| match (matching, &allowed) {
        (Some(ids), _) => ids.contains(id),
        (None, Some(docs)) => docs.contains(&split_vector_id(id).0),
        (None, None) => true,
    };
    // A filter passing few vectors: scan just those (exact, and cheaper than a graph
    // search rejecting most of what it reaches). `--exact` keeps its meaning: every live
    // vector is scanned.
    let want = options.ef.unwrap_or(index::DEFAULT_EF_SEARCH).max(k);
    let live_points = budget
        .map(BudgetIndex::len_live)
        .or_else(|| live.map(VectorIndex::len_live));
    let scan_matching = match (live_points, matching) {
        (Some(live_points), Some(ids)) if mode != SearchMode::Exact => {
            match options.filter_strategy {
                FilterStrategy::Auto => scan_is_cheaper(ids.len(), live_points, want),
                FilterStrategy::Graph => false,
                FilterStrategy::ScanMatching => true,
            }
        }
        _ => false,
    };
    let filter = options.filter.as_ref();
    let per_document = options.per_document;
    let mut fetch = k;
    loop {
        // Under a memory budget the index holds codes, not vectors: its candidates (or the
        // vectors a scan needs) are scored on the vectors of this snapshot's file.
        if let Some(budget) = budget {
            let (candidates, exhausted) = if mode == SearchMode::Exact {
                let found = scan_snapshot(snapshot, query, fetch, metric, &keep)?;
                let exhausted = found.len() < fetch;
                (found, exhausted)
            } else if scan_matching {
                let ids: Vec<u64> = matching
                    .into_iter()
                    .flat_map(Matching::vector_ids)
                    .collect();
                let found = rerank(snapshot, query, metric, ids, fetch)?;
                let exhausted = found.len() < fetch;
                (found, exhausted)
            } else {
                let ef = options.ef.unwrap_or(index::DEFAULT_EF_SEARCH).max(fetch);
                let filter_ref: &(dyn Fn(u64) -> bool + Sync) = &keep;
                let filter_ref = (matching.is_some() || allowed.is_some()).then_some(filter_ref);
                let pool = budget
                    .search(query, fetch, ef, filter_ref)
                    .map_err(ReadError::index_search)?;
                // The pool is ranked by the codes' estimates; only its head is read from
                // the file and scored exactly (each id a vectors row read).
                let width = rerank_width(options, fetch, budget.rerank_per_hit());
                let held = pool.len();
                let ids = pool.into_iter().take(width).map(|(id, _)| id).collect();
                let found = rerank(snapshot, query, metric, ids, fetch)?;
                // Every candidate there is has been seen only when the graph held fewer than
                // `ef`, all of them were scored, and the scoring kept all it read (fewer than
                // `fetch`): otherwise a wider pass may find more (ids dropped as not in the
                // snapshot, chunks of documents already in the hits).
                let exhausted = held < ef && held <= width && found.len() < fetch;
                (found, exhausted)
            };
            let (hits, done) = resolve_candidates(snapshot, candidates, k, filter, per_document)?;
            if done || exhausted || (!per_document && fetch >= 1 << 20) {
                return Ok(hits);
            }
            fetch = fetch.saturating_mul(4);
            continue;
        }
        let candidates = match live {
            Some(live) if scan_matching => live
                .search_among(
                    query,
                    fetch,
                    matching.into_iter().flat_map(Matching::vector_ids),
                )
                .map_err(ReadError::index_search)?,
            Some(live) => {
                let filter_ref: &(dyn Fn(u64) -> bool + Sync) = &keep;
                let filter_ref = (matching.is_some() || allowed.is_some()).then_some(filter_ref);
                live.search(query, fetch, mode, filter_ref)
                    .map_err(ReadError::index_search)?
            }
            None => match scan_space_rows {
                Some(space) => scan_space(snapshot, space, query, fetch, metric, &keep)?,
                None => scan_snapshot(snapshot, query, fetch, metric, &keep)?,
            },
        };
        let exhausted = candidates.len() < fetch;
        let (hits, done) = resolve_candidates(snapshot, candidates, k, filter, per_document)?;
        if done {
            return Ok(hits);
        }
        // Fewer candidates than asked are every one there is: the graph search returns
        // every live point it holds once asked for as many (points it cannot reach are
        // scored outside it, and a filtered search that runs out is answered exactly).
        if exhausted {
            return Ok(hits);
        }
        // Fewer live hits than asked: candidates the index holds but the snapshot does not
        // (committed after it), or, per document, chunks of documents already in the hits.
        // Fetch more, unless there is nothing more to fetch (per document: until every
        // candidate has been seen).
        if !per_document && fetch >= 1 << 20 {
            return Ok(hits);
        }
        fetch = fetch.saturating_mul(4);
    }
}

#[cfg(test)]
mod tests {
    use super::scan_is_cheaper;

    #[test]
    fn the_graph_answers_down_to_about_seven_percent_at_100k() {
        let live = 100_000;
        assert!(!scan_is_cheaper(50_000, live, 64), "50 %");
        assert!(!scan_is_cheaper(10_000, live, 64), "10 %");
        assert!(!scan_is_cheaper(8_000, live, 64), "8 %");
        assert!(scan_is_cheaper(6_000, live, 64), "6 %");
        assert!(scan_is_cheaper(1_000, live, 64), "1 %");
        assert!(scan_is_cheaper(100, live, 64), "0.1 %");
        // Nothing matching: scanning nothing is free.
        assert!(scan_is_cheaper(0, live, 64));
    }
}
