//! The derived ANN index: exact scan always, an HNSW graph when one is built.
//!
//! Invariant: the index is derived state. It is never the source of truth; the store
//! can always rebuild it from the `vectors` table (insert every live vector, then
//! [`VectorIndex::build_graph`]).
//!
//! Layout (each module uses only those listed before it, and this one's shared types;
//! `python3 scripts/module_cycles.py --under crate::index --edges` prints the uses):
//! - [`distance`]: the distance kernels both paths share (the SIMD code itself is in
//!   `crate::simd`).
//! - [`candidates`]: what a search collects and filters by (a candidate, the `k` best, the
//!   predicate on ids).
//! - [`workers`]: where heavy index work runs (a low-priority pool for background work).
//! - [`quantize`]: 4-bit codes of the graph's vectors, which its traversal reads (the
//!   hits are scored again exactly).
//! - [`reach`]: which points a walk over layer-0 links from the entry reaches (both graphs
//!   count on it).
//! - [`graph`]: the HNSW graph itself: links as `u32` slots in flat arrays, the vectors
//!   it was built on, parallel insertion, and the search (a filter applied inside the
//!   traversal).
//! - [`exact`]: every live vector once, in the graph's array or in its own contiguous rows;
//!   exact top-k (ground truth).
//! - [`membership`]: which graph points are live, which ids are scored outside the graph,
//!   and the search merging the two.
//! - [`hnsw`]: a graph and its membership over (a superset of) the live vectors; deletion
//!   by marking points dead.
//! - [`persisted`]: a graph's links to/from checksummed byte blobs (the `index_snapshot`
//!   table); the vectors come from the exact store.
//! - [`pq`]: product-quantisation codes (k-means per subspace, a lookup table per query).
//! - [`budget`]: the index under a memory budget: an HNSW graph over `pq` codes, no vector
//!   in memory; its candidates are scored again exactly by the caller (from the file).
//!
//! Invariant: a search returns only live ids, scored against their current vector. A
//! graph point is marked live only while the exact store holds the same vector for its
//! id; removals and replacements update that mark under the exact store's write lock,
//! and a search holds its read lock throughout.
//!
//! Locks, always taken in this order: `build` -> `mutation` -> `exact` -> `graph` -> a
//! graph's membership -> that graph's arrays (then one point's row lock) -> `journal`.

mod candidates;
pub(crate) mod distance;
mod exact;
mod graph;
#[cfg(any(test, feature = "testkit"))]
pub(crate) use graph::counted as graph_counted;
mod hnsw;
mod membership;
mod persisted;
mod pq;
pub(crate) mod quantize;
mod reach;
mod workers;
// After `pq` and `workers`, whose codes and threads it uses.
pub(crate) mod budget;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

pub(crate) use candidates::IdFilter;
use candidates::{Candidate, TopK};
use exact::ExactStore;
pub(crate) use exact::InsertOutcome;
use hnsw::Graph;
pub(crate) use persisted::ParsedSnapshot;
pub(crate) use workers::Workers;

#[cfg(any(test, feature = "testkit"))]
pub(crate) use persisted::{as_format_6 as snapshot_as_format_6, sealed as sealed_snapshot};

/// Checks and parses snapshot blobs for an index of `dim` and `metric`, without touching
/// any index (it can run while the exact store is being filled). Install the result
/// with [`VectorIndex::install_snapshot`].
pub(crate) fn parse_snapshot<B: AsRef<[u8]>>(
    blobs: &[B],
    metric: Metric,
    dim: usize,
) -> Result<ParsedSnapshot, IndexError> {
    persisted::from_blobs(blobs, metric, dim)
}

/// Below this many live vectors, [`SearchMode::Auto`] answers by exact scan even when a
/// graph exists (and a store below it builds no graph by itself): below it the scan is
/// about as fast as the graph at the default `ef`, and exact. The break-even is measured
/// in `benches/search.rs` (the size where the graph overtakes the scan); see
/// docs/benchmarks.md.
pub(crate) const EXACT_THRESHOLD: usize = 10_000;

/// `ef` (search width) used by [`SearchMode::Auto`] when it searches the graph.
pub(crate) const DEFAULT_EF_SEARCH: usize = 64;

/// Ids per chunk copied out of the exact store while a graph is built (bounds the extra
/// memory of a build and how long a build holds the exact store's read lock).
const BUILD_CHUNK: usize = 8192;

