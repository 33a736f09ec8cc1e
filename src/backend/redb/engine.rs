//! The engine: the redb file as one owner of transactions.
//!
//! [`Engine`] owns the database handle, what the file recorded (metric, dimension, model),
//! the ticket reservation, and the poison flag, and it is the one place a write transaction
//! is begun and committed ([`Engine::write_txn`]): guarded batches, purges, syncs, ticket
//! blocks and the persisted graph all go through it. Both [`Store`](crate::Store) and the
//! concurrent [`Writer`](crate::Writer) write through an engine; neither knows the other.
//!
//! Invariant: a storage error or a contained panic inside a write transaction poisons the
//! engine: every later write is refused with `Poisoned` until the file is reopened. The one
//! exception is a write of a derived structure (the graph snapshot,
//! [`Engine::write_txn_derived`]): its storage error leaves the guarded data as the last
//! commit left it, so the engine closes redb's failed handle (redb refuses every later
//! read and write on it) and opens the file again, at once or, while that fails (the disk
//! still full), before its next transaction.
//! Invariant: the engine never knows the derived index; after a commit that changed the set
//! of vectors (or when a read-only engine learns its dimension) it calls the change hook its
//! owner installed, which keeps the index in step.

use crate::backend::redb::open::{meta_string, meta_u64, Db, Recognised};
use crate::backend::redb::read::Snapshot;
use crate::backend::redb::schema::{meta_key, seq_key, COUNTERS, META};
use crate::backend::redb::write::{Batch, BatchSettings};
use crate::error::is_op_error;
use crate::error::{ReadError, WriteError};
use crate::options::{Durability, Metric, Options};
use crate::policy::prepare::{
    self, check_name, PreparedDelete, PreparedDoc, PreparedOp, PreparedRetain,
};
use crate::types::Version;
use crate::types::{Document, Op, PurgeOutcome};
use crate::types::{OpOutcome, Outcome, RetainOutcome};
use parking_lot::{Mutex, RwLock};
use redb::WriteTransaction;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

/// How many tickets one durable commit reserves. After a crash the next block starts above
/// every ticket ever issued, so a ticket is never issued twice.
const TICKET_BLOCK: u64 = 4096;

/// How a write transaction ends (see [`Engine::write_txn`]).
pub(crate) enum Finish<R> {
    /// Commit, then return the value.
    Commit(R),
    /// Commit a transaction that changed the store's recorded dimension and model (a
    /// promotion, `spaces::promote`), then return the value: no snapshot begins while it
    /// commits, so each snapshot carries the dimension and model of its own commit.
    CommitRecording(R, Recorded),
    /// Abort (nothing of the transaction becomes visible), then return the value.
    Abort(R),
}

/// The store's recorded dimension and model, as a promotion changes them.
#[derive(Clone, Debug)]
pub(crate) struct Recorded {
    pub dimension: usize,
    pub model: String,
}

/// What is called after a commit that changed the set of vectors.
type ChangeHook = Box<dyn Fn() + Send + Sync>;

/// The redb file and everything a transaction needs to know about it.
pub(crate) struct Engine {
    /// The database; `None` only while it is to be opened again after a failed write of
    /// a derived structure (see [`Engine::write_txn_derived`]).
    db: RwLock<Option<Db>>,
    /// Opened read-only (fixed at open).
    read_only: bool,
    /// The failed handle was closed and the database is to be opened again.
    needs_reopen: AtomicBool,
    /// A commit without durability succeeded since the last durable one: a handle closed
    /// now could lose it, so a failed derived write poisons instead of reopening.
    nondurable: AtomicBool,
    /// The write transaction under way was switched to commit without durability.
    txn_nondurable: AtomicBool,
    /// A caller's backend, kept to open the database on again (`None`: a file, opened
    /// again by its path).
    backend: Option<Arc<dyn redb::StorageBackend>>,
    path: PathBuf,
    options: Options,
    metric: Metric,
    /// Every model name the engine has known, the current one at [`Engine::model_at`]:
    /// recorded at open or by the first write, and replaced by a promotion (a read-only
    /// engine learns each from the file). Append-only, so [`Engine::model`] lends a `&str`
    /// that stays valid; a promotion is rare, and each adds one short name.
    models: boxcar::Vec<String>,
    /// The index of the current model in `models` (`usize::MAX`: none recorded).
    model_at: std::sync::atomic::AtomicUsize,
    /// Other processes may have the file open (redb's `SingleWriter` mode), so every commit
    /// must be durable.
    shared: bool,
    /// The recorded dimension. A snapshot holds it (read) while it begins, and a promotion
    /// (write) while it commits, so a snapshot's dimension and model are its commit's.
    dimension: RwLock<Option<usize>>,
    tickets: Mutex<Tickets>,
    /// The highest ticket this store may have issued (across restarts: the persisted high
    /// water at open, then every ticket issued since). A write carrying a ticket above it is
    /// refused: the store never issued it.
    tickets_issued: Arc<AtomicU64>,
    poisoned: Mutex<Option<String>>,
    on_change: OnceLock<ChangeHook>,
    /// The text index's analyzer writes use (a writer's; `None`: no text index kept, or
    /// read-only, whose searches read the analysis from each snapshot).
    text: Option<Arc<crate::text::Analyzer>>,
    /// The analyzer text searches last read from the file.
    pub(crate) text_analyzer: Mutex<Option<Arc<crate::text::Analyzer>>>,
    /// The text codec the last batch used (`write.rs` checks it against the file's row).
    text_codec: Mutex<Option<Arc<crate::backend::redb::schema::TextCodec>>>,
    /// The texts gathered to train the text codec while the file has none (`write.rs`).
    training: Arc<Mutex<crate::backend::redb::write::Training>>,
    /// The database's file as it was when the engine was made (`None`: a caller's
    /// backend).
    file: Option<OpenedFile>,
    /// A second, read-only handle on the file without a page cache, for the index load's
    /// bulk reads ([`Engine::bulk_snapshot`]); `None` where the file cannot be shared.
    bulk: OnceLock<Option<redb::ReadOnlyDatabase>>,
    /// The snapshot searches share until the next commit ([`Engine::search_snapshot`]).
    shared_snapshot: Mutex<SharedSnapshot>,
}

