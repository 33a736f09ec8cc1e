//! Opening and recognising a store file: creating it atomically, telling a store from
//! someone else's redb file, checking what it recorded against the options, converting an
//! older schema (after a backup), and recording what the options add.
//!
//! Everything here runs before a [`Store`](crate::Store) exists; what it learns is handed to
//! the engine as a [`Recognised`].

use crate::backend::redb::schema::{self, meta_key, seq_key, COUNTERS, META};
use crate::error::{InputError, OpenError};
use crate::options::{Metric, Options};
use crate::policy::prepare::check_name;
use redb::BackendError;
use redb::{
    ConcurrencyMode, Database, ReadOnlyDatabase, ReadableDatabase, ReadableTable, TableDefinition,
    TableHandle,
};
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The redb handle: a writer's, or a read-only one that follows another process's commits.
pub(crate) enum Db {
    Writable(Database),
    ReadOnly(ReadOnlyDatabase),
}

impl Db {
    pub(crate) fn begin_read(&self) -> Result<redb::ReadTransaction, redb::TransactionError> {
        match self {
            Db::Writable(db) => db.begin_read(),
            Db::ReadOnly(db) => db.begin_read(),
        }
    }

    /// The writer's database; a read-only store has none (`None`).
    pub(crate) fn writable(&self) -> Option<&Database> {
        match self {
            Db::Writable(db) => Some(db),
            Db::ReadOnly(_) => None,
        }
    }
}

/// What a store file recorded, checked against the options and completed by them.
#[derive(Debug)]
pub(crate) struct Recognised {
    pub(crate) metric: Metric,
    pub(crate) dimension: Option<usize>,
    pub(crate) model: Option<String>,
    /// The persisted ticket high water (0: no ticket reserved yet).
    pub(crate) high_water: u64,
    /// The text index's analyzer writes use (`None`: no text index kept, or read-only).
    pub(crate) text: Option<std::sync::Arc<crate::text::Analyzer>>,
    /// This open converted the file from an older schema by rewriting rows (not a schema-7
    /// file, whose conversion only records the new version): its old rows' pages are free.
    pub(crate) converted: bool,
}

/// [`OpenError::AlreadyExists`] if a non-empty file is at `path` (`Store::create`).
pub(crate) fn refuse_existing(path: &Path) -> Result<(), OpenError> {
    let non_empty = std::fs::metadata(path)
        .map(|m| m.len() > 0)
        .unwrap_or(false);
    if non_empty {
        return Err(OpenError::AlreadyExists {
            path: path.to_path_buf(),
        });
    }
    Ok(())
}

/// Opens the file at `path` as its writer and hands the database to `then` (which makes
/// the store): the options checked first, a lock held by another writer waited for up to
/// [`Options::wait_for_lock`], a panic inside redb contained.
pub(crate) fn as_writer<T>(
    path: &Path,
    options: &Options,
    then: impl Fn(Db, bool) -> Result<T, OpenError>,
) -> Result<T, OpenError> {
    crate::backend::redb::contain::contain(
        |detail| contained_at_open(path, detail),
        || {
            check_options(options)?;
            // A budget too small for even an empty store creates no file (one for an
            // existing file is checked against its live vectors by `recognise`, before
            // anything is written to it).
            if !path.exists() {
                refuse_impossible_budget(options, 0, options.dimension)?;
            }
            with_lock_wait(
                options.wait_for_lock,
                |e| matches!(e, OpenError::Locked { .. }),
                || {
                    let (db, shared) =
                        open_writable(path, options).map_err(|e| not_writable(path, e))?;
                    then(db, shared)
                },
            )
        },
    )
}

/// Opens the file at `path` read-only and hands the database to `then`, with whether a
/// crashed writer's file was recovered first ([`Options::recover_on_read_open`]): a file a
/// crashed writer left, or one a writer holds exclusively, waited for up to
/// [`Options::wait_for_lock`]; a panic inside redb contained.
pub(crate) fn as_reader<T>(
    path: &Path,
    options: &Options,
    then: impl Fn(Db, bool) -> Result<T, OpenError>,
) -> Result<T, OpenError> {
    check_options(options)?;
    crate::backend::redb::contain::contain(
        |detail| contained_at_open(path, detail),
        || {
            let recovered = std::cell::Cell::new(false);
            with_lock_wait(
                options.wait_for_lock,
                |e| {
                    matches!(
                        e,
                        OpenError::HeldExclusively { .. } | OpenError::NeedsRecovery { .. }
                    )
                },
                || match open_read_only(path, options) {
                    Err(OpenError::NeedsRecovery { .. }) if options.recover_on_read_open => {
                        if repair(path)? {
                            recovered.set(true);
                        }
                        then(open_read_only(path, options)?, recovered.get())
                    }
                    other => then(other?, recovered.get()),
                },
            )
        },
    )
}

/// Recovers the file a writer left without closing it (see [`Store::recover`]):
/// `Ok(true)` if it needed recovery and was recovered, `Ok(false)` if it needed none (or a
/// writer that has it open now recovered it).
///
/// [`Store::recover`]: crate::Store::recover
pub(crate) fn recover(path: &Path, options: &Options) -> Result<bool, OpenError> {
    crate::backend::redb::contain::contain(
        |detail| contained_at_open(path, detail),
        || match open_read_only(path, options) {
            Ok(_) => Ok(false),
            Err(OpenError::NeedsRecovery { .. }) => repair(path),
            Err(other) => Err(other),
        },
    )
}

