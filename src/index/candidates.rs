//! What a search collects and filters by: a candidate (distance, id) in a total order, the
//! `k` best kept, and the optional predicate on ids every search path takes.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// An optional predicate on vector ids; `false` excludes the id from the results.
/// It must be `Sync` because large scans call it from several threads.
pub(crate) type IdFilter<'a> = Option<&'a (dyn Fn(u64) -> bool + Sync)>;

/// A search candidate ordered by (distance, id), a total order: the top-k set is unique
/// whatever the thread split, so exact results are deterministic.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Candidate {
    /// Internal distance (see [`super::distance::distance`]): lower is nearer.
    pub(crate) distance: f32,
    /// Vector id.
    pub(crate) id: u64,
}

impl PartialEq for Candidate {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Candidate {}
impl PartialOrd for Candidate {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Candidate {
    fn cmp(&self, other: &Self) -> Ordering {
        self.distance
            .total_cmp(&other.distance)
            .then(self.id.cmp(&other.id))
    }
}

/// Keeps the `k` smallest candidates seen (a max-heap whose top is the worst kept).
pub(crate) struct TopK {
    k: usize,
    heap: BinaryHeap<Candidate>,
    /// The worst kept distance once `k` are kept, else +inf: a candidate farther than it
    /// is turned away by one float comparison, before any heap work.
    bound: f32,
}

impl TopK {
    /// An empty collector for the `k` nearest.
    pub(crate) fn new(k: usize) -> Self {
        TopK {
            k,
            heap: BinaryHeap::with_capacity(k.saturating_add(1).min(4096)),
            bound: f32::INFINITY,
        }
    }

    /// Offers a candidate; kept only if it is among the `k` best so far.
    #[inline]
    pub(crate) fn push(&mut self, candidate: Candidate) {
        // Farther than the worst kept: not kept, whatever the id (a strict `>` of two
        // non-NaN floats is the total order's answer too; NaN and ties go on below).
        if candidate.distance > self.bound {
            return;
        }
        if self.heap.len() < self.k {
            self.heap.push(candidate);
        } else if let Some(mut worst) = self.heap.peek_mut() {
            if candidate < *worst {
                *worst = candidate;
            }
        }
        if self.heap.len() >= self.k {
            self.bound = self
                .heap
                .peek()
                .map_or(f32::INFINITY, |worst| worst.distance);
        }
    }

    /// Merges another collector into this one.
    pub(crate) fn merge(&mut self, other: TopK) {
        for candidate in other.heap {
            self.push(candidate);
        }
    }

    /// The kept candidates, nearest first.
    pub(crate) fn into_sorted(self) -> Vec<Candidate> {
        self.heap.into_sorted_vec()
    }
}
