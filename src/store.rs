//! The store: opening the file, the write entry points, tickets, and snapshots for reading.

use crate::document::{Document, Op, OpOutcome, Outcome, PurgeOutcome, RetainOutcome};
use crate::error::{InputError, OpenError, ReadError, WriteError};
use crate::guard::{self, Decision, Incoming, SkipReason};
use crate::index::{Workers, EXACT_THRESHOLD};
use crate::live_index::{self, LiveIndex};
use crate::options::{Durability, Metric, Options};
use crate::prepare::{self, check_name, PreparedOp};
use crate::read::Snapshot;
use crate::schema::{self, meta_key, seq_key, COUNTERS, META};
use crate::search::{Hit, SearchOptions};
use crate::stats::Stats;
use crate::verify::VerifyReport;
use crate::version::Version;
use crate::write::{is_op_error, Batch, BatchEffects, BatchSettings};
use parking_lot::{Mutex, RwLock};
use redb::{
    ConcurrencyMode, Database, ReadOnlyDatabase, ReadableDatabase, ReadableTable, TableDefinition,
    TableHandle,
};
use serde::{Deserialize, Serialize};
use std::borrow::Borrow;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::sync::{OnceLock, Weak};
use std::time::{Duration, Instant};

/// How many tickets one durable commit reserves. After a crash the next block starts above
/// every ticket ever issued, so a ticket is never issued twice.
const TICKET_BLOCK: u64 = 4096;

/// An embedded, single-file chunk-and-vector store whose index never moves backwards.
///
/// Every write is decided by the version guard and applied in one redb transaction: the
/// version comparison, the generation stamp on every chunk, the removal of surplus chunks,
/// the vectors and the counters commit together or not at all. `Store` is cheap to clone and
/// can be shared between threads; writes are serialised by the file's single writer, reads
/// run concurrently on MVCC snapshots.
///
/// ```
/// use ratchetdb::{Chunk, Document, Options, Outcome, SkipReason, Store, Version};
/// # let dir = tempfile::tempdir()?;
/// let store = Store::open(dir.path().join("index.redb"), Options::default())?;
///
/// let v2 = Document::new("wiki", "intro", Version::number(2))
///     .with_chunk(Chunk::new("Ratchets turn one way.", vec![1.0, 0.0]));
/// assert!(matches!(store.upsert(v2)?, Outcome::Written { .. }));
///
/// // A late retry of an older revision is refused, and counted.
/// let v1 = Document::new("wiki", "intro", Version::number(1))
///     .with_chunk(Chunk::new("Old text.", vec![0.0, 1.0]));
/// assert_eq!(store.upsert(v1)?.skip_reason(), Some(SkipReason::Older));
/// assert_eq!(store.get("wiki", "intro")?.map(|d| d.chunks[0].text.clone()), Some("Ratchets turn one way.".into()));
/// assert!(store.verify()?.is_ok());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
    /// `None` only for the short-lived stores background threads make inside a
    /// [`Background::with`] section.
    _handle: Option<Arc<Handle>>,
}

/// Closing: background threads use the store only inside sections of this gate, so when
/// the last user handle drops, it waits for a running section and then shuts the gate;
/// the file is closed (and its lock freed) by the time that drop returns.
#[derive(Debug, Default)]
struct Gate {
    closed: RwLock<bool>,
}

/// Shared by every user-facing clone of a [`Store`].
struct Handle {
    gate: Arc<Gate>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        *self.gate.closed.write() = true;
    }
}

/// What a background thread holds of a store: no strong reference, so it never keeps
/// the file open.
#[derive(Clone)]
struct Background {
    inner: Weak<Inner>,
    gate: Arc<Gate>,
}

impl Background {
    /// Runs `f` on the store if it is still open.
    fn with<R>(&self, f: impl FnOnce(&Store) -> R) -> Option<R> {
        let closed = self.gate.closed.read();
        if *closed {
            return None;
        }
        let store = Store {
            inner: self.inner.upgrade()?,
            _handle: None,
        };
        let result = f(&store);
        drop(store);
        drop(closed);
        Some(result)
    }
}

/// The redb handle: a writer's, or a read-only one that follows another process's commits.
enum Db {
    Writable(Database),
    ReadOnly(ReadOnlyDatabase),
}

impl Db {
    fn begin_read(&self) -> Result<redb::ReadTransaction, redb::TransactionError> {
        match self {
            Db::Writable(db) => db.begin_read(),
            Db::ReadOnly(db) => db.begin_read(),
        }
    }

    /// The writer's database; a read-only store has none (`None`).
    fn writable(&self) -> Option<&Database> {
        match self {
            Db::Writable(db) => Some(db),
            Db::ReadOnly(_) => None,
        }
    }
}

struct Inner {
    db: Db,
    path: PathBuf,
    options: Options,
    metric: Metric,
    /// Recorded once; a read-only store learns it from the file if a writer records it
    /// after the open.
    model: OnceLock<String>,
    /// Opened with [`Store::open_read_only`]: nothing is ever written.
    read_only: bool,
    /// Other processes may have the file open (redb's `SingleWriter` mode), so every commit
    /// must be durable.
    shared: bool,
    dimension: RwLock<Option<usize>>,
    tickets: Mutex<Tickets>,
    /// The highest ticket this store may have issued (across restarts: the persisted high
    /// water at open, then every ticket issued since). A write carrying a ticket above it is
    /// refused: the store never issued it.
    tickets_issued: Arc<AtomicU64>,
    poisoned: Mutex<Option<String>>,
    /// The derived vector index, once loaded (searches scan the file until then).
    live: RwLock<Option<Arc<LiveIndex>>>,
    /// A background loader has been started.
    loader_started: AtomicBool,
    /// The derived metadata index filtered searches evaluate their filter on, built by the
    /// first one.
    filters: crate::filter::FilterCache,
    /// The text index's analyzer writes use (a writer's; `None`: no text index kept, or a
    /// read-only store, whose searches read the analysis from each snapshot).
    text: Option<Arc<crate::text::Analyzer>>,
    /// The analyzer text searches last read from the file.
    text_cache: Mutex<Option<Arc<crate::text::Analyzer>>>,
    /// The text index inverted in memory, which text searches score on.
    text_index: crate::text::TextCache,
    /// Wakes the index applier after a commit that changed vectors (see
    /// [`Store::after_commit`]); started with the first such commit.
    applier: Mutex<Option<crossbeam_channel::Sender<()>>>,
    /// Passes asked of the applier, and the request count the last finished pass covered
    /// (equal: the applier is idle and holds no read snapshot).
    apply_requested: AtomicU64,
    apply_done: AtomicU64,
    gate: Arc<Gate>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // A background build or absorber holds the index itself, not the store: tell it
        // to stop rather than finish a graph nobody will search.
        if let Some(live) = self.live.get_mut() {
            live.index.close();
        }
    }
}

#[derive(Debug)]
struct Tickets {
    next: u64,
    reserved_until: u64,
}

/// Before any embedding is paid for: what a write of this revision would do, and which
/// chunks need a vector.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// What the guard would decide now (it decides again at write time; a plan is advice).
    pub action: PlannedAction,
    /// Positions whose text already has a vector in the stored revision: send these chunks
    /// without a vector and the store reuses it.
    pub reusable: Vec<usize>,
    /// Positions that need embedding (empty unless `action` is `Write`).
    pub to_embed: Vec<usize>,
}

/// The guard's decision as a plan reports it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
#[non_exhaustive]
pub enum PlannedAction {
    /// The revision would be written.
    Write,
    /// The content is identical; only the version would be raised. Nothing to embed.
    BumpVersion,
    /// The revision would be refused. Nothing to embed.
    Skip {
        /// Why.
        reason: SkipReason,
        /// What is stored.
        stored_version: Version,
    },
}

/// A panic inside redb while opening, contained (`contain.rs`).
fn contained_at_open(path: &Path, detail: String) -> OpenError {
    OpenError::Corrupted {
        path: path.to_path_buf(),
        what: crate::contain::WHAT.to_string(),
        detail,
    }
}

