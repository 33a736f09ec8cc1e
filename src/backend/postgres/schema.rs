//! The store's tables in one PostgreSQL schema, and opening them.
//!
//! - `meta(key, value)`: `metric`, `dimension`, `model`, recorded once.
//! - `documents(source, id, ...)`: one row per document, live or tombstone (the guard's
//!   stored state; versions as order-preserving `bigint`s, see `ord`).
//! - `chunks(source, id, position, ...)`: a live revision's chunks, each with its vector
//!   (`vector`, typed `vector(d)` once the dimension is fixed) and a never-reused vector id;
//!   pgvector's HNSW index on `embedding` for the store's metric.
//! - `listings(source, version, ...)` and `listing_members(source, version, id)`: retain.
//! - `counters(name, shard, value)`: counter totals, spread over shards by the writing
//!   backend's pid so that concurrent writers do not queue on one row; a counter is the
//!   sum of its shards.
//! - `skip_log(seq, ...)`: recent refusals, trimmed to the skip-log capacity.
//! - sequences `generation_seq`, `vector_seq`, `ticket_seq`.
//! - the text index: `chunk_lengths(vector_id, length)` (one row
//!   per live chunk: its number of terms) and `chunk_terms(term, vector_id, tf)` (each
//!   distinct term of a live chunk with its count), both keyed by the chunk's vector id and
//!   removed with it (`ON DELETE CASCADE`), written by the transaction that writes the
//!   chunk; `meta`'s `text_analyzer` records the analysis (`TextOptions` as JSON). A store
//!   without them (made by an earlier build) gets them on a writer's open, filled from its
//!   chunks in the open's transaction (`text_setup`).

use super::{check_schema_name, quote_ident, PgStore};
use crate::address::redact_address as redact;
use crate::error::{InputError, OpenError};
use crate::options::Metric;
use crate::options::Options;
use crate::text::{Analyzer, Terms, TextOptions};
use parking_lot::{Mutex, RwLock};
use std::sync::Arc;

const TABLES: &str = "
CREATE TABLE IF NOT EXISTS meta (key text PRIMARY KEY, value text NOT NULL);
CREATE TABLE IF NOT EXISTS documents (
    source text NOT NULL,
    id text NOT NULL,
    version_kind smallint NOT NULL,
    version bigint NOT NULL,
    deleted boolean NOT NULL,
    content_hash bytea NOT NULL,
    generation bigint NOT NULL,
    chunk_count integer NOT NULL,
    meta_json text NOT NULL,
    meta jsonb NOT NULL,
    PRIMARY KEY (source, id)
);
CREATE TABLE IF NOT EXISTS chunks (
    source text NOT NULL,
    id text NOT NULL,
    position integer NOT NULL,
    generation bigint NOT NULL,
    vector_id bigint NOT NULL UNIQUE,
    text text NOT NULL,
    text_hash bytea NOT NULL,
    meta_json text NOT NULL,
    meta jsonb NOT NULL,
    embedding vector NOT NULL,
    PRIMARY KEY (source, id, position),
    FOREIGN KEY (source, id) REFERENCES documents (source, id)
);
CREATE TABLE IF NOT EXISTS listings (
    source text NOT NULL,
    version bigint NOT NULL,
    version_kind smallint NOT NULL,
    members_hash bytea NOT NULL,
    present_count bigint NOT NULL,
    PRIMARY KEY (source, version)
);
CREATE TABLE IF NOT EXISTS listing_members (
    source text NOT NULL,
    version bigint NOT NULL,
    id text NOT NULL,
    PRIMARY KEY (source, version, id)
);
CREATE TABLE IF NOT EXISTS counters (
    name text NOT NULL,
    shard integer NOT NULL,
    value bigint NOT NULL,
    PRIMARY KEY (name, shard)
);
CREATE TABLE IF NOT EXISTS skip_log (
    seq bigserial PRIMARY KEY,
    source text NOT NULL,
    id text NOT NULL,
    reason smallint NOT NULL,
    stored_kind smallint NOT NULL,
    stored_value bigint NOT NULL,
    incoming_kind smallint NOT NULL,
    incoming_value bigint NOT NULL
);
CREATE SEQUENCE IF NOT EXISTS generation_seq;
CREATE SEQUENCE IF NOT EXISTS vector_seq MINVALUE 0 START 0;
CREATE SEQUENCE IF NOT EXISTS ticket_seq;
";

