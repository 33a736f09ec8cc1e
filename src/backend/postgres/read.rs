//! Reads: `get`, the export, stats, and search through pgvector.
//!
//! Invariant: every read runs in one snapshot: a multi-statement read in one `REPEATABLE
//! READ` read-only transaction, a search in one statement. A search's candidates come from
//! pgvector's index over the `chunks` table and are joined in the same statement to their
//! document row (live, same generation), so a chunk a newer revision replaced is never
//! returned: the revision replaced the chunk rows in the transaction that changed the
//! document row, and the statement sees both or neither.

use super::{unord, PgStore};
use crate::backend::Backend;
use crate::error::ReadError;
use crate::options::Metric;
use crate::search::{check_bounds, prepare_query, SearchOptions};
use crate::text::{Analyzer, Bm25, TextOptions};
use crate::types::counters::{name, Counters};
use crate::types::Hit;
use crate::types::SkipReason;
use crate::types::{SkipRecord, Stats};
use crate::types::{StoredChunk, StoredDocument};
use crate::types::{Version, VersionKind};
use pgvector::Vector;
use postgres::types::ToSql;
use postgres::{Row, Transaction};
use std::collections::{HashMap, HashSet};

/// The default `hnsw.ef_search` (the embedded index's default search width).
const DEFAULT_EF: usize = 64;

pub(super) fn server_error(error: postgres::Error) -> ReadError {
    ReadError::Server {
        detail: super::describe(&error),
    }
}

pub(super) fn corrupted(what: &str, detail: impl Into<String>) -> ReadError {
    ReadError::Corrupted {
        what: what.to_string(),
        detail: detail.into(),
    }
}

/// A typed column, or `Corrupted` naming it (a table altered outside the store).
pub(super) fn column<'a, T: postgres::types::FromSql<'a>>(
    row: &'a Row,
    index: usize,
    what: &str,
) -> Result<T, ReadError> {
    row.try_get(index)
        .map_err(|error| corrupted(what, format!("column {index}: {error}")))
}

pub(super) fn version(kind: i16, value: i64, what: &str) -> Result<Version, ReadError> {
    let kind = u8::try_from(kind)
        .ok()
        .and_then(VersionKind::from_byte)
        .ok_or_else(|| corrupted(what, format!("unknown version kind {kind}")))?;
    Ok(Version {
        kind,
        value: unord(value),
    })
}

pub(super) fn json(text: &str, what: &str) -> Result<serde_json::Value, ReadError> {
    serde_json::from_str(text).map_err(|error| corrupted(what, format!("metadata: {error}")))
}

/// A read-only `REPEATABLE READ` transaction: one snapshot for every statement in it.
fn snapshot(client: &mut postgres::Client) -> Result<Transaction<'_>, ReadError> {
    client
        .build_transaction()
        .isolation_level(postgres::IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .map_err(server_error)
}

const DOC_COLUMNS: &str = "source, id, version_kind, version, deleted, generation, \
                           encode(content_hash, 'hex'), meta_json";

fn document(row: &Row) -> Result<StoredDocument, ReadError> {
    let what = "documents row";
    Ok(StoredDocument {
        source: column(row, 0, what)?,
        id: column(row, 1, what)?,
        version: version(column(row, 2, what)?, column(row, 3, what)?, what)?,
        deleted: column(row, 4, what)?,
        generation: column::<i64>(row, 5, what)? as u64,
        content_hash: column(row, 6, what)?,
        meta: json(column(row, 7, what)?, what)?,
        chunks: Vec::new(),
    })
}

fn chunk(row: &Row, offset: usize, with_vector: bool) -> Result<StoredChunk, ReadError> {
    let what = "chunks row";
    let vector = if with_vector {
        Some(column::<Vector>(row, offset + 5, what)?.to_vec())
    } else {
        None
    };
    Ok(StoredChunk {
        spaces: Default::default(),
        position: column::<i32>(row, offset, what)? as u32,
        text: column(row, offset + 1, what)?,
        meta: json(column(row, offset + 2, what)?, what)?,
        generation: column::<i64>(row, offset + 3, what)? as u64,
        vector_id: column::<i64>(row, offset + 4, what)? as u64,
        vector,
    })
}

