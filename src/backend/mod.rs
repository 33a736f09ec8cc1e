//! Where a store keeps its rows: the embedded redb file (`redb/`) or, with the `postgres`
//! feature, a PostgreSQL server with pgvector (`postgres/`).
//!
//! [`Backend`] declares the operations once; both backends implement it, so a store
//! operation one of them lacks, or a signature that drifts, is a compile error rather than
//! a difference found by a user. [`AnyBackend`] picks one by the address (static dispatch:
//! a `match`, no vtable), and the public [`Store`](crate::Store) is a façade over it.
//!
//! Both carry out the same shared policy (`crate::policy`: the guard's decision, validation
//! and canonical JSON, the revision plan, the filter language; `crate::text`: analysis and
//! ranking) on their own storage: a backend reads the stored state, asks the policy, and
//! carries the answer out inside one transaction of its own.
//!
//! Invariant: every write a backend acknowledges was decided by `policy::guard` inside the
//! transaction that carried it out; every hit it returns is a live chunk of one snapshot.

#[cfg(feature = "postgres")]
pub(crate) mod postgres;
pub(crate) mod redb;

use crate::error::{OpenError, ReadError, WriteError};
use crate::options::{Durability, Metric, Options};
use crate::policy::plan::Plan;
use crate::policy::prepare::PreparedOp;
use crate::search::SearchOptions;
use crate::types::counters::Counters;
use crate::types::{
    ChunkRevision, Document, Hit, IndexInfo, Listing, MissingChunk, Op, OpOutcome, Outcome,
    PurgeOutcome, RetainOutcome, SkipRecord, SpaceInfo, SpaceVector, SpaceWriteOutcome, Stats,
    StoredDocument, VerifyReport, Version,
};
use std::path::Path;
use std::time::Duration;

/// One outcome per operation of a group, in order; the outer error is the group's.
pub(crate) type GroupOutcomes = Vec<Result<OpOutcome, WriteError>>;

/// The operations of a store, as each backend carries them out. The public contracts are
/// written on [`Store`](crate::Store)'s methods of the same names; a backend may answer
/// `Unsupported` (typed, naming the operation) for what it cannot offer.
pub(crate) trait Backend {
    /// Where the store lives, as messages show it (never a password).
    fn path(&self) -> &Path;
    /// The vector dimension, once fixed.
    fn dimension(&self) -> Option<usize>;
    /// The distance metric.
    fn metric(&self) -> Metric;
    /// The embedding model recorded, if any.
    fn model(&self) -> Option<&str>;
    /// The options the store was opened with.
    fn options(&self) -> &Options;
    /// Whether every write is refused with [`WriteError::ReadOnly`].
    fn is_read_only(&self) -> bool;
    /// Whether the open recovered a crashed writer's file first.
    fn recovered_at_open(&self) -> bool {
        false
    }

    /// A guarded upsert in a transaction of its own.
    fn upsert(&self, doc: Document) -> Result<Outcome, WriteError>;
    /// A guarded delete (a versioned tombstone) in a transaction of its own.
    fn delete(&self, source: &str, id: &str, version: Version) -> Result<Outcome, WriteError>;
    /// A listing of `source` at `version` in a transaction of its own.
    fn retain(
        &self,
        source: &str,
        present: Vec<String>,
        version: Version,
    ) -> Result<RetainOutcome, WriteError>;
    /// Removes tombstones and listings of `source` older than `before`.
    fn purge(&self, source: &str, before: Version) -> Result<PurgeOutcome, WriteError>;
    /// Many operations, each guarded, in one transaction.
    fn write_batch(&self, ops: Vec<Op>) -> Result<GroupOutcomes, WriteError>;
    /// Makes every write so far durable.
    fn sync(&self) -> Result<(), WriteError>;
    /// A new store-issued version.
    fn ticket(&self) -> Result<Version, WriteError>;
    /// Counts every ticket up to `through` as issued.
    fn adopt_tickets(&self, through: u64) -> Result<(), WriteError>;
    /// Sets the outcome counters and appends skip records, in one transaction.
    fn restore_history(&self, counters: &Counters, skips: &[SkipRecord]) -> Result<(), WriteError>;

    /// The highest ticket that may have been issued.
    fn tickets_issued(&self) -> Result<u64, ReadError>;
    /// One document (tombstones included), from one snapshot.
    fn get(&self, source: &str, id: &str) -> Result<Option<StoredDocument>, ReadError>;
    /// Every document, sorted by `(source, id)`, from one snapshot.
    fn documents(&self, with_vectors: bool) -> Result<Vec<StoredDocument>, ReadError>;
    /// Every listing with its members, from one snapshot.
    fn listings(&self) -> Result<Vec<Listing>, ReadError>;
    /// Counters, gauges and recent refusals, from one snapshot.
    fn stats(&self) -> Result<Stats, ReadError>;
    /// Every invariant the stored rows can show, checked in one snapshot.
    fn verify(&self) -> Result<VerifyReport, ReadError>;
    /// What a write of `doc` would do, before any embedding.
    fn plan(&self, doc: &Document) -> Result<Plan, ReadError>;