fn open_error(path: &Path, error: impl Into<redb::Error>) -> OpenError {
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
        error @ redb::Error::TableTypeMismatch { .. } => OpenError::Corrupted {
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

fn meta_string(
    table: &impl ReadableTable<&'static str, &'static [u8]>,
    key: &str,
) -> Result<Option<String>, redb::Error> {
    Ok(table
        .get(key)?
        .map(|v| String::from_utf8_lossy(v.value()).into_owned()))
}

fn meta_u64(
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
    crate::text::initialise(&txn, options)?;
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
        .set_cache_size(options.cache_size)
        .create(&temporary)
        .map_err(|e| open_error(&temporary, e))
        .and_then(|db| initialise(&db, options).map_err(|e| open_error(&temporary, e)));
    let linked = made.and_then(|()| match std::fs::hard_link(&temporary, path) {
        Ok(()) => Ok(()),
        // Someone else created it first: open theirs.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        // A file system without hard links: an atomic rename, unless the name is taken.
        Err(_) if !path.exists() => std::fs::rename(&temporary, path).map_err(io_error),
        Err(e) => Err(io_error(e)),
    });
    let _ = std::fs::remove_file(&temporary);
    linked?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        // Make the new name durable.
        if let Ok(dir) = std::fs::File::open(dir) {
            let _ = dir.sync_all();
        }
    }
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

/// Converts a file of schema `version` (1 or 2) in one durable write transaction
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
        1 => crate::migrate::schema_1(&txn, dimension),
        _ => crate::migrate::schema_2_to_3(&txn, dimension),
    };
    match converted {
        Ok(_) => txn.commit().map_err(|e| err(e.into())),
        Err(crate::migrate::MigrationError::Storage(e)) => Err(err(e)),
        Err(crate::migrate::MigrationError::Corrupted(c)) => Err(OpenError::Corrupted {
            path: path.to_path_buf(),
            what: c.what,
            detail: c.detail,
        }),
        Err(crate::migrate::MigrationError::TooLarge(detail)) => Err(OpenError::Unconvertible {
            path: path.to_path_buf(),
            detail,
        }),
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
    open(txn, schema::DOC_KEYS)?;
    open(txn, schema::CHUNKS)?;
    open(txn, schema::VECTORS)?;
    open(txn, schema::CHANGELOG)?;
    open(txn, schema::SKIP_LOG)?;
    open(txn, schema::LISTINGS)?;
    open(txn, schema::LISTING_MEMBERS)?;
    open(txn, schema::INDEX_SNAPSHOT)?;
    crate::text::create_tables(txn)?;
    Ok(())
}

impl Store {
    /// Opens the store at `path` for writing, creating it if it does not exist (unless
    /// [`Options::must_exist`]). The options must agree with what the store recorded when it
    /// was created (dimension, metric, model); what they leave `None` is taken from the file.
    ///
    /// One process writes a file at a time: while this store is open, another writer is
    /// refused with [`OpenError::Locked`] (after waiting up to [`Options::wait_for_lock`]).
    /// With [`Options::allow_readers`] (the default), other processes may meanwhile open the
    /// file with [`Store::open_read_only`] and follow its commits.
    pub fn open(path: impl AsRef<Path>, options: Options) -> Result<Store, OpenError> {
        let path = path.as_ref();
        crate::contain::contain(
            |detail| contained_at_open(path, detail),
            || {
                check_options(&options)?;
                with_lock_wait(
                    options.wait_for_lock,
                    |e| matches!(e, OpenError::Locked { .. }),
                    || {
                        Store::open_writable(path, options.clone())
                            .map_err(|e| not_writable(path, e))
                    },
                )
            },
        )
    }

    fn open_writable(path: &Path, options: Options) -> Result<Store, OpenError> {
        let exists = path.exists();
        if !exists && !options.create_if_missing {
            return Err(OpenError::NotFound {
                path: path.to_path_buf(),
            });
        }
        if !exists {
            create_atomically(path, &options)?;
        }
        let shared = options.shares_file();
        let db = Database::builder()
            .set_check_integrity_on_open(options.check_integrity_on_open)
            .set_cache_size(options.cache_size)
            .set_concurrency_mode(if shared {
                ConcurrencyMode::SingleWriter
            } else {
                ConcurrencyMode::ExclusiveWriter
            })
            .create(path)
            .map_err(|e| open_error(path, e))?;
        Store::from_database(Db::Writable(db), path, true, shared, options)
    }

    /// Opens an existing store read-only, with default options (see
    /// [`Store::open_read_only_with`]).
    pub fn open_read_only(path: impl AsRef<Path>) -> Result<Store, OpenError> {
        Store::open_read_only_with(path, Options::default())
    }

    /// Opens an existing store read-only: nothing is ever written to the file (no
    /// creation, conversion, recovery, recorded dimension or model, persisted graph; its
    /// bytes and modification time stay as they are), so it works on a file or mount that
    /// is read-only. Every write returns [`WriteError::ReadOnly`].
    ///
    /// Any number of read-only stores, in any number of processes, may have the file open
    /// while one process writes it (a writer opened with [`Options::allow_readers`], the
    /// default). Each snapshot, search, `get`, `stats` or `verify` reads the writer's last
    /// commit at the moment it starts; the vector index follows the writer's commits by the
    /// changelog, in commit order, as the writer's own index does (a search brings it up to
    /// its own snapshot first), and a background thread keeps it close behind (it looks for
    /// new commits every 20 ms).
    ///
    /// Refused: a missing file ([`OpenError::NotFound`]), an empty one
    /// ([`OpenError::Empty`]), one of an older schema ([`OpenError::NeedsConversion`]), one
    /// a crashed writer left and no writer has recovered yet
    /// ([`OpenError::NeedsRecovery`]), and one a writer holds exclusively
    /// ([`OpenError::HeldExclusively`]); the last two are retried for up to
    /// [`Options::wait_for_lock`]. Of the options, `dimension`, `metric` and `model` are
    /// checked against the file, `cache_size` and `wait_for_lock` apply, and the rest (which
    /// are about writing) are ignored.
    pub fn open_read_only_with(
        path: impl AsRef<Path>,
        options: Options,
    ) -> Result<Store, OpenError> {
        let path = path.as_ref();
        check_options(&options)?;
        crate::contain::contain(
            |detail| contained_at_open(path, detail),
            || {
                with_lock_wait(
                    options.wait_for_lock,
                    |e| {
                        matches!(
                            e,
                            OpenError::HeldExclusively { .. } | OpenError::NeedsRecovery { .. }
                        )
                    },
                    || Store::open_read_only_once(path, options.clone()),
                )
            },
        )
    }

    fn open_read_only_once(path: &Path, options: Options) -> Result<Store, OpenError> {
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
            .set_cache_size(options.cache_size)
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
        Store::from_database(Db::ReadOnly(db), path, true, false, options)
    }

    /// Creates a new store at `path`; an error if a non-empty file is already there.
    pub fn create(path: impl AsRef<Path>, options: Options) -> Result<Store, OpenError> {
        let path = path.as_ref();
        if std::fs::metadata(path)
            .map(|m| m.len() > 0)
            .unwrap_or(false)
        {
            return Err(OpenError::AlreadyExists {
                path: path.to_path_buf(),
            });
        }
        Store::open(path, options)
    }

    /// Opens a store on a caller-supplied redb storage backend (for tests that inject faults,
    /// or in-memory stores via `redb::backends::InMemoryBackend`).
    pub fn open_with_backend(
        backend: impl redb::StorageBackend,
        options: Options,
    ) -> Result<Store, OpenError> {
        if let Some((field, why)) = options.index.invalid() {
            return Err(InputError::new(field, why).into());
        }
        let path = PathBuf::from("<backend>");
        crate::contain::contain(
            |detail| contained_at_open(&path, detail),
            || {
                let db = Database::builder()
                    .set_check_integrity_on_open(options.check_integrity_on_open)
                    .set_cache_size(options.cache_size)
                    .create_with_backend(backend)
                    .map_err(|e| open_error(&path, e))?;
                Store::from_database(Db::Writable(db), &path, false, false, options)
            },
        )
    }

    /// `is_file`: `path` names the database's file (not a caller-supplied backend);
    /// `shared`: the writer opened it in redb's `SingleWriter` mode.
    fn from_database(
        db: Db,
        path: &Path,
        is_file: bool,
        shared: bool,
        options: Options,
    ) -> Result<Store, OpenError> {
        let err = |e: redb::Error| open_error(path, e);
        let mismatch =
            |field: &'static str, stored: String, requested: String| OpenError::Mismatch {
                field,
                stored,
                requested,
            };
        // A new store: no meta table yet. Refuse a redb file that holds someone else's tables.
        let is_new = {
            let txn = db.begin_read().map_err(|e| err(e.into()))?;
            let tables: Vec<String> = txn
                .list_tables()
                .map_err(|e| err(e.into()))?
                .map(|t| t.name().to_string())
                .collect();
            if tables.is_empty() {
                true
            } else if !tables.iter().any(|t| t == META.name()) {
                return Err(OpenError::NotAStore {
                    path: path.to_path_buf(),
                    detail: format!("it holds the tables {tables:?} and no ratchetdb metadata"),
                });
            } else {
                false
            }
        };
        if is_new {
            match db.writable() {
                Some(writable) => initialise(writable, &options).map_err(err)?,
                // Creating a store commits its tables before the file gets its name, so a
                // store never lacks them; a read-only open does not add them.
                None => {
                    return Err(OpenError::NotAStore {
                        path: path.to_path_buf(),
                        detail: "it is a redb file without any tables (no ratchetdb store)"
                            .to_string(),
                    })
                }
            }
        }

        let txn = db.begin_read().map_err(|e| err(e.into()))?;
        let meta = txn.open_table(META).map_err(|e| err(e.into()))?;
        // Compare without keeping the AccessGuard: a guard outliving the read transaction
        // pins its page, and the write transaction below that records the dimension or model
        // would free that page under it (redb asserts on this in debug builds).
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
        let corrupted = |what: &str, detail: String| OpenError::Corrupted {
            path: path.to_path_buf(),
            what: what.to_string(),
            detail,
        };
        let schema_version = match meta_u64(&meta, meta_key::SCHEMA_VERSION).map_err(err)? {
            Some(Ok(v)) => v,
            Some(Err(len)) => {
                return Err(corrupted(
                    "schema version",
                    format!("{len} bytes, expected 8"),
                ))
            }
            None => return Err(corrupted("schema version", "missing".to_string())),
        };
        if schema_version > u64::from(schema::SCHEMA_VERSION) {
            return Err(OpenError::SchemaTooNew {
                path: path.to_path_buf(),
                found: u32::try_from(schema_version).unwrap_or(u32::MAX),
                supported: schema::SCHEMA_VERSION,
            });
        }
        // Older schemas are converted below, once this read transaction is closed.
        let convert_from = u32::try_from(schema_version)
            .ok()
            .filter(|v| (1..schema::SCHEMA_VERSION).contains(v));
        if schema_version < 1 {
            return Err(OpenError::SchemaTooOld {
                path: path.to_path_buf(),
                found: u32::try_from(schema_version).unwrap_or(0),
                supported: schema::SCHEMA_VERSION,
            });
        }
        let stored_metric = match meta_string(&meta, meta_key::METRIC).map_err(err)? {
            Some(name) => Metric::parse(&name)
                .ok_or_else(|| corrupted("metric", format!("unknown metric {name:?}")))?,
            None => return Err(corrupted("metric", "missing".to_string())),
        };
        if let Some(requested) = options.metric {
            if requested != stored_metric {
                return Err(mismatch(
                    "metric",
                    stored_metric.to_string(),
                    requested.to_string(),
                ));
            }
        }
        let stored_dimension = match meta_u64(&meta, meta_key::DIMENSION).map_err(err)? {
            Some(Ok(v)) => Some(
                usize::try_from(v)
                    .map_err(|_| corrupted("dimension", format!("{v} is too large")))?,
            ),
            Some(Err(len)) => {
                return Err(corrupted("dimension", format!("{len} bytes, expected 8")))
            }
            None => None,
        };
        let stored_model = meta_string(&meta, meta_key::MODEL).map_err(err)?;
        if let (Some(stored), Some(requested)) = (stored_dimension, options.dimension) {
            if stored != requested {
                return Err(mismatch(
                    "dimension",
                    stored.to_string(),
                    requested.to_string(),
                ));
            }
        }
        if let (Some(stored), Some(requested)) = (&stored_model, &options.model) {
            if stored != requested {
                return Err(mismatch("model", stored.clone(), requested.clone()));
            }
        }
        let high_water = {
            let counters = txn.open_table(COUNTERS).map_err(|e| err(e.into()))?;
            counters
                .get(seq_key::TICKET_HIGH_WATER)
                .map_err(|e| err(e.into()))?
                .map(|v| v.value())
                .unwrap_or(0)
        };
        drop(meta);
        drop(txn);
        if let Some(version) = convert_from {
            let Some(writable) = db.writable() else {
                return Err(OpenError::NeedsConversion {
                    path: path.to_path_buf(),
                    found: version,
                    supported: schema::SCHEMA_VERSION,
                });
            };
            if is_file {
                backup_before_conversion(path, version)?;
            }
            convert(writable, path, version, stored_dimension)?;
        }

        // Record what the options add to what the file knew (a read-only store does not:
        // it only checked them against what is recorded).
        let record_dimension = stored_dimension.is_none() && options.dimension.is_some();
        let record_model = stored_model.is_none() && options.model.is_some();
        if let (true, Some(writable)) = (record_dimension || record_model, db.writable()) {
            let mut txn = writable.begin_write().map_err(|e| err(e.into()))?;
            txn.set_durability(redb::Durability::Immediate)
                .map_err(|e| err(e.into()))?;
            {
                let mut meta = txn.open_table(META).map_err(|e| err(e.into()))?;
                if let (true, Some(dimension)) = (record_dimension, options.dimension) {
                    meta.insert(
                        meta_key::DIMENSION,
                        (dimension as u64).to_le_bytes().as_slice(),
                    )
                    .map_err(|e| err(e.into()))?;
                }
                if let (true, Some(model)) = (record_model, &options.model) {
                    meta.insert(meta_key::MODEL, model.as_bytes())
                        .map_err(|e| err(e.into()))?;
                }
            }
            txn.commit().map_err(|e| err(e.into()))?;
        }
        // The text index: built, rebuilt or removed in one transaction as the options say.
        let text = match db.writable() {
            Some(writable) => {
                crate::text::prepare_on_open(writable, options.text_index, options.text.as_ref())
                    .map_err(|e| match e {
                        WriteError::Storage(e) => err(e),
                        WriteError::Corrupted { what, detail } => corrupted(&what, detail),
                        other => corrupted("text index", other.to_string()),
                    })?
                    .0
            }
            None => None,
        };
        let read_only = db.writable().is_none();
        let (model, dimension) = if read_only {
            (stored_model, stored_dimension)
        } else {
            (
                stored_model.or_else(|| options.model.clone()),
                stored_dimension.or(options.dimension),
            )
        };
        let model_cell = OnceLock::new();
        if let Some(model) = model {
            let _ = model_cell.set(model);
        }
        let gate = Arc::new(Gate::default());
        let store = Store {
            _handle: Some(Arc::new(Handle { gate: gate.clone() })),
            inner: Arc::new(Inner {
                gate,
                db,
                path: path.to_path_buf(),
                metric: stored_metric,
                model: model_cell,
                read_only,
                shared,
                dimension: RwLock::new(dimension),
                tickets: Mutex::new(Tickets {
                    next: high_water,
                    reserved_until: high_water,
                }),
                tickets_issued: Arc::new(AtomicU64::new(high_water)),
                poisoned: Mutex::new(None),
                live: RwLock::new(None),
                loader_started: AtomicBool::new(false),
                filters: Default::default(),
                text,
                text_cache: Mutex::new(None),
                text_index: Default::default(),
                applier: Mutex::new(None),
                apply_requested: AtomicU64::new(0),
                apply_done: AtomicU64::new(0),
                options,
            }),
        };
        store.start_index();
        if read_only {
            store.start_follower();
        }
        Ok(store)
    }

    /// The file this store lives in (`<backend>` for a custom backend).
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// The vector dimension, once fixed (by the options or the first vector written).
    pub fn dimension(&self) -> Option<usize> {
        *self.inner.dimension.read()
    }

    /// The metric.
    pub fn metric(&self) -> Metric {
        self.inner.metric
    }

    /// The embedding model's name, if one was recorded.
    pub fn model(&self) -> Option<&str> {
        self.inner.model.get().map(String::as_str)
    }

    /// Whether this store was opened with [`Store::open_read_only`] (it never writes).
    pub fn is_read_only(&self) -> bool {
        self.inner.read_only
    }

    /// The writer's database, or [`WriteError::ReadOnly`] for a read-only store.
    fn writable(&self) -> Result<&Database, WriteError> {
        self.inner
            .db
            .writable()
            .ok_or_else(|| WriteError::ReadOnly {
                path: self.inner.path.clone(),
            })
    }

    /// The options the store was opened with.
    pub fn options(&self) -> &Options {
        &self.inner.options
    }

    fn check_poisoned(&self) -> Result<(), WriteError> {
        match &*self.inner.poisoned.lock() {
            Some(cause) => Err(WriteError::Poisoned {
                cause: cause.clone(),
            }),
            None => Ok(()),
        }
    }

    fn poison(&self, error: &WriteError) {
        let mut poisoned = self.inner.poisoned.lock();
        if poisoned.is_none() {
            *poisoned = Some(error.to_string());
        }
    }

    /// Validates an operation against this store's settings.
    pub(crate) fn prepare(&self, op: Op) -> Result<PreparedOp, WriteError> {
        prepare::prepare_op(
            op,
            self.inner.metric,
            self.dimension(),
            &self.inner.options.limits,
        )
    }

    /// Runs prepared operations in one write transaction. The outer error is the batch's
    /// (storage: the batch is not acknowledged, whole or absent on disk, and the store is
    /// poisoned); the inner ones
    /// are each operation's own.
    pub(crate) fn run_batch(
        &self,
        ops: &[PreparedOp],
    ) -> Result<Vec<Result<OpOutcome, WriteError>>, WriteError> {
        self.run_batch_with(ops, self.inner.options.durability)
    }

    /// [`Self::run_batch`] with the given durability, over operations taken from `ops` one
    /// at a time: each is applied before the next is asked for, so that the concurrent
    /// `Writer` can let operations that arrive while its transaction is being built join
    /// it. One outcome per operation taken, in order.
    pub(crate) fn run_batch_with<O: Borrow<PreparedOp>>(
        &self,
        ops: impl IntoIterator<Item = O>,
        durability: Durability,
    ) -> Result<Vec<Result<OpOutcome, WriteError>>, WriteError> {
        self.writable()?;
        self.check_poisoned()?;
        // Where other processes read the file, redb shares only durable commits.
        let durability = if self.inner.shared {
            Durability::Immediate
        } else {
            durability
        };
        let result = crate::contain::contain(WriteError::contained, || {
            self.run_batch_unpoisoned(ops, durability)
        });
        if let Err(error) = &result {
            if matches!(error, WriteError::Storage(_)) || error.is_contained_panic() {
                self.poison(error);
            }
        }
        result
    }

    fn run_batch_unpoisoned<O: Borrow<PreparedOp>>(
        &self,
        ops: impl IntoIterator<Item = O>,
        durability: Durability,
    ) -> Result<Vec<Result<OpOutcome, WriteError>>, WriteError> {
        let mut txn = self
            .writable()?
            .begin_write()
            .map_err(WriteError::storage)?;
        txn.set_durability(match durability {
            Durability::Immediate => redb::Durability::Immediate,
            Durability::None => redb::Durability::None,
        })
        .map_err(WriteError::storage)?;
        let settings = BatchSettings {
            policy: self.inner.options.conflict_policy,
            skip_log_capacity: self.inner.options.skip_log_capacity,
            tickets_issued: self.inner.tickets_issued.clone(),
            text: self.inner.text.clone(),
        };
        let ops = ops.into_iter();
        let mut results = Vec::with_capacity(ops.size_hint().0);
        let effects: Option<BatchEffects> = {
            let mut batch = Batch::begin(&txn, settings, self.dimension())?;
            for op in ops {
                match batch.apply(op.borrow()) {
                    Ok(outcome) => results.push(Ok(outcome)),
                    Err(error) if is_op_error(&error) => results.push(Err(error)),
                    Err(error) => return Err(error),
                }
            }
            // Every operation refused for its input (or none at all): commit nothing, so
            // that not even the commit counter moves (I9).
            if results.iter().all(Result::is_err) {
                None
            } else {
                Some(batch.finish()?)
            }
        };
        let Some(effects) = effects else {
            txn.abort().map_err(WriteError::storage)?;
            return Ok(results);
        };
        // A batch that only refused writes changed nothing but counters and the skip log:
        // the documents it was decided against are already durable, so it needs no fsync.
        // Its counts become durable with the next durable commit (a crash may lose them).
        // (Not where other processes read the file: redb refuses non-durable commits there.)
        if !self.inner.shared && results.iter().all(refused_only) {
            txn.set_durability(redb::Durability::None)
                .map_err(WriteError::storage)?;
        }
        txn.commit().map_err(WriteError::storage)?;
        if let Some(dimension) = effects.dimension_fixed {
            *self.inner.dimension.write() = Some(dimension);
        }
        if effects.changelog.is_some() {
            self.after_commit();
        }
        Ok(results)
    }

    fn run_one(&self, op: Op) -> Result<OpOutcome, WriteError> {
        let prepared = self.prepare(op)?;
        let mut results = self.run_batch(std::slice::from_ref(&prepared))?;
        results.pop().unwrap_or_else(|| {
            Err(WriteError::Corrupted {
                what: "batch".into(),
                detail: "no outcome for the operation".into(),
            })
        })
    }

    /// Writes a revision of a document, guarded: refused (and counted) unless it is newer
    /// than what is stored. Generation stamp, chunks, surplus removal, vectors and counters
    /// commit in one transaction.
    pub fn upsert(&self, doc: Document) -> Result<Outcome, WriteError> {
        match self.run_one(Op::Upsert(doc))? {
            OpOutcome::Document(outcome) => Ok(outcome),
            OpOutcome::Retain(_) => Err(WriteError::Corrupted {
                what: "batch".into(),
                detail: "retain outcome for an upsert".into(),
            }),
        }
    }

    /// Deletes a document at `version`: a tombstone that refuses every later write not newer
    /// than it. Works for a document never seen, so a delete that overtakes its upsert still
    /// blocks it. A delete meeting a live revision of the same version wins (and is counted).
    pub fn delete(&self, source: &str, id: &str, version: Version) -> Result<Outcome, WriteError> {
        let op = Op::Delete {
            source: source.to_string(),
            id: id.to_string(),
            version,
        };
        match self.run_one(op)? {
            OpOutcome::Document(outcome) => Ok(outcome),
            OpOutcome::Retain(_) => Err(WriteError::Corrupted {
                what: "batch".into(),
                detail: "retain outcome for a delete".into(),
            }),
        }
    }

    /// The sync sweep: `present` is everything that exists in `source` at `version`. Every id
    /// of the source it omits is deleted at `version` — including ids not seen yet, so a late
    /// upsert not newer than the listing is refused as `Tombstoned` whatever the delivery
    /// order. Documents newer than the listing are left alone. The listing is kept until
    /// [`Store::purge`].
    pub fn retain<I, S>(
        &self,
        source: &str,
        present: I,
        version: Version,
    ) -> Result<RetainOutcome, WriteError>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let op = Op::Retain {
            source: source.to_string(),
            present: present.into_iter().map(Into::into).collect(),
            version,
        };
        match self.run_one(op)? {
            OpOutcome::Retain(outcome) => Ok(outcome),
            OpOutcome::Document(_) => Err(WriteError::Corrupted {
                what: "batch".into(),
                detail: "document outcome for a retain".into(),
            }),
        }
    }

    /// Removes the tombstones and listings of `source` older than `before` (same version kind).
    ///
    /// The trade-off: a tombstone is what refuses a stale revision of a deleted document.
    /// Once purged, a revision older than `before` that is still in flight somewhere (a retry
    /// queue, a dead-letter queue, a backfill snapshot) would bring the document back. Purge
    /// only below a version older than anything that can still be delivered.
    pub fn purge(&self, source: &str, before: Version) -> Result<PurgeOutcome, WriteError> {
        check_name("source", source, &self.inner.options.limits)?;
        let db = self.writable()?;
        self.check_poisoned()?;
        let result = crate::contain::contain(WriteError::contained, || {
            let mut txn = db.begin_write().map_err(WriteError::storage)?;
            txn.set_durability(redb::Durability::Immediate)
                .map_err(WriteError::storage)?;
            let settings = BatchSettings {
                policy: self.inner.options.conflict_policy,
                skip_log_capacity: self.inner.options.skip_log_capacity,
                tickets_issued: self.inner.tickets_issued.clone(),
                text: self.inner.text.clone(),
            };
            let outcome = {
                let mut batch = Batch::begin(&txn, settings, self.dimension())?;
                let outcome = batch.purge(source, before)?;
                batch.finish()?;
                outcome
            };
            txn.commit().map_err(WriteError::storage)?;
            Ok(outcome)
        });
        if let Err(error @ WriteError::Storage(_)) = &result {
            self.poison(error);
        }
        if let Err(error) = &result {
            if error.is_contained_panic() {
                self.poison(error);
            }
        }
        result
    }

    /// Applies many operations in one transaction: each is guarded on its own, in order (a
    /// later operation sees what an earlier one left), and the batch becomes visible at once.
    ///
    /// The outer `Err` is a storage failure: nothing of the batch is acknowledged (it is on
    /// disk whole or not at all; see [`WriteError::Storage`]). Otherwise each
    /// operation has its own result; one refused for its input changed nothing and did not
    /// stop the others.
    pub fn write_batch(
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
        let mut applied = self.run_batch(&prepared)?.into_iter();
        Ok(slots
            .into_iter()
            .map(|slot| match slot {
                Some(error) => Err(error),
                None => applied.next().unwrap_or_else(|| {
                    Err(WriteError::Corrupted {
                        what: "batch".into(),
                        detail: "fewer outcomes than operations".into(),
                    })
                }),
            })
            .collect())
    }

    /// Makes every write so far durable (needed only with [`Durability::None`]).
    pub fn sync(&self) -> Result<(), WriteError> {
        let db = self.writable()?;
        self.check_poisoned()?;
        let result = (|| {
            let mut txn = db.begin_write().map_err(WriteError::storage)?;
            txn.set_durability(redb::Durability::Immediate)
                .map_err(WriteError::storage)?;
            txn.commit().map_err(WriteError::storage)
        })();
        if let Err(error) = &result {
            self.poison(error);
        }
        result
    }

    /// A new ticket: a store-issued version, strictly greater than every ticket this store
    /// has issued before, across restarts and crashes. Take it when a job is enqueued and
    /// let every retry carry it unchanged (failure F12). Tickets are reserved in blocks, so
    /// a ticket costs no fsync; a crash skips the rest of a block.
    pub fn ticket(&self) -> Result<Version, WriteError> {
        let db = self.writable()?;
        let mut tickets = self.inner.tickets.lock();
        if tickets.next >= tickets.reserved_until {
            self.check_poisoned()?;
            let until = tickets.reserved_until + TICKET_BLOCK;
            let result = (|| {
                let mut txn = db.begin_write().map_err(WriteError::storage)?;
                txn.set_durability(redb::Durability::Immediate)
                    .map_err(WriteError::storage)?;
                {
                    let mut counters = txn.open_table(COUNTERS).map_err(WriteError::storage)?;
                    counters
                        .insert(seq_key::TICKET_HIGH_WATER, until)
                        .map_err(WriteError::storage)?;
                }
                txn.commit().map_err(WriteError::storage)
            })();
            if let Err(error) = &result {
                self.poison(error);
            }
            result?;
            tickets.reserved_until = until;
        }
        // Ticket 0 is never issued, so any ticket is newer than "nothing".
        tickets.next += 1;
        self.inner
            .tickets_issued
            .fetch_max(tickets.next, Ordering::SeqCst);
        Ok(Version::ticket(tickets.next))
    }

    /// Says, before any embedding is paid for, whether this revision would be written, and
    /// which chunks need a vector: chunks whose text the stored revision already has a vector
    /// for can be sent without one. Vectors in `doc` are ignored.
    pub fn plan(&self, doc: &Document) -> Result<Plan, ReadError> {
        crate::contain::contain(ReadError::contained, || self.plan_uncontained(doc))
    }

    fn plan_uncontained(&self, doc: &Document) -> Result<Plan, ReadError> {
        // Before the clone below: cloning metadata nested deeper than the stack overflows it.
        prepare::check_depths(doc, &self.inner.options.limits)?;
        let draft = Document {
            source: doc.source.clone(),
            id: doc.id.clone(),
            version: doc.version,
            meta: doc.meta.clone(),
            chunks: doc
                .chunks
                .iter()
                .map(|c| crate::document::Chunk {
                    text: c.text.clone(),
                    vector: None,
                    meta: c.meta.clone(),
                })
                .collect(),
        };
        let prepared = prepare::prepare_document(
            draft,
            self.inner.metric,
            self.dimension(),
            &self.inner.options.limits,
        )
        .map_err(|e| match e {
            WriteError::Input(input) => ReadError::Input(input),
            other => ReadError::Input(InputError::new("document", other.to_string())),
        })?;
        let snapshot = self.snapshot()?;
        let (stored, known_texts) =
            snapshot.plan_state(&prepared.source, &prepared.id, prepared.version)?;
        let incoming = Incoming::Upsert {
            version: prepared.version,
            content_hash: prepared.content_hash,
        };
        let action = match guard::decide(
            stored.as_ref(),
            &incoming,
            self.inner.options.conflict_policy,
        ) {
            Decision::Insert | Decision::Replace | Decision::ReplaceOnTie => PlannedAction::Write,
            Decision::BumpVersion => PlannedAction::BumpVersion,
            Decision::Skip { reason, .. } => PlannedAction::Skip {
                reason,
                stored_version: stored.map(|s| s.version).unwrap_or(prepared.version),
            },
            Decision::KindMismatch { stored } => {
                return Err(ReadError::Input(InputError::new(
                    "version",
                    format!(
                        "is a {} version; the document is versioned by {stored}",
                        prepared.version.kind
                    ),
                )))
            }
            Decision::Tombstone { .. } => PlannedAction::Write,
        };
        let (mut reusable, mut to_embed) = (Vec::new(), Vec::new());
        for (position, chunk) in prepared.chunks.iter().enumerate() {
            if known_texts.contains(&chunk.text_hash) {
                reusable.push(position);
            } else if action == PlannedAction::Write {
                to_embed.push(position);
            }
        }
        Ok(Plan {
            action,
            reusable,
            to_embed,
        })
    }

    /// A concurrent writer with group commit and default [`WriterOptions`](crate::WriterOptions).
    pub fn writer(&self) -> crate::writer::Writer {
        crate::writer::Writer::start(self.clone(), crate::writer::WriterOptions::for_store(self))
    }

    /// A concurrent writer with the given options.
    pub fn writer_with(&self, options: crate::writer::WriterOptions) -> crate::writer::Writer {
        crate::writer::Writer::start(self.clone(), options)
    }

    /// Applies a commit's vector changes to the index (or starts loading it).
    /// After a commit that changed the set of vectors: wakes the index applier, which
    /// brings the derived index up to the new commit off the writing thread (a committer
    /// goes straight on to its next batch). Wakes coalesce: one pass applies every commit
    /// made before it started. Searches never depend on it: each brings the index up to
    /// its own snapshot first.
    fn after_commit(&self) {
        if self.live().is_none() {
            self.start_index();
            return;
        }
        let mut applier = self.inner.applier.lock();
        if applier.is_none() {
            let (wake, woken) = crossbeam_channel::bounded::<()>(1);
            let background = self.background();
            let spawned = std::thread::Builder::new()
                .name("ratchetdb-apply".into())
                .spawn(move || {
                    // Ends when the store closes: its sender drops with it.
                    for () in woken {
                        let pass = background.with(|store| {
                            // Every request counted so far follows a commit this pass's
                            // snapshot will see.
                            let covers = store.inner.apply_requested.load(Ordering::SeqCst);
                            // A panic (a bug) must not end the applier: searches would
                            // still be right, but `wait_for_index` would wait forever.
                            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                                store.apply_committed()
                            }));
                            store.inner.apply_done.store(covers, Ordering::SeqCst);
                        });
                        if pass.is_none() {
                            return;
                        }
                    }
                });
            match spawned {
                Ok(_) => *applier = Some(wake),
                // No thread: apply here, as the writer.
                Err(_) => {
                    drop(applier);
                    self.apply_committed();
                    return;
                }
            }
        }
        self.inner.apply_requested.fetch_add(1, Ordering::SeqCst);
        if let Some(wake) = applier.as_ref() {
            // Full: a wake is already pending and will cover this commit.
            let _ = wake.try_send(());
        }
    }

    /// Brings the derived index up to the latest commit, and starts a graph rebuild (many
    /// dead points) or absorbs new vectors into the graph in the background.
    fn apply_committed(&self) {
        let Some(live) = self.live() else {
            self.start_index();
            return;
        };
        let caught_up = self
            .snapshot()
            .and_then(|snapshot| live.catch_up(&snapshot));
        if !matches!(caught_up, Ok(true)) {
            // The changelog could not bring it up to date: load it again from the vectors.
            *self.inner.live.write() = None;
            self.inner.loader_started.store(false, Ordering::SeqCst);
            self.start_index();
            return;
        }
        if maintenance_due(&live).is_some() && !live.building.swap(true, Ordering::SeqCst) {
            let background = self.background();
            let worker = live.clone();
            let spawned = std::thread::Builder::new()
                .name("ratchetdb-index".into())
                .spawn(move || maintain_index(&background, &worker));
            if spawned.is_err() {
                // No thread: searches stay correct (outside ids are scored exactly).
                live.building.store(false, Ordering::SeqCst);
            }
        }
    }

    fn background(&self) -> Background {
        Background {
            inner: Arc::downgrade(&self.inner),
            gate: self.inner.gate.clone(),
        }
    }

    fn live(&self) -> Option<Arc<LiveIndex>> {
        self.inner.live.read().clone()
    }

    /// Starts loading the index in the background, once the dimension is known. Opening
    /// never waits for it: until it is loaded, searches scan the file (exact, slower).
    fn start_index(&self) {
        let Some(dimension) = self.dimension() else {
            return;
        };
        if self.inner.loader_started.swap(true, Ordering::SeqCst) {
            return;
        }
        let background = self.background();
        let metric = self.inner.metric;
        let spawned = std::thread::Builder::new()
            .name("ratchetdb-index-load".into())
            .spawn(move || load_index(background, dimension, metric));
        if spawned.is_err() {
            self.inner.loader_started.store(false, Ordering::SeqCst);
        }
    }

    /// k-nearest-neighbour search over the live chunks. Every hit is a live chunk of one
    /// committed snapshot (a superseded chunk is never returned); `query` must have the
    /// store's dimension. Small stores, and stores whose index is still loading after
    /// open, are searched exactly.
    ///
    /// ```
    /// use ratchetdb::{Chunk, Document, Options, SearchOptions, Store, Version};
    /// # let dir = tempfile::tempdir()?;
    /// let store = Store::open(dir.path().join("index.redb"), Options::default())?;
    /// store.upsert(Document::new("notes", "a", Version::number(1))
    ///     .with_chunk(Chunk::new("cats purr", vec![1.0, 0.1]))
    ///     .with_chunk(Chunk::new("dogs bark", vec![0.1, 1.0])))?;
    /// let hits = store.search(&[0.9, 0.2], 1, &SearchOptions::default())?;
    /// assert_eq!(hits[0].text, "cats purr");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// `k` may be at most [`Limits::max_k`](crate::Limits::max_k) (an
    /// [`InputError`](crate::InputError) on `k` otherwise, as for `ef` 0 or above it, and
    /// for a source in `options.sources` the store holds no document of).
    pub fn search(
        &self,
        query: &[f32],
        k: usize,
        options: &SearchOptions,
    ) -> Result<Vec<Hit>, ReadError> {
        crate::contain::contain(ReadError::contained, || {
            self.search_uncontained(query, k, options)
        })
    }

    fn search_uncontained(
        &self,
        query: &[f32],
        k: usize,
        options: &SearchOptions,
    ) -> Result<Vec<Hit>, ReadError> {
        self.search_then(query, k, options, |_, hits| Ok(hits))
    }

    /// The vector search, handing its hits and the snapshot they were resolved against to
    /// `then` (hybrid search runs its text search on that same snapshot).
    fn search_then<T>(
        &self,
        query: &[f32],
        k: usize,
        options: &SearchOptions,
        mut then: impl FnMut(&Snapshot, Vec<Hit>) -> Result<T, ReadError>,
    ) -> Result<T, ReadError> {
        crate::search::check_bounds(k, options, &self.inner.options.limits)?;
        if self.inner.read_only && self.dimension().is_none() {
            // The writer may have fixed it since this store opened.
            drop(self.snapshot()?);
        }
        let query = crate::search::prepare_query(
            query,
            self.inner.metric,
            self.dimension(),
            &self.inner.options.limits,
        )?;
        let metric = self.inner.metric;
        // The index must cover exactly the snapshot's commit for the whole search: an index
        // ahead of it (a commit applied meanwhile) has already dropped vectors the snapshot
        // still holds live, and the search would miss them (a document being rewritten
        // would come back partly, or not at all). Optimistic: check before and after, and
        // retry on a newer snapshot if a commit was applied in between.
        for _ in 0..SEARCH_ATTEMPTS {
            let snapshot = self.snapshot()?;
            let Some(live) = self.live() else {
                let hits =
                    crate::search::search(&snapshot, None, &query, k, options, metric, None)?;
                return then(&snapshot, hits);
            };
            if !live.catch_up(&snapshot)? {
                let hits =
                    crate::search::search(&snapshot, None, &query, k, options, metric, None)?;
                return then(&snapshot, hits);
            }
            let seq = live_index::commit_seq(&snapshot)?;
            if live.applied() != seq {
                continue;
            }
            // The filter index, brought up to the snapshot too (a newer search may have
            // taken it past it: then retry on a newer snapshot, as for the vector index).
            let matching = match &options.filter {
                Some(filter) => match self.inner.filters.evaluate(&snapshot, filter)? {
                    Some(matching) => Some(matching),
                    None => continue,
                },
                None => None,
            };
            let hits = crate::search::search(
                &snapshot,
                Some(&live),
                &query,
                k,
                options,
                metric,
                matching,
            )?;
            if live.applied() == seq {
                return then(&snapshot, hits);
            }
        }
        // Commits keep landing faster than a search: scan the snapshot itself (exact).
        let snapshot = self.snapshot()?;
        let hits = crate::search::search(&snapshot, None, &query, k, options, metric, None)?;
        then(&snapshot, hits)
    }

    /// The `k` chunks that best match `query` by BM25 over their words (see
    /// [`TextOptions`](crate::TextOptions) for how text becomes words), best first; a hit's
    /// score is its BM25 score. [`SearchOptions::bm25`] sets k1 and b; the sources,
    /// documents and metadata filter of `options` apply as for [`Store::search`] (`ef`,
    /// `exact` and the filter strategy are about vectors and are ignored).
    ///
    /// Every hit is a live chunk of one snapshot: the text index changes in the transaction
    /// that changes the chunks, so a superseded, deleted or orphaned chunk is never
    /// returned. [`ReadError::NoTextIndex`] if the store keeps no text index.
    ///
    /// ```
    /// use ratchetdb::{Chunk, Document, Options, SearchOptions, Store, Version};
    /// # let dir = tempfile::tempdir()?;
    /// let store = Store::open(dir.path().join("index.redb"), Options::default())?;
    /// store.upsert(Document::new("notes", "a", Version::number(1))
    ///     .with_chunk(Chunk::new("error E1234: disk full", vec![1.0, 0.1]))
    ///     .with_chunk(Chunk::new("all good", vec![0.1, 1.0])))?;
    /// let hits = store.search_text("E1234", 5, &SearchOptions::default())?;
    /// assert_eq!(hits.len(), 1);
    /// assert_eq!(hits[0].text, "error E1234: disk full");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn search_text(
        &self,
        query: &str,
        k: usize,
        options: &SearchOptions,
    ) -> Result<Vec<Hit>, ReadError> {
        crate::contain::contain(ReadError::contained, || {
            crate::search::check_bounds(k, options, &self.inner.options.limits)?;
            self.check_text_query(query)?;
            let snapshot = self.snapshot()?;
            let analyzer = crate::text::analyzer_of(&snapshot, &self.inner.text_cache)?;
            let matching = match &options.filter {
                // `None` when the filter index covers another commit: then every
                // candidate's metadata is checked as it is resolved.
                Some(filter) => self.inner.filters.evaluate(&snapshot, filter)?,
                None => None,
            };
            crate::text::search_text(
                &snapshot,
                &self.inner.text_index,
                &analyzer,
                query,
                k,
                options,
                matching.as_ref(),
            )
        })
    }

    /// The `k` best chunks by both `vector` (nearest neighbours, as [`Store::search`]) and
    /// `text` (BM25, as [`Store::search_text`]), merged by [`SearchOptions::fusion`]:
    /// reciprocal rank fusion with k = 60 by default, or a weighted sum of the scaled
    /// scores. Each ranking contributes its best `max(4k, 50)` chunks; a hit's score is its
    /// fused score. Both rankings are resolved against one snapshot, so every hit is a live
    /// chunk of it.
    ///
    /// ```
    /// use ratchetdb::{Chunk, Document, Options, SearchOptions, Store, Version};
    /// # let dir = tempfile::tempdir()?;
    /// let store = Store::open(dir.path().join("index.redb"), Options::default())?;
    /// store.upsert(Document::new("notes", "a", Version::number(1))
    ///     .with_chunk(Chunk::new("cats purr", vec![1.0, 0.1]))
    ///     .with_chunk(Chunk::new("dogs bark", vec![0.1, 1.0])))?;
    /// let hits = store.search_hybrid("dogs", &[0.2, 0.9], 1, &SearchOptions::default())?;
    /// assert_eq!(hits[0].text, "dogs bark");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn search_hybrid(
        &self,
        text: &str,
        vector: &[f32],
        k: usize,
        options: &SearchOptions,
    ) -> Result<Vec<Hit>, ReadError> {
        crate::contain::contain(ReadError::contained, || {
            crate::search::check_bounds(k, options, &self.inner.options.limits)?;
            self.check_text_query(text)?;
            options.fusion.check()?;
            let depth = crate::text::fusion_depth(k, self.inner.options.limits.max_k);
            let higher = self.inner.metric.higher_is_closer();
            self.search_then(vector, depth, options, |snapshot, vector_hits| {
                let analyzer = crate::text::analyzer_of(snapshot, &self.inner.text_cache)?;
                let text_hits = crate::text::search_text(
                    snapshot,
                    &self.inner.text_index,
                    &analyzer,
                    text,
                    depth,
                    options,
                    None,
                )?;
                Ok(crate::text::fuse(
                    vector_hits,
                    text_hits,
                    k,
                    options.fusion,
                    higher,
                ))
            })
        })
    }

    /// Whether this store can answer text searches: it keeps a text index (a read-only
    /// store: the file has one) that covers its documents.
    pub fn has_text_index(&self) -> bool {
        self.snapshot()
            .and_then(|s| crate::text::analyzer_of(&s, &self.inner.text_cache))
            .is_ok()
    }

    /// Refuses a text query longer than a chunk may be.
    fn check_text_query(&self, query: &str) -> Result<(), ReadError> {
        let max = self.inner.options.limits.max_chunk_text_bytes;
        if query.len() > max {
            return Err(InputError::new(
                "query",
                format!(
                    "is {} bytes; a text query may be at most {max} (Limits::max_chunk_text_bytes)",
                    query.len()
                ),
            )
            .into());
        }
        Ok(())
    }

    /// Runs [`Store::search`] for every query, spread over the cores (rayon's pool), and
    /// returns the hits in the order of the queries. An error names the query
    /// (`queries[3]`); the first error found is returned.
    ///
    /// ```
    /// use ratchetdb::{Chunk, Document, Options, SearchOptions, Store, Version};
    /// # let dir = tempfile::tempdir()?;
    /// let store = Store::open(dir.path().join("index.redb"), Options::default())?;
    /// store.upsert(Document::new("notes", "a", Version::number(1))
    ///     .with_chunk(Chunk::new("cats purr", vec![1.0, 0.1]))
    ///     .with_chunk(Chunk::new("dogs bark", vec![0.1, 1.0])))?;
    /// let hits = store.search_many(&[vec![0.9, 0.2], vec![0.1, 0.9]], 1, &SearchOptions::default())?;
    /// assert_eq!(hits[0][0].text, "cats purr");
    /// assert_eq!(hits[1][0].text, "dogs bark");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn search_many<Q: AsRef<[f32]> + Sync>(
        &self,
        queries: &[Q],
        k: usize,
        options: &SearchOptions,
    ) -> Result<Vec<Vec<Hit>>, ReadError> {
        use rayon::prelude::*;
        crate::search::check_bounds(k, options, &self.inner.options.limits)?;
        queries
            .par_iter()
            .enumerate()
            .map(|(i, query)| {
                self.search(query.as_ref(), k, options)
                    .map_err(|error| match error {
                        ReadError::Input(e) if e.field.starts_with("query") => {
                            ReadError::Input(crate::error::InputError::new(
                                e.field.replacen("query", &format!("queries[{i}]"), 1),
                                e.problem,
                            ))
                        }
                        other => other,
                    })
            })
            .collect()
    }

    /// What the derived index is doing.
    pub fn index_info(&self) -> IndexInfo {
        match self.live() {
            None => IndexInfo::default(),
            Some(live) => IndexInfo {
                loaded: true,
                graph_ready: live.index.graph_ready(),
                building: live.building.load(Ordering::SeqCst),
                live_vectors: live.index.len_live() as u64,
                dead_fraction: live.index.dead_fraction(),
                applied_commit: live.applied(),
                graph_points: live.index.graph_point_count() as u64,
                outside_vectors: live.index.outside_count() as u64,
                persisted_points: live.persisted_points.load(Ordering::SeqCst) as u64,
            },
        }
    }

    /// Waits until the index has loaded, covers the latest commit, and no applier pass,
    /// graph build or load is running; `false` on timeout. Searches never need this (they
    /// bring the index up to their own snapshot, and answer exactly meanwhile); tests and
    /// benchmarks do, and so does anything that needs the file's I/O to be deterministic
    /// (background passes hold read snapshots, which change the pages a commit reuses).
    pub fn wait_for_index(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            // Idle first: a pass that starts a graph build marks it building before it
            // counts itself done, so `info` read after this sees the build. Under the
            // applier's lock, which a commit holds while it counts a request and wakes the
            // applier: a wake still queued means a pass is still to come.
            let idle = {
                let applier = self.inner.applier.lock();
                let queued = applier.as_ref().is_some_and(|wake| !wake.is_empty());
                !queued
                    && self.inner.apply_done.load(Ordering::SeqCst)
                        >= self.inner.apply_requested.load(Ordering::SeqCst)
            };
            let info = self.index_info();
            if self.dimension().is_none() {
                return true;
            }
            let latest = self
                .snapshot()
                .and_then(|snapshot| live_index::commit_seq(&snapshot));
            // A snapshot that cannot be taken leaves nothing to wait for.
            let applied = latest.map_or(true, |seq| info.applied_commit >= seq);
            if info.loaded && !info.building && applied && idle {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Builds the ANN graph now (in this thread) from the live vectors, and persists it in
    /// the file so the next open loads it instead of building it again. A build that fails
    /// (inside the graph library, or as the store closes) is [`ReadError::IndexBuild`];
    /// nothing stored changes, and searches go on over the previous graph (or exactly).
    pub fn build_index(&self) -> Result<(), ReadError> {
        let Some(dimension) = self.dimension() else {
            return Ok(());
        };
        let live = match self.live() {
            Some(live) => live,
            None => {
                let snapshot = self.snapshot()?;
                let live = Arc::new(LiveIndex::load(
                    &snapshot,
                    dimension,
                    self.inner.metric,
                    self.inner.options.index,
                    self.scratch(),
                )?);
                self.inner.loader_started.store(true, Ordering::SeqCst);
                // The background loader may have published one meanwhile: use that.
                let mut slot = self.inner.live.write();
                match slot.as_ref() {
                    Some(published) => published.clone(),
                    None => {
                        *slot = Some(live.clone());
                        live
                    }
                }
            }
        };
        // Every vector committed so far (a storage error here is reported as one), then
        // the graph, then (on every core) whatever was committed during the build: the
        // persisted graph holds them all.
        live.catch_up(&self.snapshot()?)?;
        while live.building.swap(true, Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(5));
        }
        let _clear = ClearBuildingOnUnwind(&live.building);
        let built = live.index.build_graph().and_then(|()| {
            while live
                .index
                .absorb_outside_with(ABSORB_CHUNK, Workers::Foreground)?
                > 0
            {}
            Ok(())
        });
        if built.is_ok() {
            live.failed_build_at.store(usize::MAX, Ordering::SeqCst);
            persist_graph(&self.background(), &live);
        }
        live.building.store(false, Ordering::SeqCst);
        // Not `Corrupted`: the build works on vectors already read and checked; nothing in
        // the file is wrong when it fails.
        built.map_err(|e| ReadError::IndexBuild {
            detail: e.to_string(),
        })
    }

    /// A consistent read view: everything read through it comes from one committed state.
    pub fn snapshot(&self) -> Result<Snapshot, ReadError> {
        crate::contain::contain(ReadError::contained, || {
            let txn = self.inner.db.begin_read().map_err(ReadError::storage)?;
            if self.inner.read_only {
                self.learn_recorded(&txn)?;
            }
            Snapshot::new(
                txn,
                self.inner.metric,
                self.dimension(),
                self.model().map(str::to_owned),
            )
        })
    }

    /// A read-only store: takes the dimension and model from `txn` if the writer recorded
    /// them after this store opened (each is recorded once and never changes), and starts
    /// loading the index once the dimension is known.
    fn learn_recorded(&self, txn: &redb::ReadTransaction) -> Result<(), ReadError> {
        if self.dimension().is_some() && self.inner.model.get().is_some() {
            return Ok(());
        }
        let meta = txn.open_table(META).map_err(ReadError::storage)?;
        if self.inner.model.get().is_none() {
            if let Some(model) = meta_string(&meta, meta_key::MODEL)? {
                let _ = self.inner.model.set(model);
            }
        }
        if self.dimension().is_none() {
            if let Some(Ok(stored)) = meta_u64(&meta, meta_key::DIMENSION)? {
                let dimension = usize::try_from(stored).map_err(|_| ReadError::Corrupted {
                    what: "dimension".into(),
                    detail: format!("{stored} is too large"),
                })?;
                *self.inner.dimension.write() = Some(dimension);
                self.start_index();
            }
        }
        Ok(())
    }

    /// A read-only store: a thread that brings the index up to the writer's latest commit
    /// every [`FOLLOW_INTERVAL`] (searches do it themselves; this keeps the work they find
    /// small, and absorbs new vectors into the graph). It holds the store only inside
    /// [`Background::with`] sections, and ends once the store is closed.
    fn start_follower(&self) {
        let background = self.background();
        let _ = std::thread::Builder::new()
            .name("ratchetdb-follow".into())
            .spawn(move || loop {
                std::thread::sleep(FOLLOW_INTERVAL);
                if background.with(Store::follow_once).is_none() {
                    return;
                }
            });
    }

    /// One look for new commits (see [`Store::start_follower`]).
    fn follow_once(&self) {
        let Ok(snapshot) = self.snapshot() else {
            return;
        };
        let Some(live) = self.live() else { return };
        let latest = live_index::commit_seq(&snapshot);
        drop(snapshot);
        if !matches!(latest, Ok(seq) if seq > live.applied()) {
            return;
        }
        let covers = self.inner.apply_requested.fetch_add(1, Ordering::SeqCst) + 1;
        // A panic (a bug) must not end the follower: searches would still be right.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.apply_committed()));
        self.inner.apply_done.store(covers, Ordering::SeqCst);
    }

    /// Where hnsw_rs's scratch files go: beside the file, or (read-only) the system's
    /// temporary directory, since a read-only store never writes beside its file.
    fn scratch(&self) -> Option<PathBuf> {
        if self.inner.read_only {
            None
        } else {
            scratch_dir(&self.inner.path)
        }
    }

    /// A document and its chunks in order (from one snapshot). Tombstones are returned with
    /// `deleted: true` and no chunks.
    pub fn get(
        &self,
        source: &str,
        id: &str,
    ) -> Result<Option<crate::read::StoredDocument>, ReadError> {
        self.snapshot()?.get(source, id)
    }

    /// Counters, totals and recent refusals (from one snapshot).
    pub fn stats(&self) -> Result<Stats, ReadError> {
        self.snapshot()?.stats()
    }

    /// Checks every invariant the rows can show (from one snapshot), and that the vectors
    /// the index can return are exactly the live vectors of the file (I5).
    pub fn verify(&self) -> Result<VerifyReport, ReadError> {
        crate::contain::contain(ReadError::contained, || self.verify_uncontained())
    }

    fn verify_uncontained(&self) -> Result<VerifyReport, ReadError> {
        let mut report = self.snapshot()?.verify()?;
        if let Some(live) = self.live() {
            for problem in live.agreement(|| self.snapshot())? {
                report.violations.push(crate::verify::Violation {
                    source: None,
                    id: None,
                    problem: format!("index: {problem}"),
                });
            }
        }
        Ok(report)
    }
}

