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

    /// The backend (for the crate's own tests).
    #[cfg(test)]
    pub(crate) fn backend(&self) -> &AnyBackend {
        &self.backend
    }

    /// The engine and the indexer (for the crate's own tests).
    #[cfg(test)]
    pub(crate) fn engine(&self) -> &std::sync::Arc<crate::backend::redb::engine::Engine> {
        self.embedded().engine()
    }

    #[cfg(test)]
    pub(crate) fn indexer(&self) -> &crate::backend::redb::derived::indexer::Indexer {
        self.embedded().indexer()
    }

    /// The embedded store's in-memory text index as last built or brought up by a text
    /// search (`None`: none yet, or a PostgreSQL store).
    #[cfg(any(test, feature = "testkit"))]
    pub(crate) fn text_index_footprint(&self) -> Option<crate::backend::redb::text::Footprint> {
        self.backend.redb()?.engine().text_index.footprint()
    }

    /// The embedded backend (for the crate's own tests, which are all embedded).
    #[cfg(test)]
    pub(crate) fn embedded(&self) -> &RedbBackend {
        match self.backend.redb() {
            Some(b) => b,
            None => panic!("the crate's own tests use embedded stores"),
        }
    }

    /// Opens the store at `path` for writing, creating it if it does not exist (unless
    /// [`Options::must_exist`]). The options must agree with what the store recorded when it
    /// was created (dimension, metric, model); what they leave `None` is taken from the file.
    ///
    /// One process writes a file at a time: while this store is open, another writer is
    /// refused with [`OpenError::Locked`] (after waiting up to [`Options::wait_for_lock`]).
    /// With [`Options::allow_readers`] (the default), other processes may meanwhile open the
    /// file with [`Store::open_read_only`] and follow its commits.
    ///
    /// A `postgres://` (or `postgresql://`) URL opens the store kept on that PostgreSQL
    /// server instead (the `postgres` feature; without it [`OpenError::BackendNotBuilt`]):
    /// the same operations, outcomes and errors, with what a server cannot offer returning
    /// `Unsupported` (see the README's PostgreSQL section). A `schema=NAME` query parameter
    /// picks the PostgreSQL schema holding the store (default `ratchetdb`).
    pub fn open(path: impl AsRef<Path>, options: Options) -> Result<Store, OpenError> {
        AnyBackend::open(path.as_ref(), options, false).map(Store::over)
    }

    /// Opens an existing store read-only, with default options (see
    /// [`Store::open_read_only_with`]).
    pub fn open_read_only(path: impl AsRef<Path>) -> Result<Store, OpenError> {
        Store::open_read_only_with(path, Options::default())
    }

    /// Opens an existing store read-only: nothing is ever written to the file (no
    /// creation, conversion, recovery, recorded dimension or model, persisted graph; its
    /// bytes and modification time stay as they are), so it works on a file or mount that
    /// is read-only. Every write returns [`WriteError::ReadOnly`]. The one exception is
    /// asked for: with [`Options::recover_on_read_open`], a file a crashed writer left is
    /// recovered first when it can be written ([`Store::recovered_at_open`]).
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
        AnyBackend::open(path.as_ref(), options, true).map(Store::over)
    }

    /// Recovers the file at `path` that a writer left without closing it (a crash or a
    /// kill), as a writer's open would, without opening a store: redb's repair, which keeps
    /// every committed write. `Ok(true)`: it needed recovery and was recovered; `Ok(false)`:
    /// it needed none (or a writer that has it open now recovered it). A file that cannot
    /// be written (read-only media, no permission) is refused with
    /// [`OpenError::NeedsRecovery`] and left as it was. Only the redb file is touched:
    /// nothing is converted, recorded or compacted.
    pub fn recover(path: impl AsRef<Path>) -> Result<bool, OpenError> {
        crate::backend::redb::open::recover(path.as_ref(), &Options::default())
    }

    /// Whether opening this store recovered a file a crashed writer left first (a
    /// read-only open with [`Options::recover_on_read_open`]); `false` for every other
    /// open.
    pub fn recovered_at_open(&self) -> bool {
        self.backend.recovered_at_open()
    }

    /// Creates a new store at `path`; an error if a non-empty file is already there. On a
    /// `postgres://` URL this is [`Store::open`]: the store's schema is shared by design
    /// (several processes open it at once), so an existing one is opened, not refused.
    pub fn create(path: impl AsRef<Path>, options: Options) -> Result<Store, OpenError> {
        let path = path.as_ref();
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

    /// The file this store lives in (`<backend>` for a custom backend; the server's URL,
    /// without its password, for a PostgreSQL store).
    pub fn path(&self) -> &Path {
        self.backend.path()
    }

    /// The vector dimension, once fixed (by the options or the first vector written).
    pub fn dimension(&self) -> Option<usize> {
        self.backend.dimension()
    }

    /// The metric.
    pub fn metric(&self) -> Metric {
        self.backend.metric()
    }

    /// The embedding model's name, if one was recorded.
    pub fn model(&self) -> Option<&str> {
        self.backend.model()
    }

    /// Whether this store was opened with [`Store::open_read_only`] (it never writes).
    pub fn is_read_only(&self) -> bool {
        self.backend.is_read_only()
    }

    /// Whether this store is kept on a PostgreSQL server (opened by a `postgres://` URL).
    pub fn is_postgres(&self) -> bool {
        self.backend.redb().is_none()
    }

    /// The options the store was opened with.
    pub fn options(&self) -> &Options {
        self.backend.options()
    }

    /// Writes a revision of a document, guarded: refused (and counted) unless it is newer
    /// than what is stored. Generation stamp, chunks, surplus removal, vectors and counters
    /// commit in one transaction.
    pub fn upsert(&self, doc: Document) -> Result<Outcome, WriteError> {
        self.backend.upsert(doc)
    }

    /// Checks `doc` as [`upsert`](Store::upsert) checks it before its transaction (names,
    /// metadata, sizes, and vectors against the store's dimension and metric), without
    /// reading or writing anything: `Ok` means a write of it is not refused for its input.
    /// What depends on the stored state (the version guard, the version's kind, a chunk
    /// without a vector) is decided by the write itself.
    pub fn check(&self, doc: &Document) -> Result<(), WriteError> {
        prepare::prepare_document(
            doc.clone(),
            self.metric(),
            self.dimension(),
            &self.options().limits,
        )
        .map(drop)
    }

    /// Deletes a document at `version`: a tombstone that refuses every later write not newer
    /// than it. Works for a document never seen, so a delete that overtakes its upsert still
    /// blocks it. A delete meeting a live revision of the same version wins (and is counted).
    pub fn delete(&self, source: &str, id: &str, version: Version) -> Result<Outcome, WriteError> {
        self.backend.delete(source, id, version)
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

    /// Removes the tombstones and listings of `source` older than `before` (same version kind).
    ///
    /// The trade-off: a tombstone is what refuses a stale revision of a deleted document.
    /// Once purged, a revision older than `before` that is still in flight somewhere (a retry
    /// queue, a dead-letter queue, a backfill snapshot) would bring the document back. Purge
    /// only below a version older than anything that can still be delivered.
    pub fn purge(&self, source: &str, before: Version) -> Result<PurgeOutcome, WriteError> {
        self.backend.purge(source, before)
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
        self.backend.write_batch(ops)
    }

    /// Makes every write so far durable (needed only with [`Durability::None`](crate::Durability::None)).
    /// On PostgreSQL every commit is already durable: nothing to do (a read-only store:
    /// [`WriteError::ReadOnly`], as embedded).
    pub fn sync(&self) -> Result<(), WriteError> {
        self.backend.sync()
    }

    /// A new ticket: a store-issued version, strictly greater than every ticket this store
    /// has issued before, across restarts and crashes. Take it when a job is enqueued and
    /// let every retry carry it unchanged (failure F12). Tickets are reserved in blocks, so
    /// a ticket costs no fsync; a crash skips the rest of a block.
    pub fn ticket(&self) -> Result<Version, WriteError> {
        self.backend.ticket()
    }

    /// Says, before any embedding is paid for, whether this revision would be written, and
    /// which chunks need a vector: chunks whose text the stored revision already has a vector
    /// for can be sent without one. Vectors in `doc` are ignored.
    pub fn plan(&self, doc: &Document) -> Result<Plan, ReadError> {
        self.backend.plan(doc)
    }

    /// A concurrent writer with group commit and default [`WriterOptions`](crate::WriterOptions).
    pub fn writer(&self) -> Writer {
        self.writer_with(WriterOptions::for_store(self))
    }

    /// A concurrent writer with the given options.
    /// On PostgreSQL each group of queued operations is one SQL transaction.
    pub fn writer_with(&self, options: WriterOptions) -> Writer {
        Writer::start(self.backend.clone(), options)
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
        self.backend.search(query, k, options)
    }

    /// The `k` chunks that best match `query` by BM25 over their words (see
    /// [`TextOptions`](crate::TextOptions) for how text becomes words), best first; a hit's
    /// score is its BM25 score. [`SearchOptions::bm25`] sets k1 and b; the sources,
    /// documents and metadata filter of `options` apply as for [`Store::search`] (`ef`,
    /// `exact` and the filter strategy are about vectors and are ignored).
    ///
    /// Every hit is a live chunk of one snapshot: the text index changes in the transaction
    /// that changes the chunks, so a superseded, deleted or orphaned chunk is never
    /// returned. [`ReadError::NoTextIndex`] if the store keeps no text index. On PostgreSQL
    /// the same ranking and scores, over the server's text tables read in one snapshot
    /// (see docs/design.md, "The text index on PostgreSQL").
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
        self.backend.search_text(query, k, options)
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
        self.backend.search_hybrid(text, vector, k, options)
    }

    /// Whether this store can answer text searches: it keeps a text index (a read-only
    /// store: the file, or the PostgreSQL schema, has one) that covers its documents.
    pub fn has_text_index(&self) -> bool {
        self.backend.has_text_index()
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
        let queries: Vec<&[f32]> = queries.iter().map(AsRef::as_ref).collect();
        self.backend.search_many(&queries, k, options)
    }

    /// What the derived index is doing. A PostgreSQL store's index is the server's
    /// (pgvector's HNSW, kept in step by every commit): loaded, ready, nothing pending.
    pub fn index_info(&self) -> IndexInfo {
        self.backend.index_info()
    }

    /// Waits until the index has loaded, covers the latest commit, and no applier pass,
    /// graph build or load is running; `false` on timeout. Searches never need this (they
    /// bring the index up to their own snapshot, and answer exactly meanwhile); tests and
    /// benchmarks do, and so does anything that needs the file's I/O to be deterministic
    /// (background passes hold read snapshots, which change the pages a commit reuses).
    /// A timeout longer than the clock can count ([`Duration::MAX`]) waits until it settles.
    pub fn wait_for_index(&self, timeout: Duration) -> bool {
        self.backend.wait_for_index(timeout)
    }

    /// Builds the ANN graph now (in this thread) from the live vectors, and persists it in
    /// the file so the next open loads it instead of building it again. A build that fails
    /// (inside the graph library, or as the store closes) is [`ReadError::IndexBuild`];
    /// nothing stored changes, and searches go on over the previous graph (or exactly). A
    /// graph built whose snapshot could not be written (the disk full) is
    /// [`ReadError::IndexPersist`]: the graph serves, the store stays writable, and the
    /// snapshot is written again later.
    ///
    /// On PostgreSQL the server keeps pgvector's HNSW index in step with every commit:
    /// nothing to build, so this returns at once.
    pub fn build_index(&self) -> Result<(), ReadError> {
        self.backend.build_index()
    }

    /// A consistent read view: everything read through it comes from one committed state.
    pub fn snapshot(&self) -> Result<Snapshot, ReadError> {
        self.redb("Store::snapshot")?.snapshot()
    }

    /// Counts every ticket up to `through` as issued by this store, so that writes
    /// carrying them are accepted (a ticket above the highest issued is refused as never
    /// issued) and every ticket [`Store::ticket`] issues later is above `through`. For
    /// restoring an export of a store that used tickets (`ratchet export` writes the
    /// source's highest ticket in its first line, `store`). Never lowers what was issued.
    /// A `through` above 2^63 - 1 is refused ([`WriteError::Input`] naming `tickets_issued`)
    /// and changes nothing.
    pub fn adopt_tickets(&self, through: u64) -> Result<(), WriteError> {
        self.backend.adopt_tickets(through)
    }

    /// The highest ticket this store may have issued: on a file, the persisted high-water
    /// mark (tickets are reserved in blocks, so it can be above the last one handed out);
    /// on PostgreSQL, the ticket sequence's last value. 0 before the first ticket.
    pub fn tickets_issued(&self) -> Result<u64, ReadError> {
        self.backend.tickets_issued()
    }

    /// Writes a consistent copy of the store to a new file at `path`, while writers keep
    /// writing (in this process or another): every table of one read snapshot, so the copy
    /// holds exactly what the store held at one commit ([`Backup::commit`](crate::Backup::commit)) — documents,
    /// tombstones, listings, counters, skip log, text index and persisted graph — and opens
    /// as a store of its own. `path` must not exist ([`BackupError::AlreadyExists`](crate::BackupError::AlreadyExists)): the
    /// copy is written beside it and linked there only when whole and durable. Restore by
    /// opening the copy (or moving it into the original's place while no process has that
    /// open). On unix the copy has the permission bits of the store's file. On PostgreSQL:
    /// [`ReadError::Unsupported`] (use the server's own backups).
    pub fn backup(&self, path: impl AsRef<Path>) -> Result<crate::Backup, crate::BackupError> {
        self.redb("Store::backup")?.backup(path.as_ref())
    }

    /// A document and its chunks in order (from one snapshot). Tombstones are returned with
    /// `deleted: true` and no chunks.
    pub fn get(
        &self,
        source: &str,
        id: &str,
    ) -> Result<Option<crate::types::StoredDocument>, ReadError> {
        self.backend.get(source, id)
    }

    /// Every document (tombstones included), sorted by `(source, id)`, read in one
    /// snapshot and collected (with each chunk's vector if `with_vectors`). It holds the
    /// whole store in memory: on an embedded store, stream
    /// [`Snapshot::documents`] instead; on PostgreSQL (where [`Store::snapshot`] is
    /// unsupported) this is the export.
    pub fn documents(
        &self,
        with_vectors: bool,
    ) -> Result<Vec<crate::types::StoredDocument>, ReadError> {
        self.backend.documents(with_vectors)
    }

    /// Every listing [`Store::retain`] recorded (until [`Store::purge`] removes it), with
    /// the ids it lists, by `(source, version)`, from one snapshot.
    pub fn listings(&self) -> Result<Vec<crate::types::Listing>, ReadError> {
        self.backend.listings()
    }

    /// Restores a store's history in one transaction: every outcome counter (all of
    /// [`Counters`](crate::Counters) but `commits`, which counts this store's own
    /// transactions) is set to `counters`' value, and `skips` are appended to the skip log
    /// (numbered by this log; the oldest beyond its capacity are dropped). Documents,
    /// listings and the live totals are untouched. `ratchet copy` uses it to move a
    /// store's counters and refusals with its documents. A counter above 2^63 − 1 (the
    /// largest PostgreSQL's `bigint` holds) is [`InputError`](crate::InputError) naming its
    /// field (`counters.written_new`), and nothing is restored.
    pub fn restore_history(
        &self,
        counters: &crate::Counters,
        skips: &[crate::types::SkipRecord],
    ) -> Result<(), WriteError> {
        self.backend.restore_history(counters, skips)
    }

    /// Counters, totals and recent refusals (from one snapshot).
    pub fn stats(&self) -> Result<Stats, ReadError> {
        self.backend.stats()
    }

    /// Checks every invariant the rows can show (from one snapshot), and that the vectors
    /// the index can return are exactly the live vectors of the file (I5).
    pub fn verify(&self) -> Result<VerifyReport, ReadError> {
        self.backend.verify()
    }
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

#[cfg(all(test, not(feature = "postgres")))]
mod tests {
    use super::*;

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
