//! Options for opening a store, with documented defaults.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::time::Duration;

/// How vectors are compared. Fixed per store when it is created.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Metric {
    /// Cosine similarity. Vectors are normalised to unit length on write, so a stored vector
    /// is the direction only. Search scores are similarities (higher is closer).
    #[default]
    Cosine,
    /// Euclidean distance on the vectors as given. Search scores are distances (lower is
    /// closer).
    L2,
    /// Dot product (inner product) on the vectors as given, not normalised: a vector's
    /// length counts. Search scores are dot products (higher is closer).
    Dot,
}

impl Metric {
    /// The name recorded in the file and used on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Metric::Cosine => "cosine",
            Metric::L2 => "l2",
            Metric::Dot => "dot",
        }
    }

    /// The user-facing score of an internal distance (see `index::distance`): cosine
    /// similarity for `Cosine` (higher is closer), Euclidean distance for `L2` (lower is
    /// closer), the dot product for `Dot` (higher is closer).
    pub(crate) fn score(self, distance: f32) -> f32 {
        match self {
            Metric::Cosine => 1.0 - distance,
            Metric::L2 => distance.max(0.0).sqrt(),
            Metric::Dot => dot_from_distance(distance),
        }
    }

    /// Whether higher scores are closer (cosine, dot) rather than lower (L2).
    pub fn higher_is_closer(self) -> bool {
        !matches!(self, Metric::L2)
    }

    /// Stable one-byte tag (index snapshot header).
    pub(crate) fn tag(self) -> u8 {
        match self {
            Metric::Cosine => 0,
            Metric::L2 => 1,
            Metric::Dot => 2,
        }
    }

    /// The metric of a tag written by [`Metric::tag`].
    pub(crate) fn from_tag(tag: u8) -> Option<Metric> {
        match tag {
            0 => Some(Metric::Cosine),
            1 => Some(Metric::L2),
            2 => Some(Metric::Dot),
            _ => None,
        }
    }

    /// Parses [`Metric::as_str`]'s names.
    pub fn parse(name: &str) -> Option<Metric> {
        match name {
            "cosine" => Some(Metric::Cosine),
            "l2" => Some(Metric::L2),
            "dot" => Some(Metric::Dot),
            _ => None,
        }
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// When an acknowledged write is on disk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Durability {
    /// Every commit is fsynced before it is acknowledged: an acknowledged write survives a
    /// crash or power loss (given a disk that honours fsync). The default.
    #[default]
    Immediate,
    /// Commits are not fsynced; a crash may lose the writes since the last durable commit
    /// (they are lost whole, never half-applied). For bulk loads: call
    /// [`Store::sync`](crate::Store::sync) (the concurrent writer does it periodically).
    None,
}

/// The default [`Limits::max_dimension`]: the widest vector a store takes unless raised, and
/// the most buckets a [`HashingEmbedder`](crate::HashingEmbedder) makes.
pub(crate) const DEFAULT_MAX_DIMENSION: usize = 8192;

/// Size limits on input. Anything larger gets an [`InputError`](crate::InputError) naming the
/// field. The defaults suit text chunks of RAG pipelines.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Limits {
    /// Bytes in a source name or document id. Default 1024.
    pub max_id_bytes: usize,
    /// Chunks in one document. Default 10,000.
    pub max_chunks_per_document: usize,
    /// Bytes of text in one chunk. Default 1 MiB; at most 16 MiB (a larger setting counts
    /// as 16 MiB, so that every row stays readable).
    pub max_chunk_text_bytes: usize,
    /// Bytes of canonical JSON metadata, per document and per chunk. Default 64 KiB; at most
    /// 16 MiB (as for text).
    pub max_meta_bytes: usize,
    /// Levels of nested arrays and objects in metadata. Default 64; at most 127 (what a read
    /// can parse back: serde_json's recursion limit is 128).
    #[serde(default = "default_max_meta_depth")]
    pub max_meta_depth: usize,
    /// Vector dimensions. Default 8192.
    pub max_dimension: usize,
    /// Ids in one listing given to `retain`. Default 10,000,000.
    pub max_listing_ids: usize,
    /// Hits one search may ask for (`k`), and the largest graph search width (`ef`) and
    /// re-ranking width (`rerank`).
    /// Default 10,000. A search allocates for `k` hits up front, so an unbounded `k` could
    /// abort the process; a larger one is an [`InputError`](crate::InputError) on `k`.
    #[serde(default = "default_max_k")]
    pub max_k: usize,
}

