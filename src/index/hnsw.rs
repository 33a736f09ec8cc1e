//! The approximate graph: a wrapper around `hnsw_rs` 0.3 with deletion by filtering.
//!
//! `hnsw_rs` has no deletion, so a graph point is never removed: [`Membership`] records,
//! per vector id with a point in the graph, whether that point is still live. Dead
//! points still route the traversal; searches drop them from the hits (see
//! [`Graph::search`] for why this does not use `hnsw_rs`'s filtered search).
//! When a live id gets a new vector while its old one is in the graph, the old point is
//! marked dead and the id is put in the `outside` set: those few ids are scored exactly
//! at query time and merged with the graph's hits. A rebuild folds them back in.
//!
//! Ids: `hnsw_rs`'s `DataId` is `usize`; a vector id `u64` maps to it unchanged. On
//! 64-bit targets every id fits; elsewhere an id above `usize::MAX` is refused with
//! [`IndexError::IdOutOfRange`] before anything changes.
//!
//! Thread safety: `Hnsw::insert` and `Hnsw::search` take `&self` and lock
//! internally, so inserts and searches run concurrently on one graph.

use std::collections::{HashMap, HashSet};
use std::panic::{catch_unwind, AssertUnwindSafe};

use hnsw_rs::hnsw::{Hnsw, Neighbour, PointId};
use hnsw_rs::hnswio::HnswIo;
use parking_lot::RwLock;
use rayon::prelude::*;

use super::distance::KernelDistance;
use super::exact::{Candidate, ExactStore, IdFilter};
use super::membership::Membership;
use super::panic_message;
use super::view::{GraphView, Slots, MAX_LAYER};
use super::{IndexError, Metric};
use std::sync::Arc;

/// How a new graph is built: `Options::index` (whose docs give the defaults and why).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct GraphParams {
    /// Links per point per layer (layer 0 keeps twice as many). `hnsw_rs` accepts <= 256.
    pub(crate) m: usize,
    /// Candidate list width while inserting.
    pub(crate) ef_construction: usize,
}

impl Default for GraphParams {
    fn default() -> Self {
        GraphParams {
            m: crate::options::DEFAULT_INDEX_M,
            ef_construction: crate::options::DEFAULT_INDEX_EF_CONSTRUCTION,
        }
    }
}
/// Below this many points an insert batch runs on the calling thread (no rayon).
const PARALLEL_INSERT_MIN: usize = 64;

/// The `hnsw_rs` graph type we use, over f32 vectors and our distance kernel.
pub(crate) type HnswGraph<'a> = Hnsw<'a, f32, KernelDistance>;

self_cell::self_cell!(
    /// An `Hnsw` together with the `HnswIo` it was loaded from.
    ///
    /// `HnswIo::load_hnsw_with_dist` returns an `Hnsw<'b, ..>` borrowing the loader
    /// (needed for its mmap mode; we never enable mmap, so the points own their data,
    /// but the type still borrows). `self_cell` keeps the two together soundly, without
    /// `unsafe` here. A freshly built graph owns an unused `HnswIo::default()`.
    pub(crate) struct HnswCell {
        owner: HnswIo,

        #[not_covariant]
        dependent: HnswGraph,
    }
);

/// An HNSW graph over some of the vectors of an [`ExactStore`], plus its membership.
pub(crate) struct Graph {
    metric: Metric,
    dim: usize,
    cell: HnswCell,
    membership: RwLock<Membership>,
    /// The same links and vectors in flat arrays ([`GraphView`]), searched instead of
    /// `hnsw_rs` (measured 1.7-2.5x faster) while it covers every point; refreshed by
    /// [`Graph::refresh_view`] after the graph grows.
    view: RwLock<Option<Arc<GraphView>>>,
    /// Tests only: how many more points may be inserted before every insertion panics
    /// (`u64::MAX`: never); see [`Graph::fail_inserts_after`].
    #[cfg(test)]
    inserts_before_panic: std::sync::atomic::AtomicU64,
}

