//! Which graph points are live, which live ids are scored outside the graph, and the
//! search that merges the two.
//!
//! A graph point is never removed: dead points still route the traversal, and searches
//! keep them out of the results (inside the graph's traversal). Ids whose current vector
//! the graph lacks are scored exactly.

use super::{IdMap, IdSet};

use super::candidates::{Candidate, IdFilter, TopK};
use super::exact::ExactStore;
use super::graph::{Ending, Hnsw};

/// A filtered traversal of the flat view computes at most the graph's point count divided
/// by this many distances (and at least 64 x `max(k, ef)`) before the exact scan answers
/// instead (see `Membership::search_view`): an unbounded filtered traversal at a low
/// selectivity can walk the whole graph. The trade-off is measured in
/// `benches/filtered_search.rs`; see docs/benchmarks.md.
pub(crate) const TRAVERSAL_BUDGET_DIVISOR: usize = 4;

/// A graph point's place in the membership: its slot in the links (see [`NO_SLOT`]) and
/// whether it is live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Point {
    /// The point's slot in the links, or [`NO_SLOT`] while its insertion is in flight.
    pub(super) slot: u32,
    /// Whether the point is live (searches may return it).
    pub(super) live: bool,
}

/// The slot of a registered point not yet inserted into the links.
pub(super) const NO_SLOT: u32 = u32::MAX;

/// Which graph points are live, and which live ids are scored outside the graph.
#[derive(Debug, Default, Clone)]
pub(crate) struct Membership {
    /// Every id with a point in the graph -> its slot and whether that point is live.
    pub(super) points: IdMap<Point>,
    /// One bit per slot of the links, set when the slot's point is live: what a
    /// traversal's admission test reads (see [`Membership::search_graph`]). Kept with
    /// `points` under the same lock; a bit is set only for a `live` point, and every live
    /// point's bit is set.
    pub(super) live_slots: Vec<u64>,
    /// Number of `false` entries in `points`.
    pub(super) dead: usize,
    /// Live ids whose current vector is not in the graph (an outdated point for the same
    /// id is, marked dead). Scored exactly at query time.
    pub(super) outside: IdSet,
    /// Entries of `points` (dead until settled) whose graph insertion is in flight.
    pub(super) pending: usize,
}

impl Membership {
    #[inline]
    pub(super) fn is_live(&self, id: u64) -> bool {
        self.points.get(&id).is_some_and(|p| p.live)
    }

    /// Whether the point at `slot` is live: one bit, no hashing (a traversal asks this of
    /// nearly every point it reaches while any point is dead).
    #[inline]
    pub(super) fn slot_is_live(&self, slot: u32) -> bool {
        let slot = slot as usize;
        self.live_slots
            .get(slot / 64)
            .is_some_and(|word| word & (1 << (slot % 64)) != 0)
    }

    fn set_slot_bit(&mut self, slot: u32, live: bool) {
        if slot == NO_SLOT {
            return;
        }
        let (word, bit) = (slot as usize / 64, slot % 64);
        if word >= self.live_slots.len() {
            if !live {
                return;
            }
            self.live_slots.resize(word + 1, 0);
        }
        if live {
            self.live_slots[word] |= 1 << bit;
        } else {
            self.live_slots[word] &= !(1 << bit);
        }
    }

    /// Adds `id`'s point at `slot` (or [`NO_SLOT`]), live or not.
    pub(super) fn add_point(&mut self, id: u64, slot: u32, live: bool) {
        // An id has one point (the callers check); were it added twice, the first point
        // is forgotten whole, so the counts and bits stay right.
        if let Some(before) = self.points.insert(id, Point { slot, live }) {
            if !before.live {
                self.dead -= 1;
            }
            self.set_slot_bit(before.slot, false);
        }
        if !live {
            self.dead += 1;
        }
        self.set_slot_bit(slot, live);
    }