fn default_max_k() -> usize {
    10_000
}

fn default_max_meta_depth() -> usize {
    64
}

/// The hard ceiling of `max_chunk_text_bytes` and `max_meta_bytes`: a row must stay below
/// what a decode accepts (`schema::MAX_ROW_BYTES`).
pub(crate) const MAX_FIELD_BYTES: usize = 16 << 20;

/// The hard ceiling of `max_meta_depth`: serde_json refuses to parse deeper JSON.
pub(crate) const MAX_META_DEPTH: usize = 127;

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_id_bytes: 1024,
            max_chunks_per_document: 10_000,
            max_chunk_text_bytes: 1 << 20,
            max_meta_bytes: 64 << 10,
            max_meta_depth: default_max_meta_depth(),
            max_dimension: DEFAULT_MAX_DIMENSION,
            max_listing_ids: 10_000_000,
            max_k: default_max_k(),
        }
    }
}

/// How to open or create a store. `Options::default()` opens an existing store with whatever
/// it recorded, or creates one (cosine, dimension fixed by the first vector written).
///
/// ```
/// use ratchetdb::{Metric, Options};
/// let options = Options::default().dimension(384).metric(Metric::Cosine).model("all-MiniLM-L6-v2");
/// assert_eq!(options.dimension, Some(384));
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Options {
    /// The vector dimension. `None`: whatever the store recorded, or fixed by the first
    /// vector written. A store records it once; opening with another is an error.
    pub dimension: Option<usize>,
    /// The metric. `None`: whatever the store recorded, or cosine for a new store.
    pub metric: Option<Metric>,
    /// The embedding model's name. `None`: whatever the store recorded. A store records it
    /// once; opening with another is an error (two models are two embedding spaces).
    pub model: Option<String>,
    /// When an acknowledged write is on disk. Default [`Durability::Immediate`].
    pub durability: Durability,
    /// Equal versions with different content. Default [`ConflictPolicy::Refuse`].
    pub conflict_policy: ConflictPolicy,
    /// Input size limits.
    pub limits: Limits,
    /// How many recent refusals the skip log keeps. Default 1000.
    pub skip_log_capacity: u64,
    /// Create the file if it does not exist. Default `true`.
    pub create_if_missing: bool,
    /// Verify the checksum of every page of the file when opening it, not only after a crash
    /// (redb's `check_integrity_on_open`). Default `false`: it reads the whole file.
    ///
    /// redb trusts a file it closed cleanly, and may panic on one damaged outside redb (a
    /// flipped bit on disk, a bad copy); with this set, such a file is refused with
    /// [`OpenError::Corrupted`](crate::OpenError::Corrupted) instead. Use it for files of
    /// unknown provenance and in `verify`-style checks.
    #[serde(default)]
    pub check_integrity_on_open: bool,
    /// Bytes of redb's page cache (its `Builder::set_cache_size`). Default
    /// [`DEFAULT_CACHE_SIZE`], 64 MiB; redb's own default is 1 GiB.
    ///
    /// The cache keeps pages redb has read, and every page a commit has written until the
    /// cache is full. (The index load, which reads every vectors row once, reads around it
    /// on a file shared with readers: through a handle of its own without a cache.) It is
    /// not what makes searches fast: the vector index keeps its vectors in memory, and the
    /// operating system caches the file's pages as well. So a large cache
    /// mostly holds written pages, and costs resident memory up to its size. What it buys is
    /// faster point reads from a store larger than the cache, so raise it for read-heavy
    /// stores that fit in memory. The trade-off (resident memory, `get` latency, durable
    /// write rate at 64 MiB and 1 GiB) is measured in `benches/page_cache.rs`; see
    /// docs/benchmarks.md.
    ///
    /// redb holds a transaction's dirty pages in up to half the cache and writes the rest
    /// out before the commit (re-reading them if the transaction touches them again). A
    /// transaction larger than that still commits as one, only with more I/O: a
    /// concurrent [`Writer`](crate::Writer) batch of up to 1024 documents can exceed it, and
    /// converting a schema-1 or schema-2 file rewrites it
    /// whole in one transaction. Any value works, `0` included: every read then goes to the file, and
    /// every written page is written out as soon as redb lets go of it.
    #[serde(default = "default_cache_size")]
    pub cache_size: usize,
    /// Let other processes read the file while this store writes it. Default `true`.
    ///
    /// A store opened for writing with this set (and [`Durability::Immediate`]) opens the
    /// file in redb's `ConcurrencyMode::SingleWriter`: one process writes, and any number of
    /// processes open it with [`Store::open_read_only`](crate::Store::open_read_only) and
    /// follow its commits. A second writer is refused with
    /// [`OpenError::Locked`](crate::OpenError::Locked) (or waits, see
    /// [`Options::wait_for_lock`]). In this mode redb commits in two phases (the pages a
    /// commit names are on disk before the header that publishes it, so a reader never
    /// follows a header to pages not yet written) and every commit is durable.
    ///
    /// `false`, or [`Durability::None`] (a commit held only in this process's memory cannot
    /// be shared: redb refuses non-durable commits in the shared modes), opens the file
    /// exclusively, as before: no other process may open it, not even to read.
    #[serde(default = "default_allow_readers")]
    pub allow_readers: bool,
    /// How long opening waits for another process's lock on the file (a writer, when this
    /// opens for writing; an exclusive writer, or a crashed writer's file that no writer
    /// has recovered yet, when it opens read-only) before it gives up with
    /// [`OpenError::Locked`](crate::OpenError::Locked),
    /// [`OpenError::HeldExclusively`](crate::OpenError::HeldExclusively) or
    /// [`OpenError::NeedsRecovery`](crate::OpenError::NeedsRecovery). Default zero: fail
    /// at once. A wait longer than the clock can count ([`Duration::MAX`]) waits as long as
    /// the lock is held.
    #[serde(default)]
    pub wait_for_lock: Duration,
    /// What a read-only open does with a file a writer left without closing it (a crash or
    /// a kill) when no writer has it open now. Default `false`: the open is refused with
    /// [`OpenError::NeedsRecovery`](crate::OpenError::NeedsRecovery) and the file is not
    /// touched (a read-only open never writes). `true`: if the file can be opened for
    /// writing, it is recovered first, as a writer's open recovers it (redb's repair, which
    /// keeps every committed write), then opened read-only;
    /// [`Store::recovered_at_open`](crate::Store::recovered_at_open) says that it was. A
    /// file that cannot be written (read-only media, no permission) keeps the
    /// `NeedsRecovery` error. See also [`Store::recover`](crate::Store::recover).
    #[serde(default)]
    pub recover_on_read_open: bool,
    /// How the HNSW graph of the derived vector index is built. Default
    /// [`IndexOptions::default`] (M 16, ef_construction 100). Not recorded in the file: a
    /// graph keeps the parameters it was built with (a persisted one loads as it was) and
    /// the next build uses these.
    #[serde(default)]
    pub index: IndexOptions,
    /// Keep the full-text (BM25) index of the chunks, in the same transaction as the
    /// chunks. Default `true`. A writer opening a store without it builds it in one
    /// transaction; opening with `false` removes it (text and hybrid search then return
    /// [`ReadError::NoTextIndex`](crate::ReadError::NoTextIndex)).
    #[serde(default = "default_text_index")]
    pub text_index: bool,
    /// How the text index turns text into terms (language, stemming, stop words). `None`:
    /// whatever the store recorded, or language-neutral for a new store. Opening for
    /// writing with analysis other than the recorded one rebuilds the text index.
    #[serde(default)]
    pub text: Option<TextOptions>,
    /// Bytes of resident memory the vector index and redb's page cache may use together.
    /// Default `None`: no budget, every live vector held in memory (the fastest searches).
    ///
    /// With a budget, the derived index keeps no vector in `f32`: an HNSW graph over
    /// product-quantisation codes sized from the budget and the live chunk count, whose
    /// candidates are scored again exactly on the vectors read from the file (a hit's score
    /// is the exact one), and the page cache gets an eighth of the budget (at most
    /// [`Options::cache_size`]). The graph is built while the index loads, streaming the
    /// vectors from the file, and is saved in the file (an open under the same budget loads
    /// it). On Linux with glibc, once a budgeted index loads, the allocator maps every block
    /// of 1 MiB or more on its own for the rest of the process (`M_MMAP_THRESHOLD`, so that
    /// freed index memory goes back to the system): the host's own allocations get that
    /// setting too. A budget too small for the smallest
    /// codes and the links of the live chunks is refused at open with an
    /// [`InputError`](crate::InputError) on `memory_budget` naming the smallest that works.
    /// The plan is made when the index loads; a store that grows far past it loads its index
    /// again with a new plan (searches scan the file meanwhile). See docs/design.md,
    /// "Memory budget". A PostgreSQL store ignores it.
    #[serde(default)]
    pub memory_budget: Option<u64>,
    /// Compact the file when the store closes, if the store grew the file while it was
    /// open and at least [`COMPACT_ON_CLOSE_MIN_FREE`] (1 MiB) of it is now free pages,
    /// and, for a file larger than [`COMPACT_ON_CLOSE_SMALL_FILE`] (64 MiB), at least an
    /// eighth of it. Default `true`. (A small file compacts in tens of milliseconds; a
    /// large one takes seconds, so it waits until the space is worth it.)
    ///
    /// redb writes copy-on-write, grows the file by doubling it, and keeps the pages it
    /// frees inside the file for later writes, so a bulk load leaves part of the file free.
    /// Closing then moves the live pages down and truncates the file (redb's `compact`, in
    /// crash-safe transactions; sizes and times are measured in docs/benchmarks.md). Before
    /// it compacts, a table keyed by the caller's ids (documents, listings) whose pages a
    /// load left at least a quarter empty is copied in key order, packed full, in one
    /// transaction, and the changelog is cut to its last row and as many before it, at most
    /// 16 in all, as hold 16 KiB or a thousandth of the file (it serves indexes following
    /// commits as they happen; a reader process further behind reloads its index from the
    /// vectors). This trimming and repacking happen whenever the session grew the file,
    /// compaction or not. The graph snapshot is written in one-page parts, so compaction can
    /// move every one of its pages. A close after a session that did not grow the
    /// file does nothing (finding the free pages reads the whole file).
    ///
    /// While it runs the file stays locked: another process opening it for writing gets
    /// [`OpenError::Locked`](crate::OpenError::Locked) unless it waits
    /// ([`Options::wait_for_lock`]), and reader processes' reads wait for it. Best effort:
    /// a store that is read-only, poisoned, on a caller's storage backend, or still in use
    /// (a [`Snapshot`](crate::Snapshot) alive, the background index load still reading,
    /// another process in a read at that moment) closes without compacting, and a
    /// compaction that fails leaves a whole file with its free pages. Set `false` to keep
    /// closing instant.
    #[serde(default = "default_compact_on_close")]
    pub compact_on_close: bool,
}

