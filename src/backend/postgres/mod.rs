//! The PostgreSQL + pgvector backend: [`PgStore`].
//!
//! The same guarded writes as the embedded store, on a server's tables. A batch is ONE SQL
//! transaction: it takes the per-document locks it needs, reads each stored row
//! `SELECT ... FOR UPDATE`, asks the same pure `guard::decide_upsert` / `decide_delete`, and
//! carries the answer out (chunks and vectors replaced whole, surplus removed, tombstones
//! and listings versioned, counters and the skip log in tables, generations and tickets
//! from sequences). Searches run pgvector's HNSW index inside one statement that joins each
//! candidate chunk to its document row, so a superseded chunk is never returned.
//!
//! Module map: `schema.rs` the tables and opening, `write.rs` the batch transaction,
//! `read.rs` get / export / counters / search, `filter_sql.rs` the metadata filter as SQL
//! over `jsonb`, `verify.rs` the invariants checked against the tables.
//!
//! Invariant: writers of one document are serialised by locks the server holds until the
//! transaction ends (a transaction-level advisory lock per document key, which also covers
//! a document that has no row yet, then the row's own `FOR UPDATE` lock); a listing takes
//! its source exclusively, every other write takes it shared. No process-level lock is
//! involved, so writers in several processes and machines are serialised the same way.

mod filter_sql;
mod read;
mod schema;
mod verify;
mod write;

use crate::backend::{Backend, GroupCommit, GroupOutcomes};
use crate::error::{InputError, OpenError, ReadError, WriteError};
use crate::options::Durability;
use crate::options::{Metric, Options};
use crate::policy::plan::Plan;
use crate::policy::prepare::PreparedOp;
use crate::search::SearchOptions;
use crate::types::counters::Counters;
use crate::types::Hit;
use crate::types::IndexInfo;
use crate::types::Stats;
use crate::types::StoredDocument;
use crate::types::VerifyReport;
use crate::types::Version;
use crate::types::{Document, Op, OpOutcome, Outcome, PurgeOutcome, RetainOutcome};
use crate::types::{Listing, SkipRecord};
use parking_lot::{Mutex, RwLock};
use std::path::{Path, PathBuf};

/// A ratchetdb store on a PostgreSQL server with the pgvector extension: the backend
/// [`Store::open`](crate::Store::open) picks for a `postgres://` URL.
///
/// It carries out the embedded store's write, read and search operations (same outcomes
/// and errors) over tables in one PostgreSQL schema, so several processes on several
/// machines can write and search one corpus. Each `PgStore` holds one connection; open one
/// store per writer thread or process for concurrency.
///
/// ```no_run
/// use ratchetdb::{Chunk, Document, Options, SearchOptions, Store, Version};
/// let url = "postgres://postgres@127.0.0.1:5432/ratchetdb?schema=notes";
/// let store = Store::open(url, Options::default())?;
/// store.upsert(Document::new("wiki", "intro", Version::number(1))
///     .with_chunk(Chunk::new("Ratchets turn one way.", vec![1.0, 0.0, 0.0])))?;
/// let hits = store.search(&[1.0, 0.0, 0.0], 5, &SearchOptions::default())?;
/// assert_eq!(hits[0].id, "intro");
/// # Ok::<(), ratchetdb::Error>(())
/// ```
pub(crate) struct PgStore {
    client: Mutex<postgres::Client>,
    /// The server's address without a password, for messages.
    url: String,
    /// The same, as the path [`Store::path`](crate::Store::path) reports.
    path: PathBuf,
    /// Opened with [`PgStore::open_read_only_in`]: every write is refused.
    read_only: bool,
    /// The embedding model the store recorded.
    model: Option<String>,
    schema: String,
    options: Options,
    metric: Metric,
    /// Fixed by the first vector written (by any process); read again while unknown.
    dimension: RwLock<Option<usize>>,
    /// The text index's analysis (`None`: the store keeps no text index).
    text: Option<std::sync::Arc<crate::text::Analyzer>>,
}