/// The text index's tables, created by a writer's open only when missing: `CREATE INDEX IF
/// NOT EXISTS` takes a share lock on its table even when the index exists, which would
/// deadlock an open (holding it, then waiting for the dimension's lock) against a writer
/// (holding the dimension's lock, inserting text rows).
const TEXT_TABLES: &str = "
CREATE TABLE IF NOT EXISTS chunk_lengths (
    vector_id bigint PRIMARY KEY REFERENCES chunks (vector_id) ON DELETE CASCADE,
    length integer NOT NULL
);
CREATE TABLE IF NOT EXISTS chunk_terms (
    term text NOT NULL,
    vector_id bigint NOT NULL REFERENCES chunks (vector_id) ON DELETE CASCADE,
    tf integer NOT NULL,
    PRIMARY KEY (term, vector_id)
);
CREATE INDEX IF NOT EXISTS chunk_terms_vector_id ON chunk_terms (vector_id);
";

/// The metric's name as recorded in `meta`.
pub(super) fn metric_name(metric: Metric) -> &'static str {
    match metric {
        Metric::Cosine => "cosine",
        Metric::L2 => "l2",
        Metric::Dot => "dot",
    }
}

fn metric_from_name(name: &str) -> Option<Metric> {
    match name {
        "cosine" => Some(Metric::Cosine),
        "l2" => Some(Metric::L2),
        "dot" => Some(Metric::Dot),
        _ => None,
    }
}

/// pgvector's operator class for the metric's HNSW index.
fn opclass(metric: Metric) -> &'static str {
    match metric {
        Metric::Cosine => "vector_cosine_ops",
        Metric::L2 => "vector_l2_ops",
        Metric::Dot => "vector_ip_ops",
    }
}

/// Fixes the dimension inside the caller's transaction: records it, types the vector
/// column `vector(d)`, and builds the HNSW index for the metric. The caller holds the
/// dimension lock.
pub(super) fn fix_dimension<C: postgres::GenericClient>(
    client: &mut C,
    dimension: usize,
    metric: Metric,
    options: &Options,
) -> Result<(), postgres::Error> {
    client.execute(
        "INSERT INTO meta (key, value) VALUES ('dimension', $1)",
        &[&dimension.to_string()],
    )?;
    client.batch_execute(&format!(
        "ALTER TABLE chunks ALTER COLUMN embedding TYPE vector({dimension});
         CREATE INDEX IF NOT EXISTS chunks_embedding_hnsw ON chunks
             USING hnsw (embedding {}) WITH (m = {}, ef_construction = {});",
        opclass(metric),
        options.index.m,
        options.index.ef_construction,
    ))
}

/// The advisory-lock key serialising the fixing of the dimension (two-key form: its own
/// key space, apart from the per-document locks).
pub(super) const DIMENSION_LOCK: (i32, i32) = (0x5244_4200, 1);
/// The lock serialising schema creation.
const SCHEMA_LOCK: (i32, i32) = (0x5244_4200, 2);