pub(super) fn get(
    store: &PgStore,
    source: &str,
    id: &str,
) -> Result<Option<StoredDocument>, ReadError> {
    let mut client = store.client.lock();
    let mut txn = snapshot(&mut client)?;
    let Some(row) = txn
        .query_opt(
            &format!("SELECT {DOC_COLUMNS} FROM documents WHERE source = $1 AND id = $2"),
            &[&source, &id],
        )
        .map_err(server_error)?
    else {
        return Ok(None);
    };
    let mut doc = document(&row)?;
    for row in txn
        .query(
            "SELECT position, text, meta_json, generation, vector_id FROM chunks
             WHERE source = $1 AND id = $2 ORDER BY position",
            &[&source, &id],
        )
        .map_err(server_error)?
    {
        doc.chunks.push(chunk(&row, 0, false)?);
    }
    txn.commit().map_err(server_error)?;
    Ok(Some(doc))
}

pub(super) fn documents(store: &PgStore) -> Result<Vec<StoredDocument>, ReadError> {
    let mut client = store.client.lock();
    let mut txn = snapshot(&mut client)?;
    let mut docs: Vec<StoredDocument> = Vec::new();
    for row in txn
        .query(
            &format!("SELECT {DOC_COLUMNS} FROM documents ORDER BY source, id"),
            &[],
        )
        .map_err(server_error)?
    {
        docs.push(document(&row)?);
    }
    let mut at = 0;
    for row in txn
        .query(
            "SELECT source, id, position, text, meta_json, generation, vector_id, embedding
             FROM chunks ORDER BY source, id, position",
            &[],
        )
        .map_err(server_error)?
    {
        let source: String = column(&row, 0, "chunks row")?;
        let id: String = column(&row, 1, "chunks row")?;
        while at < docs.len() && (docs[at].source.as_str(), docs[at].id.as_str()) < (&source, &id) {
            at += 1;
        }
        match docs.get_mut(at) {
            Some(doc) if doc.source == source && doc.id == id => {
                doc.chunks.push(chunk(&row, 2, true)?)
            }
            _ => {
                return Err(corrupted(
                    "chunks row",
                    format!("{source}/{id} has chunks but no document row"),
                ))
            }
        }
    }
    txn.commit().map_err(server_error)?;
    Ok(docs)
}

pub(super) fn stats(store: &PgStore) -> Result<Stats, ReadError> {
    let mut client = store.client.lock();
    let mut txn = snapshot(&mut client)?;
    let mut counters = Counters::default();
    let mut gauges = [0u64; 4];
    for row in txn
        .query(
            "SELECT name, sum(value)::bigint FROM counters GROUP BY name",
            &[],
        )
        .map_err(server_error)?
    {
        let key: String = column(&row, 0, "counters row")?;
        let value = u64::try_from(column::<i64>(&row, 1, "counters row")?)
            .map_err(|_| corrupted("counters", format!("{key} is negative")))?;
        counters.set(&key, value);
        let gauge = [
            name::LIVE_DOCUMENTS,
            name::LIVE_TOMBSTONES,
            name::LIVE_CHUNKS,
            name::LIVE_VECTORS,
        ]
        .iter()
        .position(|g| *g == key);
        if let Some(i) = gauge {
            gauges[i] = value;
        }
    }
    let mut recent_skips = Vec::new();
    let capacity = i64::try_from(store.options.skip_log_capacity).unwrap_or(i64::MAX);
    for row in txn
        .query(
            "SELECT seq, source, id, reason, stored_kind, stored_value, incoming_kind,
                    incoming_value
             FROM (SELECT * FROM skip_log ORDER BY seq DESC LIMIT $1) AS s ORDER BY seq",
            &[&capacity],
        )
        .map_err(server_error)?
    {
        let what = "skip_log row";
        let reason: i16 = column(&row, 3, what)?;
        recent_skips.push(SkipRecord {
            seq: column::<i64>(&row, 0, what)? as u64,
            source: column(&row, 1, what)?,
            id: column(&row, 2, what)?,
            reason: u8::try_from(reason)
                .ok()
                .and_then(SkipReason::from_byte)
                .ok_or_else(|| corrupted(what, format!("unknown reason {reason}")))?,
            stored_version: version(column(&row, 4, what)?, column(&row, 5, what)?, what)?,
            incoming_version: version(column(&row, 6, what)?, column(&row, 7, what)?, what)?,
        });
    }
    let listings: i64 = column(
        &txn.query_one("SELECT count(*) FROM listings", &[])
            .map_err(server_error)?,
        0,
        "listings",
    )?;
    let model = txn
        .query_opt("SELECT value FROM meta WHERE key = 'model'", &[])
        .map_err(server_error)?
        .map(|row| column::<String>(&row, 0, "meta"))
        .transpose()?;
    txn.commit().map_err(server_error)?;
    let [documents, tombstones, chunks, vectors] = gauges;
    let skipped = counters.skipped();
    Ok(Stats {
        documents,
        tombstones,
        chunks,
        vectors,
        chunks_per_document: if documents == 0 {
            0.0
        } else {
            chunks as f64 / documents as f64
        },
        listings: listings as u64,
        equal_version_skip_share: if skipped == 0 {
            0.0
        } else {
            counters.skipped_equal_version as f64 / skipped as f64
        },
        counters,
        recent_skips,
        dimension: store.dimension(),
        metric: store.metric,
        model,
        spaces: Vec::new(),
    })
}

