//! The store: the public façade over a backend (`crate::backend`): the embedded redb file,
//! or a PostgreSQL server. Every method is one call of the [`Backend`] operation of the same
//! name; the contracts are written here.

use crate::backend::redb::read::Snapshot;
use crate::backend::redb::RedbBackend;
use crate::backend::{AnyBackend, Backend};
use crate::error::{OpenError, ReadError, WriteError};
use crate::options::{Metric, Options};
use crate::policy::plan::Plan;
use crate::policy::prepare;
use crate::search::SearchOptions;
use crate::types::{
    Document, Hit, IndexInfo, Op, OpOutcome, Outcome, PurgeOutcome, RetainOutcome, Stats,
    VerifyReport, Version,
};
use crate::writer::{Writer, WriterOptions};
use std::path::Path;
use std::time::Duration;

/// A chunk-and-vector store whose index never moves backwards: every write is decided by
/// the version guard and carried out in one transaction with all its effects (the version
/// comparison, the generation stamp on every chunk, the removal of surplus chunks, the
/// vectors, the counters). Cheap to clone and shared between threads; writes are serialised
/// by the backend, reads run on snapshots. The crate's front page has a runnable example.
#[derive(Clone)]
pub struct Store {
    backend: AnyBackend,
}

impl Store {
    /// A store over `backend`.
    fn over(backend: AnyBackend) -> Store {
        Store { backend }
    }

    /// The embedded backend, or `Unsupported` naming `operation` on another.
    fn redb(&self, operation: &'static str) -> Result<&RedbBackend, ReadError> {
        self.backend.redb().ok_or(ReadError::Unsupported {
            operation,
            backend: self.backend.name(),
        })
    }

    /// The backend (the crate's own tests reach the embedded store's parts through it:
    /// `testkit/hooks.rs`).
    #[cfg(any(test, feature = "testkit"))]
    pub(crate) fn backend(&self) -> &AnyBackend {
        &self.backend
    }

    /// Opens the store at `path` for writing, creating it unless [`Options::must_exist`]. The
    /// options must agree with what the store recorded (dimension, metric, model). One process
    /// writes a file at a time (another writer: [`OpenError::Locked`] after
    /// [`Options::wait_for_lock`]); with [`Options::allow_readers`] (the default) other processes
    /// may read it meanwhile ([`Store::open_read_only`]). A `postgres://` URL opens a store on that
    /// server instead (the `postgres` feature, else [`OpenError::BackendNotBuilt`]; `schema=NAME`
    /// picks its schema): the same operations and errors, `Unsupported` for what a server lacks.
    /// The scheme is read in any case (`POSTGRES://`). A URL of another scheme (`mysql://`) or a
    /// libpq connection string of `key=value` pairs (`host=db password=...`) is refused with
    /// [`OpenError::Input`] naming `path`, never quoted (it may hold a password), and nothing
    /// is created.
    pub fn open(path: impl AsRef<Path>, options: Options) -> Result<Store, OpenError> {
        AnyBackend::open(path.as_ref(), options, false).map(Store::over)
    }

    /// Opens an existing store read-only, with default options (see
    /// [`Store::open_read_only_with`]).
    pub fn open_read_only(path: impl AsRef<Path>) -> Result<Store, OpenError> {
        Store::open_read_only_with(path, Options::default())
    }

    /// Opens an existing store read-only: nothing is ever written (no creation, conversion,
    /// recovery or recorded options; the file's bytes and modification time stay as they are),
    /// and every write is [`WriteError::ReadOnly`] — unless [`Options::recover_on_read_open`]
    /// asks to recover a crashed writer's file first ([`Store::recovered_at_open`]). Any number of
    /// readers, in any processes, may follow one writer: each read sees the writer's last commit
    /// when it starts, and the index follows the changelog. Refused: [`OpenError::NotFound`],
    /// [`OpenError::Empty`], [`OpenError::NeedsConversion`] (a file of schema 6 or older; one
    /// of schema 7 is read as it is), and (retried for up to
    /// [`Options::wait_for_lock`]) [`OpenError::NeedsRecovery`] and
    /// [`OpenError::HeldExclusively`]. Only `dimension`, `metric`, `model`, `cache_size` and
    /// `wait_for_lock` of the options apply.
    pub fn open_read_only_with(
        path: impl AsRef<Path>,
        options: Options,
    ) -> Result<Store, OpenError> {
        AnyBackend::open(path.as_ref(), options, true).map(Store::over)
    }