/// How often a read-only store's follower looks for the writer's new commits.
const FOLLOW_INTERVAL: Duration = Duration::from_millis(20);

/// Runs `attempt` until it returns something other than an error `retry` accepts, or `wait`
/// has passed (then it returns that error).
fn with_lock_wait(
    wait: Duration,
    retry: impl Fn(&OpenError) -> bool,
    mut attempt: impl FnMut() -> Result<Store, OpenError>,
) -> Result<Store, OpenError> {
    let deadline = Instant::now() + wait;
    let mut pause = Duration::from_millis(5);
    loop {
        match attempt() {
            Err(error) if retry(&error) => {
                let now = Instant::now();
                if now >= deadline {
                    return Err(error);
                }
                std::thread::sleep(pause.min(deadline - now));
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

/// Rebuild the graph in the background when more than this share of its points is dead.
const REBUILD_DEAD_FRACTION: f64 = 0.2;

/// New vectors moved into the graph per step of the background absorber.
const ABSORB_CHUNK: usize = 2048;

/// The persisted graph is rewritten once the graph holds this share more points than
/// the last snapshot (see [`absorb_and_refresh`]). A trade-off: each rewrite writes the
/// whole graph (about 2.2 KB per 384-d point), so growth `g` writes about `1 + 1/g`
/// times the final graph in all; what a rewrite would have saved is only absorbing work
/// after an open (a snapshot's missing vectors are scored exactly until absorbed; they
/// never delay the first graph search).
const PERSIST_GROWTH: f64 = 0.5;

/// ... and at least this many more.
const PERSIST_MIN_POINTS: usize = 4096;

/// Whether an operation's result changed no document, listing or vector.
fn refused_only(result: &Result<OpOutcome, WriteError>) -> bool {
    match result {
        Err(_) => true,
        Ok(OpOutcome::Document(outcome)) => outcome.skip_reason().is_some(),
        Ok(OpOutcome::Retain(outcome)) => outcome.skipped.is_some(),
    }
}

/// Searches retried on a newer snapshot when a commit was applied to the index during one,
/// before falling back to scanning the snapshot.
const SEARCH_ATTEMPTS: usize = 8;

/// The state of the derived index, from [`Store::index_info`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct IndexInfo {
    /// The in-memory index holds the live vectors (before that, searches scan the file).
    pub loaded: bool,
    /// An ANN graph is ready (searches above the exact threshold use it).
    pub graph_ready: bool,
    /// A graph build or snapshot load is running in the background.
    pub building: bool,
    /// Live vectors in the index.
    pub live_vectors: u64,
    /// Share of the graph's settled points that are dead (removed or superseded), waiting
    /// for a rebuild; a point being inserted counts once it settles.
    pub dead_fraction: f64,
    /// The last commit sequence the index has applied.
    pub applied_commit: u64,
    /// Points (live or dead) in the ANN graph; 0 without one.
    pub graph_points: u64,
    /// Live vectors scored exactly beside the graph: new ones the background absorber has
    /// not moved in yet, and points no graph search would reach.
    pub outside_vectors: u64,
    /// Points of the graph snapshot this process loaded or last wrote into the file (0:
    /// none yet). The snapshot is rewritten after a build, and once absorbing has grown
    /// the graph by half (at least 4096 points) past it.
    pub persisted_points: u64,
}

/// Where hnsw_rs's dump files go while a snapshot is written or read: beside the database.
fn scratch_dir(path: &Path) -> Option<PathBuf> {
    path.parent().filter(|p| p.is_dir()).map(Path::to_path_buf)
}

/// The background loader: every vector into memory and, at the same time on a second
/// thread, the persisted graph parsed; then the graph is installed (or, without a usable
/// one, built), vectors it lacks are absorbed, and the snapshot refreshed if they were many.
fn load_index(background: Background, dimension: usize, metric: Metric) {
    let started = background.with(|store| match (store.snapshot(), store.snapshot()) {
        (Ok(vectors), Ok(graph)) => {
            Some((vectors, graph, store.scratch(), store.inner.options.index))
        }
        _ => {
            store.inner.loader_started.store(false, Ordering::SeqCst);
            None
        }
    });
    let Some(Some((vectors, graph_snapshot, scratch, params))) = started else {
        return;
    };
    // The read snapshots do not keep the file open: if the store closes meanwhile, the
    // reads fail and this thread ends.
    let (loaded, parsed) = std::thread::scope(|scope| {
        let graph_scratch = scratch.clone();
        let parser = std::thread::Builder::new()
            .name("ratchetdb-index-load".into())
            .spawn_scoped(scope, move || {
                let parts = live_index::read_graph_snapshot(&graph_snapshot);
                drop(graph_snapshot);
                match parts {
                    Ok(parts) if !parts.is_empty() => Some(crate::index::parse_snapshot(
                        &parts,
                        metric,
                        dimension,
                        graph_scratch.as_deref(),
                    )),
                    _ => None,
                }
            });
        let loaded = LiveIndex::load(&vectors, dimension, metric, params, scratch);
        drop(vectors);
        let parsed = match parser {
            Ok(handle) => handle.join().unwrap_or_else(|_| {
                Some(Err(crate::index::IndexError::Graph {
                    detail: "snapshot parser panicked".into(),
                }))
            }),
            Err(error) => Some(Err(crate::index::IndexError::Io(error))),
        };
        (loaded, parsed)
    });
    let installed = background.with(|store| {
        let Ok(live) = loaded else {
            store.inner.loader_started.store(false, Ordering::SeqCst);
            return None;
        };
        let live = Arc::new(live);
        {
            // `build_index` may have loaded and published its own meanwhile (with the graph
            // it built): keep that one.
            let mut slot = store.inner.live.write();
            if slot.is_some() {
                return None;
            }
            live.building.store(true, Ordering::SeqCst);
            *slot = Some(live.clone());
        }
        // Commits that landed while loading. One that found no index to wake the applier
        // for committed before the index was published, so this snapshot, taken after,
        // covers it (catching up before publishing could miss it for good).
        {
            let _clear = ClearBuildingOnUnwind(&live.building);
            if let Ok(snapshot) = store.snapshot() {
                let _ = live.catch_up(&snapshot);
            }
        }
        Some(live)
    });
    let Some(Some(live)) = installed else { return };
    let _clear = ClearBuildingOnUnwind(&live.building);
    // A persisted graph that loads is used; one that does not (damaged, torn, from another
    // version) is ignored and rebuilt. Without one, small stores stay exact.
    let (had_snapshot, loaded) = match parsed {
        Some(parsed) => (
            true,
            parsed
                .and_then(|graph| {
                    let points = graph.point_count();
                    live.index.install_snapshot(graph)?;
                    live.persisted_points.store(points, Ordering::SeqCst);
                    Ok(())
                })
                .is_ok(),
        ),
        None => (false, false),
    };
    if loaded {
        absorb_and_refresh(&background, &live);
    } else if had_snapshot || live.index.len_live() >= EXACT_THRESHOLD {
        build_graph(&background, &live);
    }
    // Commits made while loading found it building and started nothing.
    maintain_index(&background, &live);
}

/// After a failed graph build, the share by which the number of live vectors must move
/// away from what it was at the failure before another build is tried. A build fails on a
/// panic inside `hnsw_rs` (or the store closing); on the same vectors it would most likely
/// fail again, and without this every commit would start one, each a full pass over the
/// vectors. Searches stay exact (correct, slower) meanwhile; a reopen tries at once.
const RETRY_BUILD_AFTER_CHANGE: f64 = 0.1;

/// Whether a graph build may start now (see [`RETRY_BUILD_AFTER_CHANGE`]).
fn build_retry_due(live: &LiveIndex) -> bool {
    let failed_at = live.failed_build_at.load(Ordering::SeqCst);
    if failed_at == usize::MAX {
        return true;
    }
    let moved = live.index.len_live().abs_diff(failed_at) as f64;
    moved >= (failed_at as f64 * RETRY_BUILD_AFTER_CHANGE).max(1.0)
}

/// Builds a fresh graph from the live vectors (on the background pool) and persists it;
/// records a failure for [`build_retry_due`]. Returns whether it was built.
fn build_graph(background: &Background, live: &LiveIndex) -> bool {
    let vectors = live.index.len_live();
    let built = live.index.build_graph_in_background().is_ok();
    if built {
        live.failed_build_at.store(usize::MAX, Ordering::SeqCst);
        persist_graph(background, live);
    } else {
        live.failed_build_at.store(vectors, Ordering::SeqCst);
    }
    built
}

/// Clears a live index's `building` flag if the thread holding it unwinds (a bug): later
/// commits then start the graph work again, and [`Store::wait_for_index`] does not wait
/// for a thread that is gone. (Normal exits manage the flag themselves.) Panics inside
/// `hnsw_rs` do not get this far: they come back as errors, see `Graph::insert_into_hnsw`.
struct ClearBuildingOnUnwind<'a>(&'a AtomicBool);

impl Drop for ClearBuildingOnUnwind<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.store(false, Ordering::SeqCst);
        }
    }
}