/// pgvector's distance operator for the metric.
fn operator(metric: Metric) -> &'static str {
    match metric {
        Metric::Cosine => "<=>",
        Metric::L2 => "<->",
        Metric::Dot => "<#>",
    }
}

/// A distance as the embedded store's score: cosine similarity, L2 distance, dot product.
fn score(metric: Metric, distance: f64) -> f32 {
    match metric {
        Metric::Cosine => (1.0 - distance) as f32,
        Metric::L2 => distance as f32,
        Metric::Dot => (-distance) as f32,
    }
}

/// The dimension, read again from `meta` while this store does not know it (another
/// process may have fixed it since this store opened).
fn known_dimension(store: &PgStore) -> Result<Option<usize>, ReadError> {
    let mut dimension = store.dimension();
    if dimension.is_none() {
        let mut client = store.client.lock();
        if let Some(row) = client
            .query_opt("SELECT value FROM meta WHERE key = 'dimension'", &[])
            .map_err(server_error)?
        {
            let text: String = column(&row, 0, "meta")?;
            dimension = Some(
                text.parse()
                    .map_err(|_| corrupted("meta", format!("dimension {text:?}")))?,
            );
            *store.dimension.write() = dimension;
        }
    }
    Ok(dimension)
}

/// The conditions every search's chunk `c` and its document row `d` meet: live, the
/// document's generation, and the options' sources, documents and metadata filter (their
/// values pushed onto `params`).
fn search_conditions(
    options: &SearchOptions,
    params: &mut Vec<Box<dyn ToSql + Sync>>,
) -> Result<Vec<String>, ReadError> {
    let mut conditions = vec![
        "NOT d.deleted".to_string(),
        "c.generation = d.generation".to_string(),
    ];
    if !options.sources.is_empty() {
        params.push(Box::new(options.sources.clone()));
        conditions.push(format!("c.source = ANY(${})", params.len()));
    }
    if !options.documents.is_empty() {
        let (sources, ids): (Vec<String>, Vec<String>) = options.documents.iter().cloned().unzip();
        params.push(Box::new(sources));
        params.push(Box::new(ids));
        conditions.push(format!(
            "(c.source, c.id) IN (SELECT * FROM unnest(${}::text[], ${}::text[]))",
            params.len() - 1,
            params.len()
        ));
    }
    if let Some(filter) = &options.filter {
        conditions.push(super::filter_sql::translate(filter, params)?);
    }
    Ok(conditions)
}