/// The last snapshot a search took on a writer's engine, kept for the searches after it
/// until a commit; the number of commits begun and ended so far, which tells a search
/// whether the snapshot it took may be kept, and whether a commit is under way (no snapshot
/// is kept then).
#[derive(Default)]
struct SharedSnapshot {
    commits: u64,
    committing: bool,
    current: Option<Arc<Snapshot>>,
}

#[derive(Debug)]
struct Tickets {
    next: u64,
    reserved_until: u64,
}

/// The database's file as the engine found it.
#[derive(Debug)]
struct OpenedFile {
    /// Its canonical path (what a later open or measure of it uses, whatever the working
    /// directory has become).
    path: PathBuf,
    /// Its device and inode (Unix): the index load's second handle opens the path only if
    /// it still names this file.
    identity: Option<(u64, u64)>,
    /// Its length, what closing compares to decide whether to look for free pages.
    len: u64,
}

/// The device and inode of the file at `path` (Unix), to tell a file from another later
/// put at its path.
fn file_identity(path: &Path) -> Option<(u64, u64)> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

/// Closing: the last handle on the engine compacts the file if the options ask for it and
/// enough of it is free (see [`Options::compact_on_close`]).
impl Drop for Engine {
    fn drop(&mut self) {
        // The index load's handle first, closed outright: dropped, redb would keep the file
        // and its lock bytes until a load still reading through it ends.
        if let Some(Some(bulk)) = self.bulk.take() {
            let _ = bulk.close();
        }
        // A read transaction left open would keep the compaction from running.
        drop(self.shared_snapshot.get_mut().current.take());
        if !self.options.compact_on_close
            || std::thread::panicking()
            || self.poisoned.get_mut().is_some()
        {
            return;
        }
        if let (Some(file), Some(db)) = (&self.file, self.db.get_mut()) {
            crate::backend::redb::open::compact_on_close(db, &file.path, file.len);
        }
    }
}

impl Engine {
    /// An engine over a database [`recognise`](crate::backend::redb::open::recognise)d as a store.
    pub(crate) fn new(
        db: Db,
        backend: Option<Arc<dyn redb::StorageBackend>>,
        path: &Path,
        is_file: bool,
        shared: bool,
        options: Options,
        recognised: Recognised,
    ) -> Engine {
        let file = is_file
            .then(|| {
                let path = std::fs::canonicalize(path).ok()?;
                let len = std::fs::metadata(&path).ok()?.len();
                let identity = file_identity(&path);
                Some(OpenedFile {
                    path,
                    identity,
                    len,
                })
            })
            .flatten();
        let models = boxcar::Vec::new();
        let model_at = match recognised.model {
            Some(recorded) => models.push(recorded),
            None => usize::MAX,
        };
        Engine {
            read_only: db.writable().is_none(),
            db: RwLock::new(Some(db)),
            needs_reopen: AtomicBool::new(false),
            nondurable: AtomicBool::new(false),
            txn_nondurable: AtomicBool::new(false),
            backend,
            path: path.to_path_buf(),
            options,
            metric: recognised.metric,
            models,
            model_at: std::sync::atomic::AtomicUsize::new(model_at),
            shared,
            dimension: RwLock::new(recognised.dimension),
            tickets: Mutex::new(Tickets {
                next: recognised.high_water,
                reserved_until: recognised.high_water,
            }),
            tickets_issued: Arc::new(AtomicU64::new(recognised.high_water)),
            poisoned: Mutex::new(None),
            on_change: OnceLock::new(),
            text: recognised.text,
            text_analyzer: Mutex::new(None),
            text_codec: Mutex::new(None),
            training: Arc::default(),
            file,
            bulk: OnceLock::new(),
            shared_snapshot: Mutex::default(),
        }
    }

    /// Installs what runs after a commit that changed the set of vectors (once).
    pub(crate) fn set_change_hook(&self, hook: ChangeHook) {
        let _ = self.on_change.set(hook);
    }