/// The least free space that makes a closing store compact its file (see
/// [`Options::compact_on_close`]).
pub const COMPACT_ON_CLOSE_MIN_FREE: u64 = 1 << 20;

/// The largest file a closing store compacts for any free space of at least
/// [`COMPACT_ON_CLOSE_MIN_FREE`]; a larger one is compacted once an eighth of it is free
/// (see [`Options::compact_on_close`]).
pub const COMPACT_ON_CLOSE_SMALL_FILE: u64 = 64 << 20;

fn default_compact_on_close() -> bool {
    true
}

fn default_text_index() -> bool {
    true
}

fn default_allow_readers() -> bool {
    true
}

/// Build parameters of the HNSW graph (see [`Options::index`]).
///
/// ```
/// use ratchetdb::{IndexOptions, Options};
/// let options = Options::default().index(IndexOptions::default().m(24).ef_construction(200));
/// assert_eq!((options.index.m, options.index.ef_construction), (24, 200));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct IndexOptions {
    /// Links per point in each upper layer of the graph; layer 0 keeps twice as many (M in
    /// the HNSW paper; under a [`memory_budget`](Options::memory_budget), between M and
    /// 2 M, whatever the budget leaves after each point's code). Default [`DEFAULT_INDEX_M`] (16, as hnswlib's and FAISS's usual
    /// setting). Between [`MIN_INDEX_M`] and [`MAX_INDEX_M`]; outside that, opening is an
    /// [`InputError`](crate::InputError) on `index.m`. Higher: better recall at a given
    /// search width on hard (high intrinsic dimension) data, slower builds, more memory
    /// (each point holds up to `3 * m` links).
    #[serde(default = "default_index_m")]
    pub m: usize,
    /// Candidate list width while inserting a point (efConstruction). Default
    /// [`DEFAULT_INDEX_EF_CONSTRUCTION`] (100). Between 1 and
    /// [`MAX_INDEX_EF_CONSTRUCTION`]; outside that, opening is an
    /// [`InputError`](crate::InputError) on `index.ef_construction`. Build time grows
    /// about linearly with it; recall at a given search width grows with it too, with
    /// diminishing returns (measured by `benches/search.rs`; see docs/benchmarks.md).
    #[serde(default = "default_index_ef_construction")]
    pub ef_construction: usize,
}