pub(super) fn search(
    store: &PgStore,
    query: &[f32],
    k: usize,
    options: &SearchOptions,
) -> Result<Vec<Hit>, ReadError> {
    check_bounds(k, options, &store.options.limits)?;
    let dimension = known_dimension(store)?;
    let query = prepare_query(query, store.metric, dimension, &store.options.limits)?;
    if k == 0 || dimension.is_none() {
        return Ok(Vec::new());
    }
    let mut client = store.client.lock();
    let mut txn = client
        .build_transaction()
        .read_only(true)
        .start()
        .map_err(server_error)?;
    let hits = vector_hits(store, &mut txn, query, k, options)?;
    txn.commit().map_err(server_error)?;
    Ok(hits)
}

/// The vector search, in the caller's transaction (its last statement: it sets the
/// planner's settings for the rest of the transaction). `query` is prepared. Per document
/// (`SearchOptions::per_document`) the statement's limit widens until its rows hold `k`
/// documents or are every live chunk ([`complete_vector_rows`]).
fn vector_hits(
    store: &PgStore,
    txn: &mut Transaction<'_>,
    query: Vec<f32>,
    k: usize,
    options: &SearchOptions,
) -> Result<Vec<Hit>, ReadError> {
    if !options.per_document {
        return vector_rows(store, txn, query, k, options.exact, options);
    }
    let mut fetch = k;
    loop {
        let rows = complete_vector_rows(store, txn, &query, fetch, options)?;
        let exhausted = rows.len() < fetch;
        let hits = crate::search::best_per_document(rows, k);
        if hits.len() == k || exhausted {
            return Ok(hits);
        }
        fetch = fetch.saturating_mul(4);
    }
}

/// The `k` nearest live chunks, or all of them if fewer: a walk of pgvector's index that
/// returns fewer rows than asked (it returns at most `ef_search`, and drops rows the
/// conditions refuse after finding them) is answered again by an exact scan.
fn complete_vector_rows(
    store: &PgStore,
    txn: &mut Transaction<'_>,
    query: &[f32],
    k: usize,
    options: &SearchOptions,
) -> Result<Vec<Hit>, ReadError> {
    let rows = vector_rows(store, txn, query.to_vec(), k, options.exact, options)?;
    if rows.len() < k && !options.exact {
        return vector_rows(store, txn, query.to_vec(), k, true, options);
    }
    Ok(rows)
}

/// The vector search's statement: the `k` nearest live chunks (`exact`: by a scan).
fn vector_rows(
    store: &PgStore,
    txn: &mut Transaction<'_>,
    query: Vec<f32>,
    k: usize,
    exact: bool,
    options: &SearchOptions,
) -> Result<Vec<Hit>, ReadError> {
    let mut params: Vec<Box<dyn ToSql + Sync>> = vec![Box::new(Vector::from(query))];
    let conditions = search_conditions(options, &mut params)?;
    // A `k` past `i64::MAX` (a raised `Limits::max_k`) wrapped negative: `LIMIT -1`.
    params.push(Box::new(i64::try_from(k).unwrap_or(i64::MAX)));
    let op = operator(store.metric);
    let sql = format!(
        "SELECT c.source, c.id, c.position, c.text, c.meta_json, d.version_kind, d.version,
                c.generation, (c.embedding {op} $1)::float8
         FROM chunks c JOIN documents d ON d.source = c.source AND d.id = c.id
         WHERE {}
         ORDER BY c.embedding {op} $1
         LIMIT ${}",
        conditions.join(" AND "),
        params.len()
    );
    let ef = options.ef.unwrap_or(DEFAULT_EF).max(k).min(1000);
    let settings = if exact {
        // The ground truth: no index, a scan of every live chunk.
        "SET LOCAL enable_indexscan = off".to_string()
    } else {
        // Without `enable_sort = off` the planner misjudges the join to the document rows
        // (it estimates one surviving row) and sorts a scan of every chunk instead of
        // walking the HNSW index: exact, and 100x slower at 40k chunks. Off, it walks the
        // index in distance order and looks each candidate's document row up by key.
        format!("SET LOCAL hnsw.ef_search = {ef}; SET LOCAL enable_sort = off")
    };
    txn.batch_execute(&settings).map_err(server_error)?;
    let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p.as_ref()).collect();
    let rows = txn.query(&sql, &refs).map_err(server_error)?;
    let what = "search row";
    rows.iter()
        .map(|row| {
            Ok(Hit {
                source: column(row, 0, what)?,
                id: column(row, 1, what)?,
                position: column::<i32>(row, 2, what)? as u32,
                text: column(row, 3, what)?,
                meta: json(column(row, 4, what)?, what)?,
                version: version(column(row, 5, what)?, column(row, 6, what)?, what)?,
                generation: column::<i64>(row, 7, what)? as u64,
                score: score(store.metric, column(row, 8, what)?),
            })
        })
        .collect()
}