/// Converts a vector id to `hnsw_rs`'s `DataId`.
pub(crate) fn data_id(id: u64) -> Result<usize, IndexError> {
    usize::try_from(id).map_err(|_| IndexError::IdOutOfRange { id })
}

impl Graph {
    /// An empty graph sized for about `capacity` points, built with `params`.
    pub(crate) fn new(metric: Metric, dim: usize, capacity: usize, params: GraphParams) -> Self {
        let cell = HnswCell::new(HnswIo::default(), |_| {
            Hnsw::new(
                params.m,
                capacity,
                MAX_LAYER,
                params.ef_construction,
                KernelDistance { metric },
            )
        });
        Graph::from_cell(metric, dim, cell, Membership::default())
    }

    /// Wraps a loaded cell (see `snapshot`).
    pub(crate) fn from_cell(
        metric: Metric,
        dim: usize,
        cell: HnswCell,
        membership: Membership,
    ) -> Self {
        Graph {
            metric,
            dim,
            cell,
            membership: RwLock::new(membership),
            view: RwLock::new(None),
            #[cfg(test)]
            inserts_before_panic: std::sync::atomic::AtomicU64::new(u64::MAX),
        }
    }

    /// Tests only: after `points` more insertions (`None`: never), every insertion panics
    /// inside the insert loop, on whichever thread runs it (a rayon worker for large
    /// batches), as a bug in `hnsw_rs` would: a batch is then left partly inserted.
    #[cfg(test)]
    pub(crate) fn fail_inserts_after(&self, points: Option<u64>) {
        self.inserts_before_panic.store(
            points.unwrap_or(u64::MAX),
            std::sync::atomic::Ordering::SeqCst,
        );
    }

    /// Called before each point's insertion: nothing, except in tests (see
    /// [`Graph::fail_inserts_after`]).
    #[inline]
    fn before_insert(&self) {
        #[cfg(test)]
        {
            use std::sync::atomic::Ordering::SeqCst;
            let left = self
                .inserts_before_panic
                .fetch_update(SeqCst, SeqCst, |left| {
                    (left != u64::MAX).then(|| left.saturating_sub(1))
                });
            if left == Ok(0) {
                panic!("injected hnsw_rs insert panic");
            }
        }
    }

    /// Inserts `batch` into `hnsw_rs` (rayon-parallel for large batches). A panic in it (a
    /// bug there, or in the distance kernel) becomes [`IndexError::Graph`], so that the
    /// callers' clean-up runs: a build discards its new graph, the absorber drops the
    /// graph (which may now hold some of its points, partly linked), and the background
    /// worker goes on to a rebuild or clears its `building` flag.
    fn insert_into_hnsw(&self, batch: Vec<(&[f32], usize)>) -> Result<(), IndexError> {
        let inserted = catch_unwind(AssertUnwindSafe(|| {
            self.with_hnsw(|hnsw| {
                if batch.len() >= PARALLEL_INSERT_MIN {
                    // `Hnsw::parallel_insert_slice` is exactly this loop (hnsw_rs 0.3.5);
                    // written out so that tests can fail one insertion inside it.
                    batch.par_iter().for_each(|&item| {
                        self.before_insert();
                        hnsw.insert_slice(item);
                    });
                } else {
                    for &item in &batch {
                        self.before_insert();
                        hnsw.insert_slice(item);
                    }
                }
            })
        }));
        inserted.map_err(|payload| IndexError::Graph {
            detail: format!("insert panicked: {}", panic_message(payload.as_ref())),
        })
    }

