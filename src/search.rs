//! k-nearest-neighbour search over the live chunks, resolved against one snapshot.
//!
//! Invariant: every hit is resolved against the read snapshot the search took first: a
//! candidate whose vector id is not in its document's vectors row there, or whose document
//! is deleted, re-keyed or at another generation, is dropped, and the search fetches more until `k`
//! live hits come back or none are left. A superseded chunk is never returned.

use crate::error::{InputError, ReadError};
use crate::index::{self, SearchMode};
use crate::live_index::LiveIndex;
use crate::options::{Limits, Metric};
use crate::prepare::prepare_vector;
use crate::read::Snapshot;
use crate::schema::{
    self, split_vector_id, vector_id, ChunksRow, DocRow, VectorsRow, DOCS, DOC_KEYS, VECTORS,
};
use crate::version::Version;
use redb::ReadableTable;
use serde::{Deserialize, Serialize};
use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};

/// How to search. `SearchOptions::default()`: no filter, default effort, exact below the
/// size where a scan is as fast as the graph.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
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
}

impl SearchOptions {
    /// Sets the graph search width.
    pub fn ef(mut self, ef: usize) -> SearchOptions {
        self.ef = Some(ef);
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

    /// Restricts to one more document.
    pub fn document(mut self, source: impl Into<String>, id: impl Into<String>) -> SearchOptions {
        self.documents.push((source.into(), id.into()));
        self
    }
}

/// One search result: a live chunk of the snapshot the search read.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Hit {
    /// The document's source.
    pub source: String,
    /// The document id.
    pub id: String,
    /// The chunk's position in the document.
    pub position: u32,
    /// The chunk's text.
    pub text: String,
    /// The chunk's metadata.
    pub meta: serde_json::Value,
    /// The document's version.
    pub version: Version,
    /// The generation of the document's current revision (every chunk carries it).
    pub generation: u64,
    /// Cosine similarity (higher is closer) or L2 distance (lower is closer).
    pub score: f32,
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

/// The internal ids of the documents a filter allows (`None`: no filter).
fn allowed_documents(
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
        for source in &options.sources {
            for entry in docs
                .range((source.as_str(), "")..)
                .map_err(ReadError::storage)?
            {
                let (key, value) = entry.map_err(ReadError::storage)?;
                if key.value().0 != source {
                    break;
                }
                let row: DocRow = schema::decode("document row", value.value())?;
                allowed.insert(row.internal_id);
            }
        }
    }
    Ok(Some(allowed))
}

/// Chunks rows one search keeps decoded for later candidates of the same document.
const CHUNKS_CACHE: usize = 64;

/// Resolves a candidate against the snapshot; `None` if it is not a live chunk there.
/// `doc_keys` is the snapshot's `doc_keys` table, opened once per search; `chunks` caches
/// the chunks rows decoded so far in this search (hits often share a document).
fn resolve(
    snapshot: &Snapshot,
    doc_keys: &redb::ReadOnlyTable<u64, (&'static str, &'static str)>,
    chunks: &mut HashMap<u64, ChunksRow>,
    vector_id: u64,
    score: f32,
) -> Result<Option<Hit>, ReadError> {
    let (owner, _) = split_vector_id(vector_id);
    let Some((_, position)) = snapshot.vector_owner(vector_id)? else {
        return Ok(None);
    };
    let Some(key) = doc_keys.get(owner).map_err(ReadError::storage)? else {
        return Ok(None);
    };
    let (source, id) = key.value();
    let (source, id) = (source.to_string(), id.to_string());
    drop(key);
    let Some(row) = snapshot.doc_row(&source, &id)? else {
        return Ok(None);
    };
    if row.deleted || row.internal_id != owner || position >= row.chunk_count {
        return Ok(None);
    }
    // Bounded: a search that over-fetches many candidates must not keep every row.
    if chunks.len() >= CHUNKS_CACHE && !chunks.contains_key(&owner) {
        chunks.clear();
    }
    let chunks = match chunks.entry(owner) {
        Entry::Occupied(entry) => entry.into_mut(),
        Entry::Vacant(entry) => entry.insert(snapshot.chunks_row(&row)?),
    };
    if chunks.generation != row.generation {
        return Ok(None);
    }
    let Some(chunk) = chunks.chunks.get(position as usize) else {
        return Ok(None);
    };
    Ok(Some(Hit {
        version: row.version()?,
        generation: row.generation,
        meta: serde_json::from_str(&chunk.meta).unwrap_or(serde_json::Value::Null),
        text: chunk.text.clone(),
        source,
        id,
        position,
        score,
    }))
}

