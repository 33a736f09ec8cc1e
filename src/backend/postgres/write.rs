//! A batch of guarded operations as ONE SQL transaction.
//!
//! The transaction first takes every lock the batch needs, in one global order (sources,
//! then documents, each by key), so two batches never wait on each other in a cycle; then
//! each operation runs inside a savepoint: it reads its stored rows `FOR UPDATE`, asks the
//! guard, checks everything that can refuse it, and only then mutates. An operation refused
//! for its input rolls back to its savepoint (nothing of it stays, I9); a server error
//! fails the whole batch (the transaction is rolled back). A batch in which every operation
//! was refused for its input commits nothing.

use super::schema::{fix_dimension, DIMENSION_LOCK};
use super::{ord, unord, PgStore};
use crate::backend::Backend;
use crate::error::{InputError, WriteError};
use crate::policy::guard::{
    self, ContentHash, DeleteDecision, Stored, UpsertDecision, WriteReason,
};
use crate::policy::prepare::{self, check_name, PreparedDoc, PreparedOp};
use crate::policy::revision::{self, StoredVector, VectorSource};
use crate::types::counters::name as counter;
use crate::types::SkipReason;
use crate::types::{Op, OpOutcome, Outcome, PurgeOutcome, RetainOutcome};
use crate::types::{Version, VersionKind};
use pgvector::Vector;
use postgres::error::SqlState;
use postgres::Transaction;
use std::collections::{BTreeMap, BTreeSet};

/// How often a batch the server aborted for a deadlock or a serialisation failure is run
/// again (its effects were rolled back, so running it again is safe).
const RETRIES: usize = 5;
/// Counter rows per counter: the writing backend's pid picks one.
const COUNTER_SHARDS: i32 = 16;

pub(super) fn server_error(error: postgres::Error) -> WriteError {
    WriteError::Server {
        detail: super::describe(&error),
    }
}

fn retryable(error: &postgres::Error) -> bool {
    matches!(
        error.code(),
        Some(&SqlState::T_R_DEADLOCK_DETECTED) | Some(&SqlState::T_R_SERIALIZATION_FAILURE)
    )
}

/// A batch's failure: the server's (retryable or not), or an operation's own.
enum Failure {
    Server(postgres::Error),
    Op(WriteError),
}

impl From<postgres::Error> for Failure {
    fn from(error: postgres::Error) -> Failure {
        Failure::Server(error)
    }
}

impl From<WriteError> for Failure {
    fn from(error: WriteError) -> Failure {
        Failure::Op(error)
    }
}

/// A refused write's skip-log row.
#[derive(Clone, Debug)]
struct Skip {
    source: String,
    id: String,
    reason: SkipReason,
    stored: Version,
    incoming: Version,
}

/// What one operation changed besides its rows: merged into the batch only once the
/// operation's savepoint is released.
#[derive(Default)]
struct Effects {
    deltas: BTreeMap<&'static str, i64>,
    skips: Vec<Skip>,
    dimension_fixed: Option<usize>,
}

impl Effects {
    fn bump(&mut self, name: &'static str, by: i64) {
        *self.deltas.entry(name).or_insert(0) += by;
    }

    fn merge(&mut self, other: Effects) {
        for (name, delta) in other.deltas {
            self.bump(name, delta);
        }
        self.skips.extend(other.skips);
        if other.dimension_fixed.is_some() {
            self.dimension_fixed = other.dimension_fixed;
        }
    }

    fn skip(
        &mut self,
        source: &str,
        id: &str,
        reason: SkipReason,
        equal_version: bool,
        stored: Version,
        incoming: Version,
    ) -> Outcome {
        for name in crate::types::counters::for_skip(reason, equal_version) {
            self.bump(name, 1);
        }
        self.skips.push(Skip {
            source: source.to_string(),
            id: id.to_string(),
            reason,
            stored,
            incoming,
        });
        Outcome::Skipped {
            reason,
            stored_version: stored,
            incoming_version: incoming,
        }
    }
}

/// The batch-wide state an operation reads.
struct Context<'s> {
    store: &'s PgStore,
    dimension: Option<usize>,
    /// The highest ticket issued (read once per batch that carries a ticket).
    tickets_issued: u64,
}

/// PostgreSQL `text` cannot hold NUL: refused as input, naming the field, before anything.
fn check_no_nul(op: &PreparedOp) -> Result<(), InputError> {
    let check = |field: String, value: &str| {
        if value.contains('\0') {
            Err(InputError::new(
                field,
                "contains a NUL character, which the PostgreSQL backend cannot store",
            ))
        } else {
            Ok(())
        }
    };
    match op {
        PreparedOp::Upsert(doc) => {
            check("source".into(), &doc.source)?;
            check("id".into(), &doc.id)?;
            check("meta".into(), &doc.meta)?;
            for (i, chunk) in doc.chunks.iter().enumerate() {
                check(format!("chunks[{i}].text"), &chunk.text)?;
                check(format!("chunks[{i}].meta"), &chunk.meta)?;
            }
        }
        PreparedOp::Delete { source, id, .. } => {
            check("source".into(), source)?;
            check("id".into(), id)?;
        }
        PreparedOp::Retain {
            source, present, ..
        } => {
            check("source".into(), source)?;
            for (i, id) in present.iter().enumerate() {
                check(format!("ids[{i}]"), id)?;
            }
        }
    }
    Ok(())
}