    fn changed(&self) {
        if let Some(hook) = self.on_change.get() {
            hook();
        }
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn options(&self) -> &Options {
        &self.options
    }

    pub(crate) fn metric(&self) -> Metric {
        self.metric
    }

    pub(crate) fn dimension(&self) -> Option<usize> {
        *self.dimension.read()
    }

    pub(crate) fn model(&self) -> Option<&str> {
        self.models
            .get(self.model_at.load(Ordering::SeqCst))
            .map(String::as_str)
    }

    /// Makes `model` the current model (kept if it already is).
    fn set_model(&self, model: String) {
        if self.model() != Some(model.as_str()) {
            let at = self.models.push(model);
            self.model_at.store(at, Ordering::SeqCst);
        }
    }

    /// `WriteError::ReadOnly` when the file was opened read-only: every write path's first
    /// check.
    fn refuse_if_read_only(&self) -> Result<(), WriteError> {
        if self.read_only {
            return Err(WriteError::ReadOnly {
                path: self.path.clone(),
            });
        }
        Ok(())
    }

    /// Whether the file was opened read-only (nothing is ever written).
    pub(crate) fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// The database, opened again first if a failed derived write closed it; a storage
    /// error while it cannot be (nothing is poisoned: the next call tries again).
    fn db(&self) -> Result<parking_lot::MappedRwLockReadGuard<'_, Db>, redb::StorageError> {
        if self.needs_reopen.load(Ordering::SeqCst) {
            self.reopen();
        }
        let guard = self.db.read_recursive();
        parking_lot::RwLockReadGuard::try_map(guard, Option::as_ref).map_err(|_| {
            redb::StorageError::Io(std::io::Error::other(format!(
                "{} could not be opened again after a failed write of the graph snapshot",
                self.path.display()
            )))
        })
    }

    /// Closes the database's failed handle (if still open) and opens the file (or the
    /// caller's backend) again; on failure it stays closed, to be tried again by the next
    /// transaction ([`Engine::db`]).
    fn reopen(&self) {
        let mut db = self.db.write();
        if !self.needs_reopen.load(Ordering::SeqCst) {
            return;
        }
        // The snapshot searches share reads through the failed handle.
        drop(self.shared_snapshot.lock().current.take());
        // Closed before it is opened again: redb refuses a second handle on one file.
        drop(db.take());
        let opened = match &self.backend {
            Some(backend) => {
                crate::backend::redb::open::reopen_backend(backend.clone(), &self.options)
            }
            None => crate::backend::redb::open::reopen_writable(
                self.file.as_ref().map_or(&self.path, |file| &file.path),
                &self.options,
            ),
        };
        if let Ok(opened) = opened {
            *db = Some(opened);
            self.needs_reopen.store(false, Ordering::SeqCst);
        }
    }

    pub(crate) fn check_poisoned(&self) -> Result<(), WriteError> {
        match &*self.poisoned.lock() {
            Some(cause) => Err(WriteError::Poisoned {
                cause: cause.clone(),
            }),
            None => Ok(()),
        }
    }

    fn poison(&self, error: &WriteError) {
        let mut poisoned = self.poisoned.lock();
        if poisoned.is_none() {
            *poisoned = Some(error.to_string());
        }
    }

    /// THE write transaction: refused on a read-only or poisoned engine; begun with
    /// `durability`; `work` decides whether it commits or aborts; a panic inside is
    /// contained (`contain.rs`); a storage error or a contained panic poisons the engine.
    pub(crate) fn write_txn<R>(
        &self,
        durability: redb::Durability,
        work: impl FnOnce(&mut WriteTransaction) -> Result<Finish<R>, WriteError>,
    ) -> Result<R, WriteError> {
        let result = self.write_txn_unguarded(durability, work);
        if let Err(error) = &result {
            if matches!(error, WriteError::Storage(_)) || error.is_contained_panic() {
                self.poison(error);
            }
        }
        result
    }

    /// [`Engine::write_txn`] for a structure derived from the guarded data (the graph
    /// snapshot), which may be lost and rebuilt: its storage error (the disk full) does not
    /// poison the engine. redb refuses every later operation on a handle whose write
    /// failed, so the handle is closed and the database opened again (now, or by the next
    /// transaction while that fails); what the failed transaction would have written is
    /// not there, and every commit before it is. Only when a commit without durability
    /// came since the last durable one (the reopened file might not hold it) does the
    /// error poison, as in [`Engine::write_txn`].
    pub(crate) fn write_txn_derived<R>(
        &self,
        durability: redb::Durability,
        work: impl FnOnce(&mut WriteTransaction) -> Result<Finish<R>, WriteError>,
    ) -> Result<R, WriteError> {
        let result = self.write_txn_unguarded(durability, work);
        if let Err(error) = &result {
            let storage = matches!(error, WriteError::Storage(_));
            if error.is_contained_panic() || (storage && self.nondurable.load(Ordering::SeqCst)) {
                self.poison(error);
            } else if storage {
                self.needs_reopen.store(true, Ordering::SeqCst);
                self.reopen();
            }
        }
        result
    }