/// Opens a file that needs recovery for writing, as a writer's open does (redb repairs it
/// then, keeping every committed transaction), and closes it again; nothing of ratchetdb's
/// runs on it. `Ok(false)`: a writer has it open now (and recovered it). A file that cannot
/// be written stays as it was: `NeedsRecovery`.
fn repair(path: &Path) -> Result<bool, OpenError> {
    let opened = Database::builder()
        .set_cache_size(0)
        .set_concurrency_mode(ConcurrencyMode::SingleWriter)
        .open(path);
    match opened {
        Ok(db) => {
            db.close().map_err(|e| open_error(path, e))?;
            Ok(true)
        }
        Err(redb::DatabaseError::DatabaseAlreadyOpen) => Ok(false),
        Err(e) => match not_writable(path, open_error(path, e)) {
            OpenError::NotWritable { .. } => Err(OpenError::NeedsRecovery {
                path: path.to_path_buf(),
            }),
            other => Err(other),
        },
    }
}

/// Opens a database on a caller-supplied redb backend (named `<backend>` in errors) and
/// hands it to `then`, with the backend shared, so that the engine can open the database
/// on it again (see `Engine::write_txn_derived`).
pub(crate) fn on_backend<T>(
    backend: impl redb::StorageBackend,
    options: &Options,
    then: impl FnOnce(Db, &Path, Arc<dyn redb::StorageBackend>) -> Result<T, OpenError>,
) -> Result<T, OpenError> {
    if let Some((field, why)) = options.index.invalid() {
        return Err(InputError::new(field, why).into());
    }
    let path = PathBuf::from("<backend>");
    let backend: Arc<dyn redb::StorageBackend> = Arc::new(backend);
    crate::backend::redb::contain::contain(
        |detail| contained_at_open(&path, detail),
        || {
            let db = open_backend(Shared(backend.clone()), &path, options)?;
            then(db, &path, backend.clone())
        },
    )
}

/// Opens the writer's database on `backend` again (after redb failed the previous handle,
/// which closed it).
pub(crate) fn reopen_backend(
    backend: Arc<dyn redb::StorageBackend>,
    options: &Options,
) -> Result<Db, OpenError> {
    let path = PathBuf::from("<backend>");
    crate::backend::redb::contain::contain(
        |detail| contained_at_open(&path, detail),
        || open_backend(Shared(backend), &path, options),
    )
}

/// Opens the writer's file at `path` again (after redb failed the previous handle, which
/// is closed), as it was opened.
pub(crate) fn reopen_writable(path: &Path, options: &Options) -> Result<Db, OpenError> {
    crate::backend::redb::contain::contain(
        |detail| contained_at_open(path, detail),
        || open_writable(path, options).map(|(db, _)| db),
    )
}

/// A caller's backend shared between the database and the engine, which opens the
/// database on it again after a failed write: every call is the backend's own.
#[derive(Debug)]
struct Shared(Arc<dyn redb::StorageBackend>);

impl redb::StorageBackend for Shared {
    fn len(&self) -> Result<u64, std::io::Error> {
        self.0.len()
    }
    fn read(&self, offset: u64, out: &mut [u8]) -> Result<(), std::io::Error> {
        self.0.read(offset, out)
    }
    fn set_len(&self, len: u64) -> Result<(), std::io::Error> {
        self.0.set_len(len)
    }
    fn sync_data(&self) -> Result<(), std::io::Error> {
        self.0.sync_data()
    }
    fn write(&self, offset: u64, data: &[u8]) -> Result<(), std::io::Error> {
        self.0.write(offset, data)
    }
    fn close(&self) -> Result<(), std::io::Error> {
        self.0.close()
    }
    fn try_lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<bool, BackendError> {
        self.0.try_lock_range(start, end)
    }
    fn try_lock_shared_range(
        &self,
        start: Bound<u64>,
        end: Bound<u64>,
    ) -> Result<bool, BackendError> {
        self.0.try_lock_shared_range(start, end)
    }
    fn lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.0.lock_range(start, end)
    }
    fn lock_shared_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.0.lock_shared_range(start, end)
    }
    fn unlock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.0.unlock_range(start, end)
    }
    fn query_lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<bool, BackendError> {
        self.0.query_lock_range(start, end)
    }
}

/// Opens (creating it if allowed and missing) the file at `path` for writing; `true` with
/// it when other processes may read the file meanwhile (redb's `SingleWriter` mode).
fn open_writable(path: &Path, options: &Options) -> Result<(Db, bool), OpenError> {
    let exists = path.exists();
    if !exists && !options.create_if_missing {
        return Err(OpenError::NotFound {
            path: path.to_path_buf(),
        });
    }
    if !exists {
        create_atomically(path, options)?;
    }
    let shared = options.shares_file();
    let db = Database::builder()
        .set_check_integrity_on_open(options.check_integrity_on_open)
        .set_cache_size(crate::index::budget::page_cache_bytes(options))
        .set_concurrency_mode(if shared {
            ConcurrencyMode::SingleWriter
        } else {
            ConcurrencyMode::ExclusiveWriter
        })
        .create(path)
        .map_err(|e| open_error(path, e))?;
    Ok((Db::Writable(db), shared))
}

/// Opens an existing file read-only (one attempt; see `Store::open_read_only_with`).
fn open_read_only(path: &Path, options: &Options) -> Result<Db, OpenError> {
    let len = match std::fs::metadata(path) {
        Ok(meta) => meta.len(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(OpenError::NotFound {
                path: path.to_path_buf(),
            })
        }
        Err(e) => return Err(open_error(path, redb::Error::Io(e))),
    };
    if len == 0 {
        return Err(OpenError::Empty {
            path: path.to_path_buf(),
        });
    }
    let db = Database::builder()
        .set_cache_size(crate::index::budget::page_cache_bytes(options))
        .set_concurrency_mode(ConcurrencyMode::SingleWriter)
        .open_read_only(path)
        .map_err(|e| match e {
            redb::DatabaseError::RepairAborted => OpenError::NeedsRecovery {
                path: path.to_path_buf(),
            },
            redb::DatabaseError::DatabaseAlreadyOpen => OpenError::HeldExclusively {
                path: path.to_path_buf(),
            },
            e => open_error(path, e),
        })?;
    Ok(Db::ReadOnly(db))
}