/// Validates every operation (an invalid one keeps its place in the answers and never
/// reaches the transaction), then runs the valid ones in one transaction.
pub(super) fn write_batch(
    store: &PgStore,
    ops: Vec<Op>,
) -> Result<Vec<Result<OpOutcome, WriteError>>, WriteError> {
    let mut prepared = Vec::with_capacity(ops.len());
    let mut slots: Vec<Option<WriteError>> = Vec::with_capacity(ops.len());
    for op in ops {
        match prepare_op(store, op) {
            Ok(op) => {
                slots.push(None);
                prepared.push(op);
            }
            Err(error) => slots.push(Some(error)),
        }
    }
    let mut applied = if prepared.is_empty() {
        Vec::new()
    } else {
        run(store, &prepared)?
    }
    .into_iter();
    Ok(slots
        .into_iter()
        .map(|slot| match slot {
            Some(error) => Err(error),
            None => applied
                .next()
                .unwrap_or_else(|| Err(super::mismatched_outcome())),
        })
        .collect())
}

/// Validates one operation as a batch does (before any transaction).
pub(super) fn prepare_op(store: &PgStore, op: Op) -> Result<PreparedOp, WriteError> {
    prepare::prepare_op(op, store.metric, store.dimension(), &store.options.limits)
        .and_then(|op| check_no_nul(&op).map(|()| op).map_err(WriteError::from))
        .and_then(|op| check_no_spaces(&op).map(|()| op).map_err(WriteError::from))
}

/// A PostgreSQL store has only its default vector space: a chunk's vector in another one
/// names a space the store does not have.
fn check_no_spaces(op: &PreparedOp) -> Result<(), crate::error::InputError> {
    if let PreparedOp::Upsert(doc) = op {
        for (position, chunk) in doc.chunks.iter().enumerate() {
            if let Some((name, _)) = chunk.spaces.first() {
                return Err(crate::error::InputError::new(
                    format!("chunks[{position}].spaces.{name}"),
                    "names no vector space of this store (a PostgreSQL store has only the \
                     default space: Store::add_space is not available on it)",
                ));
            }
        }
    }
    Ok(())
}

/// Runs the batch, again after a deadlock or serialisation failure.
pub(super) fn run(
    store: &PgStore,
    ops: &[PreparedOp],
) -> Result<Vec<Result<OpOutcome, WriteError>>, WriteError> {
    let mut client = store.client.lock();
    let mut attempt = 0;
    loop {
        attempt += 1;
        match run_once(store, &mut client, ops) {
            Ok((outcomes, dimension)) => {
                if let Some(dimension) = dimension {
                    *store.dimension.write() = Some(dimension);
                }
                return Ok(outcomes);
            }
            Err(Failure::Server(error)) if retryable(&error) && attempt < RETRIES => continue,
            Err(Failure::Server(error)) => return Err(server_error(error)),
            Err(Failure::Op(error)) => return Err(error),
        }
    }
}

type Outcomes = Vec<Result<OpOutcome, WriteError>>;

fn run_once(
    store: &PgStore,
    client: &mut postgres::Client,
    ops: &[PreparedOp],
) -> Result<(Outcomes, Option<usize>), Failure> {
    let mut txn = client.transaction()?;
    let dimension = lock(store, &mut txn, ops)?;
    let tickets_issued = if ops.iter().any(carries_ticket) {
        tickets_issued(&mut txn)?
    } else {
        0
    };
    let mut context = Context {
        store,
        dimension,
        tickets_issued,
    };
    let mut effects = Effects::default();
    let mut outcomes = Vec::with_capacity(ops.len());
    for op in ops {
        let mut savepoint = txn.savepoint("op")?;
        let mut local = Effects::default();
        match apply(&mut savepoint, &mut context, &mut local, op) {
            Ok(outcome) => {
                savepoint.commit()?;
                if let Some(dimension) = local.dimension_fixed {
                    context.dimension = Some(dimension);
                }
                effects.merge(local);
                outcomes.push(Ok(outcome));
            }
            Err(Failure::Op(error)) if crate::error::is_op_error(&error) => {
                savepoint.rollback()?;
                outcomes.push(Err(error));
            }
            Err(failure) => return Err(failure),
        }
    }
    if !outcomes.iter().any(Result::is_ok) {
        txn.rollback()?;
        return Ok((outcomes, None));
    }
    effects.bump(counter::COMMITS, 1);
    finish(&mut txn, store, &effects)?;
    txn.commit()?;
    Ok((outcomes, effects.dimension_fixed))
}

fn carries_ticket(op: &PreparedOp) -> bool {
    let version = match op {
        PreparedOp::Upsert(doc) => doc.version,
        PreparedOp::Delete { version, .. } | PreparedOp::Retain { version, .. } => *version,
    };
    version.kind == VersionKind::Ticket
}

fn tickets_issued(txn: &mut Transaction<'_>) -> Result<u64, postgres::Error> {
    let row = txn.query_one(
        "SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM ticket_seq",
        &[],
    )?;
    Ok(row.try_get::<_, i64>(0)?.max(0) as u64)
}