/// The store's analysis, or `NoTextIndex`.
fn analyzer(store: &PgStore) -> Result<&Analyzer, ReadError> {
    store.text.as_deref().ok_or_else(|| ReadError::NoTextIndex {
        detail: "this PostgreSQL store keeps no text index (it was opened with \
                 Options::text_index(false), or by a build without one, since)"
            .to_string(),
    })
}

/// `NoTextIndex` unless the snapshot's `meta` records the analysis this store opened
/// with: a writer opened since with `Options::text_index(false)` removed the rows (and
/// the record), and one with another analysis rebuilt them.
fn check_recorded_analysis(
    txn: &mut Transaction<'_>,
    analyzer: &Analyzer,
) -> Result<(), ReadError> {
    let recorded = txn
        .query_opt("SELECT value FROM meta WHERE key = 'text_analyzer'", &[])
        .map_err(server_error)?;
    let Some(row) = recorded else {
        return Err(ReadError::NoTextIndex {
            detail: "the store's text index was removed since this store opened (a writer \
                     opened it with Options::text_index(false)); open it again"
                .to_string(),
        });
    };
    let json: String = column(&row, 0, "meta")?;
    let options: TextOptions = serde_json::from_str(&json)
        .map_err(|e| corrupted("text analyzer", format!("the recorded analysis: {e}")))?;
    if &options != analyzer.options() {
        return Err(ReadError::NoTextIndex {
            detail: "the store's text index was rebuilt with another analysis since this \
                     store opened; open it again"
                .to_string(),
        });
    }
    Ok(())
}

/// [`Store::search_text`](crate::Store::search_text) on PostgreSQL: BM25 scored in Rust
/// with the embedded store's functions, over postings read in one `REPEATABLE READ`
/// snapshot (totals, document frequencies and the live, matching chunks' postings).
pub(super) fn search_text(
    store: &PgStore,
    query: &str,
    k: usize,
    options: &SearchOptions,
) -> Result<Vec<Hit>, ReadError> {
    check_bounds(k, options, &store.options.limits)?;
    crate::text::check_query(query, &store.options.limits)?;
    options.bm25.check()?;
    let analyzer = analyzer(store)?;
    if k == 0 {
        return Ok(Vec::new());
    }
    let mut client = store.client.lock();
    let mut txn = snapshot(&mut client)?;
    let hits = text_hits(&mut txn, analyzer, query, k, options)?;
    txn.commit().map_err(server_error)?;
    Ok(hits)
}