    /// The transaction of [`Engine::write_txn`], without poisoning.
    fn write_txn_unguarded<R>(
        &self,
        durability: redb::Durability,
        work: impl FnOnce(&mut WriteTransaction) -> Result<Finish<R>, WriteError>,
    ) -> Result<R, WriteError> {
        self.refuse_if_read_only()?;
        self.check_poisoned()?;
        crate::backend::redb::contain::contain(WriteError::contained, || {
            // The handle is held only to begin: a transaction outlives it (redb closes a
            // dropped database once its transaction ends), and `reopen` must not wait for
            // a transaction that reads through `snapshot`.
            let mut txn = {
                let guard = self.db().map_err(WriteError::storage)?;
                let Some(db) = guard.writable() else {
                    return Err(WriteError::ReadOnly {
                        path: self.path.clone(),
                    });
                };
                db.begin_write().map_err(WriteError::storage)?
            };
            self.txn_nondurable.store(
                matches!(durability, redb::Durability::None),
                Ordering::SeqCst,
            );
            txn.set_durability(durability)
                .map_err(WriteError::storage)?;
            match work(&mut txn)? {
                Finish::Commit(value) => {
                    self.forget_shared_snapshot(true);
                    let committed = txn.commit().map_err(WriteError::storage);
                    // Even after a failed commit: what the file holds is no longer known.
                    self.forget_shared_snapshot(false);
                    committed?;
                    self.nondurable
                        .store(self.txn_nondurable.load(Ordering::SeqCst), Ordering::SeqCst);
                    Ok(value)
                }
                Finish::CommitRecording(value, recorded) => {
                    // Held across the commit: a snapshot begins before it with the old
                    // dimension and model, or after it with the new ones.
                    let mut dimension = self.dimension.write();
                    self.forget_shared_snapshot(true);
                    let committed = txn.commit().map_err(WriteError::storage);
                    self.forget_shared_snapshot(false);
                    committed?;
                    *dimension = Some(recorded.dimension);
                    self.set_model(recorded.model);
                    drop(dimension);
                    self.nondurable
                        .store(self.txn_nondurable.load(Ordering::SeqCst), Ordering::SeqCst);
                    Ok(value)
                }
                Finish::Abort(value) => {
                    txn.abort().map_err(WriteError::storage)?;
                    Ok(value)
                }
            }
        })
    }

    /// Validates an operation against this store's settings.
    /// See [`Store::plan`](crate::Store::plan): the decision and the reusable vectors, from
    /// one snapshot.
    pub(crate) fn plan(&self, doc: &Document) -> Result<crate::policy::plan::Plan, ReadError> {
        crate::policy::plan::plan_with(
            doc,
            self.metric(),
            self.dimension(),
            self.options(),
            |prepared| {
                self.snapshot()?
                    .plan_state(&prepared.source, &prepared.id, prepared.version)
            },
        )
    }

    pub(crate) fn prepare(&self, op: Op) -> Result<PreparedOp, WriteError> {
        prepare::prepare_op(op, self.metric, self.dimension(), &self.options.limits)
    }

    /// Validates an upsert against this store's settings.
    pub(crate) fn prepare_document(&self, doc: Document) -> Result<PreparedDoc, WriteError> {
        prepare::prepare_document(doc, self.metric, self.dimension(), &self.options.limits)
    }

    fn batch_settings(&self) -> BatchSettings {
        BatchSettings {
            policy: self.options.conflict_policy,
            skip_log_capacity: self.options.skip_log_capacity,
            tickets_issued: self.tickets_issued.clone(),
            text: self.text.clone(),
            text_codec: self.text_codec.lock().clone(),
            training: self.training.clone(),
        }
    }

    /// Runs prepared operations in one write transaction with the store's durability (see
    /// [`Self::run_batch_with`]).
    pub(crate) fn run_batch<A: Apply>(
        &self,
        ops: impl IntoIterator<Item = A>,
    ) -> Result<Applied<A>, WriteError> {
        self.run_batch_with(ops, self.options.durability)
    }

    /// Runs operations in one write transaction, taking them from `ops` one at a time: each
    /// is applied before the next is asked for, so that the concurrent `Writer` can let
    /// operations that arrive while its transaction is being built join it. Each operation
    /// comes back paired with its own outcome, in order. The outer error is the batch's
    /// (storage: the batch is not acknowledged, whole or absent on disk, and the engine is
    /// poisoned); the inner ones are each operation's own.
    pub(crate) fn run_batch_with<A: Apply>(
        &self,
        ops: impl IntoIterator<Item = A>,
        durability: Durability,
    ) -> Result<Applied<A>, WriteError> {
        self.run(durability, |batch| {
            let ops = ops.into_iter();
            let mut done = Vec::with_capacity(ops.size_hint().0);
            for mut op in ops {
                match op.apply(batch) {
                    Ok(outcome) => done.push((op, Ok(outcome))),
                    Err(error) if is_op_error(&error) => done.push((op, Err(error))),
                    Err(error) => return Err(error),
                }
            }
            let refused_only = done.iter().all(|(_, result)| match result {
                Ok(outcome) => A::changed_nothing(outcome),
                Err(_) => true,
            });
            let applied = done.iter().any(|(_, result)| result.is_ok());
            Ok((done, applied, refused_only))
        })
    }

    /// Runs one operation in its own transaction with the store's durability.
    pub(crate) fn run_one<A: Apply>(&self, mut op: A) -> Result<A::Outcome, WriteError> {
        self.run(self.options.durability, |batch| match op.apply(batch) {
            Ok(outcome) => {
                let refused = A::changed_nothing(&outcome);
                Ok((Ok(outcome), true, refused))
            }
            Err(error) if is_op_error(&error) => Ok((Err(error), false, true)),
            Err(error) => Err(error),
        })?
    }