    /// Recovers the file a writer left without closing it (redb's repair, which keeps every
    /// committed write), without opening a store: `Ok(true)` if it needed it. A file that cannot
    /// be written is [`OpenError::NeedsRecovery`] and left as it was.
    pub fn recover(path: impl AsRef<Path>) -> Result<bool, OpenError> {
        if let Some(refused) = crate::address::refused_address(path.as_ref()) {
            return Err(OpenError::Input(refused));
        }
        crate::backend::redb::open::recover(path.as_ref(), &Options::default())
    }

    /// Creates a new store at `path`; an error if a non-empty file is already there. On a
    /// `postgres://` URL this is [`Store::open`]: the store's schema is shared by design
    /// (several processes open it at once), so an existing one is opened, not refused.
    pub fn create(path: impl AsRef<Path>, options: Options) -> Result<Store, OpenError> {
        let path = path.as_ref();
        if let Some(refused) = crate::address::refused_address(path) {
            return Err(OpenError::Input(refused));
        }
        if crate::backend::postgres_url(path).is_none() {
            crate::backend::redb::open::refuse_existing(path)?;
        }
        Store::open(path, options)
    }

    /// Opens a store on a caller-supplied redb storage backend (for tests that inject faults,
    /// or in-memory stores via `redb::backends::InMemoryBackend`).
    pub fn open_with_backend(
        backend: impl redb::StorageBackend,
        options: Options,
    ) -> Result<Store, OpenError> {
        RedbBackend::open_on(backend, options).map(|b| Store::over(AnyBackend::Redb(b)))
    }

    /// Whether this store is kept on a PostgreSQL server (opened by a `postgres://` URL).
    pub fn is_postgres(&self) -> bool {
        self.backend.redb().is_none()
    }

    /// Checks `doc` as [`Store::upsert`] does before its transaction (names, metadata, sizes,
    /// vectors against the dimension and metric), reading and writing nothing. What depends on
    /// the stored state (the guard, the version's kind, a missing vector) the write decides.
    pub fn check(&self, doc: &Document) -> Result<(), WriteError> {
        prepare::prepare_document(
            doc.clone(),
            self.metric(),
            self.dimension(),
            &self.options().limits,
        )
        .map(drop)
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
        let present = present.into_iter().map(Into::into).collect();
        self.backend.retain(source, present, version)
    }

    /// A concurrent writer with group commit and default [`WriterOptions`].
    pub fn writer(&self) -> Writer {
        self.writer_with(WriterOptions::for_store(self))
    }

    /// A concurrent writer with the given options (on PostgreSQL each group is one SQL
    /// transaction).
    pub fn writer_with(&self, options: WriterOptions) -> Writer {
        Writer::start(self.backend.committer(), options)
    }

    /// [`Store::search`] for every query, spread over the cores, hits in the queries' order; an
    /// error names its query (`queries[3]`).
    pub fn search_many<Q: AsRef<[f32]> + Sync>(
        &self,
        queries: &[Q],
        k: usize,
        options: &SearchOptions,
    ) -> Result<Vec<Vec<Hit>>, ReadError> {
        let queries: Vec<&[f32]> = queries.iter().map(AsRef::as_ref).collect();
        self.backend.search_many(&queries, k, options)
    }

    /// A consistent read view: everything read through it comes from one committed state.
    pub fn snapshot(&self) -> Result<Snapshot, ReadError> {
        self.redb("Store::snapshot")?.snapshot()
    }

    /// Writes a consistent copy of the store to a new file at `path` while writers go on: every
    /// table of one snapshot ([`Backup::commit`](crate::Backup::commit)), linked into place only
    /// when whole and durable, with the source's permission bits. An existing `path` is
    /// [`BackupError::AlreadyExists`](crate::BackupError::AlreadyExists); on PostgreSQL,
    /// `Unsupported` (use the server's backups).
    pub fn backup(&self, path: impl AsRef<Path>) -> Result<crate::Backup, crate::BackupError> {
        self.redb("Store::backup")?.backup(path.as_ref())
    }
}