    /// k nearest live chunks.
    fn search(
        &self,
        query: &[f32],
        k: usize,
        options: &SearchOptions,
    ) -> Result<Vec<Hit>, ReadError>;
    /// [`Backend::search`] for every query, in order; an error names its query.
    fn search_many(
        &self,
        queries: &[&[f32]],
        k: usize,
        options: &SearchOptions,
    ) -> Result<Vec<Vec<Hit>>, ReadError>;
    /// The k best live chunks by BM25.
    fn search_text(
        &self,
        query: &str,
        k: usize,
        options: &SearchOptions,
    ) -> Result<Vec<Hit>, ReadError>;
    /// The vector and the text ranking of one snapshot, fused.
    fn search_hybrid(
        &self,
        text: &str,
        vector: &[f32],
        k: usize,
        options: &SearchOptions,
    ) -> Result<Vec<Hit>, ReadError>;
    /// Whether text searches can be answered.
    fn has_text_index(&self) -> bool;
    /// What the vector index covers.
    fn index_info(&self) -> IndexInfo;
    /// Waits until the vector index covers the latest commit; `false` on timeout. A
    /// backend whose index changes in the writing transaction is always caught up.
    fn wait_for_index(&self, timeout: Duration) -> bool {
        let _ = timeout;
        true
    }
    /// Builds (and persists) the vector index now. Nothing to do where the server keeps it.
    fn build_index(&self) -> Result<(), ReadError> {
        Ok(())
    }

    /// The backend's name, for `Unsupported` errors.
    fn backend_name(&self) -> &'static str;
    /// Adds an empty vector space (by default `Unsupported`: a backend with only the
    /// default space).
    fn add_space(
        &self,
        name: &str,
        model: &str,
        dimension: usize,
    ) -> Result<SpaceInfo, WriteError> {
        let _ = (name, model, dimension);
        Err(WriteError::Unsupported {
            operation: "Store::add_space",
            backend: self.backend_name(),
        })
    }
    /// Makes a complete space the one searches use by default.
    fn activate(&self, name: &str) -> Result<(), WriteError> {
        let _ = name;
        Err(WriteError::Unsupported {
            operation: "Store::activate",
            backend: self.backend_name(),
        })
    }
    /// Removes a space that is not active, with its vectors; the rows freed.
    fn drop_space(&self, name: &str) -> Result<u64, WriteError> {
        let _ = name;
        Err(WriteError::Unsupported {
            operation: "Store::drop_space",
            backend: self.backend_name(),
        })
    }
    /// Every space with its coverage, from one snapshot.
    fn spaces(&self) -> Result<Vec<SpaceInfo>, ReadError> {
        Err(ReadError::Unsupported {
            operation: "Store::spaces",
            backend: self.backend_name(),
        })
    }
    /// Live chunks without a vector in `space`, after `after`, at most `limit`.
    fn chunks_missing_vectors(
        &self,
        space: &str,
        after: Option<ChunkRevision>,
        limit: usize,
    ) -> Result<Vec<MissingChunk>, ReadError> {
        let _ = (space, after, limit);
        Err(ReadError::Unsupported {
            operation: "Store::chunks_missing_vectors",
            backend: self.backend_name(),
        })
    }
    /// The guarded re-embed write, in one transaction.
    fn write_space_vectors(
        &self,
        space: &str,
        vectors: Vec<SpaceVector>,
    ) -> Result<SpaceWriteOutcome, WriteError> {
        let _ = (space, vectors);
        Err(WriteError::Unsupported {
            operation: "Store::write_space_vectors",
            backend: self.backend_name(),
        })
    }
}

/// What a [`Writer`](crate::Writer) needs of a backend, and no more: its committer holds
/// this part alone, so a writer keeps no derived state (an index, a cache, background
/// threads) alive after its store is dropped.
pub(crate) trait GroupCommit {
    /// Where the store lives, as messages show it.
    fn path(&self) -> &Path;
    /// Whether every write is refused with [`WriteError::ReadOnly`].
    fn is_read_only(&self) -> bool;
    /// Validates an operation before it is queued (in the producer's thread): a refusal
    /// here never reaches a transaction.
    fn prepare(&self, op: Op) -> Result<PreparedOp, WriteError>;
    /// The group commit: the operations `ops` yields, in order, each guarded, in ONE
    /// transaction (taking more while it is built is allowed: `ops` stops when the group is
    /// full). Each has its own outcome; an operation refused for its input changed nothing.
    fn commit_group(
        &self,
        ops: &mut dyn Iterator<Item = PreparedOp>,
        durability: Durability,
    ) -> Result<GroupOutcomes, WriteError>;
    /// Makes every write so far durable.
    fn sync(&self) -> Result<(), WriteError>;
}