/// While a build catches up with concurrent changes, it stops letting writers run and
/// finishes under the mutation lock once this few changes are left (or after
/// [`CATCH_UP_ROUNDS`] rounds).
const CATCH_UP_FINAL: usize = 256;
const CATCH_UP_ROUNDS: usize = 8;

/// Largest deviation of a cosine vector's squared norm from 1 that is accepted.
const UNIT_NORM_TOLERANCE: f32 = 1e-3;

/// The store's metric; the index reports its scores (see `Metric::score`).
pub(crate) use crate::options::Metric;

/// A map keyed by vector id. Ids are the store's own (document and slot counters), never
/// chosen by a caller, and the hasher is seeded at random: foldhash instead of SipHash, which
/// took a tenth of a reopen's time looking ids up (and, in the graph's membership and the
/// snapshot's checks, a tenth of a 400k load). At random per map, not fixed: one map's ids
/// inserted in another's iteration order under the same seed pile up in its table (the
/// "stable hash map trap"). A build links its ids in id order, and an absorbing round takes
/// and links its ids in id order too, unless more wait than it scans
/// (`hnsw::ABSORB_SCAN`), so the same writes give the same graph on one thread in every
/// process.
type IdMap<V> = std::collections::HashMap<u64, V, foldhash::fast::RandomState>;
/// A set of vector ids (see [`IdMap`]).
type IdSet = std::collections::HashSet<u64, foldhash::fast::RandomState>;

/// Errors of the vector index.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum IndexError {
    /// An index needs at least one dimension.
    #[error("vector dimension must be at least 1")]
    ZeroDimension,
    /// A vector or query of the wrong length.
    #[error("vector has {got} dimensions, the index has {expected}")]
    DimensionMismatch {
        /// The index's dimension.
        expected: usize,
        /// The vector's length.
        got: usize,
    },
    /// A NaN or infinite component.
    #[error("vector component {position} is not finite")]
    NonFinite {
        /// Index of the first bad component.
        position: usize,
    },
    /// A cosine-index vector that is not unit length (the store normalises first).
    #[error("cosine vectors must be unit length, this one has squared norm {norm_squared}")]
    NotNormalized {
        /// The vector's squared L2 norm.
        norm_squared: f32,
    },
    /// A snapshot is damaged: torn, truncated, bit-flipped or malformed.
    #[error("corrupted index snapshot: {detail}")]
    Corrupted {
        /// What was wrong.
        detail: String,
    },
    /// A snapshot is intact but cannot be used here (other format version, platform,
    /// dimension, metric or distance).
    #[error("incompatible index snapshot: {detail}")]
    Incompatible {
        /// What differs.
        detail: String,
    },
    /// The graph failed (a panic while inserting, or more points than it can address).
    #[error("hnsw graph: {detail}")]
    Graph {
        /// Its message.
        detail: String,
    },
    /// The store closed while a graph build was running; the build stopped.
    #[error("the store closed during an index build")]
    Closed,
    /// A thread of the index could not be started.
    #[error("index thread: {0}")]
    Io(#[from] std::io::Error),
}

/// The message a caught panic carried, if it was a string.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_string())
}

#[cfg(test)]
/// Scales `vector` to unit L2 norm in place. Returns `false`, leaving it unchanged, when
/// the norm is zero or not finite. The norm is summed in f64 so that the result is as
/// close to unit length as f32 rounding allows.
pub(crate) fn normalize(vector: &mut [f32]) -> bool {
    let norm = vector
        .iter()
        .map(|&x| f64::from(x) * f64::from(x))
        .sum::<f64>()
        .sqrt();
    if norm == 0.0 || !norm.is_finite() {
        return false;
    }
    for x in vector.iter_mut() {
        *x = (f64::from(*x) / norm) as f32;
    }
    true
}

/// How a search runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum SearchMode {
    /// Exact below [`EXACT_THRESHOLD`] live vectors or when no graph is ready, else the
    /// graph with [`DEFAULT_EF_SEARCH`].
    #[default]
    Auto,
    /// Always the exact scan.
    Exact,
    /// The graph with search width `ef` (raised to `k` if smaller); exact when no
    /// graph is ready.
    Ann {
        /// Candidate list width: higher is slower and more accurate.
        ef: usize,
    },
}