/// Opens the store a `postgres://` URL names for [`Store::open`](crate::Store::open): a
/// `schema=NAME` query parameter picks the schema (default `ratchetdb`) and is removed
/// before connecting (the client does not know it).
pub(crate) fn open_url(url: &str, options: Options, read_only: bool) -> Result<PgStore, OpenError> {
    let (url, schema) = crate::address::split_schema(url);
    let schema = schema.unwrap_or_else(|| DEFAULT_SCHEMA.to_string());
    if read_only {
        PgStore::open_read_only_in(&url, &schema, options)
    } else {
        PgStore::open_in(&url, &schema, options)
    }
}

/// A server error's text: the server's message and SQLSTATE when there is one.
pub(crate) fn describe(error: &postgres::Error) -> String {
    match error.as_db_error() {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        None => error.to_string(),
    }
}

/// The PostgreSQL schema [`open_url`] keeps its tables in when the URL names none.
pub(crate) const DEFAULT_SCHEMA: &str = "ratchetdb";

impl PgStore {
    /// Opens (creating if missing) the store kept in PostgreSQL schema `schema` (lowercase
    /// ASCII letters, digits and `_`, starting with a letter or `_`, at most 63 bytes): one
    /// database can hold many stores.
    pub(crate) fn open_in(url: &str, schema: &str, options: Options) -> Result<PgStore, OpenError> {
        schema::open(url, schema, options, false)
    }

    /// Opens the store kept in PostgreSQL schema `schema` read-only: every write is refused.
    pub(crate) fn open_read_only_in(
        url: &str,
        schema: &str,
        options: Options,
    ) -> Result<PgStore, OpenError> {
        schema::open(url, schema, options, true)
    }

    /// [`WriteError::ReadOnly`] on a read-only store.
    fn writable(&self) -> Result<(), WriteError> {
        if self.read_only {
            return Err(WriteError::ReadOnly {
                path: self.path.clone(),
            });
        }
        Ok(())
    }

    fn write_one(&self, op: Op) -> Result<OpOutcome, WriteError> {
        self.write_batch(vec![op])?
            .pop()
            .unwrap_or_else(|| Err(mismatched_outcome()))
    }
}