/// Graph work due on a live index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Maintenance {
    /// Too many dead points (or no graph yet at a size that wants one).
    Rebuild,
    /// Live vectors scored exactly that have no graph point yet.
    Absorb,
}

fn maintenance_due(live: &LiveIndex) -> Option<Maintenance> {
    let index = &live.index;
    let rebuild = index.dead_fraction() > REBUILD_DEAD_FRACTION
        || (!index.graph_ready() && index.needs_rebuild(REBUILD_DEAD_FRACTION));
    if rebuild && build_retry_due(live) {
        Some(Maintenance::Rebuild)
    } else if index.has_absorbable() {
        Some(Maintenance::Absorb)
    } else {
        None
    }
}

/// Does the graph work that is due until none is, then clears `live.building` (which the
/// caller set). Work that became due meanwhile is done here too: a commit whose applier
/// pass found `building` set started nothing, and without this its vectors would wait for
/// the next commit to be absorbed (scored exactly meanwhile: slower, never wrong). Stops
/// on a failed build or absorb, or when the store closes.
fn maintain_index(background: &Background, live: &LiveIndex) {
    let _clear = ClearBuildingOnUnwind(&live.building);
    loop {
        while let Some(work) = maintenance_due(live) {
            let done = !live.index.is_closed()
                && match work {
                    Maintenance::Rebuild => build_graph(background, live),
                    // Nothing moved while some was due: stop rather than spin. A failed
                    // insertion dropped the graph: go on to the rebuild that is then due
                    // (at `EXACT_THRESHOLD` live vectors or more; if it fails too, the
                    // loop stops there, and `build_retry_due` spaces out the next tries).
                    Maintenance::Absorb => match absorb_and_refresh(background, live) {
                        Some(moved) => moved > 0,
                        None => !live.index.graph_ready(),
                    },
                };
            if !done {
                live.building.store(false, Ordering::SeqCst);
                return;
            }
        }
        live.building.store(false, Ordering::SeqCst);
        // A pass between the last check and the store above saw `building` set: look again.
        if live.index.is_closed()
            || maintenance_due(live).is_none()
            || live.building.swap(true, Ordering::SeqCst)
        {
            return;
        }
    }
}

