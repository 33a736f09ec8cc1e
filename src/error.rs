//! Errors, one enum per operation, each converting into the crate-wide [`Error`].

use crate::types::VersionKind;
use std::path::PathBuf;

/// What a contained panic inside the storage layer is reported as (the `what` of a
/// `Corrupted` error; its detail is the panic's message).
pub(crate) const CONTAINED: &str = "storage layer";

/// A piece of input that the store refuses, naming the field.
///
/// Returned before any transaction starts, so the store is exactly as before (invariant I9).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {field}: {problem}")]
pub struct InputError {
    /// The field, as a path: `id`, `chunks[3].vector[17]`, `chunks[0].meta`.
    pub field: String,
    /// What is wrong with it.
    pub problem: String,
}

impl InputError {
    pub(crate) fn new(field: impl Into<String>, problem: impl Into<String>) -> InputError {
        InputError {
            field: field.into(),
            problem: problem.into(),
        }
    }
}

/// Errors from [`Store::open`](crate::Store::open) and [`Store::create`](crate::Store::create).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    /// Another process (or another `Store` in this process) is writing the file, and this
    /// open would write too: one writer at a time.
    #[error("the database {path} is open in another process that writes it (or in another Store in this one): one writer at a time; wait for it (Options::wait_for_lock), or read it beside the writer with Store::open_read_only")]
    Locked {
        /// The file.
        path: PathBuf,
    },
    /// A read-only open found the file held exclusively by a writer that lets no reader in
    /// ([`Options::allow_readers`](crate::Options::allow_readers) off, or
    /// [`Durability::None`](crate::Durability::None), or a ratchetdb build from before
    /// readers were let in).
    #[error("the database {path} is open in another process that writes it exclusively, letting no reader in (Options::allow_readers(false), Durability::None, or an older ratchetdb); wait for it to close (Options::wait_for_lock)")]
    HeldExclusively {
        /// The file.
        path: PathBuf,
    },
    /// A read-only open found an empty file: a store is never empty (creating one writes
    /// its tables), so this is a file some other program made, or a creation that never
    /// started. Nothing was written to it.
    #[error("{path} is an empty file, not a ratchetdb store; check the path, or make a store there with Store::open, which writes into an empty file")]
    Empty {
        /// The file.
        path: PathBuf,
    },
    /// A read-only open found a file its last writer left without closing it (the process
    /// crashed or was killed), and no writer has it open to recover it. Recovery writes to
    /// the file, which a read-only open never does. (Readers that opened before the crash
    /// keep reading the last commit.)
    /// With [`Options::recover_on_read_open`](crate::Options::recover_on_read_open), the
    /// open recovers the file itself when it can write it; this error then means it cannot
    /// (read-only media, no permission).
    #[error("{path} was left by a writer that stopped without closing it (a crash or kill), and no writer has it open now; a read-only open cannot recover it without writing to it: recover it once where it can be written (Store::recover, Store::open, or a read-only open with Options::recover_on_read_open), which keeps every committed write, then read it")]
    NeedsRecovery {
        /// The file.
        path: PathBuf,
    },
    /// A read-only open found a file of an older schema that this build converts when it
    /// opens it for writing; a read-only open never converts (a schema-7 file, whose rows
    /// this build reads as they are, is read unconverted).
    #[error("{path} has schema version {found}, written by an older ratchetdb; this build converts it to schema {supported} when it opens it for writing (Store::open, after a backup copy) but a read-only open never writes: convert it once, or read it with the build that wrote it")]
    NeedsConversion {
        /// The file.
        path: PathBuf,
        /// The file's schema version.
        found: u32,
        /// The version this build reads.
        supported: u32,
    },
    /// Opening for writing was refused by the file system: the file or its directory is
    /// read-only (permissions, or a read-only mount).
    #[error("{path} cannot be opened for writing ({detail}); to read it, open it read-only (Store::open_read_only)")]
    NotWritable {
        /// The file.
        path: PathBuf,
        /// What the file system said.
        detail: String,
    },
    /// The file does not exist and the options do not allow creating it.
    #[error("no database at {path}; use Store::create (or Store::open, which creates a missing file) to make one")]
    NotFound {
        /// The file.
        path: PathBuf,
    },
    /// [`Store::create`](crate::Store::create) found a non-empty file at the path.
    #[error("{path} already exists; open it with Store::open or choose another path")]
    AlreadyExists {
        /// The file.
        path: PathBuf,
    },
    /// The file is a redb database but not a ratchetdb store.
    #[error("{path} is not a ratchetdb store ({detail})")]
    NotAStore {
        /// The file.
        path: PathBuf,
        /// What was found instead.
        detail: String,
    },
    /// The file was written by a newer ratchetdb whose format this build does not know.
    #[error(
        "{path} has schema version {found}; this build reads up to {supported}: upgrade ratchetdb"
    )]
    SchemaTooNew {
        /// The file.
        path: PathBuf,
        /// The file's schema version.
        found: u32,
        /// The newest version this build knows.
        supported: u32,
    },
    /// The file was written by an older ratchetdb, in a format this build cannot convert
    /// (files of schemas 1 and 2 are converted on open).
    #[error("{path} has schema version {found}, written by an older ratchetdb; this build reads schema {supported}: read its documents with their vectors with the build that wrote it (Store::documents) and write them into a new store")]
    SchemaTooOld {
        /// The file.
        path: PathBuf,
        /// The file's schema version.
        found: u32,
        /// The version this build reads.
        supported: u32,
    },
    /// A file of an older schema holds something this build's format cannot (a document too
    /// large for one row); it was not converted and is unchanged.
    #[error("{path} cannot be converted to this build's format: {detail}; the file is unchanged: open it with the build that wrote it, split the document, and try again")]
    Unconvertible {
        /// The file.
        path: PathBuf,
        /// What does not fit.
        detail: String,
    },
    /// The options disagree with what the store recorded when it was created.
    #[error("the store was created with {field} {stored}, but {requested} was requested; open it with the same {field} or use another file")]
    Mismatch {
        /// `dimension`, `metric` or `model`.
        field: &'static str,
        /// What the file records.
        stored: String,
        /// What the options asked for.
        requested: String,
    },
    /// The options themselves are invalid.
    #[error(transparent)]
    Input(#[from] InputError),
    /// The file's contents are damaged.
    #[error("{path} is corrupted: {what}: {detail}")]
    Corrupted {
        /// The file.
        path: PathBuf,
        /// Which structure.
        what: String,
        /// What is wrong with it.
        detail: String,
    },
    /// The PostgreSQL server refused or failed the open (connecting, creating or reading the
    /// store's tables); nothing was changed that a retry would not redo.
    #[cfg(feature = "postgres")]
    #[error("PostgreSQL error opening {url}: {detail}")]
    Server {
        /// The server's address (the URL without its password).
        url: String,
        /// The server's error.
        detail: String,
    },
    /// The address names a backend this build was compiled without (a `postgres://` URL
    /// in a build without the `postgres` feature); nothing was opened.
    #[error("{url} names a {backend} store, but this build of ratchetdb was compiled without the `{feature}` feature; rebuild with the ratchetdb crate's `{feature}` feature enabled")]
    BackendNotBuilt {
        /// The address (without its password).
        url: String,
        /// The backend it names (`PostgreSQL`).
        backend: &'static str,
        /// The cargo feature that adds it.
        feature: &'static str,
    },
    /// An I/O or storage-engine error.
    #[error("storage error opening {path}: {source}")]
    Storage {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: redb::Error,
    },
}