/// Opens a database on a caller-supplied redb storage backend.
fn open_backend(
    backend: impl redb::StorageBackend,
    path: &Path,
    options: &Options,
) -> Result<Db, OpenError> {
    let db = Database::builder()
        .set_check_integrity_on_open(options.check_integrity_on_open)
        .set_cache_size(crate::index::budget::page_cache_bytes(options))
        .create_with_backend(backend)
        .map_err(|e| open_error(path, e))?;
    Ok(Db::Writable(db))
}

/// Recognises the store in `db`: initialises a new one, checks what the file recorded
/// against `options`, converts an older schema (`is_file`: backing the file up first), and
/// records what the options add (a writer only).
pub(crate) fn recognise(
    db: &Db,
    path: &Path,
    is_file: bool,
    options: &Options,
) -> Result<Recognised, OpenError> {
    initialise_if_new(db, path, options)?;
    let recorded = read_recorded(db, path, options)?;
    // A budget too small for the live vectors is refused before anything is written: no
    // conversion (nor its backup file), no dimension or model recorded, no text index
    // built or removed. The dimension is the recorded one, or the one the options would
    // record; the live count is the file's own (its `live.vectors` gauge, which every
    // schema keeps).
    refuse_impossible_budget(
        options,
        recorded.live_vectors,
        recorded.dimension.or(options.dimension),
    )?;
    // A budgeted store's process maps large blocks on their own from the start
    // (`sys::bound_large_allocations`), not only once its index loads: the first write may
    // train the text codec (`schema/text_code.rs`), whose 2 MiB counter, freed, would raise
    // glibc's thresholds first (a close then measured 1.07 MB above the resident set, against
    // 0.02 MB).
    if options.memory_budget.is_some() {
        crate::sys::bound_large_allocations();
    }
    let mut converted = false;
    if let Some(version) = recorded.convert_from {
        match db.writable() {
            Some(writable) => {
                if is_file {
                    backup_before_conversion(path, version)?;
                }
                convert(writable, path, version, recorded.dimension)?;
                converted = version < schema::READ_AS_IS_FROM;
            }
            // A file whose rows this build reads as they are: a reader reads it unconverted.
            None if version >= schema::READ_AS_IS_FROM => {}
            None => {
                return Err(OpenError::NeedsConversion {
                    path: path.to_path_buf(),
                    found: version,
                    supported: schema::SCHEMA_VERSION,
                })
            }
        }
    }
    let Some(writable) = db.writable() else {
        // A read-only store only checked the options against what is recorded.
        return Ok(Recognised {
            metric: recorded.metric,
            dimension: recorded.dimension,
            model: recorded.model,
            high_water: recorded.high_water,
            text: None,
            converted,
        });
    };
    record_what_options_add(writable, path, &recorded, options)?;
    // The text index: built, rebuilt or removed in one transaction as the options say.
    let (text, _) = crate::backend::redb::text::prepare_on_open(
        writable,
        options.text_index,
        options.text.as_ref(),
    )
    .map_err(|e| match e {
        crate::error::WriteError::Storage(e) => open_error(path, e),
        other => OpenError::Corrupted {
            path: path.to_path_buf(),
            what: "text index".to_string(),
            detail: other.to_string(),
        },
    })?;
    Ok(Recognised {
        metric: recorded.metric,
        dimension: recorded.dimension.or(options.dimension),
        model: recorded.model.or_else(|| options.model.clone()),
        high_water: recorded.high_water,
        text,
        converted,
    })
}

/// Gives back the space a conversion freed. It rewrote every revision's rows in one
/// transaction, so the file held the old and the new rows until the commit, and redb keeps
/// the freed pages inside the file: compacting moves the live pages down and truncates it.
/// Best effort: the conversion has committed, and a compaction that fails leaves a whole
/// file with free pages in it (an I/O failure that latched shows at the store's next
/// operation).
pub(crate) fn compact_after_conversion(db: &mut Db) {
    if let Db::Writable(db) = db {
        let _ = db.compact();
    }
}

/// Whether a closing store compacts a file of `file` bytes of which `free` are free pages
/// (see [`Options::compact_on_close`]): at least
/// [`COMPACT_ON_CLOSE_MIN_FREE`](crate::options::COMPACT_ON_CLOSE_MIN_FREE), and an eighth
/// of a file larger than
/// [`COMPACT_ON_CLOSE_SMALL_FILE`](crate::options::COMPACT_ON_CLOSE_SMALL_FILE).
pub(crate) fn compaction_due(file: u64, free: u64) -> bool {
    free >= crate::options::COMPACT_ON_CLOSE_MIN_FREE
        && (file <= crate::options::COMPACT_ON_CLOSE_SMALL_FILE || free.saturating_mul(8) >= file)
}