/// A 64-bit lock key for a text key.
fn lock_key(parts: &[&str]) -> i64 {
    let mut hasher = blake3::Hasher::new();
    for part in parts {
        hasher.update(&(part.len() as u64).to_le_bytes());
        hasher.update(part.as_bytes());
    }
    let bytes = hasher.finalize();
    let mut key = [0u8; 8];
    key.copy_from_slice(&bytes.as_bytes()[..8]);
    i64::from_le_bytes(key)
}

/// A source's lock key (the two-key form's key space: apart from documents' keys).
fn source_key(source: &str) -> i32 {
    (lock_key(&["source", source]) & 0x7fff_ffff) as i32
}

/// Takes the batch's locks in one global order: the dimension lock (while the dimension is
/// unknown), then sources (a listing's exclusively, others shared) by key, then documents
/// by key. Returns the dimension as recorded now.
fn lock(
    store: &PgStore,
    txn: &mut Transaction<'_>,
    ops: &[PreparedOp],
) -> Result<Option<usize>, postgres::Error> {
    let mut dimension = store.dimension();
    if dimension.is_none() && ops.iter().any(|op| matches!(op, PreparedOp::Upsert(_))) {
        txn.execute(
            "SELECT pg_advisory_xact_lock($1, $2)",
            &[&DIMENSION_LOCK.0, &DIMENSION_LOCK.1],
        )?;
        if let Some(row) = txn.query_opt("SELECT value FROM meta WHERE key = 'dimension'", &[])? {
            dimension = row.try_get::<_, String>(0)?.parse().ok();
        }
    }
    let mut sources: BTreeMap<i32, bool> = BTreeMap::new();
    let mut documents: BTreeSet<i64> = BTreeSet::new();
    for op in ops {
        match op {
            PreparedOp::Upsert(PreparedDoc { source, id, .. })
            | PreparedOp::Delete { source, id, .. } => {
                sources.entry(source_key(source)).or_insert(false);
                documents.insert(lock_key(&["document", source, id]));
            }
            PreparedOp::Retain { source, .. } => {
                sources.insert(source_key(source), true);
            }
        }
    }
    for (key, exclusive) in sources {
        let sql = if exclusive {
            "SELECT pg_advisory_xact_lock(1380270592, $1)"
        } else {
            "SELECT pg_advisory_xact_lock_shared(1380270592, $1)"
        };
        txn.execute(sql, &[&key])?;
    }
    if !documents.is_empty() {
        let keys: Vec<i64> = documents.into_iter().collect();
        txn.execute(
            "SELECT count(*) FROM (SELECT pg_advisory_xact_lock(k) FROM unnest($1::bigint[]) AS u(k)) AS l",
            &[&keys],
        )?;
    }
    Ok(dimension)
}

fn apply(
    txn: &mut Transaction<'_>,
    context: &mut Context<'_>,
    effects: &mut Effects,
    op: &PreparedOp,
) -> Result<OpOutcome, Failure> {
    match op {
        PreparedOp::Upsert(doc) => upsert(txn, context, effects, doc).map(OpOutcome::Document),
        PreparedOp::Delete {
            source,
            id,
            version,
        } => delete(txn, context, effects, source, id, *version).map(OpOutcome::Document),
        PreparedOp::Retain {
            source,
            present,
            version,
            members_hash,
        } => retain(
            txn,
            context,
            effects,
            source,
            present,
            *version,
            members_hash,
        )
        .map(OpOutcome::Retain),
    }
}

/// A document row as the guard and the writes need it.
struct DocRow {
    stored: Stored,
    chunk_count: i32,
}

fn corrupted(what: &str, detail: impl Into<String>) -> WriteError {
    WriteError::Corrupted {
        what: what.to_string(),
        detail: detail.into(),
    }
}

fn version_of(kind: i16, value: i64, what: &str) -> Result<Version, WriteError> {
    let kind = u8::try_from(kind)
        .ok()
        .and_then(VersionKind::from_byte)
        .ok_or_else(|| corrupted(what, format!("unknown version kind {kind}")))?;
    Ok(Version {
        kind,
        value: unord(value),
    })
}

fn hash_of(bytes: &[u8], what: &str) -> Result<ContentHash, WriteError> {
    bytes
        .try_into()
        .map_err(|_| corrupted(what, format!("a hash of {} bytes, not 32", bytes.len())))
}

/// The guard's key of a stored content hash (the table keeps the whole hash; the guard
/// compares its first 16 bytes on both backends, so they decide alike).
fn key_of(bytes: &[u8], what: &str) -> Result<guard::ContentKey, WriteError> {
    hash_of(bytes, what).map(|hash| guard::content_key(&hash))
}

fn kind_byte(version: Version) -> i16 {
    i16::from(version.kind.to_byte())
}