impl Backend for PgStore {
    /// `PostgreSQL`. Vector spaces are not kept here yet: their operations answer
    /// `Unsupported` naming the operation (the trait's defaults).
    fn backend_name(&self) -> &'static str {
        "PostgreSQL"
    }

    /// Whether this store was opened read-only.
    fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// The embedding model's name, if the store recorded one.
    fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }

    /// The server's address (without its password), as a path.
    fn path(&self) -> &Path {
        &self.path
    }

    /// The vector dimension, once fixed (by the options or the first vector written).
    fn dimension(&self) -> Option<usize> {
        *self.dimension.read()
    }

    /// The store's metric.
    fn metric(&self) -> Metric {
        self.metric
    }

    /// The options it was opened with.
    fn options(&self) -> &Options {
        &self.options
    }

    /// Writes a revision (guarded); see [`Store::upsert`](crate::Store::upsert).
    fn upsert(&self, doc: Document) -> Result<Outcome, WriteError> {
        match self.write_one(Op::Upsert(doc))? {
            OpOutcome::Document(outcome) => Ok(outcome),
            OpOutcome::Retain(_) => Err(mismatched_outcome()),
        }
    }

    /// Deletes a document at a version (a versioned tombstone; guarded); see
    /// [`Store::delete`](crate::Store::delete).
    fn delete(&self, source: &str, id: &str, version: Version) -> Result<Outcome, WriteError> {
        let op = Op::Delete {
            source: source.to_string(),
            id: id.to_string(),
            version,
        };
        match self.write_one(op)? {
            OpOutcome::Document(outcome) => Ok(outcome),
            OpOutcome::Retain(_) => Err(mismatched_outcome()),
        }
    }

    /// A listing of what exists in `source` at `version`; see
    /// [`Store::retain`](crate::Store::retain).
    fn retain(
        &self,
        source: &str,
        present: Vec<String>,
        version: Version,
    ) -> Result<RetainOutcome, WriteError> {
        let op = Op::Retain {
            source: source.to_string(),
            present,
            version,
        };
        match self.write_one(op)? {
            OpOutcome::Retain(outcome) => Ok(outcome),
            OpOutcome::Document(_) => Err(mismatched_outcome()),
        }
    }

    /// Applies `ops` in one SQL transaction, each guarded; see
    /// [`Store::write_batch`](crate::Store::write_batch). The outer error is the batch's
    /// (the transaction was rolled back), the inner ones each operation's own.
    fn write_batch(&self, ops: Vec<Op>) -> Result<Vec<Result<OpOutcome, WriteError>>, WriteError> {
        self.writable()?;
        write::write_batch(self, ops)
    }

    /// Removes the tombstones and listings of `source` older than `before`; see
    /// [`Store::purge`](crate::Store::purge).
    fn purge(&self, source: &str, before: Version) -> Result<PurgeOutcome, WriteError> {
        self.writable()?;
        write::purge(self, source, before)
    }

    /// A new ticket from the server's sequence: newer than every ticket any process has
    /// taken from this store.
    fn ticket(&self) -> Result<Version, WriteError> {
        self.writable()?;
        write::ticket(self)
    }

    /// Counts every ticket up to `through` as issued (see
    /// [`Store::adopt_tickets`](crate::Store::adopt_tickets)): the ticket sequence is raised
    /// to `through` if it is below.
    fn adopt_tickets(&self, through: u64) -> Result<(), WriteError> {
        self.writable()?;
        write::adopt_tickets(self, through)
    }

    /// The highest ticket issued (the ticket sequence's last value; 0 before the first).
    fn tickets_issued(&self) -> Result<u64, ReadError> {
        let row = self
            .client
            .lock()
            .query_one(
                "SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM ticket_seq",
                &[],
            )
            .map_err(read::server_error)?;
        Ok(row.try_get::<_, i64>(0).map_err(read::server_error)?.max(0) as u64)
    }

    /// A document and its chunks (with their vectors) in order, read in one snapshot;
    /// tombstones come back with `deleted: true` and no chunks.
    fn get(&self, source: &str, id: &str) -> Result<Option<StoredDocument>, ReadError> {
        read::get(self, source, id)
    }

    /// Every document (tombstones included) with its chunks and vectors, ordered by
    /// `(source, id)`, read in one snapshot: the export `ratchet copy` moves.
    fn documents(&self, with_vectors: bool) -> Result<Vec<StoredDocument>, ReadError> {
        let mut documents = read::documents(self)?;
        if !with_vectors {
            for chunk in documents.iter_mut().flat_map(|d| d.chunks.iter_mut()) {
                chunk.vector = None;
            }
        }
        Ok(documents)
    }

    /// The `k` live chunks nearest to `query` through pgvector's HNSW index (or an exact
    /// scan with [`SearchOptions::exact`]), best first, resolved in the statement's snapshot:
    /// a superseded or deleted chunk is never returned. Sources, documents and the metadata
    /// filter apply as in [`Store::search`](crate::Store::search); `ef` sets
    /// `hnsw.ef_search`.
    fn search(
        &self,
        query: &[f32],
        k: usize,
        options: &SearchOptions,
    ) -> Result<Vec<Hit>, ReadError> {
        only_the_default_space(options)?;
        read::search(self, query, k, options)
    }

    /// BM25 text search over the live chunks (the embedded store's analysis and scoring,
    /// on the server's `chunk_terms` rows, read in one snapshot); see
    /// [`Store::search_text`](crate::Store::search_text).
    fn search_text(
        &self,
        query: &str,
        k: usize,
        options: &SearchOptions,
    ) -> Result<Vec<Hit>, ReadError> {
        read::search_text(self, query, k, options)
    }

    /// The vector and the text ranking of one snapshot, fused; see
    /// [`Store::search_hybrid`](crate::Store::search_hybrid).
    fn search_hybrid(
        &self,
        text: &str,
        vector: &[f32],
        k: usize,
        options: &SearchOptions,
    ) -> Result<Vec<Hit>, ReadError> {
        only_the_default_space(options)?;
        read::search_hybrid(self, text, vector, k, options)
    }

    /// Whether this store keeps a text index (see [`Store::has_text_index`](crate::Store::has_text_index)).
    fn has_text_index(&self) -> bool {
        self.text.is_some()
    }

    /// Counters, totals and recent refusals, read in one snapshot.
    fn stats(&self) -> Result<Stats, ReadError> {
        read::stats(self)
    }

    /// Checks every invariant the tables can show (one snapshot): chunk rows and counts
    /// against document rows, generations, positions, vector dimensions, tombstones without
    /// chunks, the counters against the rows.
    fn verify(&self) -> Result<VerifyReport, ReadError> {
        verify::verify(self)
    }

    /// Makes every write durable: nothing to do, every commit on the server already is
    /// (a read-only store: [`WriteError::ReadOnly`]).
    fn sync(&self) -> Result<(), WriteError> {
        self.writable()
    }

    /// What a write of `doc` would do, before any embedding; see
    /// [`Store::plan`](crate::Store::plan). Read in one snapshot; the guard decides.
    fn plan(&self, doc: &Document) -> Result<Plan, ReadError> {
        crate::policy::plan::plan_with(
            doc,
            self.metric,
            self.dimension(),
            &self.options,
            |prepared| read::plan_state(self, &prepared.source, &prepared.id, prepared.version),
        )
    }

    /// [`PgStore::search`] for every query, in order; an error names the query
    /// (`queries[3]`), as [`Store::search_many`](crate::Store::search_many) does.
    fn search_many(
        &self,
        queries: &[&[f32]],
        k: usize,
        options: &SearchOptions,
    ) -> Result<Vec<Vec<Hit>>, ReadError> {
        crate::search::check_bounds(k, options, &self.options.limits)?;
        only_the_default_space(options)?;
        queries
            .iter()
            .enumerate()
            .map(|(i, query)| {
                self.search(query, k, options).map_err(|error| match error {
                    ReadError::Input(e) if e.field.starts_with("query") => {
                        ReadError::Input(InputError::new(
                            e.field.replacen("query", &format!("queries[{i}]"), 1),
                            e.problem,
                        ))
                    }
                    other => other,
                })
            })
            .collect()
    }

    /// The index as [`Store::index_info`](crate::Store::index_info) reports it: pgvector's
    /// HNSW index is the server's and changes in each commit, so it is always loaded,
    /// ready and caught up (the counts are the live chunks).
    fn index_info(&self) -> IndexInfo {
        let live = self.stats().map(|s| s.vectors).unwrap_or(0);
        IndexInfo {
            loaded: true,
            graph_ready: true,
            building: false,
            live_vectors: live,
            dead_fraction: 0.0,
            applied_commit: 0,
            graph_points: live,
            outside_vectors: 0,
            persisted_points: live,
            budgeted_bytes: 0,
            memory_budget: 0,
            space_vectors: 0,
            loaded_from_file: false,
        }
    }

    /// Sets the outcome counters and appends skip records; see
    /// [`Store::restore_history`](crate::Store::restore_history).
    fn restore_history(&self, counters: &Counters, skips: &[SkipRecord]) -> Result<(), WriteError> {
        crate::policy::history::check_counters(counters)?;
        self.writable()?;
        crate::policy::history::check_skips(skips, &self.options.limits)?;
        write::restore_history(self, counters, skips)
    }

    /// Every listing `retain` recorded, with its members; see
    /// [`Store::listings`](crate::Store::listings).
    fn listings(&self) -> Result<Vec<Listing>, ReadError> {
        read::listings(self)
    }
}
/// A PostgreSQL store has only its default vector space: a search naming another is
/// `Unsupported`, naming the option.
fn only_the_default_space(options: &SearchOptions) -> Result<(), ReadError> {
    match options.space.as_deref() {
        None | Some(crate::types::DEFAULT_SPACE) => Ok(()),
        Some(_) => Err(ReadError::Unsupported {
            operation: "SearchOptions::space",
            backend: "PostgreSQL",
        }),
    }
}

