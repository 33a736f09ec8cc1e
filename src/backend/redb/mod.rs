//! The embedded backend: one redb file is the only source of truth; everything in memory
//! (the vector index, the filter postings, the text cache: `derived/`) is derived from it
//! and can be rebuilt from it.
//!
//! [`RedbBackend`] is the file's engine (`engine.rs`: the database handle and ONE write
//! transaction path) beside the derived state's owner (`derived/indexer.rs`). Opening and
//! recognising a file is `open.rs`; the write logic is `write.rs`; reads are `read.rs`.
//!
//! Invariant: a panic inside redb at any entry point below becomes the operation's typed
//! `Corrupted` error (`contain.rs`); a write that panicked poisons the store.

pub(crate) mod backup;
pub(crate) mod contain;
pub(crate) mod derived;
pub(crate) mod engine;
pub(crate) mod history;
pub(crate) mod open;
pub(crate) mod read;
pub(crate) mod schema;
pub(crate) mod spaces;
pub(crate) mod stats;
pub(crate) mod text;
pub(crate) mod verify;
pub(crate) mod write;

use crate::backend::{Backend, GroupCommit, GroupOutcomes};
use crate::error::{OpenError, ReadError, WriteError};
use crate::options::{Durability, Metric, Options};
use crate::policy::plan::Plan;
use crate::policy::prepare::{self, PreparedOp};
use crate::search::SearchOptions;
use crate::types::counters::Counters;
use crate::types::{
    ChunkRevision, Document, Hit, IndexInfo, Listing, MissingChunk, Op, Outcome, PurgeOutcome,
    RetainOutcome, SkipRecord, SpaceInfo, SpaceVector, SpaceWriteOutcome, Stats, StoredDocument,
    VerifyReport, Version,
};
use contain::contain;
use derived::indexer::{Gate, Indexer};
use engine::{DocumentOp, Engine};
use read::Snapshot;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// The embedded store's parts. Cheap to clone; the last clone dropped closes the indexer's
/// gate, so background threads let go of the file before that drop returns.
#[derive(Clone)]
pub(crate) struct RedbBackend {
    /// First, so it drops first: the last handle's drop reaches the indexer through it.
    _handle: Arc<Handle>,
    engine: Arc<Engine>,
    indexer: Arc<Indexer>,
    /// A read-only open recovered the file first.
    recovered: bool,
}

/// Shared by every clone of a [`RedbBackend`]: its drop closes the indexer's gate.
struct Handle {
    gate: Arc<Gate>,
    indexer: std::sync::Weak<Indexer>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        if let Some(indexer) = self.indexer.upgrade() {
            indexer.save_on_close();
            // Background work stops rather than finish what nobody will search (the gate
            // below waits for it).
            indexer.stop_background();
        }
        self.gate.close();
    }
}

impl RedbBackend {
    /// Opens (or creates) the file at `path` for writing.
    pub(crate) fn open(path: &Path, options: Options) -> Result<RedbBackend, OpenError> {
        open::as_writer(path, &options, |db, shared| {
            RedbBackend::from_db(db, None, path, true, shared, options.clone())
        })
    }

    /// Opens an existing file read-only.
    pub(crate) fn open_read_only(path: &Path, options: Options) -> Result<RedbBackend, OpenError> {
        open::as_reader(path, &options, |db, recovered| {
            let mut backend = RedbBackend::from_db(db, None, path, true, false, options.clone())?;
            backend.recovered = recovered;
            Ok(backend)
        })
    }

    /// Opens a store on a caller-supplied redb storage backend.
    pub(crate) fn open_on(
        storage: impl ::redb::StorageBackend,
        options: Options,
    ) -> Result<RedbBackend, OpenError> {
        open::on_backend(storage, &options, |db, path, storage| {
            RedbBackend::from_db(db, Some(storage), path, false, false, options.clone())
        })
    }