    /// Runs `f` on the underlying `hnsw_rs` graph.
    pub(crate) fn with_hnsw<R>(&self, f: impl for<'a> FnOnce(&HnswGraph<'a>) -> R) -> R {
        self.cell.with_dependent(|_, hnsw| f(hnsw))
    }

    /// The metric the graph was built with.
    pub(crate) fn metric(&self) -> Metric {
        self.metric
    }

    /// The vector dimension.
    pub(crate) fn dim(&self) -> usize {
        self.dim
    }

    /// Number of points in the graph, live or dead.
    pub(crate) fn point_count(&self) -> usize {
        self.membership.read().points.len()
    }

    /// Number of dead points (counting those whose insertion is in flight).
    #[cfg(test)]
    pub(crate) fn dead_count(&self) -> usize {
        self.membership.read().dead
    }

    /// Dead points as a share of the settled points. A point whose insertion is in flight
    /// is registered dead until it settles, but it is neither: it turns live unless its id
    /// was superseded meanwhile, and is judged then. Counting it dead made a graph of 8,192
    /// points absorbing a chunk of 2,048 report a fifth of itself dead, with no deletes.
    pub(crate) fn dead_fraction(&self) -> f64 {
        let membership = self.membership.read();
        let settled = membership.points.len().saturating_sub(membership.pending);
        let dead = membership.dead.saturating_sub(membership.pending);
        if settled == 0 {
            0.0
        } else {
            dead as f64 / settled as f64
        }
    }

    /// Number of live ids scored outside the graph.
    pub(crate) fn outside_count(&self) -> usize {
        self.membership.read().outside.len()
    }

    /// Whether `id` has a point (live or dead) in the graph.
    pub(crate) fn has_point(&self, id: u64) -> bool {
        self.membership.read().points.contains_key(&id)
    }

    #[cfg(test)]
    /// Whether `id` has a live point in the graph.
    pub(crate) fn is_live(&self, id: u64) -> bool {
        self.membership.read().is_live(id)
    }

    /// `id` is no longer live: its point (if any) is dead and it is not scored outside.
    pub(crate) fn mark_removed(&self, id: u64) {
        self.membership.write().remove(id);
    }

    /// `id` is live with a vector the graph does not hold: its point (if any) is dead and
    /// it is scored outside the graph.
    pub(crate) fn mark_outside(&self, id: u64) {
        self.membership.write().set_outside(id);
    }

    /// Inserts new points (ids without a point in the graph) and marks them live.
    /// Uses `hnsw_rs`'s rayon-parallel insert for large batches.
    pub(crate) fn insert_points(&self, items: &[(u64, &[f32])]) -> Result<(), IndexError> {
        if items.is_empty() {
            return Ok(());
        }
        let mut batch = Vec::with_capacity(items.len());
        for &(id, vector) in items {
            debug_assert_eq!(vector.len(), self.dim);
            debug_assert!(!self.has_point(id), "id {id} inserted twice into a graph");
            batch.push((vector, data_id(id)?));
        }
        self.insert_into_hnsw(batch)?;
        let has_view = self.view.read().is_some();
        let mut membership = self.membership.write();
        for &(id, _) in items {
            membership.points.insert(id, true);
            if has_view {
                membership.unviewed.insert(id);
            }
        }
        Ok(())
    }

    /// Up to `max` outside ids that have no point in the graph yet.
    pub(crate) fn outside_without_point(&self, max: usize) -> Vec<u64> {
        let membership = self.membership.read();
        membership
            .outside
            .iter()
            .filter(|id| !membership.points.contains_key(id))
            .take(max)
            .copied()
            .collect()
    }

    /// Registers points about to be inserted for outside ids: dead until settled, so
    /// searches keep scoring them outside. Call with writers excluded.
    pub(crate) fn register_pending(&self, ids: &[u64]) {
        let has_view = self.view.read().is_some();
        let mut membership = self.membership.write();
        for &id in ids {
            if membership.points.insert(id, false).is_none() {
                membership.dead += 1;
                membership.pending += 1;
                if has_view {
                    membership.unviewed.insert(id);
                }
            }
        }
    }

    /// Inserts registered points into `hnsw_rs` (no lock writers need is held), to be
    /// settled with [`Graph::settle`].
    pub(crate) fn insert_registered(&self, items: &[(u64, &[f32])]) -> Result<(), IndexError> {
        let mut batch = Vec::with_capacity(items.len());
        for &(id, vector) in items {
            batch.push((vector, data_id(id)?));
        }
        self.insert_into_hnsw(batch)
    }

    /// Settles points inserted by [`Graph::insert_pending`]: a point whose id is still
    /// live with the inserted vector (`still_live`) becomes live and leaves the outside
    /// set; the others stay dead. Call with writers excluded.
    pub(crate) fn settle(&self, ids: &[u64], still_live: impl Fn(u64) -> bool) {
        let mut membership = self.membership.write();
        membership.pending = membership.pending.saturating_sub(ids.len());
        for &id in ids {
            if still_live(id) && membership.outside.remove(&id) {
                if let Some(live) = membership.points.get_mut(&id) {
                    if !*live {
                        *live = true;
                        membership.dead -= 1;
                    }
                }
            }
        }
    }

    /// Ids of the points no search can reach: not linked through layer 0 (where every
    /// search ends, widening from the point its descent reached) from the top layer's
    /// points. `hnsw_rs` drops a point from a neighbour's list when closer points fill it,
    /// so an outlier can be left with no incoming layer-0 link at all (seen: ~2% of the
    /// points of an L2 store whose vectors have varied norms, not found even by a search
    /// as wide as the graph). Costs one pass over every point's layer-0 links; see
    /// [`Graph::score_outside`].
    pub(crate) fn unreachable_ids(&self) -> Vec<u64> {
        self.with_hnsw(|hnsw| {
            // `hnsw_rs`'s point iterator unwraps the entry point (none when empty), and
            // takes its layer lock twice: no insert may run meanwhile (the callers hold the
            // build lock or own the graph alone).
            if hnsw.get_nb_point() == 0 {
                return Vec::new();
            }
            let indexation = hnsw.get_point_indexation();
            let top = indexation.get_max_level_observed();
            let mut p_ids: Vec<PointId> = Vec::new();
            let mut ids: Vec<u64> = Vec::new();
            let mut neighbours: Vec<Vec<PointId>> = Vec::new();
            for point in indexation {
                p_ids.push(point.get_point_id());
                ids.push(point.get_origin_id() as u64);
                neighbours.push(
                    point
                        .get_neighborhood_id()
                        .into_iter()
                        .take(1)
                        .flatten()
                        .map(|n| n.p_id)
                        .collect(),
                );
            }
            // The iterator yields layer 0 first, each layer in rank order, so a point's slot
            // is its layer's offset plus its rank; a hash map is the fallback should a
            // future `hnsw_rs` lay points out otherwise.
            let mut sizes = [0usize; MAX_LAYER];
            for p_id in &p_ids {
                if let Some(size) = sizes.get_mut(usize::from(p_id.0)) {
                    *size += 1;
                }
            }
            let slots = Slots::new(|layer| sizes[layer]);
            let ranked = |p_id: &PointId| {
                let slot = slots.of(usize::from(p_id.0), i64::from(p_id.1))?;
                usize::try_from(slot).ok()
            };
            let in_rank_order = p_ids
                .iter()
                .enumerate()
                .all(|(slot, p_id)| ranked(p_id) == Some(slot));
            let slot_map: HashMap<PointId, usize> = if in_rank_order {
                HashMap::new()
            } else {
                p_ids
                    .iter()
                    .enumerate()
                    .map(|(slot, &p)| (p, slot))
                    .collect()
            };
            let slot_of = |p_id: &PointId| {
                if in_rank_order {
                    ranked(p_id)
                } else {
                    slot_map.get(p_id).copied()
                }
            };
            let links: Vec<Vec<usize>> = neighbours
                .iter()
                .map(|list| list.iter().filter_map(slot_of).collect())
                .collect();
            let mut stack: Vec<usize> = p_ids
                .iter()
                .enumerate()
                .filter(|(_, p_id)| p_id.0 == top)
                .map(|(slot, _)| slot)
                .collect();
            let mut reached = vec![false; ids.len()];
            for &slot in &stack {
                reached[slot] = true;
            }
            while let Some(slot) = stack.pop() {
                for &next in &links[slot] {
                    if !reached[next] {
                        reached[next] = true;
                        stack.push(next);
                    }
                }
            }
            ids.into_iter()
                .zip(reached)
                .filter(|(_, reached)| !reached)
                .map(|(id, _)| id)
                .collect()
        })
    }

    /// Scores the ids of `ids` whose point is live outside the graph instead (exactly, at
    /// query time): for points no search reaches. Call with writers excluded.
    pub(crate) fn score_outside(&self, ids: &[u64]) {
        self.membership.write().score_outside(ids);
    }

    /// Replaces the membership (of a freshly loaded graph, see `snapshot`).
    pub(crate) fn set_membership(&self, membership: Membership) {
        *self.membership.write() = membership;
    }

    /// Checks the membership invariants against the exact store: every live id is a
    /// live point xor scored outside; every live point and outside id is live; the dead
    /// count is right; every `hnsw_rs` point has a membership entry.
    pub(crate) fn verify(&self, exact: &ExactStore) -> Result<(), String> {
        let membership = self.membership.read();
        for &id in exact.ids() {
            if membership.is_live(id) == membership.outside.contains(&id) {
                return Err(format!("live id {id} must be a live point xor outside"));
            }
        }
        for (&id, &live) in &membership.points {
            if live && !exact.contains(id) {
                return Err(format!("graph point {id} is live but id {id} is not"));
            }
        }
        if let Some(id) = membership.outside.iter().find(|&&id| !exact.contains(id)) {
            return Err(format!("outside id {id} is not live"));
        }
        let dead = membership.points.values().filter(|&&live| !live).count();
        if dead != membership.dead {
            return Err(format!("dead count {} != {dead}", membership.dead));
        }
        // The flat view answers graph searches: every live point must be in it, or scored
        // exactly beside it as added since its export.
        if let Some(view) = self.view.read().as_ref() {
            let in_view: HashSet<u64> = view.ids().iter().copied().collect();
            let hidden = membership.points.iter().find(|&(id, &live)| {
                live && !in_view.contains(id) && !membership.unviewed.contains(id)
            });
            if let Some((id, _)) = hidden {
                return Err(format!(
                    "live point {id} is neither in the search view nor scored beside it"
                ));
            }
        }
        let points = self.with_hnsw(|hnsw| hnsw.get_nb_point());
        if points + membership.pending < membership.points.len() || points > membership.points.len()
        {
            return Err(format!(
                "hnsw has {points} points, membership {}",
                membership.points.len()
            ));
        }
        Ok(())
    }

    /// The `k` nearest live vectors to `query` passing `filter`, nearest first, as
    /// internal distances: the graph's hits merged with an exact scoring of the
    /// `outside` ids. `exact` must be the index's store, read-locked by the caller for
    /// the whole call, so that the live set cannot change under the search.
    ///
    /// Searches the flat view when there is one ([`Membership::search_view`]: dead points
    /// and the filter applied inside the traversal). Without a view, `hnsw_rs` answers and
    /// dead points and the caller's filter are applied to its hits afterwards, not through
    /// `hnsw_rs`'s `search_filter`: that one never stops early once a filter is given (it
    /// drains its candidate heap), which measured 2x slower with a filter that passes
    /// everything, and 200x slower than the exact scan with a filter passing 1% (it walks
    /// the whole graph). Instead the graph is asked for `max(k, ef) / live fraction` hits;
    /// if fewer than `k` survive the filters, the request grows by the observed pass rate,
    /// and once it would exceed `MAX_OVERFETCH` x `max(k, ef)` the exact scan answers
    /// instead (a filter that selective leaves the scan few distances to compute).
    pub(crate) fn search(
        &self,
        exact: &ExactStore,
        query: &[f32],
        k: usize,
        ef: usize,
        filter: IdFilter<'_>,
    ) -> Vec<Candidate> {
        let membership = self.membership.read();
        // Points added since the view was exported are not in it: scored exactly.
        match self.view.read().clone() {
            Some(view) => membership.search_view(exact, &view, query, k, ef, filter, true),
            None => membership.search(
                exact,
                query,
                k,
                ef,
                filter,
                |fetch| {
                    let hits: Vec<Neighbour> =
                        self.with_hnsw(|hnsw| hnsw.search(query, fetch, fetch));
                    hits.into_iter()
                        .map(|hit| (hit.d_id as u64, hit.distance))
                        .collect()
                },
                false,
            ),
        }
    }

    /// Uses `view` (of this very graph as it is now, e.g. the snapshot it was just loaded
    /// from) for searches. Call with inserts excluded.
    pub(crate) fn set_view(&self, view: Arc<GraphView>) {
        let mut membership = self.membership.write();
        membership.unviewed.clear();
        *self.view.write() = Some(view);
    }

    #[cfg(test)]
    /// The flat view searches use, if any.
    pub(crate) fn view(&self) -> Option<Arc<GraphView>> {
        self.view.read().clone()
    }

    #[cfg(test)]
    /// Drops the record of points added since the view's export (a bug, for a test).
    pub(crate) fn forget_unviewed(&self) {
        self.membership.write().unviewed.clear();
    }

    /// Whether the view should be exported again: there is none, or at least `min` and a
    /// fiftieth of the graph's points were added since.
    pub(crate) fn view_due(&self, min: usize) -> bool {
        let membership = self.membership.read();
        let unviewed = membership.unviewed.len();
        self.view.read().is_none()
            || (unviewed > 0 && unviewed >= min.max(membership.points.len() / 50))
    }

    /// Exports the `hnsw_rs` graph into a flat view for searches. Call with inserts
    /// excluded (the build lock held, or the graph owned alone); leaves no view if the
    /// graph cannot be exported (then `hnsw_rs` answers, as before).
    pub(crate) fn refresh_view(&self) {
        let view = self.export_view().map(Arc::new);
        let mut membership = self.membership.write();
        membership.unviewed.clear();
        *self.view.write() = view;
    }

    fn export_view(&self) -> Option<GraphView> {
        self.with_hnsw(|hnsw| {
            if hnsw.get_nb_point() == 0 {
                return None;
            }
            let indexation = hnsw.get_point_indexation();
            let top = usize::from(indexation.get_max_level_observed());
            let slots = Slots::new(|layer| indexation.get_layer_nb_point(layer));
            let n = slots.len();
            let slot_of = |p_id: &PointId| slots.of(usize::from(p_id.0), i64::from(p_id.1));
            let mut ids = Vec::with_capacity(n);
            let mut vectors = Vec::with_capacity(n.checked_mul(self.dim)?);
            let mut row_start: Vec<u32> = Vec::with_capacity(n * MAX_LAYER + 1);
            row_start.push(0);
            let mut links: Vec<u32> = Vec::new();
            for point in indexation {
                // The iterator yields layer 0 first, each layer in rank order.
                if slot_of(&point.get_point_id())? as usize != ids.len() {
                    return None;
                }
                ids.push(point.get_origin_id() as u64);
                let vector = point.get_v();
                if vector.len() != self.dim {
                    return None;
                }
                vectors.extend_from_slice(vector);
                let neighbourhood = point.get_neighborhood_id();
                for layer in 0..MAX_LAYER {
                    for neighbour in neighbourhood.get(layer).into_iter().flatten() {
                        links.push(slot_of(&neighbour.p_id)?);
                    }
                    row_start.push(u32::try_from(links.len()).ok()?);
                }
            }
            if ids.len() != n {
                return None;
            }
            // `hnsw_rs` does not expose its entry point; any point of the top layer serves
            // (the reachability pass treats every top-layer point as reached).
            let entry = slot_of(&PointId(u8::try_from(top).ok()?, 0))?;
            GraphView::new(
                self.metric,
                self.dim,
                ids,
                vectors,
                row_start,
                links,
                entry,
                top,
            )
        })
    }
}