/// The vector index the store drives: exact store (ground truth) plus an optional HNSW
/// graph, swapped atomically when a new one is built or loaded.
///
/// Every method takes `&self`; share it in an `Arc`. Mutations are serialised among
/// themselves; searches run concurrently with them and with a graph build.
pub(crate) struct VectorIndex {
    dim: usize,
    metric: Metric,
    /// Build parameters of new graphs (`Options::index`).
    params: hnsw::GraphParams,
    exact: RwLock<ExactStore>,
    graph: RwLock<Option<Arc<Graph>>>,
    /// Serialises insert/remove (and the last step of a build).
    mutation: Mutex<()>,
    /// Serialises graph builds and snapshot loads.
    build: Mutex<()>,
    /// While a build runs: ids changed since it started, to replay onto the new graph.
    journal: Mutex<Option<Vec<u64>>>,
    /// Set when the store closes: background builds and absorbing stop at their next
    /// chunk instead of finishing work nobody will use.
    closed: AtomicBool,
    /// Tests only: graph builds started, and whether their inserts panic.
    #[cfg(test)]
    builds: (std::sync::atomic::AtomicUsize, AtomicBool),
}

/// Stops journalling when a build ends, however it ends.
struct JournalGuard<'a>(&'a Mutex<Option<Vec<u64>>>);

impl Drop for JournalGuard<'_> {
    fn drop(&mut self) {
        *self.0.lock() = None;
    }
}

impl VectorIndex {
    /// An empty index of `dim`-dimensional vectors compared with `metric`.
    pub(crate) fn new(dim: usize, metric: Metric) -> Result<Self, IndexError> {
        if dim == 0 {
            return Err(IndexError::ZeroDimension);
        }
        Ok(VectorIndex {
            dim,
            metric,
            params: hnsw::GraphParams::default(),
            exact: RwLock::new(ExactStore::new(dim, metric)),
            graph: RwLock::new(None),
            mutation: Mutex::new(()),
            build: Mutex::new(()),
            journal: Mutex::new(None),
            closed: AtomicBool::new(false),
            #[cfg(test)]
            builds: Default::default(),
        })
    }