/// The writing part of the backend a store is over (see [`GroupCommit`]).
#[derive(Clone)]
pub(crate) enum Committer {
    /// The embedded file's engine.
    Redb(std::sync::Arc<redb::engine::Engine>),
    /// A PostgreSQL store.
    #[cfg(feature = "postgres")]
    Postgres(std::sync::Arc<postgres::PgStore>),
}

impl GroupCommit for Committer {
    fn path(&self) -> &Path {
        match self {
            Committer::Redb(e) => e.path(),
            #[cfg(feature = "postgres")]
            Committer::Postgres(p) => Backend::path(&**p),
        }
    }

    fn is_read_only(&self) -> bool {
        match self {
            Committer::Redb(e) => e.is_read_only(),
            #[cfg(feature = "postgres")]
            Committer::Postgres(p) => Backend::is_read_only(&**p),
        }
    }

    fn prepare(&self, op: Op) -> Result<PreparedOp, WriteError> {
        match self {
            Committer::Redb(e) => GroupCommit::prepare(&**e, op),
            #[cfg(feature = "postgres")]
            Committer::Postgres(p) => GroupCommit::prepare(&**p, op),
        }
    }

    fn commit_group(
        &self,
        ops: &mut dyn Iterator<Item = PreparedOp>,
        durability: Durability,
    ) -> Result<GroupOutcomes, WriteError> {
        match self {
            Committer::Redb(e) => GroupCommit::commit_group(&**e, ops, durability),
            #[cfg(feature = "postgres")]
            Committer::Postgres(p) => GroupCommit::commit_group(&**p, ops, durability),
        }
    }

    fn sync(&self) -> Result<(), WriteError> {
        match self {
            Committer::Redb(e) => GroupCommit::sync(&**e),
            #[cfg(feature = "postgres")]
            Committer::Postgres(p) => GroupCommit::sync(&**p),
        }
    }
}

/// The backend a [`Store`](crate::Store) is over, chosen by its address.
#[derive(Clone)]
pub(crate) enum AnyBackend {
    /// The embedded redb file.
    Redb(redb::RedbBackend),
    /// A PostgreSQL server (a `postgres://` URL).
    #[cfg(feature = "postgres")]
    Postgres(std::sync::Arc<postgres::PgStore>),
}

pub(crate) use crate::address::postgres_url;

impl AnyBackend {
    /// Opens the store at `path` (a file, or a `postgres://` URL), for writing or read-only.
    pub(crate) fn open(path: &Path, options: Options, read_only: bool) -> Result<Self, OpenError> {
        if let Some(refused) = crate::address::refused_address(path) {
            return Err(OpenError::Input(refused));
        }
        match postgres_url(path) {
            Some(url) => Self::open_postgres(&url, options, read_only),
            None if read_only => redb::RedbBackend::open_read_only(path, options).map(Self::Redb),
            None => redb::RedbBackend::open(path, options).map(Self::Redb),
        }
    }

    #[cfg(feature = "postgres")]
    fn open_postgres(url: &str, options: Options, read_only: bool) -> Result<Self, OpenError> {
        let store = postgres::open_url(url, options, read_only)?;
        Ok(Self::Postgres(std::sync::Arc::new(store)))
    }

    #[cfg(not(feature = "postgres"))]
    fn open_postgres(url: &str, _options: Options, _read_only: bool) -> Result<Self, OpenError> {
        Err(OpenError::BackendNotBuilt {
            url: crate::address::redact_address(url),
            backend: "PostgreSQL",
            feature: "postgres",
        })
    }

    /// The embedded backend, if this is one (for what only a file has: snapshots, backups).
    pub(crate) fn redb(&self) -> Option<&redb::RedbBackend> {
        match self {
            Self::Redb(b) => Some(b),
            #[cfg(feature = "postgres")]
            Self::Postgres(_) => None,
        }
    }

    /// The writing part alone, for a [`Writer`](crate::Writer).
    pub(crate) fn committer(&self) -> Committer {
        match self {
            Self::Redb(b) => Committer::Redb(b.engine_handle()),
            #[cfg(feature = "postgres")]
            Self::Postgres(p) => Committer::Postgres(p.clone()),
        }
    }

