//! A graph and its membership: the owned HNSW links ([`Hnsw`]) plus which points are live.
//!
//! A graph point is never removed: [`Membership`] records, per vector id with a point in
//! the graph, whether that point is still live. Dead points still route the traversal;
//! searches keep them out of the results inside the traversal. When a live id gets a new
//! vector while its old one is in the graph, the old point is marked dead and the id is put
//! in the `outside` set: those few ids are scored exactly at query time and merged with the
//! graph's hits. A rebuild folds them back in.
//!
//! Thread safety: [`Hnsw::insert`] and [`Hnsw::search_admitting`] take `&self`; inserts
//! lock the rows they rewrite, so inserts and searches run concurrently on one graph.

use std::collections::HashSet;
use std::ops::Range;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use parking_lot::RwLock;

use super::candidates::{Candidate, IdFilter};
use super::exact::ExactStore;
pub(crate) use super::graph::GraphParams;
use super::graph::Hnsw;
use super::membership::{Membership, NO_SLOT};
use super::panic_message;
use super::{IndexError, Metric};

/// How many times a round's `max` outside ids [`Graph::outside_without_point`] reads from
/// the outside set to pick the smallest `max` of.
const ABSORB_SCAN: usize = 16;

/// An HNSW graph over some of the vectors of an [`ExactStore`], plus its membership.
pub(crate) struct Graph {
    metric: Metric,
    dim: usize,
    /// Shared with the exact store, which reads the live points' vectors from it.
    links: Arc<Hnsw>,
    membership: RwLock<Membership>,
    /// Tests only: how many more points may be inserted before every insertion panics
    /// (`u64::MAX`: never); see [`Graph::fail_inserts_after`].
    #[cfg(test)]
    inserts_before_panic: std::sync::atomic::AtomicU64,
}

impl Graph {
    /// An empty graph built with `params`.
    pub(crate) fn new(metric: Metric, dim: usize, params: GraphParams) -> Self {
        Graph::from_links(
            metric,
            dim,
            Hnsw::new(metric, dim, params),
            Membership::default(),
        )
    }

    /// Wraps loaded links (see `persisted`).
    pub(crate) fn from_links(
        metric: Metric,
        dim: usize,
        links: Hnsw,
        membership: Membership,
    ) -> Self {
        Graph {
            metric,
            dim,
            links: Arc::new(links),
            membership: RwLock::new(membership),
            #[cfg(test)]
            inserts_before_panic: std::sync::atomic::AtomicU64::new(u64::MAX),
        }
    }

    /// The links.
    pub(crate) fn links(&self) -> &Hnsw {
        &self.links
    }

    /// The links, shared (the exact store keeps them to read the live points' vectors).
    pub(crate) fn shared_links(&self) -> Arc<Hnsw> {
        Arc::clone(&self.links)
    }