/// The `k` best live chunks for `query` by BM25, in the caller's snapshot. As the embedded
/// index: `N` and the average length over every live chunk, a term's document frequency
/// over every live chunk, scores summed over the query's distinct terms in sorted order,
/// ties by vector id.
fn text_hits(
    txn: &mut Transaction<'_>,
    analyzer: &Analyzer,
    query: &str,
    k: usize,
    options: &SearchOptions,
) -> Result<Vec<Hit>, ReadError> {
    check_recorded_analysis(txn, analyzer)?;
    let (terms, _) = analyzer.term_counts(query);
    let mut terms: Vec<String> = terms.into_keys().collect();
    terms.sort();
    if terms.is_empty() || k == 0 {
        return Ok(Vec::new());
    }
    let what = "chunk_lengths";
    let totals = txn
        .query_one(
            "SELECT count(*), coalesce(sum(length), 0)::bigint FROM chunk_lengths",
            &[],
        )
        .map_err(server_error)?;
    let n = column::<i64>(&totals, 0, what)?.max(0) as u64;
    let total_terms = column::<i64>(&totals, 1, what)?.max(0) as u64;
    if n == 0 {
        return Ok(Vec::new());
    }
    let avg_len = total_terms as f32 / n as f32;
    let mut df: HashMap<String, u64> = HashMap::new();
    for row in txn
        .query(
            "SELECT term, count(*) FROM chunk_terms WHERE term = ANY($1) GROUP BY term",
            &[&terms],
        )
        .map_err(server_error)?
    {
        let what = "chunk_terms";
        df.insert(
            column(&row, 0, what)?,
            column::<i64>(&row, 1, what)?.max(0) as u64,
        );
    }
    let mut params: Vec<Box<dyn ToSql + Sync>> = vec![Box::new(terms.clone())];
    let restricted =
        !options.sources.is_empty() || !options.documents.is_empty() || options.filter.is_some();
    let sql = if restricted {
        let conditions = search_conditions(options, &mut params)?;
        format!(
            "SELECT t.term, t.vector_id, t.tf, l.length
             FROM chunk_terms t
                  JOIN chunk_lengths l ON l.vector_id = t.vector_id
                  JOIN chunks c ON c.vector_id = t.vector_id
                  JOIN documents d ON d.source = c.source AND d.id = c.id
             WHERE t.term = ANY($1) AND {}",
            conditions.join(" AND ")
        )
    } else {
        // Every chunk row is live (a revision deletes its document's old chunk rows, a
        // tombstone all of them) and text rows exist only for chunk rows, so without
        // restrictions the postings need no join to the chunks (the planner misjudges
        // that join: see docs/benchmarks.md). The hits are still read with the liveness
        // conditions below.
        "SELECT t.term, t.vector_id, t.tf, l.length
         FROM chunk_terms t JOIN chunk_lengths l ON l.vector_id = t.vector_id
         WHERE t.term = ANY($1)"
            .to_string()
    };
    let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p.as_ref()).collect();
    let mut postings: HashMap<String, Vec<(i64, u32, u32)>> = HashMap::new();
    for row in txn.query(&sql, &refs).map_err(server_error)? {
        let what = "chunk_terms";
        let tf = u32::try_from(column::<i32>(&row, 2, what)?)
            .map_err(|_| corrupted(what, "a negative term count"))?;
        let len = u32::try_from(column::<i32>(&row, 3, what)?)
            .map_err(|_| corrupted("chunk_lengths", "a negative length"))?;
        postings
            .entry(column(&row, 0, what)?)
            .or_default()
            .push((column(&row, 1, what)?, tf, len));
    }
    let mut scores: HashMap<i64, f32> = HashMap::new();
    for term in &terms {
        let (Some(list), Some(&df)) = (postings.get(term), df.get(term)) else {
            continue;
        };
        let idf = Bm25::idf(n, df);
        for &(id, tf, len) in list {
            *scores.entry(id).or_insert(0.0) += options.bm25.term_score(idf, tf, len, avg_len);
        }
    }
    let mut ranked: Vec<(i64, f32)> = scores.into_iter().collect();
    ranked.sort_unstable_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    if !options.per_document {
        ranked.truncate(k);
        return resolve_ranked(txn, ranked);
    }
    // Per document: the ranking is read in widening windows until `k` documents have
    // their best chunk, or it is done.
    let mut seen: HashSet<(String, String)> = HashSet::new();
    let mut hits = Vec::new();
    let (mut start, mut window) = (0, k);
    while start < ranked.len() {
        let end = start.saturating_add(window).min(ranked.len());
        for hit in resolve_ranked(txn, ranked[start..end].to_vec())? {
            if seen.insert((hit.source.clone(), hit.id.clone())) {
                hits.push(hit);
                if hits.len() == k {
                    return Ok(hits);
                }
            }
        }
        start = end;
        window = window.saturating_mul(4);
    }
    Ok(hits)
}