/// The document's row, locked.
fn doc_row(txn: &mut Transaction<'_>, source: &str, id: &str) -> Result<Option<DocRow>, Failure> {
    let Some(row) = txn.query_opt(
        "SELECT version_kind, version, deleted, content_hash, chunk_count FROM documents
         WHERE source = $1 AND id = $2 FOR UPDATE",
        &[&source, &id],
    )?
    else {
        return Ok(None);
    };
    let what = "documents row";
    Ok(Some(DocRow {
        stored: Stored {
            version: version_of(row.try_get(0)?, row.try_get(1)?, what)?,
            deleted: row.try_get(2)?,
            content_key: key_of(row.try_get(3)?, what)?,
        },
        chunk_count: row.try_get(4)?,
    }))
}

/// For an id with no row: the highest listing of its source at a version not older than
/// `incoming` that omits it, as a tombstone at the listing's version.
fn listing_tombstone(
    txn: &mut Transaction<'_>,
    source: &str,
    id: &str,
    incoming: Version,
) -> Result<Option<Stored>, Failure> {
    let row = txn.query_opt(
        "SELECT l.version_kind, l.version FROM listings l
         WHERE l.source = $1 AND l.version >= $2
           AND NOT EXISTS (SELECT 1 FROM listing_members m
                           WHERE m.source = l.source AND m.version = l.version AND m.id = $3)
         ORDER BY l.version DESC LIMIT 1",
        &[&source, &ord(incoming.value), &id],
    )?;
    match row {
        Some(row) => Ok(Some(Stored::tombstone(version_of(
            row.try_get(0)?,
            row.try_get(1)?,
            "listings row",
        )?))),
        None => Ok(None),
    }
}

fn stored_state(
    txn: &mut Transaction<'_>,
    source: &str,
    id: &str,
    incoming: Version,
) -> Result<(Option<DocRow>, Option<Stored>), Failure> {
    match doc_row(txn, source, id)? {
        Some(row) => {
            let stored = row.stored;
            Ok((Some(row), Some(stored)))
        }
        None => Ok((None, listing_tombstone(txn, source, id, incoming)?)),
    }
}

fn check_ticket(context: &Context<'_>, version: Version) -> Result<(), WriteError> {
    let issued = context.tickets_issued;
    if version.kind == VersionKind::Ticket && version.value > issued {
        return Err(InputError::new(
            "version",
            format!(
                "ticket {} was never issued by this store (the highest it has issued is \
                 {issued}); take tickets with Store::ticket",
                version.value
            ),
        )
        .into());
    }
    Ok(())
}

fn kind_mismatch(source: &str, id: &str, stored: VersionKind, incoming: Version) -> WriteError {
    WriteError::VersionKindMismatch {
        source_name: source.to_string(),
        id: id.to_string(),
        stored,
        incoming: incoming.kind,
    }
}

fn upsert(
    txn: &mut Transaction<'_>,
    context: &mut Context<'_>,
    effects: &mut Effects,
    doc: &PreparedDoc,
) -> Result<Outcome, Failure> {
    // Before the guard, as in the embedded store: a wrong-dimension vector is an error
    // whatever the guard would say.
    if let Some(expected) = context.dimension {
        for (position, chunk) in doc.chunks.iter().enumerate() {
            if let Some(vector) = chunk.vector.as_ref().filter(|v| v.len() != expected) {
                return Err(WriteError::DimensionMismatch {
                    position,
                    expected,
                    found: vector.len(),
                }
                .into());
            }
        }
    }
    let (row, stored) = stored_state(txn, &doc.source, &doc.id, doc.version)?;
    let decision = guard::decide_upsert(
        stored.as_ref(),
        doc.version,
        guard::content_key(&doc.content_hash),
        context.store.options.conflict_policy,
    );
    if !matches!(decision, UpsertDecision::KindMismatch { .. }) {
        check_ticket(context, doc.version)?;
    }
    match decision {
        UpsertDecision::KindMismatch { stored } => {
            Err(kind_mismatch(&doc.source, &doc.id, stored, doc.version).into())
        }
        UpsertDecision::Skip {
            reason,
            equal_version,
        } => {
            let stored_version = stored.map_or(doc.version, |s| s.version);
            Ok(effects.skip(
                &doc.source,
                &doc.id,
                reason,
                equal_version,
                stored_version,
                doc.version,
            ))
        }
        UpsertDecision::Unchanged => {
            txn.execute(
                "UPDATE documents SET version_kind = $3, version = $4 WHERE source = $1 AND id = $2",
                &[
                    &doc.source,
                    &doc.id,
                    &kind_byte(doc.version),
                    &ord(doc.version.value),
                ],
            )?;
            effects.bump(counter::UNCHANGED, 1);
            Ok(Outcome::Unchanged {
                version: doc.version,
            })
        }
        UpsertDecision::Write(reason) => {
            let counter_name = match (reason, &row) {
                (WriteReason::ResolveConflict, _) => counter::CONFLICTS_RESOLVED,
                (_, Some(row)) if !row.stored.deleted => counter::WRITTEN_NEWER,
                _ => counter::WRITTEN_NEW,
            };
            let outcome = write_revision(txn, context, effects, row.as_ref(), doc)?;
            effects.bump(counter_name, 1);
            Ok(outcome)
        }
    }
}

/// A stored chunk, as a revision can reuse it.
struct OldChunk {
    text_hash: Vec<u8>,
    vector_id: i64,
    embedding: Vector,
}