    /// The membership, read-locked (which points are live).
    pub(crate) fn membership(&self) -> parking_lot::RwLockReadGuard<'_, Membership> {
        self.membership.read()
    }

    /// Tests only: after `points` more insertions (`None`: never), every insertion panics
    /// inside the insert loop, on whichever thread runs it (a rayon worker for large
    /// batches), as a bug in the graph would: a batch is then left partly linked.
    #[cfg(test)]
    pub(crate) fn fail_inserts_after(&self, points: Option<u64>) {
        self.inserts_before_panic.store(
            points.unwrap_or(u64::MAX),
            std::sync::atomic::Ordering::SeqCst,
        );
    }

    /// Called before each point's insertion: nothing, except in tests (see
    /// `Graph::fail_inserts_after`).
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
                panic!("injected graph insert panic");
            }
        }
    }

    /// Inserts `batch` into the links (rayon-parallel for large batches). A panic in it (a
    /// bug there, or in the distance kernel) becomes [`IndexError::Graph`], so that the
    /// callers' clean-up runs: a build discards its new graph, the absorber drops the
    /// graph (which may now hold some of its points, partly linked), and the background
    /// worker goes on to a rebuild or clears its `building` flag.
    /// Returns the slots the batch's points were given, in order.
    fn insert_links(&self, batch: &[(u64, &[f32])]) -> Result<Range<u32>, IndexError> {
        let inserted = catch_unwind(AssertUnwindSafe(|| {
            self.links.insert(batch, || self.before_insert())
        }));
        match inserted {
            Ok(Some(slots)) => Ok(slots),
            Ok(None) => Err(IndexError::Graph {
                detail: "the graph cannot hold more than 2^32 points".into(),
            }),
            Err(payload) => Err(IndexError::Graph {
                detail: format!("insert panicked: {}", panic_message(payload.as_ref())),
            }),
        }
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

    #[cfg(test)]
    /// The live ids scored outside the graph.
    pub(crate) fn outside_ids(&self) -> Vec<u64> {
        self.membership.read().outside.iter().copied().collect()
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

    /// Inserts new points (ids without a point in the graph) and marks them live,
    /// in parallel for large batches.
    pub(crate) fn insert_points(&self, items: &[(u64, &[f32])]) -> Result<(), IndexError> {
        if items.is_empty() {
            return Ok(());
        }
        for &(id, vector) in items {
            debug_assert_eq!(vector.len(), self.dim);
            debug_assert!(!self.has_point(id), "id {id} inserted twice into a graph");
        }
        let slots = self.insert_links(items)?;
        let mut membership = self.membership.write();
        for (&(id, _), slot) in items.iter().zip(slots) {
            membership.add_point(id, slot, true);
        }
        Ok(())
    }

    /// Up to `max` outside ids that have no point in the graph yet, ascending: the smallest
    /// `max` of the first [`ABSORB_SCAN`] `× max` the outside set gives. So while at most
    /// that many wait (every store but one whose writes outrun the absorber by more), a
    /// round takes the same ids in every process, the ones the store gave first, whatever
    /// the set's per-process hash seed; a longer backlog costs a round no more than that
    /// scan (the smallest of all would cost a scan of all, per round).
    pub(crate) fn outside_without_point(&self, max: usize) -> Vec<u64> {
        let membership = self.membership.read();
        let mut ids: Vec<u64> = membership
            .outside
            .iter()
            .filter(|id| !membership.points.contains_key(id))
            .take(max.saturating_mul(ABSORB_SCAN))
            .copied()
            .collect();
        if ids.len() > max {
            ids.select_nth_unstable(max);
            ids.truncate(max);
        }
        ids.sort_unstable();
        ids
    }

    /// Registers points about to be inserted for outside ids: dead until settled, so
    /// searches keep scoring them outside. Call with writers excluded.
    pub(crate) fn register_pending(&self, ids: &[u64]) {
        let mut membership = self.membership.write();
        for &id in ids {
            if !membership.points.contains_key(&id) {
                membership.add_point(id, NO_SLOT, false);
                membership.pending += 1;
            }
        }
    }

    /// Inserts registered points into the links (no lock writers need is held), to be
    /// settled with [`Graph::settle`]. Returns their slots, in `items` order.
    pub(crate) fn insert_registered(
        &self,
        items: &[(u64, &[f32])],
    ) -> Result<Range<u32>, IndexError> {
        let slots = self.insert_links(items)?;
        let mut membership = self.membership.write();
        for (&(id, _), slot) in items.iter().zip(slots.clone()) {
            membership.place(id, slot);
        }
        Ok(slots)
    }

    /// Settles points inserted by [`Graph::insert_registered`]: a point whose id is still
    /// live with the inserted vector (`still_live`) becomes live and leaves the outside
    /// set; the others stay dead. Call with writers excluded.
    pub(crate) fn settle(&self, ids: &[u64], still_live: impl Fn(u64) -> bool) {
        let mut membership = self.membership.write();
        membership.pending = membership.pending.saturating_sub(ids.len());
        for &id in ids {
            // A point with no slot (its insertion failed) stays dead, its id outside.
            if still_live(id) && membership.outside.contains(&id) && membership.mark_live(id) {
                membership.outside.remove(&id);
            }
        }
    }

    /// Ids of the points no search can reach (see [`Hnsw::unreachable_ids`]); see
    /// [`Graph::score_outside`].
    pub(crate) fn unreachable_ids(&self) -> Vec<u64> {
        self.links.unreachable_ids()
    }

    /// Scores the ids of `ids` whose point is live outside the graph instead (exactly, at
    /// query time): for points no search reaches. Call with writers excluded.
    pub(crate) fn score_outside(&self, ids: &[u64]) {
        self.membership.write().score_outside(ids);
    }

    /// Checks the membership invariants against the exact store: every live id is a
    /// live point xor scored outside; every live point and outside id is live; the dead
    /// count is right; every point of the links has a membership entry.
    pub(crate) fn verify(&self, exact: &ExactStore) -> Result<(), String> {
        let membership = self.membership.read();
        for id in exact.ids() {
            if membership.is_live(id) == membership.outside.contains(&id) {
                return Err(format!("live id {id} must be a live point xor outside"));
            }
        }
        for (&id, point) in &membership.points {
            if point.live && !exact.contains(id) {
                return Err(format!("graph point {id} is live but id {id} is not"));
            }
        }
        if let Some(id) = membership.outside.iter().find(|&&id| !exact.contains(id)) {
            return Err(format!("outside id {id} is not live"));
        }
        let ids = self.links.ids();
        membership.verify_slots(&ids)?;
        let distinct: HashSet<u64> = ids.iter().copied().collect();
        if distinct.len() != ids.len() {
            return Err("an id has two points in the graph".into());
        }
        if let Some(id) = ids.iter().find(|id| !membership.points.contains_key(id)) {
            return Err(format!("graph point {id} has no membership entry"));
        }
        let points = ids.len();
        if points + membership.pending < membership.points.len() {
            return Err(format!(
                "graph has {points} points, membership {}",
                membership.points.len()
            ));
        }
        Ok(())
    }

    /// The `k` nearest live vectors to `query` passing `filter`, nearest first, as
    /// internal distances: the graph's hits (dead points and the filter applied inside
    /// the traversal, see [`Membership::search_graph`]) merged with an exact scoring of
    /// the `outside` ids. `exact` must be the index's store, read-locked by the caller for
    /// the whole call, so that the live set cannot change under the search.
    pub(crate) fn search(
        &self,
        exact: &ExactStore,
        query: &[f32],
        k: usize,
        ef: usize,
        filter: IdFilter<'_>,
    ) -> Vec<Candidate> {
        self.membership
            .read()
            .search_graph(exact, &self.links, query, k, ef, filter)
    }
}