/// The closing half of [`Options::compact_on_close`]: compacts the writable file at
/// `path` (canonical) if this session grew it past `len_at_open` and its free pages are
/// now enough ([`compaction_due`]).
///
/// redb's count of allocated pages comes with statistics that walk every table, so a
/// session that did not grow the file (free pages come in bulk from redb doubling the
/// file, and a file that did not grow holds no more than the last close left) closes
/// without reading it. Best effort, as [`compact_after_conversion`]: redb refuses while a
/// transaction of this process or of a reader process is live, a panic inside redb (a
/// damaged page met by the walk) is contained, and a failure leaves a whole file.
///
/// Called once the store's derived state (the vector index, filters, text cache) is freed
/// (the indexer drops its engine last): redb's compaction holds in memory a path for every
/// page it may move (up to a million pages a pass), which then takes the index's place
/// instead of rising above it.
pub(crate) fn compact_on_close(db: &mut Db, path: &Path, len_at_open: u64) {
    let Db::Writable(db) = db else {
        return;
    };
    let Ok(file) = std::fs::metadata(path).map(|m| m.len()) else {
        return;
    };
    if file <= len_at_open {
        return;
    }
    let _ = crate::backend::redb::contain::contain(
        |_| (),
        || {
            // Trimming and repacking first: the pages they free are then compacted away
            // with the rest.
            let _ = trim_changelog(db, file);
            let _ = repack_sparse_tables(db);
            // redb frees the pages a commit releases only at a later commit: the last
            // batches' (a large delete's) are counted as allocated until then.
            for _ in 0..2 {
                let txn = db.begin_write().map_err(|_| ())?;
                txn.commit().map_err(|_| ())?;
            }
            let txn = db.begin_write().map_err(|_| ())?;
            let stats = txn.stats();
            let _ = txn.abort();
            let stats = stats.map_err(|_| ())?;
            let allocated = stats.allocated_pages() * stats.page_size() as u64;
            let free = file.saturating_sub(allocated);
            if compaction_due(file, free) {
                let _ = db.compact();
                // The compaction's page paths, freed, would stay resident in the
                // allocator after the store has closed.
                crate::sys::release_free_heap();
            }
            Ok(())
        },
    );
}

/// The changelog rows a closing store keeps at most (see [`trim_changelog`]).
pub(crate) const CHANGELOG_KEEP_ON_CLOSE: u64 = 16;
/// The bytes of changelog rows a closing store keeps at least room for: more in a file
/// over 16 MiB, a thousandth of it (see [`trim_changelog`]).
pub(crate) const CHANGELOG_KEEP_BYTES_ON_CLOSE: usize = 16 << 10;

/// Removes all but the last changelog rows of a file of `file` bytes, in one transaction
/// (none if there is nothing to remove); returns whether it removed any. It keeps the last
/// row, and before it as many, up to [`CHANGELOG_KEEP_ON_CLOSE`] rows in all, as hold
/// together at most [`CHANGELOG_KEEP_BYTES_ON_CLOSE`] or a thousandth (1/1024) of the
/// file, whichever is more.
///
/// The changelog serves indexes that follow the commits as they happen: this store's own
/// (gone once it closes) and those of reader processes beside it. A reopen does not read
/// it (the persisted graph is reconciled with the vectors rows by id and fingerprint; a
/// budgeted index is saved at the close's last commit), and a reader more than the kept
/// rows behind reloads its index from the vectors rows, as it does when it falls behind
/// the window writes keep. A batch's row names every vector id it added or removed (9
/// bytes each), so a bulk load's rows are a run of pages each (a batch of 1,000 one-chunk
/// documents: 9 KB), and the runs also hold compaction back. The bytes kept grow with the
/// file, as what a lagging reader's reload costs does: a small file keeps a bulk load's
/// last row or two (a bulk load's last 16 rows were 89 KB of a 16 MB file), a large one
/// its last 16 rows.
fn trim_changelog(db: &Database, file: u64) -> Result<bool, redb::Error> {
    use redb::ReadableTable;
    let keep_bytes = usize::try_from(file / 1024)
        .unwrap_or(usize::MAX)
        .max(CHANGELOG_KEEP_BYTES_ON_CLOSE);
    let txn = db.begin_write()?;
    let trimmed = {
        let mut changelog = txn.open_table(schema::CHANGELOG)?;
        // The last key to remove: the one before the earliest row kept.
        let mut keep_after = None;
        let mut kept_bytes = 0usize;
        for (kept, row) in (0u64..).zip(changelog.iter()?.rev()) {
            let (key, value) = row?;
            let len = value.value().len();
            if kept > 0
                && (kept == CHANGELOG_KEEP_ON_CLOSE || kept_bytes.saturating_add(len) > keep_bytes)
            {
                keep_after = Some(key.value());
                break;
            }
            kept_bytes = kept_bytes.saturating_add(len);
        }
        match keep_after {
            Some(keep_after) => {
                changelog.retain_in(..=keep_after, |_, _| false)?;
                true
            }
            None => false,
        }
    };
    if trimmed {
        txn.commit()?;
    } else {
        txn.abort()?;
    }
    Ok(trimmed)
}

/// The least spare room in a table's pages, in bytes, that makes a closing store repack it
/// (see [`repack_sparse_tables`]): 64 pages. With at least a quarter of the table spare,
/// a repack copies at most four times what it gives back.
const REPACK_MIN_SPARE: u64 = 256 << 10;
/// The name a repacked table is built under before it takes the old one's name, inside
/// the one transaction that repacks (so no file ever holds it).
const REPACK_SCRATCH: &str = "repack";

/// Rebuilds, in key order, the tables whose keys the caller chooses and whose leaves a load
/// left sparse, in one transaction; returns whether it repacked any.
///
/// redb splits a full leaf in half when a key lands inside it, so a table filled in an order
/// that is not its key order is left with leaves about half empty (ids "0" to "99999"
/// written in numeric order, for one), and compaction moves pages without refilling them. Copied in key order, every leaf but
/// the last is packed full (redb starts a new leaf for a key past the rightmost one). Only
/// the tables keyed by the caller's names are candidates (documents, listings and their
/// members); the others take their keys in ascending order and are packed already. A table
/// is repacked when at least [`REPACK_MIN_SPARE`] and a quarter of its pages are spare. One
/// transaction: a crash keeps the old tables, and a reader sees the old or the new.
fn repack_sparse_tables(db: &Database) -> Result<bool, redb::Error> {
    let txn = db.begin_write()?;
    let mut repacked = repack(&txn, schema::DOCS)?;
    repacked |= repack(&txn, schema::LISTINGS)?;
    repacked |= repack(&txn, schema::LISTING_MEMBERS)?;
    if repacked {
        txn.commit()?;
    } else {
        txn.abort()?;
    }
    Ok(repacked)
}