    /// The backend's name, for `Unsupported` errors.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Self::Redb(_) => "redb",
            #[cfg(feature = "postgres")]
            Self::Postgres(_) => "PostgreSQL",
        }
    }
}

/// Forwards each listed operation to the backend in use.
macro_rules! forward {
    ($(fn $name:ident(&self $(, $arg:ident: $ty:ty)*) -> $ret:ty;)*) => {
        impl Backend for AnyBackend {
            $(
                fn $name(&self $(, $arg: $ty)*) -> $ret {
                    match self {
                        AnyBackend::Redb(b) => Backend::$name(b $(, $arg)*),
                        #[cfg(feature = "postgres")]
                        AnyBackend::Postgres(b) => Backend::$name(&**b $(, $arg)*),
                    }
                }
            )*
        }
    };
}

forward! {
    fn path(&self) -> &Path;
    fn dimension(&self) -> Option<usize>;
    fn metric(&self) -> Metric;
    fn model(&self) -> Option<&str>;
    fn options(&self) -> &Options;
    fn is_read_only(&self) -> bool;
    fn recovered_at_open(&self) -> bool;
    fn upsert(&self, doc: Document) -> Result<Outcome, WriteError>;
    fn delete(&self, source: &str, id: &str, version: Version) -> Result<Outcome, WriteError>;
    fn retain(&self, source: &str, present: Vec<String>, version: Version)
        -> Result<RetainOutcome, WriteError>;
    fn purge(&self, source: &str, before: Version) -> Result<PurgeOutcome, WriteError>;
    fn write_batch(&self, ops: Vec<Op>) -> Result<GroupOutcomes, WriteError>;
    fn sync(&self) -> Result<(), WriteError>;
    fn ticket(&self) -> Result<Version, WriteError>;
    fn adopt_tickets(&self, through: u64) -> Result<(), WriteError>;
    fn restore_history(&self, counters: &Counters, skips: &[SkipRecord]) -> Result<(), WriteError>;
    fn tickets_issued(&self) -> Result<u64, ReadError>;
    fn get(&self, source: &str, id: &str) -> Result<Option<StoredDocument>, ReadError>;
    fn documents(&self, with_vectors: bool) -> Result<Vec<StoredDocument>, ReadError>;
    fn listings(&self) -> Result<Vec<Listing>, ReadError>;
    fn stats(&self) -> Result<Stats, ReadError>;
    fn verify(&self) -> Result<VerifyReport, ReadError>;
    fn plan(&self, doc: &Document) -> Result<Plan, ReadError>;
    fn search(&self, query: &[f32], k: usize, options: &SearchOptions) -> Result<Vec<Hit>, ReadError>;
    fn search_many(&self, queries: &[&[f32]], k: usize, options: &SearchOptions)
        -> Result<Vec<Vec<Hit>>, ReadError>;
    fn search_text(&self, query: &str, k: usize, options: &SearchOptions)
        -> Result<Vec<Hit>, ReadError>;
    fn search_hybrid(&self, text: &str, vector: &[f32], k: usize, options: &SearchOptions)
        -> Result<Vec<Hit>, ReadError>;
    fn has_text_index(&self) -> bool;
    fn index_info(&self) -> IndexInfo;
    fn wait_for_index(&self, timeout: Duration) -> bool;
    fn build_index(&self) -> Result<(), ReadError>;
    fn backend_name(&self) -> &'static str;
    fn add_space(&self, name: &str, model: &str, dimension: usize) -> Result<SpaceInfo, WriteError>;
    fn activate(&self, name: &str) -> Result<(), WriteError>;
    fn drop_space(&self, name: &str) -> Result<u64, WriteError>;
    fn spaces(&self) -> Result<Vec<SpaceInfo>, ReadError>;
    fn chunks_missing_vectors(&self, space: &str, after: Option<ChunkRevision>, limit: usize)
        -> Result<Vec<MissingChunk>, ReadError>;
    fn write_space_vectors(&self, space: &str, vectors: Vec<SpaceVector>)
        -> Result<SpaceWriteOutcome, WriteError>;
}

#[cfg(all(test, not(feature = "postgres")))]
mod tests {
    use crate::{OpenError, Options, Store};

    #[test]
    fn a_postgres_url_without_the_feature_is_a_typed_error() {
        for error in [
            Store::open("postgres://u:secret@h/db", Options::default()).unwrap_err(),
            Store::open_read_only("postgresql://u:secret@h/db").unwrap_err(),
        ] {
            assert!(
                matches!(
                    &error,
                    OpenError::BackendNotBuilt { url, feature: "postgres", .. }
                        if url.ends_with("://u:***@h/db")
                ),
                "{error:?}"
            );
        }
    }
}