/// Opens the store in `schema`. A writer creates what is missing and records what the
/// options add; a `read_only` open requires the store to exist and writes nothing (it only
/// checks the options against what is recorded).
pub(super) fn open(
    url: &str,
    schema: &str,
    options: Options,
    read_only: bool,
) -> Result<PgStore, OpenError> {
    check_schema_name(schema)?;
    let shown = redact(url);
    let server = |error: postgres::Error| OpenError::Server {
        url: shown.clone(),
        detail: super::describe(&error),
    };
    let mut client = postgres::Client::connect(url, postgres::NoTls).map_err(server)?;
    // The extension first, in the database's default schema (`public`), where every
    // store's schema finds the `vector` type through its search path.
    let exists = client
        .query_opt("SELECT 1 FROM pg_extension WHERE extname = 'vector'", &[])
        .map_err(server)?
        .is_some();
    if !exists && read_only {
        return Err(OpenError::NotFound {
            path: format!("{shown} (schema {schema})").into(),
        });
    }
    if !exists {
        client
            .batch_execute("CREATE EXTENSION IF NOT EXISTS vector")
            .map_err(server)?;
    }
    set_search_path(&mut client, schema).map_err(server)?;
    let quoted = quote_ident(schema);
    let (metric, dimension, model, text) = {
        let mut txn = client.transaction().map_err(server)?;
        txn.execute(
            "SELECT pg_advisory_xact_lock($1, $2)",
            &[&SCHEMA_LOCK.0, &SCHEMA_LOCK.1],
        )
        .map_err(server)?;
        if (read_only || !options.create_if_missing)
            && txn
                .query_opt("SELECT 1 FROM pg_namespace WHERE nspname = $1", &[&schema])
                .map_err(server)?
                .is_none()
        {
            return Err(OpenError::NotFound {
                path: format!("{shown} (schema {schema})").into(),
            });
        }
        if !read_only {
            txn.batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS {quoted}"))
                .map_err(server)?;
            txn.batch_execute(TABLES).map_err(server)?;
            let text_tables = txn
                .query_one(
                    "SELECT to_regclass($1) IS NOT NULL AND to_regclass($2) IS NOT NULL
                            AND to_regclass($3) IS NOT NULL",
                    &[
                        &format!("{quoted}.chunk_lengths"),
                        &format!("{quoted}.chunk_terms"),
                        &format!("{quoted}.chunk_terms_vector_id"),
                    ],
                )
                .and_then(|row| row.try_get::<_, bool>(0))
                .map_err(server)?;
            if !text_tables {
                txn.batch_execute(TEXT_TABLES).map_err(server)?;
            }
            txn.execute(
                "SELECT pg_advisory_xact_lock($1, $2)",
                &[&DIMENSION_LOCK.0, &DIMENSION_LOCK.1],
            )
            .map_err(server)?;
        }
        let recorded = |txn: &mut postgres::Transaction<'_>, key: &str| {
            txn.query_opt("SELECT value FROM meta WHERE key = $1", &[&key])
                .and_then(|row| row.map(|row| row.try_get::<_, String>(0)).transpose())
        };
        let metric = match recorded(&mut txn, "metric").map_err(server)? {
            Some(name) => {
                let stored = metric_from_name(&name).ok_or_else(|| OpenError::Corrupted {
                    path: shown.clone().into(),
                    what: "meta".into(),
                    detail: format!("unknown metric {name:?}"),
                })?;
                if let Some(requested) = options.metric.filter(|m| *m != stored) {
                    return Err(OpenError::Mismatch {
                        field: "metric",
                        stored: name,
                        requested: metric_name(requested).into(),
                    });
                }
                stored
            }
            None if read_only => options.metric.unwrap_or_default(),
            None => {
                let metric = options.metric.unwrap_or_default();
                txn.execute(
                    "INSERT INTO meta (key, value) VALUES ('metric', $1)",
                    &[&metric_name(metric)],
                )
                .map_err(server)?;
                metric
            }
        };
        let mut model = recorded(&mut txn, "model").map_err(server)?;
        match (&model, &options.model) {
            (Some(stored), Some(requested)) if stored != requested => {
                return Err(OpenError::Mismatch {
                    field: "model",
                    stored: stored.clone(),
                    requested: requested.clone(),
                })
            }
            (None, Some(requested)) if !read_only => {
                txn.execute(
                    "INSERT INTO meta (key, value) VALUES ('model', $1)",
                    &[requested],
                )
                .map_err(server)?;
                model = Some(requested.clone());
            }
            _ => {}
        }
        let dimension = match recorded(&mut txn, "dimension").map_err(server)? {
            Some(text) => {
                let stored: usize = text.parse().map_err(|_| OpenError::Corrupted {
                    path: shown.clone().into(),
                    what: "meta".into(),
                    detail: format!("dimension {text:?} is not a number"),
                })?;
                if let Some(requested) = options.dimension.filter(|d| *d != stored) {
                    return Err(OpenError::Mismatch {
                        field: "dimension",
                        stored: stored.to_string(),
                        requested: requested.to_string(),
                    });
                }
                Some(stored)
            }
            None => match options.dimension {
                Some(0) => {
                    return Err(InputError::new("dimension", "must be at least 1").into());
                }
                Some(_) if read_only => None,
                Some(dimension) => {
                    fix_dimension(&mut txn, dimension, metric, &options).map_err(server)?;
                    Some(dimension)
                }
                None => None,
            },
        };
        let text = if read_only {
            recorded(&mut txn, "text_analyzer")
                .map_err(server)?
                .and_then(|json| serde_json::from_str::<TextOptions>(&json).ok())
        } else {
            text_setup(&mut txn, &options, &shown, &server)?
        };
        txn.commit().map_err(server)?;
        (metric, dimension, model, text)
    };
    Ok(PgStore {
        client: Mutex::new(client),
        path: shown.clone().into(),
        read_only,
        model,
        url: shown,
        schema: schema.to_string(),
        options,
        metric,
        dimension: RwLock::new(dimension),
        text: text.map(|options| Arc::new(Analyzer::new(&options))),
    })
}

/// Brings the text index in line with a writer's options inside the open's transaction:
/// none kept (`Options::text_index(false)`): its rows and record removed; otherwise the
/// analysis the options ask for (or the recorded one, or the default) recorded, and every
/// chunk without its rows (a store an earlier build made) or every chunk (the analysis
/// changed) analysed and written. Returns the analysis kept.
///
/// A record that does not decode counts as none (the rows are rebuilt from the chunks).
fn text_setup(
    txn: &mut postgres::Transaction<'_>,
    options: &Options,
    shown: &str,
    server: &impl Fn(postgres::Error) -> OpenError,
) -> Result<Option<TextOptions>, OpenError> {
    text_setup_rows(txn, options).map_err(|e| match e {
        SetupError::Server(e) => server(e),
        SetupError::Encode(detail) => OpenError::Corrupted {
            path: shown.into(),
            what: "meta".into(),
            detail,
        },
    })
}