/// The default of [`IndexOptions::m`].
pub const DEFAULT_INDEX_M: usize = 16;
/// The smallest accepted [`IndexOptions::m`].
pub const MIN_INDEX_M: usize = 2;
/// The largest accepted [`IndexOptions::m`] (the graph library accepts up to 256 links per
/// layer, and layer 0 keeps `2 * m`).
pub const MAX_INDEX_M: usize = 128;
/// The default of [`IndexOptions::ef_construction`].
pub const DEFAULT_INDEX_EF_CONSTRUCTION: usize = 100;
/// The largest accepted [`IndexOptions::ef_construction`].
pub const MAX_INDEX_EF_CONSTRUCTION: usize = 4096;

fn default_index_m() -> usize {
    DEFAULT_INDEX_M
}

fn default_index_ef_construction() -> usize {
    DEFAULT_INDEX_EF_CONSTRUCTION
}

impl Default for IndexOptions {
    fn default() -> IndexOptions {
        IndexOptions {
            m: DEFAULT_INDEX_M,
            ef_construction: DEFAULT_INDEX_EF_CONSTRUCTION,
        }
    }
}

impl IndexOptions {
    /// Sets [`IndexOptions::m`].
    pub fn m(mut self, m: usize) -> IndexOptions {
        self.m = m;
        self
    }