impl GroupCommit for PgStore {
    fn path(&self) -> &Path {
        &self.path
    }

    fn is_read_only(&self) -> bool {
        self.read_only
    }

    fn prepare(&self, op: Op) -> Result<PreparedOp, WriteError> {
        write::prepare_op(self, op)
    }

    /// One SQL transaction for the whole group (durability is the server's: every commit
    /// is durable under PostgreSQL's default `synchronous_commit`).
    fn commit_group(
        &self,
        ops: &mut dyn Iterator<Item = PreparedOp>,
        _durability: Durability,
    ) -> Result<GroupOutcomes, WriteError> {
        self.writable()?;
        let ops: Vec<PreparedOp> = ops.collect();
        write::run(self, &ops)
    }

    fn sync(&self) -> Result<(), WriteError> {
        self.writable()
    }
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("url", &self.url)
            .field("schema", &self.schema)
            .field("metric", &self.metric)
            .field("dimension", &self.dimension())
            .finish()
    }
}

/// A batch answered an operation with another kind's outcome (never happens: the batch
/// pairs each operation with its own kind's outcome).
fn mismatched_outcome() -> WriteError {
    WriteError::Corrupted {
        what: "batch".into(),
        detail: "an operation was answered with another kind's outcome".into(),
    }
}

/// `"name"`, for a schema name already checked by [`check_schema_name`].
fn quote_ident(name: &str) -> String {
    format!("\"{name}\"")
}