/// The live chunks of `ranked` (vector id, BM25 score), in its order, with its scores.
fn resolve_ranked(
    txn: &mut Transaction<'_>,
    ranked: Vec<(i64, f32)>,
) -> Result<Vec<Hit>, ReadError> {
    if ranked.is_empty() {
        return Ok(Vec::new());
    }
    let ids: Vec<i64> = ranked.iter().map(|r| r.0).collect();
    let mut found: HashMap<i64, Hit> = HashMap::new();
    let what = "search row";
    for row in txn
        .query(
            "SELECT c.vector_id, c.source, c.id, c.position, c.text, c.meta_json,
                    d.version_kind, d.version, c.generation
             FROM chunks c JOIN documents d ON d.source = c.source AND d.id = c.id
             WHERE c.vector_id = ANY($1) AND NOT d.deleted AND c.generation = d.generation",
            &[&ids],
        )
        .map_err(server_error)?
    {
        found.insert(
            column(&row, 0, what)?,
            Hit {
                source: column(&row, 1, what)?,
                id: column(&row, 2, what)?,
                position: column::<i32>(&row, 3, what)? as u32,
                text: column(&row, 4, what)?,
                meta: json(column(&row, 5, what)?, what)?,
                version: version(column(&row, 6, what)?, column(&row, 7, what)?, what)?,
                generation: column::<i64>(&row, 8, what)? as u64,
                score: 0.0,
            },
        );
    }
    ranked
        .into_iter()
        .map(|(id, score)| {
            let mut hit = found.remove(&id).ok_or_else(|| {
                corrupted(
                    "chunk_terms",
                    format!("vector id {id} has text rows but no live chunk"),
                )
            })?;
            hit.score = score;
            Ok(hit)
        })
        .collect()
}

/// [`Store::search_hybrid`](crate::Store::search_hybrid) on PostgreSQL: the text and the
/// vector ranking read in one `REPEATABLE READ` snapshot, merged by the embedded store's
/// fusion.
pub(super) fn search_hybrid(
    store: &PgStore,
    text: &str,
    vector: &[f32],
    k: usize,
    options: &SearchOptions,
) -> Result<Vec<Hit>, ReadError> {
    check_bounds(k, options, &store.options.limits)?;
    crate::text::check_query(text, &store.options.limits)?;
    options.fusion.check()?;
    options.bm25.check()?;
    let analyzer = analyzer(store)?;
    let dimension = known_dimension(store)?;
    let query = prepare_query(vector, store.metric, dimension, &store.options.limits)?;
    if k == 0 {
        return Ok(Vec::new());
    }
    let mut depth = crate::text::fusion_depth(k, store.options.limits.max_k);
    let higher = store.metric.higher_is_closer();
    // Per document, the rankings are of chunks (each document's best fused chunk is kept
    // after the fusion), widened until they hold `k` documents or run out.
    let ranking = if options.per_document {
        std::borrow::Cow::Owned(options.clone().per_document(false))
    } else {
        std::borrow::Cow::Borrowed(options)
    };
    let mut client = store.client.lock();
    let mut txn = snapshot(&mut client)?;
    let hits = loop {
        let text_hits = text_hits(&mut txn, analyzer, text, depth, &ranking)?;
        let vector_hits = match dimension {
            None => Vec::new(),
            // Per document, a ranking shorter than `depth` must be the whole ranking.
            Some(_) if options.per_document => {
                complete_vector_rows(store, &mut txn, &query, depth, &ranking)?
            }
            Some(_) => vector_hits(store, &mut txn, query.clone(), depth, &ranking)?,
        };
        if !options.per_document {
            break crate::text::fuse(vector_hits, text_hits, k, options.fusion, higher);
        }
        let exhausted = vector_hits.len() < depth && text_hits.len() < depth;
        let fused = crate::text::fuse(vector_hits, text_hits, usize::MAX, options.fusion, higher);
        let hits = crate::search::best_per_document(fused, k);
        if hits.len() == k || exhausted {
            break hits;
        }
        depth = depth.saturating_mul(4);
    };
    txn.commit().map_err(server_error)?;
    Ok(hits)
}