    /// A store over a database: recognised (`open.rs`), then its engine and indexer.
    /// `is_file`: `path` names the database's file (not a caller-supplied backend);
    /// `shared`: the writer opened it in redb's `SingleWriter` mode.
    fn from_db(
        db: open::Db,
        storage: Option<Arc<dyn ::redb::StorageBackend>>,
        path: &Path,
        is_file: bool,
        shared: bool,
        options: Options,
    ) -> Result<RedbBackend, OpenError> {
        let mut db = db;
        let recognised = open::recognise(&db, path, is_file, &options)?;
        // Also in `SingleWriter` mode: redb's compaction takes the writer and header locks,
        // and refuses while a reader process holds a transaction (none can have opened an
        // unconverted file of schema 6 or older: a read-only open refuses it with
        // `NeedsConversion`). A schema-7 file's conversion only records the new version, so
        // it has nothing to give back and is not compacted (readers may be reading it).
        if recognised.converted {
            open::compact_after_conversion(&mut db);
        }
        // (A budget too small for the live vectors was refused by `recognise`, before it
        // wrote anything.)
        let engine = Arc::new(Engine::new(
            db, storage, path, is_file, shared, options, recognised,
        ));
        let gate = Arc::new(Gate::default());
        let indexer = Indexer::start(engine.clone(), gate.clone());
        let weak = Arc::downgrade(&indexer);
        Ok(RedbBackend {
            engine,
            indexer,
            _handle: Arc::new(Handle {
                gate,
                indexer: weak,
            }),
            recovered: false,
        })
    }

    /// The engine (the crate's own tests reach it through the store).
    #[cfg(test)]
    pub(crate) fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// The derived state's owner (the crate's own tests reach it through the store).
    #[cfg(any(test, feature = "testkit"))]
    pub(crate) fn indexer(&self) -> &Indexer {
        &self.indexer
    }

    /// The derived state's owner, shared (for the crate's own tests).
    #[cfg(test)]
    pub(crate) fn indexer_arc(&self) -> &Arc<Indexer> {
        &self.indexer
    }

    /// The engine alone (what a writer holds).
    pub(crate) fn engine_handle(&self) -> Arc<Engine> {
        self.engine.clone()
    }

    /// A consistent read view of one commit.
    pub(crate) fn snapshot(&self) -> Result<Snapshot, ReadError> {
        self.engine.snapshot()
    }

    /// A consistent copy of the file at `out` (see `Store::backup`).
    pub(crate) fn backup(&self, out: &Path) -> Result<backup::Backup, backup::BackupError> {
        let snapshot = self.snapshot()?;
        contain(
            |detail| backup::BackupError::Read(ReadError::contained(detail)),
            || backup::write(&snapshot, self.engine.path(), out),
        )
    }
}