/// Moves every vector scored outside the graph into it, then refreshes the persisted
/// snapshot once the graph has grown by [`PERSIST_GROWTH`] of what the last snapshot
/// holds (at least [`PERSIST_MIN_POINTS`]), so that the work an open leaves to the
/// absorber stays a bounded share of the graph while the snapshot writes add up to a
/// constant factor of the vectors ingested.
///
/// Returns how many vectors it moved into the graph, `None` if absorbing failed.
fn absorb_and_refresh(background: &Background, live: &LiveIndex) -> Option<usize> {
    let mut moved = 0usize;
    let absorbed = loop {
        match live.index.absorb_outside(ABSORB_CHUNK) {
            Ok(0) => break Some(moved),
            Ok(n) => moved += n,
            Err(_) => break None,
        }
    };
    // Export the graph's flat view again once enough points were added since the last.
    live.index.refresh_view_if_due();
    let points = live.index.graph_point_count();
    let persisted = live.persisted_points.load(Ordering::SeqCst);
    let due = (persisted as f64 * PERSIST_GROWTH) as usize;
    if points >= persisted.saturating_add(due.max(PERSIST_MIN_POINTS)) {
        persist_graph(background, live);
    }
    absorbed
}

/// Writes the current graph into the file, replacing the previous snapshot, in one
/// transaction (a crash leaves the old snapshot or the new one, never a mix).
fn persist_graph(background: &Background, live: &LiveIndex) {
    // A read-only store keeps its graph in memory only.
    if background.with(|store| store.inner.read_only) != Some(false) {
        return;
    }
    let points = live.index.graph_point_count();
    let Ok(Some(blobs)) = live.index.snapshot_blobs() else {
        return;
    };
    background.with(|store| {
        if store.check_poisoned().is_err() {
            return;
        }
        let applied = live.applied();
        let result = (|| -> Result<(), WriteError> {
            let mut txn = store
                .writable()?
                .begin_write()
                .map_err(WriteError::storage)?;
            txn.set_durability(redb::Durability::Immediate)
                .map_err(WriteError::storage)?;
            {
                let mut table = txn
                    .open_table(schema::INDEX_SNAPSHOT)
                    .map_err(WriteError::storage)?;
                table.retain(|_, _| false).map_err(WriteError::storage)?;
                for (part, blob) in blobs.iter().enumerate() {
                    table
                        .insert(part as u32, blob.as_slice())
                        .map_err(WriteError::storage)?;
                }
                let mut meta = txn.open_table(META).map_err(WriteError::storage)?;
                meta.insert(
                    meta_key::INDEX_SNAPSHOT_SEQ,
                    applied.to_le_bytes().as_slice(),
                )
                .map_err(WriteError::storage)?;
            }
            txn.commit().map_err(WriteError::storage)
        })();
        match &result {
            Ok(()) => live.persisted_points.store(points, Ordering::SeqCst),
            Err(error @ WriteError::Storage(_)) => store.poison(error),
            Err(_) => {}
        }
    });
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("path", &self.inner.path)
            .field("metric", &self.inner.metric)
            .field("dimension", &self.dimension())
            .field("model", &self.inner.model)
            .finish()
    }
}