    /// A guarded batch: `apply` returns its value, whether any operation was applied (if
    /// none was, nothing is committed, so that not even the commit counter moves: I9), and
    /// whether every operation was refused (then the commit needs no fsync).
    pub(crate) fn run<T>(
        &self,
        durability: Durability,
        apply: impl FnOnce(&mut Batch<'_>) -> Result<(T, bool, bool), WriteError>,
    ) -> Result<T, WriteError> {
        // Where other processes read the file, redb shares only durable commits.
        let durability = match (self.shared, durability) {
            (true, _) | (false, Durability::Immediate) => redb::Durability::Immediate,
            (false, Durability::None) => redb::Durability::None,
        };
        let (value, effects) = self.write_txn(durability, |txn| {
            let (value, refused_only, effects) = {
                let mut batch = Batch::begin(txn, self.batch_settings(), self.dimension())?;
                let (value, applied, refused_only) = apply(&mut batch)?;
                if !applied {
                    return Ok(Finish::Abort((value, None)));
                }
                (value, refused_only, batch.finish()?)
            };
            // A batch that only refused writes changed nothing but counters and the skip
            // log: the documents it was decided against are already durable, so it needs no
            // fsync. Its counts become durable with the next durable commit (a crash may
            // lose them). (Not where other processes read the file: redb refuses
            // non-durable commits there.)
            if !self.shared && refused_only {
                txn.set_durability(redb::Durability::None)
                    .map_err(WriteError::storage)?;
                self.txn_nondurable.store(true, Ordering::SeqCst);
            }
            Ok(Finish::Commit((value, Some(effects))))
        })?;
        // Published only once committed.
        if let Some(effects) = effects {
            if let Some(dimension) = effects.dimension_fixed {
                *self.dimension.write() = Some(dimension);
            }
            if let Some(codec) = effects.text_codec {
                *self.text_codec.lock() = Some(codec);
                // The file has its table for good: the texts gathered to train one go.
                let mut training = self.training.lock();
                if training.is_gathering() {
                    *training = crate::backend::redb::write::Training::default();
                }
            }
            if effects.changelog.is_some() {
                self.changed();
            }
        }
        Ok(value)
    }

    /// Validates and applies `ops` in one transaction (see
    /// [`Store::write_batch`](crate::Store::write_batch)): an operation refused while
    /// being validated keeps its place in the answers and never reaches the batch.
    pub(crate) fn write_batch(
        &self,
        ops: Vec<Op>,
    ) -> Result<Vec<Result<OpOutcome, WriteError>>, WriteError> {
        let mut prepared = Vec::with_capacity(ops.len());
        let mut slots = Vec::with_capacity(ops.len());
        for op in ops {
            match self.prepare(op) {
                Ok(op) => {
                    slots.push(None);
                    prepared.push(op);
                }
                Err(error) => slots.push(Some(error)),
            }
        }
        // One outcome per prepared operation, paired with it by `run_batch`.
        let mut applied = self
            .run_batch(prepared)?
            .into_iter()
            .map(|(_, outcome)| outcome);
        Ok(slots
            .into_iter()
            .filter_map(|slot| match slot {
                Some(error) => Some(Err(error)),
                None => applied.next(),
            })
            .collect())
    }

    /// Removes the tombstones and listings of `source` older than `before` (see
    /// [`Store::purge`](crate::Store::purge)).
    pub(crate) fn purge(&self, source: &str, before: Version) -> Result<PurgeOutcome, WriteError> {
        check_name("source", source, &self.options.limits)?;
        self.write_txn(redb::Durability::Immediate, |txn| {
            let mut batch = Batch::begin(txn, self.batch_settings(), self.dimension())?;
            let outcome = batch.purge(source, before)?;
            batch.finish()?;
            Ok(Finish::Commit(outcome))
        })
    }

    /// Makes every write so far durable.
    pub(crate) fn sync(&self) -> Result<(), WriteError> {
        self.write_txn(redb::Durability::Immediate, |_| Ok(Finish::Commit(())))
    }

    /// A new ticket (see [`Store::ticket`](crate::Store::ticket)).
    pub(crate) fn ticket(&self) -> Result<Version, WriteError> {
        self.refuse_if_read_only()?;
        let mut tickets = self.tickets.lock();
        if tickets.next >= tickets.reserved_until {
            // Only a damaged file holds a high-water mark near u64::MAX: 2^64 tickets are
            // not issued in any store's life.
            let until = tickets.reserved_until.saturating_add(TICKET_BLOCK);
            if until == tickets.reserved_until {
                return Err(crate::backend::redb::write::sequence_at_its_end(
                    seq_key::TICKET_HIGH_WATER,
                    until,
                ));
            }
            self.write_txn(redb::Durability::Immediate, |txn| {
                let mut counters = txn.open_table(COUNTERS).map_err(WriteError::storage)?;
                counters
                    .insert(seq_key::TICKET_HIGH_WATER, until)
                    .map_err(WriteError::storage)?;
                Ok(Finish::Commit(()))
            })?;
            tickets.reserved_until = until;
        }
        // Ticket 0 is never issued, so any ticket is newer than "nothing".
        tickets.next += 1;
        self.tickets_issued
            .fetch_max(tickets.next, Ordering::SeqCst);
        Ok(Version::ticket(tickets.next))
    }

    /// Counts every ticket up to `through` as issued (see
    /// [`Store::adopt_tickets`](crate::Store::adopt_tickets)).
    pub(crate) fn adopt_tickets(&self, through: u64) -> Result<(), WriteError> {
        self.refuse_if_read_only()?;
        // The largest PostgreSQL keeps, so an export moves between back ends; above it,
        // every later `ticket()` would fail.
        if i64::try_from(through).is_err() {
            return Err(crate::error::InputError::new(
                "tickets_issued",
                format!("ticket {through} is above the largest a store issues (2^63 - 1)"),
            )
            .into());
        }
        let mut tickets = self.tickets.lock();
        if through > tickets.reserved_until {
            self.write_txn(redb::Durability::Immediate, |txn| {
                let mut counters = txn.open_table(COUNTERS).map_err(WriteError::storage)?;
                counters
                    .insert(seq_key::TICKET_HIGH_WATER, through)
                    .map_err(WriteError::storage)?;
                Ok(Finish::Commit(()))
            })?;
            tickets.reserved_until = through;
        }
        tickets.next = tickets.next.max(through);
        self.tickets_issued.fetch_max(through, Ordering::SeqCst);
        Ok(())
    }

    /// Forgets the snapshot searches shared, just before a commit (`committing`) and just
    /// after it, before the write is answered; none is kept in between. Before: a read
    /// transaction older than a commit keeps redb from reusing the pages that commit frees
    /// as soon as it ends (`persist_graph` relies on that to write a graph into the pages of
    /// the one it deleted). After: the next search reads the commit just made.
    fn forget_shared_snapshot(&self, committing: bool) {
        let stale = {
            let mut shared = self.shared_snapshot.lock();
            shared.commits += 1;
            shared.committing = committing;
            shared.current.take()
        };
        // Its read transaction ends here unless a search still holds it.
        drop(stale);
    }

    /// The snapshot a search reads: on a writer's engine, the one the searches since the
    /// last commit share (a new one if none has been taken since); on a read-only engine,
    /// a new one (another process commits, and only a new read transaction sees it).
    ///
    /// Sharing saves each search a redb read transaction (in `SingleWriter` mode a lock
    /// and an unlock of the file's reader slots, two system calls) and opening the three
    /// tables a hit is resolved from. Read-your-writes holds: [`Engine::write_txn`]
    /// forgets the shared snapshot after its commit, before the write is answered, and a
    /// snapshot begun before that commit is never kept (the commit count moved). Nothing
    /// is pinned: the shared snapshot is forgotten before each commit too and none is kept
    /// while a commit is under way, so only searches still running hold a read transaction
    /// across a commit, as when each search took its own.
    pub(crate) fn search_snapshot(&self) -> Result<Arc<Snapshot>, ReadError> {
        if self.is_read_only() {
            return self.snapshot().map(Arc::new);
        }
        let commits = {
            let shared = self.shared_snapshot.lock();
            if let Some(current) = &shared.current {
                return Ok(current.clone());
            }
            shared.commits
        };
        let snapshot = Arc::new(self.snapshot()?);
        let mut shared = self.shared_snapshot.lock();
        if shared.commits == commits && !shared.committing && shared.current.is_none() {
            shared.current = Some(snapshot.clone());
        }
        Ok(snapshot)
    }

    /// A consistent read view: everything read through it comes from one committed state.
    pub(crate) fn snapshot(&self) -> Result<Snapshot, ReadError> {
        crate::backend::redb::contain::contain(ReadError::contained, || {
            if self.is_read_only() {
                let txn = self
                    .db()
                    .map_err(ReadError::storage)?
                    .begin_read()
                    .map_err(ReadError::storage)?;
                let (dimension, model) = self.learn_recorded(&txn)?;
                return Snapshot::new(txn, self.metric, dimension, model);
            }
            // Held while the transaction begins: a promotion commits before or after.
            let dimension = self.dimension.read();
            let txn = self
                .db()
                .map_err(ReadError::storage)?
                .begin_read()
                .map_err(ReadError::storage)?;
            let (dimension, model) = (*dimension, self.model().map(str::to_owned));
            Snapshot::new(txn, self.metric, dimension, model)
        })
    }

    /// A snapshot for reading most of the file once (the index load: every vectors row and
    /// the graph snapshot), through a second read-only handle without a page cache where
    /// the file is shared with readers (a writer in `SingleWriter` mode, or a read-only
    /// store), else through the store's own handle ([`Engine::snapshot`]).
    ///
    /// Read through the store's handle, the load would fill redb's page cache with vectors
    /// pages no later read wants, evicting the pages hits resolve from (the trade-off is
    /// measured in docs/benchmarks.md, "Memory, disk and reopen"). Both handles read the
    /// last commit published to the file, which for a shared file is the last commit: the
    /// caller catches up from the snapshot's commit through the changelog, as for any
    /// snapshot.
    pub(crate) fn bulk_snapshot(&self) -> Result<Snapshot, ReadError> {
        let Some(bulk) = self.bulk.get_or_init(|| self.open_bulk_handle()) else {
            return self.snapshot();
        };
        crate::backend::redb::contain::contain(ReadError::contained, || {
            let txn = redb::ReadableDatabase::begin_read(bulk).map_err(ReadError::storage)?;
            // What the file records at this transaction's commit: the second handle may
            // read a commit other than the engine's latest (a promotion on either side).
            let (dimension, model) = recorded_in(&txn)?;
            Snapshot::new(
                txn,
                self.metric,
                dimension.or(self.dimension()),
                model.or_else(|| self.model().map(str::to_owned)),
            )
        })
    }

    /// The handle [`Engine::bulk_snapshot`] reads through, if this file can have one: the
    /// file at the canonical path recorded at open, if it is still the same file (a path
    /// reopened later could name another after a rename over it).
    fn open_bulk_handle(&self) -> Option<redb::ReadOnlyDatabase> {
        let file = self.file.as_ref()?;
        if !(self.shared || self.is_read_only()) || file_identity(&file.path) != file.identity {
            return None;
        }
        redb::Builder::new()
            .set_cache_size(0)
            .set_concurrency_mode(redb::ConcurrencyMode::SingleWriter)
            .open_read_only(&file.path)
            .ok()
    }

    /// A read-only engine: the dimension and model `txn` records (the writer may have
    /// recorded them after this store opened, or a promotion replaced them), which become
    /// the engine's; calls the change hook when the dimension changed (the index loads, or
    /// loads again, for it).
    fn learn_recorded(
        &self,
        txn: &redb::ReadTransaction,
    ) -> Result<(Option<usize>, Option<String>), ReadError> {
        let (dimension, model) = recorded_in(txn)?;
        if let Some(model) = &model {
            self.set_model(model.clone());
        }
        // Written only when it changed: every search of a read-only store takes a snapshot.
        let changed = match dimension {
            Some(dimension) if self.dimension() != Some(dimension) => {
                let mut current = self.dimension.write();
                let changed = *current != Some(dimension);
                *current = Some(dimension);
                changed
            }
            _ => false,
        };
        if changed {
            self.changed();
        }
        Ok((
            dimension.or(self.dimension()),
            model.or_else(|| self.model().map(str::to_owned)),
        ))
    }
}

/// The dimension and model `txn`'s `meta` table records.
fn recorded_in(txn: &redb::ReadTransaction) -> Result<(Option<usize>, Option<String>), ReadError> {
    let meta = txn.open_table(META).map_err(ReadError::storage)?;
    let model = meta_string(&meta, meta_key::MODEL)?;
    let dimension = match meta_u64(&meta, meta_key::DIMENSION)? {
        Some(Ok(stored)) => Some(usize::try_from(stored).map_err(|_| ReadError::Corrupted {
            what: "dimension".into(),
            detail: format!("{stored} is too large"),
        })?),
        _ => None,
    };
    Ok((dimension, model))
}

/// A batch's operations, each paired with its own outcome, in order.
pub(crate) type Applied<A> = Vec<(A, Result<<A as Apply>::Outcome, WriteError>)>;

/// An operation a batch can apply, with the outcome its kind has.
pub(crate) trait Apply {
    /// What applying it tells its caller.
    type Outcome;