/// Exact search straight from the snapshot's vector table: correct and slower; used
/// until the in-memory index has loaded after open.
fn scan_snapshot(
    snapshot: &Snapshot,
    query: &[f32],
    k: usize,
    metric: Metric,
    allowed: Option<&HashSet<u64>>,
) -> Result<Vec<(u64, f32)>, ReadError> {
    let vectors = snapshot
        .txn
        .open_table(VECTORS)
        .map_err(ReadError::storage)?;
    let mut best: Vec<(f32, u64)> = Vec::new();
    let mut vector = vec![0f32; query.len()];
    for entry in vectors.iter().map_err(ReadError::storage)? {
        let (key, value) = entry.map_err(ReadError::storage)?;
        let doc = key.value();
        let row = VectorsRow::parse(value.value())?;
        if allowed.is_some_and(|a| !a.contains(&doc)) || row.dimension() != query.len() {
            continue;
        }
        for (position, slot) in row.slots().enumerate() {
            let Some(bytes) = row.vector_bytes(position) else {
                continue;
            };
            for (x, b) in vector.iter_mut().zip(bytes.chunks_exact(4)) {
                *x = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            }
            let distance = index::distance::distance(metric, query, &vector);
            best.push((distance, vector_id(doc, slot)));
            if best.len() > 4 * k.max(16) {
                best.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
                best.truncate(k);
            }
        }
    }
    best.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    best.truncate(k);
    Ok(best
        .into_iter()
        .map(|(d, id)| (id, metric.score(d)))
        .collect())
}

/// Runs a search on `snapshot` with `live` (brought up to the snapshot by the caller) or,
/// without one, by scanning the snapshot.
pub(crate) fn search(
    snapshot: &Snapshot,
    live: Option<&LiveIndex>,
    query: &[f32],
    k: usize,
    options: &SearchOptions,
    metric: Metric,
) -> Result<Vec<Hit>, ReadError> {
    if k == 0 {
        return Ok(Vec::new());
    }
    let allowed = allowed_documents(snapshot, options)?;
    if allowed.as_ref().is_some_and(HashSet::is_empty) {
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
    let doc_keys = snapshot
        .txn
        .open_table(DOC_KEYS)
        .map_err(ReadError::storage)?;
    let mut chunks: HashMap<u64, ChunksRow> = HashMap::new();
    let mut fetch = k;
    loop {
        let candidates = match live {
            Some(live) => {
                let filter = |id: u64| match &allowed {
                    None => true,
                    Some(allowed) => live.owner(id).is_some_and(|doc| allowed.contains(&doc)),
                };
                let filter_ref: &(dyn Fn(u64) -> bool + Sync) = &filter;
                live.index
                    .search(query, fetch, mode, Some(filter_ref))
                    .map_err(|e| ReadError::Input(InputError::new("query", e.to_string())))?
            }
            None => scan_snapshot(snapshot, query, fetch, metric, allowed.as_ref())?,
        };
        let exhausted = candidates.len() < fetch;
        let mut hits = Vec::with_capacity(k);
        for (vector_id, score) in candidates {
            if let Some(hit) = resolve(snapshot, &doc_keys, &mut chunks, vector_id, score)? {
                hits.push(hit);
                if hits.len() == k {
                    return Ok(hits);
                }
            }
        }
        // Fewer live hits than asked: candidates the index holds but the snapshot does not
        // (committed after it). Fetch more, unless there is nothing more to fetch.
        if exhausted || fetch >= 1 << 20 {
            return Ok(hits);
        }
        fetch = fetch.saturating_mul(4);
    }
}