impl Backend for RedbBackend {
    fn backend_name(&self) -> &'static str {
        "redb"
    }

    fn add_space(
        &self,
        name: &str,
        model: &str,
        dimension: usize,
    ) -> Result<SpaceInfo, WriteError> {
        spaces::add_space(&self.engine, name, model, dimension)
    }

    fn activate(&self, name: &str) -> Result<(), WriteError> {
        spaces::activate(&self.engine, name)
    }

    fn drop_space(&self, name: &str) -> Result<u64, WriteError> {
        match spaces::drop_space(&self.engine, name)? {
            spaces::Dropped::Space { id, freed } => {
                self.indexer.spaces.forget(id);
                Ok(freed)
            }
            spaces::Dropped::Promoted { id, freed } => {
                // The promoted space's index is the default one's now (loaded again from
                // the rewritten vectors rows, which the commit's `VECTORS_REPLACED` asks).
                self.indexer.spaces.forget(id);
                self.indexer.after_commit();
                Ok(freed)
            }
        }
    }

    fn spaces(&self) -> Result<Vec<SpaceInfo>, ReadError> {
        contain(ReadError::contained, || {
            spaces::spaces(&self.engine.snapshot()?)
        })
    }

    fn chunks_missing_vectors(
        &self,
        space: &str,
        after: Option<ChunkRevision>,
        limit: usize,
    ) -> Result<Vec<MissingChunk>, ReadError> {
        contain(ReadError::contained, || {
            spaces::chunks_missing_vectors(&self.engine.snapshot()?, space, after, limit)
        })
    }

    fn write_space_vectors(
        &self,
        space: &str,
        vectors: Vec<SpaceVector>,
    ) -> Result<SpaceWriteOutcome, WriteError> {
        spaces::write_space_vectors(&self.engine, space, vectors)
    }

    fn path(&self) -> &Path {
        self.engine.path()
    }

    fn dimension(&self) -> Option<usize> {
        self.engine.dimension()
    }

    fn metric(&self) -> Metric {
        self.engine.metric()
    }

    fn model(&self) -> Option<&str> {
        self.engine.model()
    }

    fn options(&self) -> &Options {
        self.engine.options()
    }

    fn is_read_only(&self) -> bool {
        self.engine.is_read_only()
    }

    fn recovered_at_open(&self) -> bool {
        self.recovered
    }

    fn upsert(&self, doc: Document) -> Result<Outcome, WriteError> {
        refuse_dimension_over_budget(&self.engine, &doc)?;
        let doc = self.engine.prepare_document(doc)?;
        self.engine.run_one(DocumentOp::Upsert(doc))
    }

    fn delete(&self, source: &str, id: &str, version: Version) -> Result<Outcome, WriteError> {
        let limits = &self.engine.options().limits;
        let delete = prepare::prepare_delete(source.to_string(), id.to_string(), version, limits)?;
        self.engine.run_one(DocumentOp::Delete(delete))
    }

    fn retain(
        &self,
        source: &str,
        present: Vec<String>,
        version: Version,
    ) -> Result<RetainOutcome, WriteError> {
        let limits = &self.engine.options().limits;
        let retain = prepare::prepare_retain(source.to_string(), present, version, limits)?;
        self.engine.run_one(retain)
    }

    fn purge(&self, source: &str, before: Version) -> Result<PurgeOutcome, WriteError> {
        self.engine.purge(source, before)
    }

    fn write_batch(&self, ops: Vec<Op>) -> Result<GroupOutcomes, WriteError> {
        if !may_refuse_a_dimension(&self.engine) {
            return self.engine.write_batch(ops);
        }
        // An operation refused for the budget keeps its place in the answers and never
        // reaches the batch, as one refused while being validated does.
        let mut refused = Vec::with_capacity(ops.len());
        let mut passed = Vec::with_capacity(ops.len());
        for op in ops {
            let refusal = match &op {
                Op::Upsert(doc) => refuse_dimension_over_budget(&self.engine, doc).err(),
                _ => None,
            };
            if refusal.is_none() {
                passed.push(op);
            }
            refused.push(refusal);
        }
        let mut applied = self.engine.write_batch(passed)?.into_iter();
        Ok(refused
            .into_iter()
            .filter_map(|refusal| match refusal {
                Some(error) => Some(Err(error)),
                None => applied.next(),
            })
            .collect())
    }

    fn sync(&self) -> Result<(), WriteError> {
        self.engine.sync()
    }

    fn ticket(&self) -> Result<Version, WriteError> {
        self.engine.ticket()
    }

    fn adopt_tickets(&self, through: u64) -> Result<(), WriteError> {
        self.engine.adopt_tickets(through)
    }

    fn restore_history(&self, counters: &Counters, skips: &[SkipRecord]) -> Result<(), WriteError> {
        crate::policy::history::check_counters(counters)?;
        crate::policy::history::check_skips(skips, &self.engine.options().limits)?;
        self.engine.run_one(history::Restore {
            counters: counters.clone(),
            skips: skips.iter().map(history::skip_row).collect(),
        })
    }

    fn tickets_issued(&self) -> Result<u64, ReadError> {
        self.engine.snapshot()?.tickets_issued()
    }

    fn get(&self, source: &str, id: &str) -> Result<Option<StoredDocument>, ReadError> {
        self.engine.snapshot()?.get(source, id)
    }

    fn documents(&self, with_vectors: bool) -> Result<Vec<StoredDocument>, ReadError> {
        self.engine.snapshot()?.documents(with_vectors)?.collect()
    }

    fn listings(&self) -> Result<Vec<Listing>, ReadError> {
        contain(ReadError::contained, || self.engine.snapshot()?.listings())
    }

    fn stats(&self) -> Result<Stats, ReadError> {
        self.engine.snapshot()?.stats()
    }

    fn verify(&self) -> Result<VerifyReport, ReadError> {
        contain(ReadError::contained, || {
            let report = self.engine.snapshot()?.verify()?;
            self.indexer.verify_agreement(report)
        })
    }

    fn plan(&self, doc: &Document) -> Result<Plan, ReadError> {
        contain(ReadError::contained, || self.engine.plan(doc))
    }

    fn search(
        &self,
        query: &[f32],
        k: usize,
        options: &SearchOptions,
    ) -> Result<Vec<Hit>, ReadError> {
        contain(ReadError::contained, || {
            self.indexer.search(query, k, options)
        })
    }

    fn search_many(
        &self,
        queries: &[&[f32]],
        k: usize,
        options: &SearchOptions,
    ) -> Result<Vec<Vec<Hit>>, ReadError> {
        self.indexer.search_many(queries, k, options)
    }

    fn search_text(
        &self,
        query: &str,
        k: usize,
        options: &SearchOptions,
    ) -> Result<Vec<Hit>, ReadError> {
        contain(ReadError::contained, || {
            self.indexer.search_text(query, k, options)
        })
    }

    fn search_hybrid(
        &self,
        text: &str,
        vector: &[f32],
        k: usize,
        options: &SearchOptions,
    ) -> Result<Vec<Hit>, ReadError> {
        contain(ReadError::contained, || {
            self.indexer.search_hybrid(text, vector, k, options)
        })
    }

    fn has_text_index(&self) -> bool {
        self.indexer.has_text_index()
    }

    fn index_info(&self) -> IndexInfo {
        self.indexer.index_info()
    }

    fn wait_for_index(&self, timeout: Duration) -> bool {
        self.indexer.wait_for_index(timeout)
    }

    fn build_index(&self) -> Result<(), ReadError> {
        self.indexer.build_index()
    }
}