    /// Decides and applies the operation in `batch`. An error `is_op_error` accepts is the
    /// operation's own (nothing of it was applied); any other fails the batch.
    fn apply(&mut self, batch: &mut Batch<'_>) -> Result<Self::Outcome, WriteError>;

    /// Whether the outcome changed no document, listing or vector (a refusal).
    fn changed_nothing(outcome: &Self::Outcome) -> bool;
}

impl Apply for PreparedOp {
    type Outcome = OpOutcome;

    fn apply(&mut self, batch: &mut Batch<'_>) -> Result<OpOutcome, WriteError> {
        batch.apply(self)
    }

    fn changed_nothing(outcome: &OpOutcome) -> bool {
        match outcome {
            OpOutcome::Document(outcome) => outcome.skip_reason().is_some(),
            OpOutcome::Retain(outcome) => outcome.skipped.is_some(),
        }
    }
}

impl Apply for &PreparedOp {
    type Outcome = OpOutcome;

    fn apply(&mut self, batch: &mut Batch<'_>) -> Result<OpOutcome, WriteError> {
        batch.apply(self)
    }

    fn changed_nothing(outcome: &OpOutcome) -> bool {
        PreparedOp::changed_nothing(outcome)
    }
}

/// An operation on one document: an upsert or a delete.
#[derive(Clone, Debug)]
pub(crate) enum DocumentOp {
    Upsert(PreparedDoc),
    Delete(PreparedDelete),
}

impl Apply for DocumentOp {
    type Outcome = Outcome;