#[cfg(test)]
mod background_panic_tests {
    //! Regression: a panic in the background graph work (inside `hnsw_rs` while
    //! absorbing new vectors) ended the maintenance thread with the index's `building`
    //! flag still set, so no later commit started graph work again and
    //! `Store::wait_for_index` waited out its whole timeout.

    use super::*;
    use crate::index::test_support::low_rank_vectors;
    use crate::{Chunk, Document, Op, SearchOptions, Version};

    const DIM: usize = 16;

    /// A new store in a new temporary directory (kept alive by the first half), without
    /// fsyncs: these tests crash nothing.
    fn open_store(name: &str) -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().expect("tempdir");
        let options = Options::default().durability(Durability::None);
        let store = Store::open(dir.path().join(name), options).expect("open");
        (dir, store)
    }

    /// Writes one-chunk documents `{source}/v{i}` for `i` in `from..to`, with `vectors[i]`,
    /// in batches of 1000.
    fn write(store: &Store, source: &str, vectors: &[Vec<f32>], from: usize, to: usize) {
        for start in (from..to).step_by(1000) {
            let ops = (start..to.min(start + 1000))
                .map(|i| {
                    Op::Upsert(
                        Document::new(source, format!("v{i}"), Version::number(1))
                            .with_chunk(Chunk::new(format!("chunk {i}"), vectors[i].clone())),
                    )
                })
                .collect();
            for outcome in store.write_batch(ops).expect("write a batch") {
                outcome.expect("write a document");
            }
        }
    }

    #[test]
    fn a_panicking_graph_insert_leaves_the_index_maintained() {
        let (_dir, store) = open_store("panic.redb");
        write(
            &store,
            "first",
            &low_rank_vectors(5, 10_500, DIM),
            0,
            10_500,
        );
        assert!(
            store.wait_for_index(Duration::from_secs(120)),
            "first build"
        );
        let live = store.live().expect("loaded");
        // Panics a third of the way through the batch below (inside the insert loop).
        assert!(
            live.index.fail_graph_inserts_after(Some(100)),
            "a graph was built"
        );
        let persisted = store.index_info().persisted_points;
        assert!(persisted > 0 && persisted <= 10_500, "{persisted}");

        // Absorbing these panics inside hnsw_rs: the graph is dropped, and the same
        // worker goes on to rebuild it (from every live vector) and persist that.
        let more = low_rank_vectors(6, 300, DIM);
        write(&store, "more", &more, 0, 300);
        assert!(
            store.wait_for_index(Duration::from_secs(120)),
            "the index never settled after the panic: {:?}",
            store.index_info()
        );
        let info = store.index_info();
        assert!(info.graph_ready && !info.building, "{info:?}");
        // A point for every live vector (the few no search reaches are scored exactly,
        // as after any build; `verify` checks that membership).
        assert_eq!(info.graph_points, 10_800, "{info:?}");
        // Absorbing 300 points persists nothing (the snapshot is refreshed after 50 %
        // growth); only the rebuild persists all 10,800.
        assert_eq!(info.persisted_points, 10_800, "{info:?}");
        let report = store.verify().expect("verify");
        assert!(report.is_ok(), "{:#?}", report.violations);
        for (i, v) in more.iter().enumerate() {
            let exact = SearchOptions::default().exact(true);
            let hits = store.search(v, 1, &exact).expect("search");
            let top = hits.first().map(|h| (h.source.as_str(), h.id.clone()));
            assert_eq!(top, Some(("more", format!("v{i}"))), "vector {i}");
        }
    }

    // Regression: after a graph build failed (a panic inside hnsw_rs), every later commit
    // started another full build, which failed the same way.
    #[test]
    fn a_failed_build_is_retried_only_after_the_vectors_change() {
        let (_dir, store) = open_store("retry.redb");
        let vectors = low_rank_vectors(7, 12_500, DIM);
        let write_range = |from: usize, to: usize| {
            write(&store, "s", &vectors, from, to);
            assert!(store.wait_for_index(Duration::from_secs(120)), "settled");
        };
        write_range(0, 1_000);
        let live = store.live().expect("loaded");
        live.index.fail_builds(true);
        for from in (1_000..10_000).step_by(1_000) {
            write_range(from, from + 1_000);
        }
        assert_eq!(live.index.builds_started(), 1, "the first build, at 10,000");
        assert!(!store.index_info().graph_ready);
        // Small commits: the vectors barely changed, so the build is not tried again.
        for from in (10_000..10_050).step_by(10) {
            write_range(from, from + 10);
        }
        assert_eq!(live.index.builds_started(), 1);
        // 10 % more vectors than at the failure: tried again (and fails again).
        write_range(10_050, 11_050);
        assert_eq!(live.index.builds_started(), 2);
        assert!(!store.index_info().graph_ready);
        // Searches are exact meanwhile, and right.
        let hits = store
            .search(&vectors[10_500], 1, &SearchOptions::default())
            .expect("search");
        assert_eq!(hits.first().map(|h| h.id.as_str()), Some("v10500"));
        // The cause gone, the next try after enough change builds the graph.
        live.index.fail_builds(false);
        write_range(11_050, 12_500);
        assert_eq!(live.index.builds_started(), 3);
        let info = store.index_info();
        assert!(info.graph_ready, "{info:?}");
        let report = store.verify().expect("verify");
        assert!(report.is_ok(), "{:#?}", report.violations);
    }

    // Regression: `Store::build_index` reported a failed build (a panic inside hnsw_rs)
    // as `ReadError::Corrupted { what: "vector index" }`, telling the caller the file was
    // damaged when nothing in it was.
    #[test]
    fn a_failed_build_index_is_an_index_build_error_and_changes_nothing() {
        let (_dir, store) = open_store("build.redb");
        // Past the exact threshold: the background builds a graph and persists it.
        let vectors = low_rank_vectors(8, 10_500, DIM);
        write(&store, "s", &vectors, 0, 10_500);
        assert!(store.wait_for_index(Duration::from_secs(120)), "settled");
        let live = store.live().expect("loaded");
        let before = store.index_info();
        assert!(
            before.graph_ready && before.persisted_points > 0,
            "{before:?}"
        );
        let counters = store.stats().expect("stats").counters;

        live.index.fail_builds(true);
        match store.build_index() {
            Err(ReadError::IndexBuild { detail }) => assert!(!detail.is_empty()),
            other => panic!("expected an IndexBuild error, got {other:?}"),
        }
        // The graph that served before still serves, and the persisted one is the same.
        let after = store.index_info();
        assert!(after.graph_ready && !after.building, "{after:?}");
        assert_eq!(after.graph_points, before.graph_points, "{after:?}");
        assert_eq!(after.persisted_points, before.persisted_points, "{after:?}");
        assert_eq!(store.stats().expect("stats").counters, counters);
        let report = store.verify().expect("verify");
        assert!(report.is_ok(), "{:#?}", report.violations);
        let hits = store
            .search(&vectors[1_234], 1, &SearchOptions::default())
            .expect("search");
        assert_eq!(hits.first().map(|h| h.id.as_str()), Some("v1234"));

        // The cause gone, the same call builds and persists the graph.
        live.index.fail_builds(false);
        store.build_index().expect("build");
        let info = store.index_info();
        assert!(info.graph_ready, "{info:?}");
        assert_eq!(info.persisted_points, 10_500, "{info:?}");
    }

    #[test]
    fn clear_building_on_unwind_clears_only_when_its_thread_unwinds() {
        let flag = Arc::new(AtomicBool::new(true));
        let held = flag.clone();
        let result = std::thread::spawn(move || {
            let _clear = ClearBuildingOnUnwind(&held);
            panic!("a bug in background graph work");
        })
        .join();
        assert!(result.is_err());
        assert!(
            !flag.load(Ordering::SeqCst),
            "cleared by the unwinding thread"
        );

        flag.store(true, Ordering::SeqCst);
        drop(ClearBuildingOnUnwind(&flag));
        assert!(
            flag.load(Ordering::SeqCst),
            "a normal exit leaves it to its owner"
        );
    }
}