/// Repacks one table (see [`repack_sparse_tables`]) if its pages are sparse enough.
fn repack<K: redb::Key + 'static, V: redb::Value + 'static>(
    txn: &redb::WriteTransaction,
    table: TableDefinition<K, V>,
) -> Result<bool, redb::Error> {
    use redb::ReadableTableMetadata;
    let stats = txn.open_table(table)?.stats()?;
    let spare = stats.fragmented_bytes();
    let pages = stats.stored_bytes() + stats.metadata_bytes() + spare;
    if spare < REPACK_MIN_SPARE || spare.saturating_mul(4) < pages {
        return Ok(false);
    }
    let scratch = TableDefinition::<K, V>::new(REPACK_SCRATCH);
    {
        let old = txn.open_table(table)?;
        let mut new = txn.open_table(scratch)?;
        for entry in old.iter()? {
            let (key, value) = entry?;
            new.insert(key.value(), value.value())?;
        }
    }
    txn.delete_table(table)?;
    txn.rename_table(scratch, table)?;
    Ok(true)
}

/// A new store (a redb file without tables) gets its tables and metadata; a redb file that
/// holds someone else's tables is refused.
fn initialise_if_new(db: &Db, path: &Path, options: &Options) -> Result<(), OpenError> {
    let err = |e: redb::Error| open_error(path, e);
    let txn = db.begin_read().map_err(|e| err(e.into()))?;
    let tables: Vec<String> = txn
        .list_tables()
        .map_err(|e| err(e.into()))?
        .map(|t| t.name().to_string())
        .collect();
    drop(txn);
    if !tables.is_empty() {
        if !tables.iter().any(|t| t == META.name()) {
            return Err(OpenError::NotAStore {
                path: path.to_path_buf(),
                detail: format!("it holds the tables {tables:?} and no ratchetdb metadata"),
            });
        }
        return Ok(());
    }
    match db.writable() {
        Some(writable) => {
            // A budget too small for even an empty store leaves a new database as it was
            // (a caller's backend; a new file was refused before it was created).
            refuse_impossible_budget(options, 0, options.dimension)?;
            initialise(writable, options).map_err(err)
        }
        // Creating a store commits its tables before the file gets its name, so a store
        // never lacks them; a read-only open does not add them.
        None => Err(OpenError::NotAStore {
            path: path.to_path_buf(),
            detail: "it is a redb file without any tables (no ratchetdb store)".to_string(),
        }),
    }
}

/// [`InputError`] on `memory_budget` naming the smallest budget that works, if
/// [`Options::memory_budget`] cannot hold the index of `live` vectors of `dimension`
/// dimensions (`None`: none recorded or given yet, where a store of any dimension needs
/// at least what one of a single dimension does); see `index::budget::refusal`.
fn refuse_impossible_budget(
    options: &Options,
    live: u64,
    dimension: Option<usize>,
) -> Result<(), OpenError> {
    let live = usize::try_from(live).unwrap_or(usize::MAX);
    match crate::index::budget::refusal(options, live, dimension.unwrap_or(1)) {
        Some((field, why)) => Err(InputError::new(field, why).into()),
        None => Ok(()),
    }
}

/// What the file's metadata says, checked against the options.
struct Recorded {
    /// The schema to convert from (older than this build's), if any.
    convert_from: Option<u32>,
    metric: Metric,
    dimension: Option<usize>,
    model: Option<String>,
    high_water: u64,
    /// The `live.vectors` gauge: the vectors the default space's index holds.
    live_vectors: u64,
}

/// Reads the meta table (format marker, schema version, metric, dimension, model) and the
/// ticket high water and live vector count, refusing what contradicts `options`.
fn read_recorded(db: &Db, path: &Path, options: &Options) -> Result<Recorded, OpenError> {
    let err = |e: redb::Error| open_error(path, e);
    let txn = db.begin_read().map_err(|e| err(e.into()))?;
    let meta = txn.open_table(META).map_err(|e| err(e.into()))?;
    // Compare without keeping the AccessGuard: a guard outliving the read transaction
    // pins its page, and the write transaction that records the dimension or model would
    // free that page under it (redb asserts on this in debug builds).
    let is_store = meta
        .get(meta_key::FORMAT)
        .map_err(|e| err(e.into()))?
        .is_some_and(|f| f.value() == schema::FORMAT_MAGIC);
    if !is_store {
        return Err(OpenError::NotAStore {
            path: path.to_path_buf(),
            detail: "its metadata lacks the ratchetdb format marker".to_string(),
        });
    }
    let convert_from = check_schema_version(&meta, path)?;
    let metric = recorded_metric(&meta, path, options)?;
    let (dimension, model) = recorded_dimension_and_model(&meta, path, options)?;
    let (high_water, live_vectors) = {
        let counters = txn.open_table(COUNTERS).map_err(|e| err(e.into()))?;
        let read = |key: &str| -> Result<u64, OpenError> {
            Ok(counters
                .get(key)
                .map_err(|e| err(e.into()))?
                .map(|v| v.value())
                .unwrap_or(0))
        };
        (
            read(seq_key::TICKET_HIGH_WATER)?,
            read(crate::types::counters::name::LIVE_VECTORS)?,
        )
    };
    Ok(Recorded {
        convert_from,
        metric,
        dimension,
        model,
        high_water,
        live_vectors,
    })
}

fn corrupted(path: &Path, what: &str, detail: String) -> OpenError {
    OpenError::Corrupted {
        path: path.to_path_buf(),
        what: what.to_string(),
        detail,
    }
}