/// What [`text_setup_rows`] can fail with.
enum SetupError {
    Server(postgres::Error),
    Encode(String),
}

impl From<postgres::Error> for SetupError {
    fn from(error: postgres::Error) -> SetupError {
        SetupError::Server(error)
    }
}

fn text_setup_rows(
    txn: &mut postgres::Transaction<'_>,
    options: &Options,
) -> Result<Option<TextOptions>, SetupError> {
    let recorded_json: Option<String> = txn
        .query_opt("SELECT value FROM meta WHERE key = 'text_analyzer'", &[])?
        .map(|row| row.try_get::<_, String>(0))
        .transpose()?;
    let recorded: Option<TextOptions> = recorded_json
        .as_deref()
        .and_then(|json| serde_json::from_str(json).ok());
    if !options.text_index {
        if recorded_json.is_some() {
            txn.batch_execute(
                "DELETE FROM meta WHERE key = 'text_analyzer';
                 DELETE FROM chunk_terms; DELETE FROM chunk_lengths",
            )?;
        }
        return Ok(None);
    }
    let wanted = options
        .text
        .clone()
        .or_else(|| recorded.clone())
        .unwrap_or_default();
    if recorded.as_ref() != Some(&wanted) {
        // DELETE, not TRUNCATE: no table lock for writers to queue behind (and deadlock
        // with, as this open holds the dimension's lock).
        txn.batch_execute("DELETE FROM chunk_terms; DELETE FROM chunk_lengths")?;
        let json = serde_json::to_string(&wanted).map_err(|e| SetupError::Encode(e.to_string()))?;
        txn.execute(
            "INSERT INTO meta (key, value) VALUES ('text_analyzer', $1)
             ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
            &[&json],
        )?;
    }
    let analyzer = Analyzer::new(&wanted);
    // Every chunk without its text rows, a block at a time.
    loop {
        let rows = txn.query(
            "SELECT c.vector_id, c.text FROM chunks c
             WHERE NOT EXISTS (SELECT 1 FROM chunk_lengths l WHERE l.vector_id = c.vector_id)
             ORDER BY c.vector_id LIMIT 1000",
            &[],
        )?;
        if rows.is_empty() {
            break;
        }
        let mut chunks = Vec::with_capacity(rows.len());
        for row in &rows {
            chunks.push((row.try_get::<_, i64>(0)?, row.try_get::<_, &str>(1)?));
        }
        write_text_rows(txn, &analyzer, &chunks)?;
    }
    Ok(Some(wanted))
}

/// Writes the text rows (`chunk_lengths`, `chunk_terms`) of chunks just written, each
/// given by its vector id and text, analysed by `analyzer`.
pub(super) fn write_text_rows<C: postgres::GenericClient>(
    client: &mut C,
    analyzer: &Analyzer,
    chunks: &[(i64, &str)],
) -> Result<(), postgres::Error> {
    if chunks.is_empty() {
        return Ok(());
    }
    let mut terms = Terms::default();
    let mut ids = Vec::with_capacity(chunks.len());
    let mut lengths = Vec::with_capacity(chunks.len());
    let (mut term_ids, mut term_texts, mut tfs) = (Vec::new(), Vec::new(), Vec::new());
    for &(id, text) in chunks {
        terms.analyze(analyzer, text);
        ids.push(id);
        lengths.push(i32::try_from(terms.len()).unwrap_or(i32::MAX));
        for (term, tf) in terms.counts() {
            term_ids.push(id);
            term_texts.push(term.to_string());
            tfs.push(i32::try_from(tf).unwrap_or(i32::MAX));
        }
    }
    client.execute(
        "INSERT INTO chunk_lengths (vector_id, length)
         SELECT * FROM unnest($1::bigint[], $2::int[])",
        &[&ids, &lengths],
    )?;
    if !term_ids.is_empty() {
        client.execute(
            "INSERT INTO chunk_terms (vector_id, term, tf)
             SELECT * FROM unnest($1::bigint[], $2::text[], $3::int[])",
            &[&term_ids, &term_texts, &tfs],
        )?;
    }
    Ok(())
}

/// Points a session at the store's schema (and pgvector's, for the `vector` type), with
/// pgvector's iterative scan on so a filtered HNSW search keeps looking until it has `k`.
fn set_search_path(client: &mut postgres::Client, schema: &str) -> Result<(), postgres::Error> {
    let extension_schema: String = client
        .query_one(
            "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
             WHERE e.extname = 'vector'",
            &[],
        )?
        .try_get(0)?;
    client.batch_execute(&format!(
        "SET search_path = {}, \"{extension_schema}\"; SET hnsw.iterative_scan = strict_order",
        quote_ident(schema)
    ))
}