/// Whether [`refuse_dimension_over_budget`] may refuse anything now: the store is under
/// a budget and has no dimension yet.
fn may_refuse_a_dimension(engine: &Engine) -> bool {
    engine.options().memory_budget.is_some() && engine.dimension().is_none()
}

/// Refuses an upsert whose vectors would fix the store's dimension at one that
/// [`Options::memory_budget`] cannot hold even for an empty store: an [`InputError`] on
/// `memory_budget` naming the smallest budget that works, and nothing written. The open
/// refuses such a budget for a dimension the file records or the options give; without
/// this, a store opened with neither took its dimension from its first write, and its
/// budgeted index then ran over the budget (planned at the smallest budget that works)
/// until the next open refused it.
///
/// Once a dimension is recorded this refuses nothing: the open (or the first write) checked
/// it, and a vector of another dimension is a `DimensionMismatch`. Checked before the
/// document is validated, and against no transaction: whether a dimension is refused
/// depends on the budget alone, so a write racing the one that fixes the dimension is
/// either refused here (its dimension is impossible) or passes with a possible one.
///
/// [`InputError`]: crate::error::InputError
fn refuse_dimension_over_budget(engine: &Engine, doc: &Document) -> Result<(), WriteError> {
    if !may_refuse_a_dimension(engine) {
        return Ok(());
    }
    let Some(dimension) = doc
        .chunks
        .iter()
        .find_map(|chunk| chunk.vector.as_ref().map(Vec::len))
    else {
        return Ok(());
    };
    match crate::index::budget::refusal(engine.options(), 0, dimension) {
        Some((field, why)) => Err(crate::error::InputError::new(
            field,
            format!(
                "a first vector of {dimension} dimensions would fix the store's dimension: {why}"
            ),
        )
        .into()),
        None => Ok(()),
    }
}

impl GroupCommit for Engine {
    fn path(&self) -> &Path {
        Engine::path(self)
    }

    fn is_read_only(&self) -> bool {
        Engine::is_read_only(self)
    }

    fn prepare(&self, op: Op) -> Result<PreparedOp, WriteError> {
        if let Op::Upsert(doc) = &op {
            refuse_dimension_over_budget(self, doc)?;
        }
        Engine::prepare(self, op)
    }

    fn commit_group(
        &self,
        ops: &mut dyn Iterator<Item = PreparedOp>,
        durability: Durability,
    ) -> Result<GroupOutcomes, WriteError> {
        let done = self.run_batch_with(ops, durability)?;
        Ok(done.into_iter().map(|(_, outcome)| outcome).collect())
    }

    fn sync(&self) -> Result<(), WriteError> {
        Engine::sync(self)
    }
}