    fn apply(&mut self, batch: &mut Batch<'_>) -> Result<Outcome, WriteError> {
        match self {
            DocumentOp::Upsert(doc) => batch.upsert(doc),
            DocumentOp::Delete(delete) => batch.delete(&delete.source, &delete.id, delete.version),
        }
    }

    fn changed_nothing(outcome: &Outcome) -> bool {
        outcome.skip_reason().is_some()
    }
}

impl Apply for PreparedRetain {
    type Outcome = RetainOutcome;

    fn apply(&mut self, batch: &mut Batch<'_>) -> Result<RetainOutcome, WriteError> {
        batch.retain(&self.source, &self.present, self.version, self.members_hash)
    }

    fn changed_nothing(outcome: &RetainOutcome) -> bool {
        outcome.skipped.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::Finish;
    use crate::{Chunk, Document, Options, Store, Version, WriteError};
    use std::sync::Arc;

    fn doc(version: u64) -> Document {
        Document::new("s", "d", Version::number(version))
            .with_chunk(Chunk::new(format!("text {version}"), vec![1.0, 2.0, 3.0]))
    }

    fn stored_version(snapshot: &crate::Snapshot) -> Option<Version> {
        snapshot.get("s", "d").expect("get").map(|d| d.version)
    }

    /// Searches share one snapshot until a commit. The commit lets it go, so it pins no
    /// page past that commit once the searches holding it end, and the next search reads
    /// the new commit.
    #[test]
    fn searches_share_a_snapshot_until_the_next_commit() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path().join("s.redb"), Options::default()).expect("open");
        store.upsert(doc(1)).expect("write");
        let engine = store.engine();
        let first = engine.search_snapshot().expect("snapshot");
        let again = engine.search_snapshot().expect("snapshot");
        assert!(Arc::ptr_eq(&first, &again), "a second search read anew");
        drop(again);
        store.upsert(doc(2)).expect("write");
        assert_eq!(
            Arc::strong_count(&first),
            1,
            "the engine still holds the snapshot of before the commit"
        );
        let after = engine.search_snapshot().expect("snapshot");
        assert!(!Arc::ptr_eq(&first, &after));
        assert_eq!(stored_version(&first), Some(Version::number(1)));
        assert_eq!(stored_version(&after), Some(Version::number(2)));
        // A write refused by the guard commits its counters: the shared snapshot goes too.
        store.upsert(doc(1)).expect("stale write");
        assert_eq!(Arc::strong_count(&after), 1);
    }