/// The schema version this build can open; `Some(version)` for an older one it converts.
fn check_schema_version(
    meta: &impl ReadableTable<&'static str, &'static [u8]>,
    path: &Path,
) -> Result<Option<u32>, OpenError> {
    let schema_version =
        match meta_u64(meta, meta_key::SCHEMA_VERSION).map_err(|e| open_error(path, e))? {
            Some(Ok(v)) => v,
            Some(Err(len)) => {
                return Err(corrupted(
                    path,
                    "schema version",
                    format!("{len} bytes, expected 8"),
                ))
            }
            None => return Err(corrupted(path, "schema version", "missing".to_string())),
        };
    if schema_version > u64::from(schema::SCHEMA_VERSION) {
        return Err(OpenError::SchemaTooNew {
            path: path.to_path_buf(),
            found: u32::try_from(schema_version).unwrap_or(u32::MAX),
            supported: schema::SCHEMA_VERSION,
        });
    }
    if schema_version < 1 {
        return Err(OpenError::SchemaTooOld {
            path: path.to_path_buf(),
            found: u32::try_from(schema_version).unwrap_or(0),
            supported: schema::SCHEMA_VERSION,
        });
    }
    Ok(u32::try_from(schema_version)
        .ok()
        .filter(|v| (1..schema::SCHEMA_VERSION).contains(v)))
}

fn mismatch(field: &'static str, stored: String, requested: String) -> OpenError {
    OpenError::Mismatch {
        field,
        stored,
        requested,
    }
}

/// The recorded metric, which the options may repeat but not change.
fn recorded_metric(
    meta: &impl ReadableTable<&'static str, &'static [u8]>,
    path: &Path,
    options: &Options,
) -> Result<Metric, OpenError> {
    let stored = match meta_string(meta, meta_key::METRIC).map_err(|e| open_error(path, e))? {
        Some(name) => Metric::parse(&name)
            .ok_or_else(|| corrupted(path, "metric", format!("unknown metric {name:?}")))?,
        None => return Err(corrupted(path, "metric", "missing".to_string())),
    };
    match options.metric {
        Some(requested) if requested != stored => Err(mismatch(
            "metric",
            stored.to_string(),
            requested.to_string(),
        )),
        _ => Ok(stored),
    }
}

/// The recorded dimension and model (each may be unrecorded yet), which the options may
/// repeat but not change.
fn recorded_dimension_and_model(
    meta: &impl ReadableTable<&'static str, &'static [u8]>,
    path: &Path,
    options: &Options,
) -> Result<(Option<usize>, Option<String>), OpenError> {
    let err = |e: redb::Error| open_error(path, e);
    let dimension = match meta_u64(meta, meta_key::DIMENSION).map_err(err)? {
        Some(Ok(v)) => Some(
            usize::try_from(v)
                .map_err(|_| corrupted(path, "dimension", format!("{v} is too large")))?,
        ),
        Some(Err(len)) => {
            return Err(corrupted(
                path,
                "dimension",
                format!("{len} bytes, expected 8"),
            ))
        }
        None => None,
    };
    let model = meta_string(meta, meta_key::MODEL).map_err(err)?;
    if let (Some(stored), Some(requested)) = (dimension, options.dimension) {
        if stored != requested {
            return Err(mismatch(
                "dimension",
                stored.to_string(),
                requested.to_string(),
            ));
        }
    }
    if let (Some(stored), Some(requested)) = (&model, &options.model) {
        if stored != requested {
            return Err(mismatch("model", stored.clone(), requested.clone()));
        }
    }
    Ok((dimension, model))
}

/// Records the dimension and model the options give and the file does not have yet.
fn record_what_options_add(
    db: &Database,
    path: &Path,
    recorded: &Recorded,
    options: &Options,
) -> Result<(), OpenError> {
    let err = |e: redb::Error| open_error(path, e);
    let dimension = options.dimension.filter(|_| recorded.dimension.is_none());
    let model = options.model.as_ref().filter(|_| recorded.model.is_none());
    if dimension.is_none() && model.is_none() {
        return Ok(());
    }
    let mut txn = db.begin_write().map_err(|e| err(e.into()))?;
    txn.set_durability(redb::Durability::Immediate)
        .map_err(|e| err(e.into()))?;
    {
        let mut meta = txn.open_table(META).map_err(|e| err(e.into()))?;
        if let Some(dimension) = dimension {
            meta.insert(
                meta_key::DIMENSION,
                (dimension as u64).to_le_bytes().as_slice(),
            )
            .map_err(|e| err(e.into()))?;
        }
        if let Some(model) = model {
            meta.insert(meta_key::MODEL, model.as_bytes())
                .map_err(|e| err(e.into()))?;
        }
    }
    txn.commit().map_err(|e| err(e.into()))
}

/// A panic inside redb while opening, contained (`contain.rs`).
pub(crate) fn contained_at_open(path: &Path, detail: String) -> OpenError {
    OpenError::Corrupted {
        path: path.to_path_buf(),
        what: crate::backend::redb::contain::WHAT.to_string(),
        detail,
    }
}