    /// Sets [`IndexOptions::ef_construction`].
    pub fn ef_construction(mut self, ef_construction: usize) -> IndexOptions {
        self.ef_construction = ef_construction;
        self
    }

    /// The field out of range and why, if any (checked when a store is opened).
    pub(crate) fn invalid(&self) -> Option<(&'static str, String)> {
        if !(MIN_INDEX_M..=MAX_INDEX_M).contains(&self.m) {
            return Some((
                "index.m",
                format!(
                    "must be between {MIN_INDEX_M} and {MAX_INDEX_M}, got {}",
                    self.m
                ),
            ));
        }
        if !(1..=MAX_INDEX_EF_CONSTRUCTION).contains(&self.ef_construction) {
            return Some((
                "index.ef_construction",
                format!(
                    "must be between 1 and {MAX_INDEX_EF_CONSTRUCTION}, got {}",
                    self.ef_construction
                ),
            ));
        }
        None
    }
}

/// The default of [`Options::cache_size`]: 64 MiB.
pub const DEFAULT_CACHE_SIZE: usize = 64 << 20;

fn default_cache_size() -> usize {
    DEFAULT_CACHE_SIZE
}

impl Default for Options {
    fn default() -> Options {
        Options {
            dimension: None,
            metric: None,
            model: None,
            durability: Durability::Immediate,
            conflict_policy: ConflictPolicy::Refuse,
            limits: Limits::default(),
            skip_log_capacity: 1000,
            create_if_missing: true,
            check_integrity_on_open: false,
            cache_size: DEFAULT_CACHE_SIZE,
            allow_readers: default_allow_readers(),
            wait_for_lock: Duration::ZERO,
            recover_on_read_open: false,
            index: IndexOptions::default(),
            text_index: default_text_index(),
            text: None,
            compact_on_close: default_compact_on_close(),
            memory_budget: None,
        }
    }
}