/// Checks a PostgreSQL schema name (a plain identifier, never needing escapes).
fn check_schema_name(schema: &str) -> Result<(), InputError> {
    let ok = !schema.is_empty()
        && schema.len() <= 63
        && schema
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        && !schema.as_bytes()[0].is_ascii_digit();
    if ok {
        Ok(())
    } else {
        Err(InputError::new(
            "schema",
            "must be 1 to 63 lowercase ASCII letters, digits and '_', not starting with a digit",
        ))
    }
}

/// A version's value as a `bigint` that sorts the same way (the high bit flipped), so that
/// SQL range conditions on versions follow the guard's unsigned order.
fn ord(value: u64) -> i64 {
    (value ^ (1 << 63)) as i64
}

/// The inverse of [`ord`].
fn unord(value: i64) -> u64 {
    (value as u64) ^ (1 << 63)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::address::redact_address as redact;
    use crate::address::split_schema;

    #[test]
    fn ord_keeps_the_unsigned_order() {
        let values = [0, 1, 2, i64::MAX as u64, 1 << 63, u64::MAX - 1, u64::MAX];
        for pair in values.windows(2) {
            assert!(ord(pair[0]) < ord(pair[1]), "{pair:?}");
        }
        for v in values {
            assert_eq!(unord(ord(v)), v);
        }
    }

    #[test]
    fn redact_hides_only_the_password() {
        assert_eq!(
            redact("postgres://u:secret@h:5/db"),
            "postgres://u:***@h:5/db"
        );
        assert_eq!(redact("postgres://u@h/db"), "postgres://u@h/db");
        assert_eq!(
            redact("postgres://u@h/db?password=secret&application_name=a@b"),
            "postgres://u@h/db?password=***&application_name=a@b"
        );
        assert_eq!(
            redact("postgres://u:secret@h/db?pass%77ord=other&schema=s"),
            "postgres://u:***@h/db?pass%77ord=***&schema=s"
        );
        // Parsers that disagree (the client takes the credentials up to the first `@`):
        // nothing of the address is shown.
        for unreadable in ["postgres://u:12/cd@h/db", "postgres://u:p#q@h/db"] {
            let shown = redact(unreadable);
            assert!(
                !shown.contains("12/cd") && !shown.contains("p#q"),
                "{shown}"
            );
        }
        assert_eq!(redact("/tmp/a@b:c.redb"), "/tmp/a@b:c.redb");
    }

    #[test]
    fn the_schema_parameter_is_taken_out_of_the_url() {
        assert_eq!(
            split_schema("postgres://h/db"),
            ("postgres://h/db".into(), None)
        );
        assert_eq!(
            split_schema("postgres://h/db?schema=s1"),
            ("postgres://h/db".into(), Some("s1".into()))
        );
        assert_eq!(
            split_schema("postgres://h/db?connect_timeout=5&schema=s1"),
            (
                "postgres://h/db?connect_timeout=5".into(),
                Some("s1".into())
            )
        );
    }

    #[test]
    fn schema_names_are_plain_identifiers() {
        assert!(check_schema_name("ratchetdb_t1").is_ok());
        for bad in ["", "1a", "A", "a-b", "a\"b", &"a".repeat(64)] {
            assert_eq!(check_schema_name(bad).unwrap_err().field, "schema", "{bad}");
        }
    }
}
