//! Which graph points are live, which live ids are scored outside the graph, and the
//! search that merges the two.
//!
//! A graph point is never removed: dead points still route the traversal, and searches
//! keep them out of the results (inside the graph's traversal). Ids whose current vector
//! the graph lacks are scored exactly.

use std::collections::{HashMap, HashSet};

use super::exact::{Candidate, ExactStore, IdFilter, TopK};
use super::graph::{Ending, Hnsw};

/// A filtered traversal of the flat view computes at most the graph's point count divided
/// by this many distances (and at least 64 x `max(k, ef)`) before the exact scan answers
/// instead (see `Membership::search_view`). Measured on 100k x 384-d
/// (`benches/filtered_search.rs`, docs/benchmarks.md): at 1 % selectivity an unbounded
/// traversal cost 31x an unfiltered search, at 0.1 % it walked the whole graph (137x).
pub(crate) const TRAVERSAL_BUDGET_DIVISOR: usize = 4;

/// Which graph points are live, and which live ids are scored outside the graph.
#[derive(Debug, Default, Clone)]
pub(crate) struct Membership {
    /// Every id with a point in the graph -> whether that point is live.
    pub(super) points: HashMap<u64, bool>,
    /// Number of `false` entries in `points`.
    pub(super) dead: usize,
    /// Live ids whose current vector is not in the graph (an outdated point for the same
    /// id is, marked dead). Scored exactly at query time.
    pub(super) outside: HashSet<u64>,
    /// Entries of `points` (dead until settled) whose graph insertion is in flight.
    pub(super) pending: usize,
}

impl Membership {
    #[inline]
    pub(super) fn is_live(&self, id: u64) -> bool {
        self.points.get(&id) == Some(&true)
    }

    pub(super) fn mark_dead(&mut self, id: u64) {
        if let Some(live) = self.points.get_mut(&id) {
            if *live {
                *live = false;
                self.dead += 1;
            }
        }
    }

    /// The membership of a freshly loaded graph (see `persisted`): every point of `all` is
    /// live except those in `dead`; `outside` ids are scored exactly.
    pub(crate) fn loaded(all: &[u64], dead: &[u64], outside: Vec<u64>) -> Membership {
        let mut membership = Membership {
            points: all.iter().map(|&id| (id, true)).collect(),
            outside: outside.into_iter().collect(),
            ..Membership::default()
        };
        for &id in dead {
            membership.mark_dead(id);
        }
        membership
    }

    /// `id` is no longer live: see `Graph::mark_removed`.
    pub(crate) fn remove(&mut self, id: u64) {
        self.mark_dead(id);
        self.outside.remove(&id);
    }

    /// `id` has a vector the graph does not hold: see `Graph::mark_outside`.
    pub(crate) fn set_outside(&mut self, id: u64) {
        self.mark_dead(id);
        self.outside.insert(id);
    }

    /// Live points of `ids` are scored outside instead: see `Graph::score_outside`.
    pub(crate) fn score_outside(&mut self, ids: &[u64]) {
        for &id in ids {
            if self.is_live(id) {
                self.mark_dead(id);
                self.outside.insert(id);
            }
        }
    }

    /// Top `k` live ids passing `filter`, searched in `graph`: with dead points or a
    /// filter, both are applied inside the traversal ([`Hnsw::search_admitting`]), which
    /// widens as fewer points pass, instead of over-fetching and dropping afterwards;
    /// merged with the outside ids scored exactly. If the
    /// traversal drains every point it can reach with fewer than `k` admitted, the exact
    /// scan answers (few points pass, or few are reachable: the scan is exact and cheap).
    pub(crate) fn search_graph(
        &self,
        exact: &ExactStore,
        graph: &Hnsw,
        query: &[f32],
        k: usize,
        ef: usize,
        filter: IdFilter<'_>,
    ) -> Vec<Candidate> {
        if k == 0 {
            return Vec::new();
        }
        let want = ef.max(k);
        let (hits, ending) = if filter.is_none() && self.dead == 0 {
            (graph.search(query, want, want), Ending::Converged)
        } else {
            // A quarter of the points: past that the traversal is walking much of the
            // graph, and the exact scan (which tests the filter before computing a
            // distance) costs no more and is exact.
            let budget = (self.points.len() / TRAVERSAL_BUDGET_DIVISOR).max(want * 64);
            // The admission check runs for most points the traversal reaches: the filter
            // first (it rejects most of them when it is selective), and the liveness
            // lookup only when some point is dead.
            let none_dead = self.dead == 0;
            graph.search_admitting(query, want, want, budget, |id| {
                filter.is_none_or(|f| f(id)) && (none_dead || self.is_live(id))
            })
        };
        let complete = match ending {
            Ending::Converged => true,
            Ending::Drained => hits.len() >= k,
            Ending::OverBudget => false,
        };
        if !complete {
            return exact.search(query, k, filter);
        }
        let mut top = TopK::new(k);
        for (id, distance) in hits {
            top.push(Candidate { distance, id });
        }
        for candidate in exact.distances_to(query, self.outside.iter().copied()) {
            if filter.is_none_or(|f| f(candidate.id)) {
                top.push(candidate);
            }
        }
        top.into_sorted()
    }
}