/// The operations that are the backend's as they are: one call each.
macro_rules! forward {
    ($($(#[$doc:meta])* pub fn $name:ident(&self $(, $arg:ident: $ty:ty)* $(,)?) -> $ret:ty;)*) => {
        impl Store {
            $(
                $(#[$doc])*
                pub fn $name(&self $(, $arg: $ty)*) -> $ret {
                    self.backend.$name($($arg),*)
                }
            )*
        }
    };
}

forward! {

    /// Whether opening this store recovered a file a crashed writer left first (a
    /// read-only open with [`Options::recover_on_read_open`]); `false` for every other
    /// open.
    pub fn recovered_at_open(&self) -> bool;

    /// The file this store lives in (`<backend>` for a custom backend; the server's URL,
    /// without its password, for a PostgreSQL store).
    pub fn path(&self) -> &Path;

    /// The vector dimension, once fixed (by the options or the first vector written).
    pub fn dimension(&self) -> Option<usize>;

    /// The metric.
    pub fn metric(&self) -> Metric;

    /// The embedding model's name, if one was recorded.
    pub fn model(&self) -> Option<&str>;

    /// Whether this store was opened with [`Store::open_read_only`] (it never writes).
    pub fn is_read_only(&self) -> bool;

    /// The options the store was opened with.
    pub fn options(&self) -> &Options;

    /// Writes a revision of a document, guarded: refused (and counted) unless it is newer
    /// than what is stored. Generation stamp, chunks, surplus removal, vectors and counters
    /// commit in one transaction.
    pub fn upsert(&self, doc: Document) -> Result<Outcome, WriteError>;

    /// Deletes a document at `version`: a tombstone that refuses every later write not newer
    /// than it. Works for a document never seen, so a delete that overtakes its upsert still
    /// blocks it. A delete meeting a live revision of the same version wins (and is counted).
    pub fn delete(&self, source: &str, id: &str, version: Version) -> Result<Outcome, WriteError>;

    /// Removes the tombstones and listings of `source` older than `before` (same kind). Once
    /// purged, a revision older than `before` still in flight (a retry or dead-letter queue, a
    /// backfill) would bring a deleted document back: purge only below anything deliverable.
    pub fn purge(&self, source: &str, before: Version) -> Result<PurgeOutcome, WriteError>;

    /// Applies many operations in one transaction, each guarded on its own, in order. The outer
    /// `Err` is a storage failure (nothing acknowledged); otherwise each operation has its own
    /// result, and one refused for its input changed nothing and did not stop the others.
    pub fn write_batch(
        &self,
        ops: Vec<Op>,
    ) -> Result<Vec<Result<OpOutcome, WriteError>>, WriteError>;

    /// Makes every write so far durable (needed only with
    /// [`Durability::None`](crate::Durability::None); on PostgreSQL every commit already is).
    pub fn sync(&self) -> Result<(), WriteError>;

    /// A new ticket: a store-issued version above every ticket issued before, across restarts
    /// and crashes. Take it when a job is enqueued and let every retry carry it (F12).
    pub fn ticket(&self) -> Result<Version, WriteError>;

    /// Says, before any embedding is paid for, whether this revision would be written, and
    /// which chunks need a vector: chunks whose text the stored revision already has a vector
    /// for can be sent without one. Vectors in `doc` are ignored.
    pub fn plan(&self, doc: &Document) -> Result<Plan, ReadError>;

    /// k-nearest-neighbour search over the live chunks: every hit is a live chunk of one
    /// committed snapshot, never a superseded one. `query` has the store's dimension; `k` is at
    /// most [`Limits::max_k`](crate::Limits::max_k) (else an `InputError` on `k`, as for `ef`
    /// out of
    /// range or an unknown source). Small stores, and stores whose index is still loading, are
    /// searched exactly.
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
    /// let text = store.search_text("dogs", 1, &SearchOptions::default())?;
    /// assert_eq!(text[0].text, "dogs bark");
    /// let both = store.search_hybrid("dogs", &[0.2, 0.9], 1, &SearchOptions::default())?;
    /// assert_eq!(both[0].text, "dogs bark");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn search(
        &self,
        query: &[f32],
        k: usize,
        options: &SearchOptions,
    ) -> Result<Vec<Hit>, ReadError>;

    /// The `k` chunks that best match `query` by BM25 over their words (see
    /// [`TextOptions`](crate::TextOptions)), best first, scored by BM25 ([`SearchOptions::bm25`]);
    /// sources, documents and the filter apply as for [`Store::search`]. The text index changes in
    /// the chunks' transaction, so a superseded chunk is never returned.
    /// [`ReadError::NoTextIndex`] if the store keeps none.
    pub fn search_text(
        &self,
        query: &str,
        k: usize,
        options: &SearchOptions,
    ) -> Result<Vec<Hit>, ReadError>;

    /// The `k` best chunks by both `vector` and `text`, each ranking's best `max(4k, 50)` merged
    /// by [`SearchOptions::fusion`] (reciprocal rank fusion, k = 60, by default), both resolved
    /// against one snapshot.
    pub fn search_hybrid(
        &self,
        text: &str,
        vector: &[f32],
        k: usize,
        options: &SearchOptions,
    ) -> Result<Vec<Hit>, ReadError>;

    /// Whether this store can answer text searches: it keeps a text index (a read-only
    /// store: the file, or the PostgreSQL schema, has one) that covers its documents.
    pub fn has_text_index(&self) -> bool;

    /// What the derived index is doing. A PostgreSQL store's index is the server's
    /// (pgvector's HNSW, kept in step by every commit): loaded, ready, nothing pending.
    pub fn index_info(&self) -> IndexInfo;

    /// Waits until the index has loaded, covers the latest commit and no build runs; `false` on
    /// timeout ([`Duration::MAX`] waits until it settles). Searches never need it (they answer
    /// exactly meanwhile); tests, benchmarks and deterministic I/O do.
    pub fn wait_for_index(&self, timeout: Duration) -> bool;

    /// Builds the ANN graph now (in this thread) and persists it, so the next open loads it. A
    /// failed build is [`ReadError::IndexBuild`] (searches go on: on the index that served,
    /// or, under [`Options::memory_budget`](crate::Options::memory_budget), whose index is
    /// let go before the new one loads, exactly from the file until the background load
    /// that then starts publishes one); a graph whose snapshot could not be written is
    /// [`ReadError::IndexPersist`] (it serves, and is written again later). Nothing to do on
    /// PostgreSQL.
    pub fn build_index(&self) -> Result<(), ReadError>;

    /// Counts every ticket up to `through` as issued, so writes carrying them are accepted and
    /// later tickets are above it (restoring an export of a store that used tickets). Never
    /// lowers what was issued; above 2^63 - 1 is an `InputError` naming `tickets_issued`.
    pub fn adopt_tickets(&self, through: u64) -> Result<(), WriteError>;

    /// The highest ticket this store may have issued (0 before the first).
    pub fn tickets_issued(&self) -> Result<u64, ReadError>;

    /// A document and its chunks in order (from one snapshot). Tombstones are returned with
    /// `deleted: true` and no chunks.
    pub fn get(
        &self,
        source: &str,
        id: &str,
    ) -> Result<Option<crate::types::StoredDocument>, ReadError>;

    /// Every document (tombstones included), sorted by `(source, id)`, from one snapshot, with
    /// each chunk's vector if `with_vectors`. It holds the whole store in memory: on a file,
    /// stream [`Snapshot::documents`] instead.
    pub fn documents(
        &self,
        with_vectors: bool,
    ) -> Result<Vec<crate::types::StoredDocument>, ReadError>;

    /// Every listing [`Store::retain`] recorded (until [`Store::purge`] removes it), with
    /// the ids it lists, by `(source, version)`, from one snapshot.
    pub fn listings(&self) -> Result<Vec<crate::types::Listing>, ReadError>;

    /// Restores a store's history in one transaction: every outcome counter (all of
    /// [`Counters`](crate::Counters) but `commits`) set to `counters`', and `skips` appended to the
    /// skip log. Documents and listings are untouched. A counter above 2^63 - 1 is an
    /// `InputError` naming it (`counters.written_new`), and nothing is restored.
    pub fn restore_history(
        &self,
        counters: &crate::Counters,
        skips: &[crate::types::SkipRecord],
    ) -> Result<(), WriteError>;

    /// Counters, totals and recent refusals (from one snapshot).
    pub fn stats(&self) -> Result<Stats, ReadError>;

    /// Checks every invariant the rows can show (from one snapshot), and that the vectors
    /// the index can return are exactly the live vectors of the file (I5).
    pub fn verify(&self) -> Result<VerifyReport, ReadError>;

    /// Adds an empty vector space `name` for vectors of `dimension` made by `model` (a
    /// name recorded for people and tools; the store never embeds), under the store's
    /// metric. Fill it with `Store::reembed` (feature `embed`; or
    /// [`Store::chunks_missing_vectors`] and [`Store::write_space_vectors`]) while searches
    /// go on in the active space, then
    /// [`Store::activate`] it. A space covering every live chunk is *complete*: from then on
    /// every revision must bring a vector in it for each chunk it does not keep
    /// ([`Chunk::with_space_vector`](crate::Chunk::with_space_vector)), else
    /// [`WriteError::MissingSpaceVector`]. A name that is taken, `default`, or not 1 to 64
    /// ASCII letters, digits, `-`, `_` and `.`, or a dimension of 0 or above
    /// [`Limits::max_dimension`](crate::Limits::max_dimension), is an `InputError` naming
    /// the field, and nothing changes. `Unsupported` on PostgreSQL.
    pub fn add_space(
        &self,
        name: &str,
        model: &str,
        dimension: usize,
    ) -> Result<crate::SpaceInfo, WriteError>;

    /// Makes space `name` the one searches use when [`SearchOptions::space`] names none, in
    /// one transaction: every search on a later snapshot uses it, none on an earlier one
    /// does. Refused with [`WriteError::SpaceIncomplete`] (saying how many live chunks
    /// lack a vector in it) until it covers every live chunk; an unknown space is an
    /// `InputError` naming `name`. `Unsupported` on PostgreSQL.
    pub fn activate(&self, name: &str) -> Result<(), WriteError>;

    /// Removes space `name` and every vector in it, in one transaction (the pages are free
    /// for the file's next writes, and given back by the compaction on close); returns how
    /// many vectors went. The active space cannot be dropped: an `InputError` naming
    /// `name`, as for an unknown space.
    ///
    /// Dropping the default space (`default`, the chunks' own vectors) **promotes** the
    /// active space in its place, in one transaction: every live chunk's
    /// [`Chunk::vector`](crate::Chunk::vector) becomes its vector in that space (the chunk
    /// keeps its identity: its text, metadata and text-index entries are untouched), the
    /// store records that space's model and dimension ([`Store::model`],
    /// [`Store::dimension`]), that space's own rows go, and the default space becomes the
    /// active one again, answering to that space's name as well as `default` (in
    /// [`SearchOptions::space`], [`Store::spaces`], [`Store::activate`]); returns how many
    /// vectors were replaced. From its commit on, every revision brings vectors of the new
    /// model and dimension alone (the old dimension is [`WriteError::DimensionMismatch`];
    /// a vector given for the promoted space by its name is an `InputError`), and every
    /// search, in this process or a reader's, of a snapshot at or after it uses the new
    /// vectors (one before it, the old ones). Vectors are not labelled with their model: a
    /// caller embeds with the recorded model from then on (one of the old model and the same
    /// dimension cannot be told apart). Refused with an `InputError` naming `name`,
    /// changing nothing, while the default space is the active one (there is nothing to
    /// promote: [`Store::activate`] a complete space first), and under
    /// [`Options::memory_budget`](crate::Options::memory_budget) refused with an `InputError`
    /// naming `memory_budget` when the budget cannot hold the live vectors at the promoted
    /// space's dimension. A space whose row in the file no longer decodes (a damaged file)
    /// is dropped too, with its vectors. `Unsupported` on PostgreSQL.
    pub fn drop_space(&self, name: &str) -> Result<u64, WriteError>;

    /// Every vector space, the default one first, with its model, dimension and coverage,
    /// from one snapshot; a space whose row no longer decodes (a damaged file) is left out
    /// ([`Store::verify`] reports it, [`Store::drop_space`] removes it). `Unsupported` on
    /// PostgreSQL (whose only space is the default).
    pub fn spaces(&self) -> Result<Vec<crate::SpaceInfo>, ReadError>;

    /// The first `limit` (1 to 100 000) live chunks without a vector in space `space`,
    /// after the chunk `after` (`None`: from the start), in one order that does not change
    /// while they are stored (the walk's cursor is the last one's
    /// [`revision`](crate::MissingChunk::revision)), from one snapshot. A walk that ends
    /// hands out every chunk that lacked a vector when it began and is still stored; a
    /// chunk a revision replaced meanwhile may sort before the cursor, so a re-embed walks
    /// again until a walk finds nothing. The default space never lacks one.
    pub fn chunks_missing_vectors(
        &self,
        space: &str,
        after: Option<crate::ChunkRevision>,
        limit: usize,
    ) -> Result<Vec<crate::MissingChunk>, ReadError>;

    /// Writes re-embedded vectors into space `space`, in one transaction, guarded: each is
    /// written only while its chunk is still stored as it was read (its
    /// [`revision`](crate::SpaceVector::revision)) and has no vector there; a chunk whose
    /// document was rewritten or deleted since is counted as `superseded`, one that has a
    /// vector already as `present`, and neither is written. A vector of another dimension
    /// than the space's, or not finite, or an unknown space, is an `InputError` naming the
    /// field (`vectors[3].vector`), and nothing is written. `Unsupported` on PostgreSQL.
    pub fn write_space_vectors(
        &self,
        space: &str,
        vectors: Vec<crate::SpaceVector>,
    ) -> Result<crate::SpaceWriteOutcome, WriteError>;
}

impl WriterOptions {
    /// The defaults, with the store's durability.
    pub fn for_store(store: &Store) -> WriterOptions {
        WriterOptions::with_durability(store.options().durability)
    }
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("path", &self.path())
            .field("metric", &self.metric())
            .field("dimension", &self.dimension())
            .field("model", &self.model())
            .finish()
    }
}