    /// The store is closing: running and future graph builds and absorbing stop at their
    /// next chunk ([`IndexError::Closed`], or nothing absorbed). Searches still work.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
    }

    /// Whether [`Self::close`] was called.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// Builds new graphs with `m` links per point per upper layer (`2 * m` in layer 0) and
    /// insertion width `ef_construction` (the store passes `Options::index`, validated).
    pub(crate) fn set_graph_params(&mut self, m: usize, ef_construction: usize) {
        self.params = hnsw::GraphParams { m, ef_construction };
    }

    /// Checks a vector or query: length, finiteness, unit norm for cosine.
    pub(crate) fn validate(&self, vector: &[f32]) -> Result<(), IndexError> {
        if vector.len() != self.dim {
            return Err(IndexError::DimensionMismatch {
                expected: self.dim,
                got: vector.len(),
            });
        }
        if let Some(position) = vector.iter().position(|x| !x.is_finite()) {
            return Err(IndexError::NonFinite { position });
        }
        if self.metric == Metric::Cosine {
            let norm_squared = distance::dot(vector, vector);
            if (norm_squared - 1.0).abs() > UNIT_NORM_TOLERANCE {
                return Err(IndexError::NotNormalized { norm_squared });
            }
        }
        Ok(())
    }

    #[cfg(test)]
    /// Inserts `id` with `vector`, or replaces its vector. Re-inserting the identical
    /// vector changes nothing (so replaying a change log is harmless).
    pub(crate) fn insert(&self, id: u64, vector: &[f32]) -> Result<InsertOutcome, IndexError> {
        let outcomes = self.insert_many(&[(id, vector)])?;
        Ok(outcomes
            .first()
            .copied()
            .unwrap_or(InsertOutcome::Unchanged))
    }

    /// Inserts a batch (one lock round trip; large batches go into the graph in
    /// parallel). Every vector is validated first: on error nothing changes. A later
    /// entry for the same id wins.
    pub(crate) fn insert_batch(&self, items: &[(u64, &[f32])]) -> Result<(), IndexError> {
        self.insert_many(items).map(|_| ())
    }

    fn insert_many(&self, items: &[(u64, &[f32])]) -> Result<Vec<InsertOutcome>, IndexError> {
        for &(_, vector) in items {
            self.validate(vector)?;
        }
        let _mutation = self.mutation.lock();
        let mut exact = self.exact.write();
        let outcomes: Vec<InsertOutcome> = items
            .iter()
            .map(|&(id, vector)| exact.insert(id, vector))
            .collect();
        let mut changed: Vec<u64> = items
            .iter()
            .zip(&outcomes)
            .filter(|(_, outcome)| **outcome != InsertOutcome::Unchanged)
            .map(|((id, _), _)| *id)
            .collect();
        changed.sort_unstable();
        changed.dedup();
        if changed.is_empty() {
            return Ok(outcomes);
        }
        if let Some(journal) = self.journal.lock().as_mut() {
            journal.extend_from_slice(&changed);
        }
        let Some(graph) = self.graph.read().clone() else {
            return Ok(outcomes);
        };
        // Inserting into the graph costs far more than a commit, so writers never wait for
        // it: every changed id is scored outside the graph (exactly) until
        // [`Self::absorb_outside`] moves it in, off the write path. This must happen before
        // the exact store's write lock is released.
        for id in changed {
            graph.mark_outside(id);
        }
        Ok(outcomes)
    }

    /// Whether some id scored outside the graph has no point in it yet: work for
    /// [`Self::absorb_outside`] (ids kept outside because no search reaches their point
    /// are not).
    pub(crate) fn has_absorbable(&self) -> bool {
        self.graph
            .read()
            .as_ref()
            .is_some_and(|graph| !graph.outside_without_point(1).is_empty())
    }

    /// Number of live ids scored outside the graph (waiting for [`Self::absorb_outside`]).
    pub(crate) fn outside_count(&self) -> usize {
        self.graph.read().as_ref().map_or(0, |g| g.outside_count())
    }

    /// Moves up to `max` outside ids into the graph; returns how many it inserted. Meant
    /// for a background thread: the graph insertion holds no lock writers need, and the
    /// new points become live only if their id still has the inserted vector.
    /// If the graph fails (panics) while inserting, the graph is dropped: searches score
    /// every vector exactly until a rebuild makes a fresh one.
    pub(crate) fn absorb_outside(&self, max: usize) -> Result<usize, IndexError> {
        self.absorb_outside_with(max, Workers::Background)
    }

    /// [`Self::absorb_outside`], with the inserts run where `workers` says.
    pub(crate) fn absorb_outside_with(
        &self,
        max: usize,
        workers: Workers,
    ) -> Result<usize, IndexError> {
        if self.is_closed() {
            return Ok(0);
        }
        let _build = self.build.lock();
        let Some(graph) = self.graph.read().clone() else {
            return Ok(0);
        };
        let items: Vec<(u64, Vec<f32>)> = {
            let _mutation = self.mutation.lock();
            let exact = self.exact.read();
            let view = exact.view();
            // In id order (see `Graph::outside_without_point`).
            let items: Vec<(u64, Vec<f32>)> = graph
                .outside_without_point(max)
                .into_iter()
                .filter_map(|id| view.get(id).map(|v| (id, v.to_vec())))
                .collect();
            let ids: Vec<u64> = items.iter().map(|(id, _)| *id).collect();
            graph.register_pending(&ids);
            items
        };
        if items.is_empty() {
            return Ok(0);
        }
        let refs: Vec<(u64, &[f32])> = items.iter().map(|(id, v)| (*id, v.as_slice())).collect();
        // The heavy part, holding no lock anyone else waits for (only the build lock), so
        // it may go to the low-priority pool. Only this thread changes the links meanwhile.
        let (inserted, unreachable) = workers.run(|| {
            let inserted = graph.insert_registered(&refs);
            let unreachable = if inserted.is_ok() {
                graph.unreachable_ids()
            } else {
                Vec::new()
            };
            (inserted, unreachable)
        });
        let _mutation = self.mutation.lock();
        let slots = match inserted {
            Ok(slots) => slots,
            Err(error) => {
                // A failed insertion (a panic inside the graph) may have stopped halfway
                // through linking a point, and the graph no longer agrees with its membership:
                // it is dropped at once, before anything else, so that no search that starts
                // from now on walks it. Searches score exactly until a rebuild makes a fresh
                // graph from the live vectors: at once at [`EXACT_THRESHOLD`] live vectors or
                // more (the background worker goes on to it); below that, the store stays
                // exact, as it does before its first graph.
                let mut current = self.graph.write();
                if current.as_ref().is_some_and(|g| Arc::ptr_eq(g, &graph)) {
                    *current = None;
                }
                return Err(error);
            }
        };
        let mut exact = self.exact.write();
        let by_id: std::collections::HashMap<u64, &[f32]> = refs.iter().copied().collect();
        let ids: Vec<u64> = items.iter().map(|(id, _)| *id).collect();
        graph.settle(&ids, |id| {
            by_id.get(&id).is_some_and(|vector| exact.holds(id, vector))
        });
        // New points (and old ones their links displaced) that no search would reach are
        // scored exactly instead. They keep a dead point, so they are not absorbed again.
        graph.score_outside(&unreachable);
        // The vectors of the points that turned live are read from the graph from now on:
        // their own rows in the exact store are freed (each vector held once).
        let membership = graph.membership();
        exact.adopt(&graph.shared_links(), slots, |id| membership.is_live(id));
        Ok(items.len())
    }

    /// Removes `id`; returns whether it was live. Its graph point (if any) turns dead.
    pub(crate) fn remove(&self, id: u64) -> bool {
        let _mutation = self.mutation.lock();
        let mut exact = self.exact.write();
        if !exact.remove(id) {
            return false;
        }
        if let Some(journal) = self.journal.lock().as_mut() {
            journal.push(id);
        }
        if let Some(graph) = self.graph.read().as_ref() {
            graph.mark_removed(id);
        }
        true
    }

    /// Number of live vectors.
    pub(crate) fn len_live(&self) -> usize {
        self.exact.read().len()
    }

    /// The live ids, sorted.
    pub(crate) fn live_ids(&self) -> Vec<u64> {
        let mut ids = self.exact.read().ids();
        ids.sort_unstable();
        ids
    }

    /// The `k` live vectors nearest to `query` that pass `filter`, best first, as
    /// `(id, score)`: cosine similarity (higher is better) or L2 distance (lower is
    /// better), see [`Metric`]. Ties are broken by id. Fewer than `k` hits only when
    /// fewer live vectors pass the filter (or, for ANN, when the graph misses them).
    pub(crate) fn search(
        &self,
        query: &[f32],
        k: usize,
        mode: SearchMode,
        filter: IdFilter<'_>,
    ) -> Result<Vec<(u64, f32)>, IndexError> {
        self.validate(query)?;
        let exact = self.exact.read();
        let ef = match mode {
            SearchMode::Exact => None,
            SearchMode::Ann { ef } => Some(ef),
            SearchMode::Auto if exact.len() < EXACT_THRESHOLD => None,
            SearchMode::Auto => Some(DEFAULT_EF_SEARCH),
        };
        let graph = ef.and_then(|_| self.graph.read().clone());
        let candidates: Vec<Candidate> = match (ef, graph) {
            (Some(ef), Some(graph)) => graph.search(&exact, query, k, ef, filter),
            _ => exact.search(query, k, filter),
        };
        Ok(candidates
            .into_iter()
            .map(|c| (c.id, self.metric.score(c.distance)))
            .collect())
    }

    /// The `k` nearest among `ids` (those live; others are skipped), scored exactly, best
    /// first, as [`Self::search`] reports them. For filters that pass few vectors: a scan
    /// of just the vectors they pass costs less than a graph search that has to reject
    /// most of what it reaches.
    pub(crate) fn search_among(
        &self,
        query: &[f32],
        k: usize,
        ids: impl IntoIterator<Item = u64>,
    ) -> Result<Vec<(u64, f32)>, IndexError> {
        self.validate(query)?;
        let exact = self.exact.read();
        let mut top = TopK::new(k);
        for candidate in exact.distances_to(query, ids) {
            top.push(candidate);
        }
        Ok(top
            .into_sorted()
            .into_iter()
            .map(|c| (c.id, self.metric.score(c.distance)))
            .collect())
    }

    /// Checks the index's invariants: the exact store's layout, and that the graph's
    /// membership agrees with the live set (every live id is a live graph point or is
    /// scored outside the graph; no other id can be returned). For the store's
    /// `verify()` and the tests; costs a pass over all ids.
    pub(crate) fn verify(&self) -> Result<(), String> {
        // Under the mutation lock: an insert briefly has ids live in the exact store
        // before their graph points are marked live (searches may miss them meanwhile).
        let _mutation = self.mutation.lock();
        let exact = self.exact.read();
        exact.verify()?;
        match self.graph.read().as_ref() {
            Some(graph) => graph.verify(&exact),
            None => Ok(()),
        }
    }

    /// Whether a graph is ready (searches in ANN mode use it).
    pub(crate) fn graph_ready(&self) -> bool {
        self.graph.read().is_some()
    }

    /// Fraction of the graph's points that are dead (removed or superseded); 0 without
    /// a graph. Points being inserted count once they settle. Dead points cost memory and
    /// search time, never correctness.
    pub(crate) fn dead_fraction(&self) -> f64 {
        self.graph
            .read()
            .as_ref()
            .map_or(0.0, |graph| graph.dead_fraction())
    }

    /// Whether [`Self::build_graph`] is worth calling: no graph yet while there are at
    /// least [`EXACT_THRESHOLD`] live vectors, or more than `threshold` (a fraction, e.g.
    /// 0.2) of the graph's points dead, or more than `threshold` of the live vectors
    /// scored outside the graph.
    pub(crate) fn needs_rebuild(&self, threshold: f64) -> bool {
        let live = self.len_live();
        let graph = self.graph.read().clone();
        match graph {
            None => live >= EXACT_THRESHOLD,
            Some(graph) => {
                self.dead_fraction() > threshold
                    || graph.outside_count() as f64 > threshold * live.max(1) as f64
            }
        }
    }

    /// Builds a fresh graph from the current live vectors and swaps it in; the old one
    /// keeps serving searches meanwhile. Meant for a background thread; inserts and
    /// removals may continue during the build: they are journalled and replayed onto
    /// the new graph's membership before the swap, which happens under the mutation lock,
    /// so none is lost (ids new since the build started are scored outside the graph
    /// until [`Self::absorb_outside`] moves them in). One build (or snapshot load) runs
    /// at a time.
    pub(crate) fn build_graph(&self) -> Result<(), IndexError> {
        self.build_graph_with(Workers::Foreground)
    }

    /// [`Self::build_graph`] with the inserts on the low-priority background pool (see
    /// [`workers`]), for builds nobody waits for.
    pub(crate) fn build_graph_in_background(&self) -> Result<(), IndexError> {
        self.build_graph_with(Workers::Background)
    }

    fn build_graph_with(&self, workers: Workers) -> Result<(), IndexError> {
        let _build = self.build.lock();
        let journal = self.start_journal();
        // In id order, as the absorber links: a rebuild's ids held by the old graph come
        // from a map whose iteration order its per-process hash seed decides.
        let mut ids = self.exact.read().ids();
        ids.sort_unstable();
        let graph = Graph::new(self.metric, self.dim, self.params);
        graph.links().reserve(ids.len());
        #[cfg(test)]
        {
            self.builds.0.fetch_add(1, Ordering::SeqCst);
            if self.builds.1.load(Ordering::SeqCst) {
                graph.fail_inserts_after(Some(0));
            }
        }
        self.populate(&graph, &ids, workers)?;
        self.catch_up_and_install(graph, journal, None, workers)
    }

    /// Serialises the current graph's links into blobs (see [`persisted`]); `None` without
    /// a graph. Holds the build lock while the links are copied (they must be one state),
    /// so run it off the write path.
    pub(crate) fn snapshot_blobs(&self) -> Result<Option<Vec<Vec<u8>>>, IndexError> {
        // No absorber or build may insert while the graph is dumped and walked; writers
        // may go on (they change the membership, which the snapshot does not hold).
        let _build = self.build.lock();
        let Some(graph) = self.graph.read().clone() else {
            return Ok(None);
        };
        persisted::to_blobs(&graph).map(Some)
    }

    #[cfg(test)]
    /// Loads a graph from blobs made by [`Self::snapshot_blobs`] and swaps it in:
    /// [`parse_snapshot`] then [`Self::install_snapshot`].
    pub(crate) fn load_snapshot<B: AsRef<[u8]>>(&self, blobs: &[B]) -> Result<(), IndexError> {
        let loaded = parse_snapshot(blobs, self.metric, self.dim)?;
        self.install_snapshot(loaded)
    }

    /// Swaps in a graph parsed by [`parse_snapshot`]: its points take their vectors from
    /// the exact store (the snapshot holds links only), and a point is used only if its id
    /// is live with the vector it was inserted with (see [`persisted`]). Live ids the
    /// snapshot lacks are scored outside the graph (exactly) until
    /// [`Self::absorb_outside`] inserts them, so the graph serves at once however old the
    /// snapshot is: staleness costs search speed until absorbed, never correctness.
    pub(crate) fn install_snapshot(&self, parsed: ParsedSnapshot) -> Result<(), IndexError> {
        let _build = self.build.lock();
        let journal = self.start_journal();
        let (graph, unreachable) = {
            let exact = self.exact.read();
            let view = exact.view();
            parsed.into_graph(&exact.ids(), |id| view.get(id))?
        };
        self.catch_up_and_install(graph, journal, Some(unreachable), Workers::Foreground)
    }

    /// Tests only: while `on`, the inserts of every graph build panic (see
    /// `Graph::fail_inserts_after`).
    #[cfg(test)]
    pub(crate) fn fail_builds(&self, on: bool) {
        self.builds.1.store(on, Ordering::SeqCst);
    }

    /// Tests only: graph builds started so far.
    #[cfg(test)]
    pub(crate) fn builds_started(&self) -> usize {
        self.builds.0.load(Ordering::SeqCst)
    }

    /// Tests only: makes insertions into the current graph panic after `points` more
    /// (see `Graph::fail_inserts_after`); `false` without a graph.
    #[cfg(test)]
    pub(crate) fn fail_graph_inserts_after(&self, points: Option<u64>) -> bool {
        self.graph
            .read()
            .as_ref()
            .map(|graph| graph.fail_inserts_after(points))
            .is_some()
    }

    /// Number of points (live or dead) in the current graph; 0 without one.
    pub(crate) fn graph_point_count(&self) -> usize {
        self.graph.read().as_ref().map_or(0, |g| g.point_count())
    }

    fn start_journal(&self) -> JournalGuard<'_> {
        let _mutation = self.mutation.lock();
        *self.journal.lock() = Some(Vec::new());
        JournalGuard(&self.journal)
    }

    /// Inserts the still-live ids of `ids` into `graph`, a chunk at a time, from copies
    /// (the exact store is not locked while the graph grows).
    fn populate(&self, graph: &Graph, ids: &[u64], workers: Workers) -> Result<(), IndexError> {
        for chunk in ids.chunks(BUILD_CHUNK) {
            if self.is_closed() {
                return Err(IndexError::Closed);
            }
            let mut chunk_ids = Vec::with_capacity(chunk.len());
            let mut chunk_data = Vec::with_capacity(chunk.len() * self.dim);
            {
                let exact = self.exact.read();
                let view = exact.view();
                for &id in chunk {
                    if let Some(vector) = view.get(id) {
                        chunk_ids.push(id);
                        chunk_data.extend_from_slice(vector);
                    }
                }
            }
            let items: Vec<(u64, &[f32])> = chunk_ids
                .iter()
                .copied()
                .zip(chunk_data.chunks_exact(self.dim))
                .collect();
            workers.run(|| graph.insert_points(&items))?;
        }
        Ok(())
    }

    /// Replays journalled changes onto `graph` until few are left, then replays the rest
    /// and swaps the graph in under the mutation lock. `unreachable`: the graph's points
    /// no search reaches, if known (from a snapshot); otherwise computed here, before the
    /// lock (replays change only the membership, never the links).
    ///
    /// A replay inserts nothing: ids written since the build started are scored outside
    /// the graph, for the absorber to move in once the graph serves. So installing costs
    /// bookkeeping proportional to the changes, however fast they keep coming (inserting
    /// them here chased a moving target: under sustained ingestion a build never
    /// installed).
    fn catch_up_and_install(
        &self,
        graph: Graph,
        journal: JournalGuard<'_>,
        unreachable: Option<Vec<u64>>,
        workers: Workers,
    ) -> Result<(), IndexError> {
        // Points no search would reach are scored exactly instead (never silently lost).
        let unreachable = match unreachable {
            Some(ids) => ids,
            None => workers.run(|| graph.unreachable_ids()),
        };
        for _ in 0..CATCH_UP_ROUNDS {
            let changed = self
                .journal
                .lock()
                .as_mut()
                .map(std::mem::take)
                .unwrap_or_default();
            if changed.len() <= CATCH_UP_FINAL {
                if let Some(journal) = self.journal.lock().as_mut() {
                    journal.extend_from_slice(&changed);
                }
                break;
            }
            self.replay(&graph, changed);
        }
        let mutation = self.mutation.lock();
        let changed = self.journal.lock().take().unwrap_or_default();
        self.replay(&graph, changed);
        graph.score_outside(&unreachable);
        let graph = Arc::new(graph);
        // The exact store reads the new graph's live points' vectors in place and frees
        // its own copies (and the previous graph's array, once no search holds it).
        {
            let mut exact = self.exact.write();
            let membership = graph.membership();
            exact.rebind(graph.shared_links(), |id| membership.is_live(id));
        }
        let replaced = self.graph.write().replace(graph);
        drop(mutation);
        drop(journal);
        // What the load or build freed (the own rows' copies, a snapshot's parsed parts and
        // the reads of it, the build threads' temporaries, the graph it replaced unless a
        // search still holds it) goes back to the system as the graph starts serving:
        // glibc keeps freed heap below its mapping threshold resident for the threads that
        // freed it (at 100k x 384-d, 16 MB after a reopen). Outside the mutation lock,
        // which writes and searches catching up wait on.
        drop(replaced);
        crate::sys::release_free_heap();
        Ok(())
    }

    /// Brings the membership of `graph` up to date for the ids in `changed`.
    /// Conservative: a changed id that already has a point is scored outside the graph
    /// (the point may hold the vector from before the change); a new id is scored outside
    /// until absorbed.
    fn replay(&self, graph: &Graph, mut changed: Vec<u64>) {
        changed.sort_unstable();
        changed.dedup();
        let exact = self.exact.read();
        for id in changed {
            if exact.contains(id) {
                graph.mark_outside(id);
            } else {
                graph.mark_removed(id);
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod test_support {
    //! Deterministic data for the index tests.

    use super::normalize;

    /// Runs `work` on a one-thread rayon pool: a graph built or grown there links its
    /// points in one order, so its links depend only on the vectors and the seeded levels
    /// (see `tests::build_on_one_thread`).
    pub(crate) fn on_one_thread<R: Send>(work: impl FnOnce() -> R + Send) -> R {
        rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap()
            .install(work)
    }

    /// The crate's one SplitMix64 (`testkit`), with the draws these tests need.
    pub(crate) struct SplitMix64(crate::testkit::SplitMix64);

    impl SplitMix64 {
        pub(crate) fn new(seed: u64) -> Self {
            SplitMix64(crate::testkit::SplitMix64::new(seed))
        }
        pub(crate) fn next_u64(&mut self) -> u64 {
            self.0.next_u64()
        }
        /// Uniform in [-1, 1).
        pub(crate) fn unit(&mut self) -> f32 {
            (self.next_u64() >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        }
        /// Uniform in 0..n.
        pub(crate) fn below(&mut self, n: usize) -> usize {
            (self.next_u64() % n as u64) as usize
        }
    }

    /// `n` random unit vectors.
    pub(crate) fn random_unit_vectors(seed: u64, n: usize, dim: usize) -> Vec<Vec<f32>> {
        let mut rng = SplitMix64::new(seed);
        (0..n)
            .map(|_| {
                let mut v: Vec<f32> = (0..dim).map(|_| rng.unit()).collect();
                assert!(normalize(&mut v));
                v
            })
            .collect()
    }

    /// `n` unit vectors with low-rank structure, like embeddings: an 8-dimensional
    /// random latent times a fixed 8 x `dim` matrix, plus small noise, normalised.
    pub(crate) fn low_rank_vectors(seed: u64, n: usize, dim: usize) -> Vec<Vec<f32>> {
        const LATENT: usize = 8;
        let mut rng = SplitMix64::new(seed);
        let basis: Vec<f32> = (0..LATENT * dim).map(|_| rng.unit()).collect();
        (0..n)
            .map(|_| {
                let latent: Vec<f32> = (0..LATENT).map(|_| rng.unit()).collect();
                let mut v: Vec<f32> = (0..dim)
                    .map(|j| {
                        let signal: f32 = (0..LATENT).map(|l| latent[l] * basis[l * dim + j]).sum();
                        signal + 0.05 * rng.unit()
                    })
                    .collect();
                assert!(normalize(&mut v));
                v
            })
            .collect()
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod quantizer_drift_tests;