/// The shared rule compares the chunks' stored text hashes (the text is not read) and the
/// embeddings' floats.
impl revision::OldChunk for OldChunk {
    type Key = [u8];

    fn text_key(&self) -> &[u8] {
        &self.text_hash
    }

    fn vector(&self) -> StoredVector<'_> {
        StoredVector::Floats(self.embedding.as_slice())
    }
}

fn write_revision(
    txn: &mut Transaction<'_>,
    context: &mut Context<'_>,
    effects: &mut Effects,
    row: Option<&DocRow>,
    doc: &PreparedDoc,
) -> Result<Outcome, Failure> {
    // Read and plan; nothing is mutated until every check has passed.
    let live = row.filter(|r| !r.stored.deleted);
    let old: Vec<OldChunk> = match live {
        Some(row) => {
            let rows = txn.query(
                "SELECT text_hash, vector_id, embedding FROM chunks
                 WHERE source = $1 AND id = $2 ORDER BY position",
                &[&doc.source, &doc.id],
            )?;
            if rows.len() != row.chunk_count as usize {
                return Err(corrupted(
                    "chunks",
                    format!(
                        "{}/{} has {} chunks but {} chunk rows",
                        doc.source,
                        doc.id,
                        row.chunk_count,
                        rows.len()
                    ),
                )
                .into());
            }
            rows.iter()
                .map(|r| {
                    Ok(OldChunk {
                        text_hash: r.try_get(0)?,
                        vector_id: r.try_get(1)?,
                        embedding: r.try_get(2)?,
                    })
                })
                .collect::<Result<_, postgres::Error>>()?
        }
        None => Vec::new(),
    };
    let dimension = revision::revision_dimension(doc, context.dimension)?;
    let plan = revision::plan_positions(&old, doc)?.sources;

    // Mutate.
    if dimension != context.dimension {
        if let Some(dimension) = dimension {
            fix_dimension(txn, dimension, context.store.metric, &context.store.options)?;
            effects.dimension_fixed = Some(dimension);
        }
    }
    let fresh = plan
        .iter()
        .filter(|s| !matches!(s, VectorSource::Keep { .. }))
        .count();
    let mut ids = txn
        .query(
            "SELECT nextval('vector_seq') FROM generate_series(1, $1)",
            &[&(fresh as i32)],
        )?
        .into_iter()
        .map(|r| r.try_get::<_, i64>(0))
        .collect::<Result<Vec<i64>, _>>()?
        .into_iter();
    let generation: i64 = txn
        .query_one("SELECT nextval('generation_seq')", &[])?
        .try_get(0)?;
    let (mut written, mut reused) = (0u64, 0u64);
    let mut vector_ids = Vec::with_capacity(plan.len());
    let mut embeddings = Vec::with_capacity(plan.len());
    for source in &plan {
        let (id, embedding) = match *source {
            VectorSource::Keep { old_position } => {
                reused += 1;
                (
                    old[old_position].vector_id,
                    old[old_position].embedding.clone(),
                )
            }
            VectorSource::Copy { from } => {
                reused += 1;
                (ids.next().unwrap_or(-1), old[from].embedding.clone())
            }
            VectorSource::New(vector) => {
                written += 1;
                (ids.next().unwrap_or(-1), Vector::from(vector.to_vec()))
            }
        };
        if id < 0 {
            return Err(corrupted("vector_seq", "gave fewer ids than asked for").into());
        }
        vector_ids.push(id);
        embeddings.push(embedding);
    }
    txn.execute(
        "DELETE FROM chunks WHERE source = $1 AND id = $2",
        &[&doc.source, &doc.id],
    )?;
    upsert_doc_row(
        txn,
        &doc.source,
        &doc.id,
        doc.version,
        false,
        &doc.content_hash,
        generation,
        doc.chunks.len() as i32,
        &doc.meta,
    )?;
    if !doc.chunks.is_empty() {
        let positions: Vec<i32> = (0..doc.chunks.len() as i32).collect();
        let texts: Vec<&str> = doc.chunks.iter().map(|c| c.text.as_str()).collect();
        let hashes: Vec<&[u8]> = doc.chunks.iter().map(|c| c.text_hash.as_slice()).collect();
        let metas: Vec<&str> = doc.chunks.iter().map(|c| c.meta.as_str()).collect();
        txn.execute(
            "INSERT INTO chunks (source, id, position, generation, vector_id, text, text_hash,
                                 meta_json, meta, embedding)
             SELECT $1, $2, p, $3, v, t, h, m, m::jsonb, e
             FROM unnest($4::int[], $5::bigint[], $6::text[], $7::bytea[], $8::text[], $9::vector[])
                  AS u(p, v, t, h, m, e)",
            &[
                &doc.source,
                &doc.id,
                &generation,
                &positions,
                &vector_ids,
                &texts,
                &hashes,
                &metas,
                &embeddings,
            ],
        )?;
        // The chunks' text rows (the old chunks' went with their rows, by cascade).
        if let Some(analyzer) = &context.store.text {
            let chunks: Vec<(i64, &str)> = vector_ids.iter().copied().zip(texts).collect();
            super::schema::write_text_rows(txn, analyzer, &chunks)?;
        }
    }
    let was_tombstone = row.is_some_and(|r| r.stored.deleted);
    if row.is_none() || was_tombstone {
        effects.bump(counter::LIVE_DOCUMENTS, 1);
    }
    if was_tombstone {
        effects.bump(counter::LIVE_TOMBSTONES, -1);
    }
    let removed = (old.len() as u64).saturating_sub(doc.chunks.len() as u64);
    let live_delta = doc.chunks.len() as i64 - old.len() as i64;
    effects.bump(counter::LIVE_CHUNKS, live_delta);
    effects.bump(counter::LIVE_VECTORS, live_delta);
    effects.bump(counter::CHUNKS_WRITTEN, written as i64);
    effects.bump(counter::CHUNKS_REUSED, reused as i64);
    effects.bump(counter::CHUNKS_REMOVED, removed as i64);
    Ok(Outcome::Written {
        generation: generation as u64,
        chunks_written: written,
        chunks_reused: reused,
        chunks_removed: removed,
    })
}