pub(crate) fn open_error(path: &Path, error: impl Into<redb::Error>) -> OpenError {
    match error.into() {
        redb::Error::DatabaseAlreadyOpen => OpenError::Locked {
            path: path.to_path_buf(),
        },
        // redb's "Not a redb database" (no magic number): someone else's file, a truncated
        // one, or one whose creation never finished (redb writes the magic last).
        redb::Error::Io(e) if e.kind() == std::io::ErrorKind::InvalidData => OpenError::NotAStore {
            path: path.to_path_buf(),
            detail: format!(
                "{e}: not a redb file, a truncated one, or a new store whose creation was \
                 interrupted (such a file never held data)"
            ),
        },
        // A read past the end: the file is shorter than its own header says.
        redb::Error::Io(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
            OpenError::Corrupted {
                path: path.to_path_buf(),
                what: "redb file".to_string(),
                detail: format!("truncated: {e}"),
            }
        }
        redb::Error::Corrupted(detail) => OpenError::Corrupted {
            path: path.to_path_buf(),
            what: "redb file".to_string(),
            detail,
        },
        // The file holds ratchetdb's meta table (that is how it was recognised), and every
        // store is created with all of its tables: one missing or of another type means a
        // damaged table tree (seen with a flipped bit in a table name).
        redb::Error::TableDoesNotExist(table)
        | redb::Error::TableIsMultimap(table)
        | redb::Error::TableIsNotMultimap(table) => OpenError::Corrupted {
            path: path.to_path_buf(),
            what: format!("table {table:?}"),
            detail: "missing, or not the table this store created".to_string(),
        },
        // A table's stored key or value type definition not the one every store is
        // created with: a damaged table tree too (a flipped bit in a definition's width or
        // alignment was refused as a storage error before).
        error @ (redb::Error::TableTypeMismatch { .. }
        | redb::Error::TypeDefinitionChanged { .. }) => OpenError::Corrupted {
            path: path.to_path_buf(),
            what: "table types".to_string(),
            detail: error.to_string(),
        },
        source => OpenError::Storage {
            path: path.to_path_buf(),
            source,
        },
    }
}

pub(crate) fn meta_string(
    table: &impl ReadableTable<&'static str, &'static [u8]>,
    key: &str,
) -> Result<Option<String>, redb::Error> {
    Ok(table
        .get(key)?
        .map(|v| String::from_utf8_lossy(v.value()).into_owned()))
}

pub(crate) fn meta_u64(
    table: &impl ReadableTable<&'static str, &'static [u8]>,
    key: &str,
) -> Result<Option<Result<u64, usize>>, redb::Error> {
    Ok(table.get(key)?.map(|v| {
        let bytes = v.value();
        <[u8; 8]>::try_from(bytes)
            .map(u64::from_le_bytes)
            .map_err(|_| bytes.len())
    }))
}

/// Writes a new store's tables and metadata in one durable transaction.
fn initialise(db: &Database, options: &Options) -> Result<(), redb::Error> {
    let mut txn = db.begin_write()?;
    txn.set_durability(redb::Durability::Immediate)?;
    create_tables(&txn)?;
    {
        let mut meta = txn.open_table(META)?;
        let metric = options.metric.unwrap_or_default();
        meta.insert(meta_key::FORMAT, schema::FORMAT_MAGIC)?;
        meta.insert(
            meta_key::SCHEMA_VERSION,
            u64::from(schema::SCHEMA_VERSION).to_le_bytes().as_slice(),
        )?;
        meta.insert(meta_key::METRIC, metric.as_str().as_bytes())?;
    }
    // An empty text index, so the first open does not build one in a second transaction.
    crate::backend::redb::text::initialise(&txn, options)?;
    txn.commit()?;
    Ok(())
}

/// Creates a new store file so that a crash never leaves a half-made file at `path`: the
/// store is built under a temporary name beside it and then linked into place, which fails
/// (and changes nothing) if another process created `path` meanwhile.
fn create_atomically(path: &Path, options: &Options) -> Result<(), OpenError> {
    let io_error = |e: std::io::Error| OpenError::Storage {
        path: path.to_path_buf(),
        source: redb::Error::Io(e),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temporary = path.with_file_name(format!(".{name}.creating-{}", std::process::id()));
    let _ = std::fs::remove_file(&temporary);
    let made = Database::builder()
        .set_cache_size(crate::index::budget::page_cache_bytes(options))
        .create(&temporary)
        .map_err(|e| open_error(&temporary, e))
        .and_then(|db| initialise(&db, options).map_err(|e| open_error(&temporary, e)));
    let linked = made.and_then(|()| match link_durably(&temporary, path) {
        Ok(()) => Ok(()),
        // Someone else created it first: open theirs.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(io_error(e)),
    });
    let _ = std::fs::remove_file(&temporary);
    linked
}

/// Gives the finished, synced file `temporary` the name `path` without ever replacing a file
/// there (a hard link fails on an existing name; a file system without hard links gets a
/// rename after one more check), then syncs `path`'s directory so the new name is durable
/// too. A name already taken is an error of kind [`std::io::ErrorKind::AlreadyExists`].
/// `temporary` is left for the caller to remove (after a rename it is gone already).
pub(crate) fn link_durably(temporary: &Path, path: &Path) -> std::io::Result<()> {
    match std::fs::hard_link(temporary, path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Err(e),
        Err(_) if !path.exists() => std::fs::rename(temporary, path)?,
        Err(e) if path.exists() => {
            return Err(std::io::Error::new(std::io::ErrorKind::AlreadyExists, e))
        }
        Err(e) => return Err(e),
    }
    sync_parent(path)
}

/// Syncs the directory holding `path`, so a name just made there survives a crash. Only
/// unix can open a directory to sync it; elsewhere this does nothing.
fn sync_parent(path: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        std::fs::File::open(dir)?.sync_all()?;
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

/// Where the original of a file converted from schema `version` is kept.
pub(crate) fn schema_backup_path(path: &Path, version: u32) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".schema{version}-backup"));
    PathBuf::from(name)
}

/// Copies a file of schema `version` aside before it is converted (the conversion cannot be
/// undone, and builds of that schema cannot open the result). No write has happened since
/// the open, so the copy is the file as the old build left it (redb syncs what it repairs on
/// open).
fn backup_before_conversion(path: &Path, version: u32) -> Result<(), OpenError> {
    let backup = schema_backup_path(path, version);
    std::fs::copy(path, &backup)
        .and_then(|_| std::fs::File::open(&backup)?.sync_all())
        .map_err(|e| OpenError::Storage {
            path: backup,
            source: redb::Error::Io(e),
        })?;
    // Make the backup's name durable before the conversion commits.
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        if let Ok(dir) = std::fs::File::open(dir) {
            let _ = dir.sync_all();
        }
    }
    Ok(())
}