/// Errors from writes: upserts, deletes, retains, purges, batches and tickets.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WriteError {
    /// The input is invalid; nothing was written.
    #[error(transparent)]
    Input(#[from] InputError),
    /// A vector has another length than the store's dimension; nothing was written.
    #[error("chunks[{position}].vector has {found} dimensions; this store holds {expected}-dimensional vectors")]
    DimensionMismatch {
        /// The chunk position.
        position: usize,
        /// The store's dimension.
        expected: usize,
        /// The vector's length.
        found: usize,
    },
    /// The incoming version is of another kind than the stored one; versions of different
    /// kinds cannot be compared, so nothing was written.
    #[error("document {source_name}/{id} is versioned by {stored}, but this write carries a {incoming} version")]
    VersionKindMismatch {
        /// The document's source.
        source_name: String,
        /// The document id.
        id: String,
        /// The stored kind.
        stored: VersionKind,
        /// The incoming kind.
        incoming: VersionKind,
    },
    /// A chunk came without a vector, and the store has no vector for identical text to
    /// reuse (see [`Store::plan`](crate::Store::plan)); nothing was written. Embed the chunk
    /// and retry.
    #[error("chunks[{position}] has no vector and the store holds none for its text any more; embed it and retry")]
    MissingVector {
        /// The chunk position.
        position: usize,
    },
    /// A chunk came without a vector in a complete vector space (one that covers every
    /// live chunk, so searches on it would miss the chunk), and the stored revision holds
    /// none for its text; nothing was written. Give the chunk its vector in that space
    /// ([`Chunk::with_space_vector`](crate::Chunk::with_space_vector)).
    #[error("chunks[{position}] has no vector in the complete space {space:?}; give it one with Chunk::with_space_vector")]
    MissingSpaceVector {
        /// The space.
        space: String,
        /// The chunk position.
        position: usize,
    },
    /// A vector space cannot be activated while live chunks lack a vector in it (searches
    /// would miss them); nothing changed. Re-embed them first
    /// ([`Store::chunks_missing_vectors`](crate::Store::chunks_missing_vectors)).
    #[error("space {space:?} lacks a vector for {missing} live chunks; re-embed them before activating it")]
    SpaceIncomplete {
        /// The space.
        space: String,
        /// Live chunks without a vector in it.
        missing: u64,
    },
    /// The store has used up an id space (internal document ids: 2^40, more than a
    /// store can write in decades); nothing was written.
    #[error("the store has used every one of its {what}; export it and ingest into a new store")]
    Exhausted {
        /// Which id space.
        what: &'static str,
    },
    /// An earlier commit failed; the store refuses writes until it is reopened.
    #[error("an earlier commit failed ({cause}); the store refuses writes until it is reopened")]
    Poisoned {
        /// The first failure.
        cause: String,
    },
    /// The file's contents are damaged.
    #[error("corrupted {what}: {detail}")]
    Corrupted {
        /// Which structure.
        what: String,
        /// What is wrong with it.
        detail: String,
    },
    /// An I/O or storage-engine error; the write is not acknowledged, and the store is now
    /// poisoned. It is on disk whole or not at all: a commit whose final fsync failed may
    /// still have reached the file, so reopen and redeliver (a duplicate is refused as such).
    #[error("storage error: {0}")]
    Storage(#[from] redb::Error),
    /// The batch this operation was part of failed to commit; nothing of it is
    /// acknowledged, and the store refuses writes until it is reopened. The batch is on disk
    /// whole or not at all (a commit whose final fsync failed may still have reached the
    /// file): reopen and redeliver; what did land is refused as a duplicate.
    #[error("the batch failed to commit ({cause}); none of it is acknowledged and it is on disk whole or not at all: reopen the store and redeliver it")]
    BatchFailed {
        /// The batch's error.
        cause: String,
    },
    /// The store was opened read-only ([`Store::open_read_only`](crate::Store::open_read_only));
    /// nothing was written.
    #[error("the store {path} was opened read-only; open it with Store::open to write")]
    ReadOnly {
        /// The file.
        path: PathBuf,
    },
    /// The PostgreSQL server failed the batch's transaction (a lost connection, a server
    /// error): the transaction was rolled back, so none of the batch is stored unless the
    /// commit itself was lost in flight; redeliver it (what did land is refused as a
    /// duplicate).
    #[cfg(feature = "postgres")]
    #[error("PostgreSQL error: {detail}")]
    Server {
        /// The server's error.
        detail: String,
    },
    /// The store's backend does not offer this operation (nothing was written).
    #[error("{operation} is not available on the {backend} backend")]
    Unsupported {
        /// The operation (`Store::sync`).
        operation: &'static str,
        /// The backend (`PostgreSQL`).
        backend: &'static str,
    },
    /// The concurrent writer has shut down.
    #[error("the writer has shut down")]
    Closed,
    /// The writer's queue is full (only from `try_submit`).
    #[error("the writer's queue is full; retry later or use submit, which waits")]
    Full,
}

impl WriteError {
    pub(crate) fn storage(error: impl Into<redb::Error>) -> WriteError {
        WriteError::Storage(error.into())
    }

    /// A panic inside the storage engine, contained (`contain.rs`).
    pub(crate) fn contained(detail: String) -> WriteError {
        WriteError::Corrupted {
            what: CONTAINED.to_string(),
            detail,
        }
    }

    /// Whether this is a contained panic of the storage engine.
    pub(crate) fn is_contained_panic(&self) -> bool {
        matches!(self, WriteError::Corrupted { what, .. } if what == CONTAINED)
    }
}

/// Errors from reads: `get`, `export`, `stats`, `verify`, `search`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// The input is invalid.
    #[error(transparent)]
    Input(#[from] InputError),
    /// The file's contents are damaged.
    #[error("corrupted {what}: {detail}")]
    Corrupted {
        /// Which structure.
        what: String,
        /// What is wrong with it.
        detail: String,
    },
    /// An I/O or storage-engine error.
    #[error("storage error: {0}")]
    Storage(#[from] redb::Error),
    /// The PostgreSQL server failed the read (a lost connection, a server error).
    #[cfg(feature = "postgres")]
    #[error("PostgreSQL error: {detail}")]
    Server {
        /// The server's error.
        detail: String,
    },
    /// The store's backend does not offer this read (`Store::snapshot` on PostgreSQL…).
    #[error("{operation} is not available on the {backend} backend")]
    Unsupported {
        /// The operation (`Store::snapshot`).
        operation: &'static str,
        /// The backend (`PostgreSQL`).
        backend: &'static str,
    },
    /// A text or hybrid search on a store without a usable text index: one opened for
    /// writing with [`Options::text_index`](crate::Options::text_index) off, or whose
    /// documents a build without the text index has written since (the next writer to open
    /// it rebuilds the index).
    #[error("no text index: {detail}")]
    NoTextIndex {
        /// Why, and what to do.
        detail: String,
    },
    /// [`Store::build_index`](crate::Store::build_index) could not build the ANN graph: a
    /// failure inside the graph library, a vector id this platform's `usize` cannot hold,
    /// or the store closing meanwhile. Nothing stored is affected. Searches go on over the
    /// graph that was installed before, if it is still there, and score exactly whatever
    /// no graph holds; they return only live chunks either way.
    #[error("the vector index's graph could not be built ({detail}); nothing stored is affected, and searches go on over the previous graph or exactly")]
    IndexBuild {
        /// What went wrong.
        detail: String,
    },
    /// [`Store::build_index`](crate::Store::build_index) built the ANN graph but could not
    /// write its snapshot into the file (the disk full, an I/O error). Nothing else is
    /// affected: the graph serves searches, writes go on (the failed write does not poison
    /// the store), and the snapshot is written again by the next build or absorbing pass;
    /// meanwhile [`IndexInfo::persisted_points`](crate::IndexInfo::persisted_points) says
    /// what the file holds, and an open without a snapshot builds the graph again.
    #[error("the vector index's graph was built but its snapshot could not be written ({detail}); searches and writes go on, and it is written again later")]
    IndexPersist {
        /// What went wrong.
        detail: String,
    },
    /// The in-memory vector index failed a search it should have answered (a query that
    /// passed validation, so the failure is ratchetdb's, not the input's nor the file's).
    /// Nothing stored is affected; please report it.
    #[error("the vector index failed a search ({detail}); nothing stored is affected")]
    IndexSearch {
        /// What went wrong.
        detail: String,
    },
}

impl ReadError {
    /// An index failure during a search: internal, never the caller's input.
    pub(crate) fn index_search(error: crate::index::IndexError) -> ReadError {
        ReadError::IndexSearch {
            detail: error.to_string(),
        }
    }

    pub(crate) fn storage(error: impl Into<redb::Error>) -> ReadError {
        ReadError::Storage(error.into())
    }

    /// A panic inside the storage engine, contained (`contain.rs`).
    pub(crate) fn contained(detail: String) -> ReadError {
        ReadError::Corrupted {
            what: CONTAINED.to_string(),
            detail,
        }
    }
}

/// Decoding a row failed: the file's contents are damaged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Corruption {
    pub what: String,
    pub detail: String,
}

impl Corruption {
    pub(crate) fn new(what: impl Into<String>, detail: impl Into<String>) -> Corruption {
        Corruption {
            what: what.into(),
            detail: detail.into(),
        }
    }
}

impl From<Corruption> for WriteError {
    fn from(c: Corruption) -> WriteError {
        WriteError::Corrupted {
            what: c.what,
            detail: c.detail,
        }
    }
}

impl From<Corruption> for ReadError {
    fn from(c: Corruption) -> ReadError {
        ReadError::Corrupted {
            what: c.what,
            detail: c.detail,
        }
    }
}

/// Any ratchetdb error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Opening or creating a store failed.
    #[error(transparent)]
    Open(#[from] OpenError),
    /// A write failed.
    #[error(transparent)]
    Write(#[from] WriteError),
    /// A read failed.
    #[error(transparent)]
    Read(#[from] ReadError),
}

/// Whether this error is one operation's own (its input) rather than the batch's (storage).
pub(crate) fn is_op_error(error: &WriteError) -> bool {
    matches!(
        error,
        WriteError::Input(_)
            | WriteError::DimensionMismatch { .. }
            | WriteError::VersionKindMismatch { .. }
            | WriteError::MissingVector { .. }
            | WriteError::MissingSpaceVector { .. }
            | WriteError::Exhausted { .. }
    )
}