#[allow(clippy::too_many_arguments)]
fn upsert_doc_row(
    txn: &mut Transaction<'_>,
    source: &str,
    id: &str,
    version: Version,
    deleted: bool,
    content_hash: &ContentHash,
    generation: i64,
    chunk_count: i32,
    meta: &str,
) -> Result<(), postgres::Error> {
    txn.execute(
        "INSERT INTO documents (source, id, version_kind, version, deleted, content_hash,
                                generation, chunk_count, meta_json, meta)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::text, $9::text::jsonb)
         ON CONFLICT (source, id) DO UPDATE SET
             version_kind = EXCLUDED.version_kind, version = EXCLUDED.version,
             deleted = EXCLUDED.deleted, content_hash = EXCLUDED.content_hash,
             generation = EXCLUDED.generation, chunk_count = EXCLUDED.chunk_count,
             meta_json = EXCLUDED.meta_json, meta = EXCLUDED.meta",
        &[
            &source,
            &id,
            &kind_byte(version),
            &ord(version.value),
            &deleted,
            &content_hash.as_slice(),
            &generation,
            &chunk_count,
            &meta,
        ],
    )?;
    Ok(())
}

fn delete(
    txn: &mut Transaction<'_>,
    context: &mut Context<'_>,
    effects: &mut Effects,
    source: &str,
    id: &str,
    version: Version,
) -> Result<Outcome, Failure> {
    let (row, stored) = stored_state(txn, source, id, version)?;
    let decision = guard::decide_delete(stored.as_ref(), version);
    if !matches!(decision, DeleteDecision::KindMismatch { .. }) {
        check_ticket(context, version)?;
    }
    match decision {
        DeleteDecision::KindMismatch { stored } => {
            Err(kind_mismatch(source, id, stored, version).into())
        }
        DeleteDecision::Skip {
            reason,
            equal_version,
        } => {
            let stored_version = stored.map_or(version, |s| s.version);
            Ok(effects.skip(source, id, reason, equal_version, stored_version, version))
        }
        DeleteDecision::Tombstone { over_equal_version } => {
            let chunks_removed = tombstone(txn, effects, source, id, row.as_ref(), version)?;
            effects.bump(counter::DELETED, 1);
            if over_equal_version {
                effects.bump(counter::DELETES_OVER_EQUAL_VERSION, 1);
            }
            Ok(Outcome::Deleted { chunks_removed })
        }
    }
}

/// Writes (or raises) a tombstone, removing every chunk. Returns the chunks removed.
fn tombstone(
    txn: &mut Transaction<'_>,
    effects: &mut Effects,
    source: &str,
    id: &str,
    row: Option<&DocRow>,
    version: Version,
) -> Result<u64, Failure> {
    let mut removed = 0u64;
    match row {
        Some(row) if !row.stored.deleted => {
            removed = txn.execute(
                "DELETE FROM chunks WHERE source = $1 AND id = $2",
                &[&source, &id],
            )?;
            if removed != row.chunk_count as u64 {
                return Err(corrupted(
                    "chunks",
                    format!(
                        "{source}/{id} has {} chunks but {removed} chunk rows",
                        row.chunk_count
                    ),
                )
                .into());
            }
            effects.bump(counter::LIVE_DOCUMENTS, -1);
            effects.bump(counter::LIVE_TOMBSTONES, 1);
            effects.bump(counter::LIVE_CHUNKS, -(removed as i64));
            effects.bump(counter::LIVE_VECTORS, -(removed as i64));
            effects.bump(counter::CHUNKS_REMOVED, removed as i64);
        }
        Some(_) => {}
        None => effects.bump(counter::LIVE_TOMBSTONES, 1),
    }
    upsert_doc_row(txn, source, id, version, true, &[0; 32], 0, 0, "null")?;
    Ok(removed)
}