impl Options {
    /// Sets the vector dimension.
    pub fn dimension(mut self, dimension: usize) -> Options {
        self.dimension = Some(dimension);
        self
    }

    /// Sets the metric.
    pub fn metric(mut self, metric: Metric) -> Options {
        self.metric = Some(metric);
        self
    }

    /// Sets the embedding model's name.
    pub fn model(mut self, model: impl Into<String>) -> Options {
        self.model = Some(model.into());
        self
    }

    /// Sets the durability.
    pub fn durability(mut self, durability: Durability) -> Options {
        self.durability = durability;
        self
    }

    /// Sets the conflict policy.
    pub fn conflict_policy(mut self, policy: ConflictPolicy) -> Options {
        self.conflict_policy = policy;
        self
    }

    /// Sets the input limits.
    pub fn limits(mut self, limits: Limits) -> Options {
        self.limits = limits;
        self
    }

    /// Verifies every page's checksum when opening (see
    /// [`Options::check_integrity_on_open`]).
    pub fn check_integrity_on_open(mut self, enabled: bool) -> Options {
        self.check_integrity_on_open = enabled;
        self
    }

    /// Sets a memory budget for the vector index and the page cache (see
    /// [`Options::memory_budget`]).
    pub fn memory_budget(mut self, bytes: u64) -> Options {
        self.memory_budget = Some(bytes);
        self
    }

    /// Sets the bytes of redb's page cache (see [`Options::cache_size`]).
    pub fn cache_size(mut self, bytes: usize) -> Options {
        self.cache_size = bytes;
        self
    }

    /// Whether other processes may read the file while this store writes it (see
    /// [`Options::allow_readers`]).
    pub fn allow_readers(mut self, allowed: bool) -> Options {
        self.allow_readers = allowed;
        self
    }

    /// How long opening waits for another process's lock (see [`Options::wait_for_lock`]).
    pub fn wait_for_lock(mut self, wait: Duration) -> Options {
        self.wait_for_lock = wait;
        self
    }

    /// Whether a read-only open recovers a crashed writer's file first (see
    /// [`Options::recover_on_read_open`]).
    pub fn recover_on_read_open(mut self, recover: bool) -> Options {
        self.recover_on_read_open = recover;
        self
    }

    /// Whether a store opened for writing with these options shares the file with reader
    /// processes (redb's `SingleWriter` mode): [`Options::allow_readers`] and a durability
    /// that every commit makes durable.
    pub(crate) fn shares_file(&self) -> bool {
        self.allow_readers && self.durability == Durability::Immediate
    }

    /// Sets the graph's build parameters (see [`Options::index`]).
    pub fn index(mut self, index: IndexOptions) -> Options {
        self.index = index;
        self
    }

    /// Compacts the file on close or not (see [`Options::compact_on_close`]).
    pub fn compact_on_close(mut self, enabled: bool) -> Options {
        self.compact_on_close = enabled;
        self
    }

    /// Keeps the full-text index or not (see [`Options::text_index`]).
    pub fn text_index(mut self, enabled: bool) -> Options {
        self.text_index = enabled;
        self
    }

    /// Sets the text index's analysis (see [`Options::text`]).
    ///
    /// ```
    /// use ratchetdb::{Options, TextLanguage, TextOptions};
    /// let options = Options::default().text(TextOptions::language(TextLanguage::English));
    /// assert!(options.text.is_some());
    /// ```
    pub fn text(mut self, text: TextOptions) -> Options {
        self.text = Some(text);
        self
    }

    /// Refuses to create a missing file.
    pub fn must_exist(mut self) -> Options {
        self.create_if_missing = false;
        self
    }
}

/// A language for stemming and stop words in the full-text index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TextLanguage {
    /// Arabic.
    Arabic,
    /// Danish.
    Danish,
    /// Dutch.
    Dutch,
    /// English.
    English,
    /// Finnish.
    Finnish,
    /// French.
    French,
    /// German.
    German,
    /// Greek.
    Greek,
    /// Hungarian.
    Hungarian,
    /// Italian.
    Italian,
    /// Norwegian.
    Norwegian,
    /// Portuguese.
    Portuguese,
    /// Romanian.
    Romanian,
    /// Russian.
    Russian,
    /// Spanish.
    Spanish,
    /// Swedish.
    Swedish,
    /// Tamil.
    Tamil,
}