/// What [`Store::plan`](crate::Store::plan) needs, read in one snapshot: the stored state
/// the guard compares with (the document's row, or for an id without one the highest
/// listing of its source not older than `incoming` that omits it, as a tombstone), and the
/// text hashes of the live revision's chunks (those have a vector to reuse).
pub(super) fn plan_state(
    store: &PgStore,
    source: &str,
    id: &str,
    incoming: Version,
) -> Result<crate::policy::plan::PlanState, ReadError> {
    let mut client = store.client.lock();
    let mut txn = snapshot(&mut client)?;
    let what = "documents row";
    let row = txn
        .query_opt(
            "SELECT version_kind, version, deleted, content_hash FROM documents
             WHERE source = $1 AND id = $2",
            &[&source, &id],
        )
        .map_err(server_error)?;
    let state = match row {
        Some(row) => {
            let hash: &[u8] = column(&row, 3, what)?;
            let hash: crate::policy::guard::ContentHash = hash
                .try_into()
                .map_err(|_| corrupted(what, "a content hash not of 32 bytes"))?;
            let stored = crate::policy::guard::Stored {
                version: version(column(&row, 0, what)?, column(&row, 1, what)?, what)?,
                deleted: column(&row, 2, what)?,
                content_key: crate::policy::guard::content_key(&hash),
            };
            let mut texts = std::collections::HashSet::new();
            if !stored.deleted {
                for row in txn
                    .query(
                        "SELECT text_hash FROM chunks WHERE source = $1 AND id = $2",
                        &[&source, &id],
                    )
                    .map_err(server_error)?
                {
                    let hash: &[u8] = column(&row, 0, "chunks row")?;
                    texts.insert(
                        hash.try_into()
                            .map_err(|_| corrupted("chunks row", "a text hash not of 32 bytes"))?,
                    );
                }
            }
            (Some(stored), texts)
        }
        None => {
            let row = txn
                .query_opt(
                    "SELECT l.version_kind, l.version FROM listings l
                     WHERE l.source = $1 AND l.version >= $2
                       AND NOT EXISTS (SELECT 1 FROM listing_members m
                                       WHERE m.source = l.source AND m.version = l.version
                                         AND m.id = $3)
                     ORDER BY l.version DESC LIMIT 1",
                    &[&source, &super::ord(incoming.value), &id],
                )
                .map_err(server_error)?;
            let what = "listings row";
            let stored = match row {
                Some(row) => Some(crate::policy::guard::Stored::tombstone(version(
                    column(&row, 0, what)?,
                    column(&row, 1, what)?,
                    what,
                )?)),
                None => None,
            };
            (stored, std::collections::HashSet::new())
        }
    };
    txn.commit().map_err(server_error)?;
    Ok(state)
}

/// Every listing with its members, by `(source, version)`, in one snapshot.
pub(super) fn listings(store: &PgStore) -> Result<Vec<crate::types::Listing>, ReadError> {
    let mut client = store.client.lock();
    let mut txn = snapshot(&mut client)?;
    let what = "listings row";
    let mut out = Vec::new();
    for row in txn
        .query(
            "SELECT l.source, l.version_kind, l.version,
                    coalesce(array_agg(m.id ORDER BY m.id) FILTER (WHERE m.id IS NOT NULL),
                             '{}')
             FROM listings l LEFT JOIN listing_members m
                  ON m.source = l.source AND m.version = l.version
             GROUP BY l.source, l.version_kind, l.version
             ORDER BY l.source, l.version",
            &[],
        )
        .map_err(server_error)?
    {
        out.push(crate::types::Listing {
            source: column(&row, 0, what)?,
            version: version(column(&row, 1, what)?, column(&row, 2, what)?, what)?,
            present: column(&row, 3, what)?,
        });
    }
    txn.commit().map_err(server_error)?;
    Ok(out)
}