#[allow(clippy::too_many_arguments)]
fn retain(
    txn: &mut Transaction<'_>,
    context: &mut Context<'_>,
    effects: &mut Effects,
    source: &str,
    present: &[String],
    version: Version,
    members_hash: &ContentHash,
) -> Result<RetainOutcome, Failure> {
    let existing = txn.query_opt(
        "SELECT version_kind, members_hash FROM listings WHERE source = $1 AND version = $2",
        &[&source, &ord(version.value)],
    )?;
    if let Some(existing) = existing {
        let same = existing.try_get::<_, i16>(0)? == kind_byte(version)
            && existing.try_get::<_, &[u8]>(1)? == members_hash.as_slice();
        let reason = if same {
            SkipReason::Duplicate
        } else {
            SkipReason::Conflict
        };
        effects.skip(source, "(listing)", reason, true, version, version);
        return Ok(RetainOutcome {
            skipped: Some(reason),
            ..RetainOutcome::default()
        });
    }
    // Decide for every omitted document first; mutate only when none is refused.
    let rows = txn.query(
        "SELECT id, version_kind, version, deleted, content_hash, chunk_count FROM documents
         WHERE source = $1 AND NOT (id = ANY($2)) ORDER BY id FOR UPDATE",
        &[&source, &present],
    )?;
    let mut omitted: Vec<(String, DocRow)> = Vec::new();
    let mut newer_kept = 0u64;
    for r in &rows {
        let id: String = r.try_get(0)?;
        let what = "documents row";
        let row = DocRow {
            stored: Stored {
                version: version_of(r.try_get(1)?, r.try_get(2)?, what)?,
                deleted: r.try_get(3)?,
                content_key: key_of(r.try_get(4)?, what)?,
            },
            chunk_count: r.try_get(5)?,
        };
        match guard::decide_delete(Some(&row.stored), version) {
            DeleteDecision::KindMismatch { stored } => {
                return Err(kind_mismatch(source, &id, stored, version).into())
            }
            DeleteDecision::Tombstone { .. } => omitted.push((id, row)),
            DeleteDecision::Skip {
                reason: SkipReason::Older,
                ..
            } if !row.stored.deleted => newer_kept += 1,
            DeleteDecision::Skip { .. } => {}
        }
    }
    check_ticket(context, version)?;
    let mut outcome = RetainOutcome {
        newer_kept,
        ..RetainOutcome::default()
    };
    for (id, row) in omitted {
        outcome.chunks_removed += tombstone(txn, effects, source, &id, Some(&row), version)?;
        if !row.stored.deleted {
            outcome.documents_removed += 1;
        }
    }
    txn.execute(
        "INSERT INTO listings (source, version, version_kind, members_hash, present_count)
         VALUES ($1, $2, $3, $4, $5)",
        &[
            &source,
            &ord(version.value),
            &kind_byte(version),
            &members_hash.as_slice(),
            &(present.len() as i64),
        ],
    )?;
    txn.execute(
        "INSERT INTO listing_members (source, version, id) SELECT $1, $2, unnest($3::text[])",
        &[&source, &ord(version.value), &present],
    )?;
    effects.bump(counter::RETAIN_LISTINGS, 1);
    effects.bump(
        counter::RETAIN_DOCUMENTS_REMOVED,
        outcome.documents_removed as i64,
    );
    Ok(outcome)
}

/// Counters and the skip log, in the batch's transaction.
fn finish(
    txn: &mut Transaction<'_>,
    store: &PgStore,
    effects: &Effects,
) -> Result<(), postgres::Error> {
    let (names, deltas): (Vec<&str>, Vec<i64>) = effects
        .deltas
        .iter()
        .filter(|(_, delta)| **delta != 0)
        .map(|(name, delta)| (*name, *delta))
        .unzip();
    if !names.is_empty() {
        txn.execute(
            "INSERT INTO counters (name, shard, value)
             SELECT n, pg_backend_pid() % $3, d FROM unnest($1::text[], $2::bigint[]) AS u(n, d)
             ON CONFLICT (name, shard) DO UPDATE SET value = counters.value + EXCLUDED.value",
            &[&names, &deltas, &COUNTER_SHARDS],
        )?;
    }
    let capacity = i64::try_from(store.options.skip_log_capacity).unwrap_or(i64::MAX);
    if !effects.skips.is_empty() && capacity > 0 {
        let skips = &effects.skips;
        let sources: Vec<&str> = skips.iter().map(|s| s.source.as_str()).collect();
        let ids: Vec<&str> = skips.iter().map(|s| s.id.as_str()).collect();
        let reasons: Vec<i16> = skips
            .iter()
            .map(|s| i16::from(s.reason.to_byte()))
            .collect();
        let stored_kinds: Vec<i16> = skips.iter().map(|s| kind_byte(s.stored)).collect();
        let stored_values: Vec<i64> = skips.iter().map(|s| ord(s.stored.value)).collect();
        let incoming_kinds: Vec<i16> = skips.iter().map(|s| kind_byte(s.incoming)).collect();
        let incoming_values: Vec<i64> = skips.iter().map(|s| ord(s.incoming.value)).collect();
        txn.execute(
            "INSERT INTO skip_log (source, id, reason, stored_kind, stored_value, incoming_kind,
                                   incoming_value)
             SELECT * FROM unnest($1::text[], $2::text[], $3::smallint[], $4::smallint[],
                                  $5::bigint[], $6::smallint[], $7::bigint[])",
            &[
                &sources,
                &ids,
                &reasons,
                &stored_kinds,
                &stored_values,
                &incoming_kinds,
                &incoming_values,
            ],
        )?;
        txn.execute(
            "DELETE FROM skip_log WHERE seq <= (SELECT max(seq) FROM skip_log) - $1",
            &[&capacity],
        )?;
    }
    Ok(())
}