/// Converts a file of schema `version` (1 to 9) in one durable write transaction
/// (`migrate.rs`).
fn convert(
    db: &Database,
    path: &Path,
    version: u32,
    dimension: Option<usize>,
) -> Result<(), OpenError> {
    let err = |e: redb::Error| open_error(path, e);
    let mut txn = db.begin_write().map_err(|e| err(e.into()))?;
    txn.set_durability(redb::Durability::Immediate)
        .map_err(|e| err(e.into()))?;
    let converted = match version {
        1 => crate::backend::redb::schema::migrate::schema_1(&txn, dimension),
        6 => crate::backend::redb::schema::migrate::schema_6(&txn).map(|()| 0),
        7 => crate::backend::redb::schema::migrate::schema_7(&txn).map(|()| 0),
        8 => crate::backend::redb::schema::migrate::schema_8(&txn).map(|()| 0),
        9 => crate::backend::redb::schema::migrate::schema_9(&txn).map(|()| 0),
        from => crate::backend::redb::schema::migrate::schema_2_to_5(&txn, from, dimension),
    };
    match converted {
        Ok(_) => txn.commit().map_err(|e| err(e.into())),
        Err(crate::backend::redb::schema::migrate::MigrationError::Storage(e)) => Err(err(e)),
        Err(crate::backend::redb::schema::migrate::MigrationError::Corrupted(c)) => {
            Err(OpenError::Corrupted {
                path: path.to_path_buf(),
                what: c.what,
                detail: c.detail,
            })
        }
        Err(crate::backend::redb::schema::migrate::MigrationError::TooLarge(detail)) => {
            Err(OpenError::Unconvertible {
                path: path.to_path_buf(),
                detail,
            })
        }
    }
}

/// Every table, so that a new store has them all and reads never meet a missing table.
fn create_tables(txn: &redb::WriteTransaction) -> Result<(), redb::Error> {
    fn open<K: redb::Key + 'static, V: redb::Value + 'static>(
        txn: &redb::WriteTransaction,
        def: TableDefinition<K, V>,
    ) -> Result<(), redb::Error> {
        txn.open_table(def)?;
        Ok(())
    }
    open(txn, schema::META)?;
    open(txn, schema::COUNTERS)?;
    open(txn, schema::DOCS)?;
    open(txn, schema::CHUNKS)?;
    open(txn, schema::VECTORS)?;
    open(txn, schema::CHANGELOG)?;
    open(txn, schema::SKIP_LOG)?;
    open(txn, schema::LISTINGS)?;
    open(txn, schema::LISTING_MEMBERS)?;
    open(txn, schema::INDEX_SNAPSHOT)?;
    open(txn, schema::BUDGET_SNAPSHOT)?;
    open(txn, schema::SPACES)?;
    open(txn, schema::SPACE_VECTORS)?;
    open(txn, schema::SPACE_CHANGELOG)?;
    crate::backend::redb::text::create_tables(txn)?;
    Ok(())
}

/// Runs `attempt` until it returns something other than an error `retry` accepts, or `wait`
/// has passed (then it returns that error).
fn with_lock_wait<T>(
    wait: Duration,
    retry: impl Fn(&OpenError) -> bool,
    mut attempt: impl FnMut() -> Result<T, OpenError>,
) -> Result<T, OpenError> {
    // A wait too long for the clock (`Duration::MAX`) has no deadline: wait until the lock
    // is free.
    let deadline = Instant::now().checked_add(wait);
    let mut pause = Duration::from_millis(5);
    loop {
        match attempt() {
            Err(error) if retry(&error) => {
                let now = Instant::now();
                let left = match deadline {
                    Some(deadline) if now >= deadline => return Err(error),
                    Some(deadline) => deadline - now,
                    None => pause,
                };
                std::thread::sleep(pause.min(left));
                pause = (pause * 2).min(Duration::from_millis(100));
            }
            other => return other,
        }
    }
}

/// The checks of the options that need no file.
fn check_options(options: &Options) -> Result<(), OpenError> {
    if let Some(model) = &options.model {
        check_name("model", model, &options.limits)?;
    }
    if let Some((field, why)) = options.index.invalid() {
        return Err(InputError::new(field, why).into());
    }
    if let Some(dimension) = options.dimension {
        if dimension == 0 || dimension > options.limits.max_dimension {
            return Err(InputError::new(
                "dimension",
                format!("must be between 1 and {}", options.limits.max_dimension),
            )
            .into());
        }
    }
    Ok(())
}

/// A writer's open refused by the file system's permissions or a read-only mount.
fn not_writable(path: &Path, error: OpenError) -> OpenError {
    match error {
        OpenError::Storage {
            source: redb::Error::Io(e),
            ..
        } if matches!(
            e.kind(),
            std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem
        ) =>
        {
            OpenError::NotWritable {
                path: path.to_path_buf(),
                detail: e.to_string(),
            }
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::compaction_due;

    const MB: u64 = 1_000_000;

    /// A small file compacts at any 1 MiB free (the 10,000-sentence store of the Node
    /// side-by-side closed with 1.19 MB free in 17.83 MB, a fifteenth of it, and kept them
    /// under the eighth-of-the-file rule); a large one only once an eighth of it is free.
    #[test]
    fn a_small_file_compacts_at_a_mebibyte_free_and_a_large_one_at_an_eighth() {
        assert!(compaction_due(17_829_888, 1_187_840));
        assert!(!compaction_due(17_829_888, 1_000_000));
        assert!(compaction_due(64 << 20, 1 << 20));
        assert!(!compaction_due((64 << 20) + 4096, 1 << 20));
        assert!(!compaction_due(1_000 * MB, 120 * MB));
        assert!(compaction_due(1_000 * MB, 125 * MB));
        assert!(!compaction_due(4 * MB, 512 << 10));
        assert!(!compaction_due(0, 0));
    }
}