impl TextLanguage {
    /// Every language, in the order of [`TextLanguage::as_str`]'s names.
    pub const ALL: [TextLanguage; 17] = [
        TextLanguage::Arabic,
        TextLanguage::Danish,
        TextLanguage::Dutch,
        TextLanguage::English,
        TextLanguage::Finnish,
        TextLanguage::French,
        TextLanguage::German,
        TextLanguage::Greek,
        TextLanguage::Hungarian,
        TextLanguage::Italian,
        TextLanguage::Norwegian,
        TextLanguage::Portuguese,
        TextLanguage::Romanian,
        TextLanguage::Russian,
        TextLanguage::Spanish,
        TextLanguage::Swedish,
        TextLanguage::Tamil,
    ];

    /// The lower-case English name (`english`), as on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            TextLanguage::Arabic => "arabic",
            TextLanguage::Danish => "danish",
            TextLanguage::Dutch => "dutch",
            TextLanguage::English => "english",
            TextLanguage::Finnish => "finnish",
            TextLanguage::French => "french",
            TextLanguage::German => "german",
            TextLanguage::Greek => "greek",
            TextLanguage::Hungarian => "hungarian",
            TextLanguage::Italian => "italian",
            TextLanguage::Norwegian => "norwegian",
            TextLanguage::Portuguese => "portuguese",
            TextLanguage::Romanian => "romanian",
            TextLanguage::Russian => "russian",
            TextLanguage::Spanish => "spanish",
            TextLanguage::Swedish => "swedish",
            TextLanguage::Tamil => "tamil",
        }
    }

    /// Parses [`TextLanguage::as_str`]'s names.
    pub fn parse(name: &str) -> Option<TextLanguage> {
        TextLanguage::ALL.into_iter().find(|l| l.as_str() == name)
    }
}

/// How chunk text and queries become terms for the full-text index. The default: Unicode
/// words, lower-cased, no stemming, no stop words (language-neutral).
///
/// Fixed per store: the file records the analysis its text index was built with. Opening a
/// store for writing with other [`TextOptions`] rebuilds the text index in one transaction.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TextOptions {
    /// The language of the stemmer and of the stop words (`None`: neither).
    pub language: Option<TextLanguage>,
    /// Reduce words to their stems (`running` and `runs` both index as `run`). Only with a
    /// language.
    pub stemming: bool,
    /// Leave out the language's stop words (`the`, `of`, ...). Only with a language.
    pub stop_words: bool,
}

impl TextOptions {
    /// Stemming and stop words of `language`.
    pub fn language(language: TextLanguage) -> TextOptions {
        TextOptions {
            language: Some(language),
            stemming: true,
            stop_words: true,
        }
    }

    /// Turns stemming on or off.
    pub fn stemming(mut self, on: bool) -> TextOptions {
        self.stemming = on;
        self
    }

    /// Turns stop-word removal on or off.
    pub fn stop_words(mut self, on: bool) -> TextOptions {
        self.stop_words = on;
        self
    }
}

/// What to do when two different contents arrive with the same version (failure F10).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ConflictPolicy {
    /// Refuse the second content and count a `conflict` skip. The default: a tie is never
    /// resolved silently.
    #[default]
    Refuse,
    /// Keep the content whose blake3 content hash is larger (compared by its first 16 bytes,
    /// which is what the embedded store keeps; equal there means equal content). Deterministic, so every delivery
    /// order converges on the same content; each tie it breaks is counted as
    /// `conflicts_resolved`, and the losing side as a `conflict` skip.
    HighestContentHash,
}

/// The dot product an internal distance of `index::distance::dot_distance` stands for.
pub(crate) fn dot_from_distance(d: f32) -> f32 {
    if d >= 1.0 {
        1.0 - d
    } else if d > 0.0 {
        1.0 / d - 1.0
    } else {
        f32::INFINITY
    }
}