/// Removes the tombstones and listings of `source` older than `before`, in one transaction
/// holding the source exclusively.
pub(super) fn purge(
    store: &PgStore,
    source: &str,
    before: Version,
) -> Result<PurgeOutcome, WriteError> {
    check_name("source", source, &store.options.limits)?;
    let mut client = store.client.lock();
    let mut txn = client.transaction().map_err(server_error)?;
    let result = (|| -> Result<PurgeOutcome, postgres::Error> {
        txn.execute(
            "SELECT pg_advisory_xact_lock(1380270592, $1)",
            &[&source_key(source)],
        )?;
        let tombstones = txn.execute(
            "DELETE FROM documents WHERE source = $1 AND deleted
               AND version_kind = $2 AND version < $3",
            &[&source, &kind_byte(before), &ord(before.value)],
        )?;
        let listings = txn.query(
            "DELETE FROM listings WHERE source = $1 AND version_kind = $2 AND version < $3
             RETURNING version",
            &[&source, &kind_byte(before), &ord(before.value)],
        )?;
        let versions: Vec<i64> = listings
            .iter()
            .map(|r| r.try_get(0))
            .collect::<Result<_, _>>()?;
        txn.execute(
            "DELETE FROM listing_members WHERE source = $1 AND version = ANY($2)",
            &[&source, &versions],
        )?;
        let mut effects = Effects::default();
        effects.bump(counter::LIVE_TOMBSTONES, -(tombstones as i64));
        effects.bump(counter::PURGED_TOMBSTONES, tombstones as i64);
        effects.bump(counter::PURGED_LISTINGS, versions.len() as i64);
        effects.bump(counter::COMMITS, 1);
        finish(&mut txn, store, &effects)?;
        Ok(PurgeOutcome {
            tombstones_purged: tombstones,
            listings_purged: versions.len() as u64,
        })
    })();
    match result {
        Ok(outcome) => {
            txn.commit().map_err(server_error)?;
            Ok(outcome)
        }
        Err(error) => Err(server_error(error)),
    }
}

/// A new ticket from the server's sequence.
pub(super) fn ticket(store: &PgStore) -> Result<Version, WriteError> {
    let value: i64 = store
        .client
        .lock()
        .query_one("SELECT nextval('ticket_seq')", &[])
        .and_then(|row| row.try_get(0))
        .map_err(server_error)?;
    Ok(Version::ticket(value.max(0) as u64))
}

/// Raises the ticket sequence to `through` if it is below (never lowers it).
pub(super) fn adopt_tickets(store: &PgStore, through: u64) -> Result<(), WriteError> {
    if through == 0 {
        return Ok(());
    }
    let through = i64::try_from(through).map_err(|_| {
        crate::error::InputError::new(
            "tickets_issued",
            format!("ticket {through} is above the largest a PostgreSQL sequence holds"),
        )
    })?;
    store
        .client
        .lock()
        .execute(
            "SELECT setval('ticket_seq', GREATEST($1, \
             (SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM ticket_seq)))",
            &[&through],
        )
        .map_err(server_error)?;
    Ok(())
}

/// Sets each outcome counter to `counters`' value and appends `skips` to the skip log, in
/// one transaction (see [`Store::restore_history`](crate::Store::restore_history)). The
/// counters' rows are locked while their sums are read, so concurrent writers' counting is
/// kept on top of the restored values.
pub(super) fn restore_history(
    store: &PgStore,
    counters: &crate::types::counters::Counters,
    skips: &[crate::types::SkipRecord],
) -> Result<(), WriteError> {
    let mut client = store.client.lock();
    let mut txn = client.transaction().map_err(server_error)?;
    let mut effects = Effects::default();
    for (name, field, target) in crate::policy::history::outcome_counters(counters) {
        let rows = txn
            .query(
                "SELECT value FROM counters WHERE name = $1 FOR UPDATE",
                &[&name],
            )
            .map_err(server_error)?;
        let mut current = 0i128;
        for row in rows {
            current += i128::from(row.try_get::<_, i64>(0).map_err(server_error)?);
        }
        let target = i64::try_from(target).map_err(|_| {
            InputError::new(
                format!("counters.{field}"),
                format!("{target} is above 2^63 - 1"),
            )
        })?;
        let delta = i64::try_from(i128::from(target) - current).map_err(|_| {
            corrupted(
                "counters",
                format!("{name} = {current} cannot be set to {target}"),
            )
        })?;
        effects.bump(name, delta);
    }
    effects.skips = skips
        .iter()
        .map(|s| Skip {
            source: s.source.clone(),
            id: s.id.clone(),
            reason: s.reason,
            stored: s.stored_version,
            incoming: s.incoming_version,
        })
        .collect();
    effects.bump(counter::COMMITS, 1);
    finish(&mut txn, store, &effects).map_err(server_error)?;
    txn.commit().map_err(server_error)
}
