//! Reads: `get`, the export, stats, and search through pgvector.
//!
//! Invariant: every read runs in one snapshot: a multi-statement read in one `REPEATABLE
//! READ` read-only transaction, a search in one statement. A search's candidates come from
//! pgvector's index over the `chunks` table and are joined in the same statement to their
//! document row (live, same generation), so a chunk a newer revision replaced is never
//! returned: the revision replaced the chunk rows in the transaction that changed the
//! document row, and the statement sees both or neither.

use super::{unord, PgStore};
use crate::counters::{name, Counters};
use crate::error::ReadError;
use crate::guard::SkipReason;
use crate::options::Metric;
use crate::read::{StoredChunk, StoredDocument};
use crate::search::{check_bounds, prepare_query, Hit, SearchOptions};
use crate::stats::{SkipRecord, Stats};
use crate::version::{Version, VersionKind};
use pgvector::Vector;
use postgres::types::ToSql;
use postgres::{Row, Transaction};

/// The default `hnsw.ef_search` (the embedded index's default search width).
const DEFAULT_EF: usize = 64;

pub(super) fn server_error(error: postgres::Error) -> ReadError {
    ReadError::Server {
        detail: super::write::describe(&error),
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

pub(super) fn search(
    store: &PgStore,
    query: &[f32],
    k: usize,
    options: &SearchOptions,
) -> Result<Vec<Hit>, ReadError> {
    check_bounds(k, options, &store.options.limits)?;
    let mut dimension = store.dimension();
    if dimension.is_none() {
        // Another process may have fixed it since this store opened.
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
    let query = prepare_query(query, store.metric, dimension, &store.options.limits)?;
    if k == 0 || dimension.is_none() {
        return Ok(Vec::new());
    }
    let mut params: Vec<Box<dyn ToSql + Sync>> = vec![Box::new(Vector::from(query))];
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
        conditions.push(super::filter_sql::translate(filter, &mut params)?);
    }
    params.push(Box::new(k as i64));
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
    let mut client = store.client.lock();
    let mut txn = client
        .build_transaction()
        .read_only(true)
        .start()
        .map_err(server_error)?;
    let settings = if options.exact {
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
    txn.commit().map_err(server_error)?;
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

/// What [`Store::plan`](crate::Store::plan) needs, read in one snapshot: the stored state
/// the guard compares with (the document's row, or for an id without one the highest
/// listing of its source not older than `incoming` that omits it, as a tombstone), and the
/// text hashes of the live revision's chunks (those have a vector to reuse).
pub(super) fn plan_state(
    store: &PgStore,
    source: &str,
    id: &str,
    incoming: Version,
) -> Result<crate::plan::PlanState, ReadError> {
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
            let stored = crate::guard::Stored {
                version: version(column(&row, 0, what)?, column(&row, 1, what)?, what)?,
                deleted: column(&row, 2, what)?,
                content_hash: hash
                    .try_into()
                    .map_err(|_| corrupted(what, "a content hash not of 32 bytes"))?,
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
                Some(row) => Some(crate::guard::Stored::tombstone(version(
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
pub(super) fn listings(store: &PgStore) -> Result<Vec<crate::history::Listing>, ReadError> {
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
        out.push(crate::history::Listing {
            source: column(&row, 0, what)?,
            version: version(column(&row, 1, what)?, column(&row, 2, what)?, what)?,
            present: column(&row, 3, what)?,
        });
    }
    txn.commit().map_err(server_error)?;
    Ok(out)
}