    /// Records the slot a registered point was inserted at (it stays dead until settled).
    pub(super) fn place(&mut self, id: u64, slot: u32) {
        if let Some(point) = self.points.get_mut(&id) {
            point.slot = slot;
            let live = point.live;
            self.set_slot_bit(slot, live);
        }
    }

    /// Makes `id`'s point live; `false` if it has no point, or no slot yet (it then
    /// stays dead: a live point must be one a traversal can admit).
    pub(super) fn mark_live(&mut self, id: u64) -> bool {
        let Some(point) = self.points.get_mut(&id) else {
            return false;
        };
        if point.slot == NO_SLOT {
            return false;
        }
        let slot = point.slot;
        if !point.live {
            point.live = true;
            self.dead -= 1;
        }
        self.set_slot_bit(slot, true);
        true
    }

    pub(super) fn mark_dead(&mut self, id: u64) {
        if let Some(point) = self.points.get_mut(&id) {
            if point.live {
                point.live = false;
                self.dead += 1;
                let slot = point.slot;
                self.set_slot_bit(slot, false);
            }
        }
    }

    /// The membership of a freshly loaded graph (see `persisted`): the point at slot `i`
    /// has id `all[i]`; every point is live except those in `dead`; `outside` ids are
    /// scored exactly.
    pub(crate) fn loaded(all: &[u64], dead: &[u64], outside: Vec<u64>) -> Membership {
        let mut membership = Membership {
            outside: outside.into_iter().collect(),
            ..Membership::default()
        };
        membership.points.reserve(all.len());
        for (slot, &id) in all.iter().enumerate() {
            // `persisted` refuses more than u32 slots; a wider index has no slot here.
            let slot = u32::try_from(slot).unwrap_or(NO_SLOT);
            membership.add_point(id, slot, slot != NO_SLOT);
        }
        for &id in dead {
            membership.mark_dead(id);
        }
        membership
    }

    /// Checks that `points`, the dead count and the slot bits agree, and that each point's
    /// slot holds its id in the links (`ids`, by slot).
    pub(super) fn verify_slots(&self, ids: &[u64]) -> Result<(), String> {
        let mut dead = 0;
        let mut live_slots = 0usize;
        for (&id, point) in &self.points {
            if !point.live {
                dead += 1;
            }
            if point.slot == NO_SLOT {
                if point.live {
                    return Err(format!("graph point {id} is live without a slot"));
                }
                continue;
            }
            if ids.get(point.slot as usize) != Some(&id) {
                return Err(format!(
                    "graph point {id} is at slot {} of the links, which holds {:?}",
                    point.slot,
                    ids.get(point.slot as usize)
                ));
            }
            if self.slot_is_live(point.slot) != point.live {
                return Err(format!(
                    "graph point {id}'s slot bit says live = {}, its entry {}",
                    !point.live, point.live
                ));
            }
            if point.live {
                live_slots += 1;
            }
        }
        if dead != self.dead {
            return Err(format!("dead count {} != {dead}", self.dead));
        }
        let bits: usize = self
            .live_slots
            .iter()
            .map(|w| w.count_ones() as usize)
            .sum();
        if bits != live_slots {
            return Err(format!(
                "{bits} slot bits are set for {live_slots} live points"
            ));
        }
        Ok(())
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
            let budget =
                (self.points.len() / TRAVERSAL_BUDGET_DIVISOR).max(want.saturating_mul(64));
            // The admission check runs for most points the traversal reaches: the
            // liveness bit only when some point is dead, then the filter.
            // The liveness test reads one bit by slot: a hash lookup by id for each point
            // reached took about a third of an unfiltered search's traversal once any
            // point was dead (some always are: the unreachable ones are scored outside).
            let none_dead = self.dead == 0;
            graph.search_admitting(
                query,
                want,
                want,
                budget,
                |slot| none_dead || self.slot_is_live(slot),
                filter,
            )
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