    /// Regression: the shared snapshot was forgotten only after a
    /// commit, so a search before a write kept a read transaction older than the commit
    /// alive through it, and redb (exclusive mode, durable commits) could not free that
    /// commit's freed pages when it ended: they stayed allocated until a later commit. Here
    /// removing a large row frees the same pages whether or not a search came just before.
    /// (The rows are written straight through `write_txn`, so no index work follows them
    /// and takes a read transaction of its own.)
    #[test]
    fn a_search_before_a_commit_keeps_none_of_its_freed_pages() {
        const SCRATCH: redb::TableDefinition<u64, &[u8]> = redb::TableDefinition::new("scratch");
        fn allocated_after_removal(search_first: bool) -> u64 {
            let dir = tempfile::tempdir().expect("tempdir");
            let store = Store::open(
                dir.path().join("s.redb"),
                Options::default()
                    .durability(crate::Durability::Immediate)
                    .allow_readers(false),
            )
            .expect("open");
            assert!(store.wait_for_index(std::time::Duration::from_secs(30)));
            let engine = store.engine();
            let durable = redb::Durability::Immediate;
            engine
                .write_txn(durable, |txn| {
                    let mut table = txn.open_table(SCRATCH).map_err(WriteError::storage)?;
                    let large = vec![7u8; 600_000];
                    table
                        .insert(1, large.as_slice())
                        .map_err(WriteError::storage)?;
                    Ok(Finish::Commit(()))
                })
                .expect("write");
            if search_first {
                // The search ends; the engine keeps the snapshot for the next one.
                drop(engine.search_snapshot().expect("snapshot"));
            }
            engine
                .write_txn(durable, |txn| {
                    let mut table = txn.open_table(SCRATCH).map_err(WriteError::storage)?;
                    table.remove(1).map_err(WriteError::storage)?;
                    Ok(Finish::Commit(()))
                })
                .expect("remove");
            engine
                .write_txn(durable, |txn| {
                    let stats = txn.stats().map_err(WriteError::storage)?;
                    Ok(Finish::Abort(stats.allocated_pages()))
                })
                .expect("stats")
        }
        let without = allocated_after_removal(false);
        let with = allocated_after_removal(true);
        assert_eq!(
            with, without,
            "pages allocated after the removal: {with} with a search before it, {without} without"
        );
    }

    /// A read-only store never shares a snapshot: only a new read transaction sees what
    /// the writer (another process) committed since.
    #[test]
    fn a_read_only_store_reads_a_new_snapshot_for_every_search() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("s.redb");
        let writer = Store::open(&path, Options::default()).expect("open");
        writer.upsert(doc(1)).expect("write");
        let reader = Store::open_read_only(&path).expect("reader");
        let engine = reader.engine();
        let first = engine.search_snapshot().expect("snapshot");
        let second = engine.search_snapshot().expect("snapshot");
        assert!(!Arc::ptr_eq(&first, &second));
        writer.upsert(doc(2)).expect("write");
        let third = engine.search_snapshot().expect("snapshot");
        assert_eq!(stored_version(&third), Some(Version::number(2)));
    }
}
