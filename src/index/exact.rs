//! Exact (brute-force) search over every live vector: the index's ground truth.
//!
//! Vectors live in ONE contiguous row-major `Vec<f32>` (row `s` is
//! `data[s * dim..(s + 1) * dim]`) with a parallel `Vec<u64>` of ids and an id → row map.
//! Removal swap-removes, so the rows stay dense and a scan never skips holes.
//!
//! Invariant: `ids.len() * dim == data.len()`, `slots.len() == ids.len()`, and
//! `slots[ids[s]] == s` for every row `s`.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};

use super::{distance, Metric};

/// Above this many rows a scan is split across `available_parallelism()` threads.
pub(crate) const PARALLEL_SCAN_THRESHOLD: usize = 32 * 1024;

/// Floats per block of rows a parallel scan hands out (1 MiB): small enough that a thread
/// held up by a busy core delays the answer by little, large enough that the shared
/// counter is touched a few hundred times per scan at most.
const SCAN_BLOCK_FLOATS: usize = 256 * 1024;

/// An optional predicate on vector ids; `false` excludes the id from the results.
/// It must be `Sync` because large scans call it from several threads.
pub(crate) type IdFilter<'a> = Option<&'a (dyn Fn(u64) -> bool + Sync)>;

/// A search candidate ordered by (distance, id), a total order: the top-k set is unique
/// whatever the thread split, so exact results are deterministic.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Candidate {
    /// Internal distance (see [`distance::distance`]): lower is nearer.
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

/// What [`ExactStore::insert`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum InsertOutcome {
    /// The id was not present; a row was added.
    Added,
    /// The id was present with a different vector, which was overwritten in place.
    Replaced,
    /// The id was present with a bit-identical vector; nothing changed.
    Unchanged,
}

/// The live vectors, stored densely, with exact top-k search.
pub(crate) struct ExactStore {
    dim: usize,
    metric: Metric,
    data: Vec<f32>,
    ids: Vec<u64>,
    slots: HashMap<u64, usize>,
}

impl ExactStore {
    /// An empty store of `dim`-dimensional vectors compared with `metric`.
    pub(crate) fn new(dim: usize, metric: Metric) -> Self {
        ExactStore {
            dim,
            metric,
            data: Vec::new(),
            ids: Vec::new(),
            slots: HashMap::new(),
        }
    }

    /// Number of live vectors.
    pub(crate) fn len(&self) -> usize {
        self.ids.len()
    }

    /// True when no vector is live.
    pub(crate) fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Whether `id` is live.
    pub(crate) fn contains(&self, id: u64) -> bool {
        self.slots.contains_key(&id)
    }

    /// The vector of `id`, if live.
    pub(crate) fn get(&self, id: u64) -> Option<&[f32]> {
        self.slots.get(&id).map(|&slot| self.row(slot))
    }

    /// The live ids, in storage order (not sorted).
    pub(crate) fn ids(&self) -> &[u64] {
        &self.ids
    }

    #[inline]
    fn row(&self, slot: usize) -> &[f32] {
        &self.data[slot * self.dim..(slot + 1) * self.dim]
    }

    /// Inserts or overwrites `id`. The caller has validated `vector` (length `dim`,
    /// finite); a wrong length is a programmer error and is caught by a debug assertion.
    pub(crate) fn insert(&mut self, id: u64, vector: &[f32]) -> InsertOutcome {
        debug_assert_eq!(vector.len(), self.dim);
        match self.slots.get(&id) {
            Some(&slot) => {
                let range = slot * self.dim..(slot + 1) * self.dim;
                let row = &mut self.data[range];
                if row
                    .iter()
                    .zip(vector)
                    .all(|(a, b)| a.to_bits() == b.to_bits())
                {
                    InsertOutcome::Unchanged
                } else {
                    row.copy_from_slice(vector);
                    InsertOutcome::Replaced
                }
            }
            None => {
                self.slots.insert(id, self.ids.len());
                self.ids.push(id);
                self.data.extend_from_slice(vector);
                InsertOutcome::Added
            }
        }
    }

    /// Removes `id`; returns whether it was live. The last row moves into the hole.
    pub(crate) fn remove(&mut self, id: u64) -> bool {
        let Some(slot) = self.slots.remove(&id) else {
            return false;
        };
        let last = self.ids.len() - 1;
        if slot != last {
            let moved_id = self.ids[last];
            self.data
                .copy_within(last * self.dim..(last + 1) * self.dim, slot * self.dim);
            self.ids[slot] = moved_id;
            self.slots.insert(moved_id, slot);
        }
        self.ids.pop();
        self.data.truncate(last * self.dim);
        true
    }

    /// The `k` live vectors nearest to `query` that pass `filter`, nearest first, as
    /// (id, internal distance). Ties are broken by id. Splits the scan across cores
    /// above [`PARALLEL_SCAN_THRESHOLD`] rows.
    pub(crate) fn search(&self, query: &[f32], k: usize, filter: IdFilter<'_>) -> Vec<Candidate> {
        let threads = if self.len() >= PARALLEL_SCAN_THRESHOLD {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        } else {
            1
        };
        self.search_with_threads(query, k, filter, threads)
    }

    /// [`Self::search`] with an explicit thread count (tests force the parallel path).
    pub(crate) fn search_with_threads(
        &self,
        query: &[f32],
        k: usize,
        filter: IdFilter<'_>,
        threads: usize,
    ) -> Vec<Candidate> {
        let block = (SCAN_BLOCK_FLOATS / self.dim.max(1)).max(1);
        self.search_in_blocks(query, k, filter, threads, block)
    }

    /// [`Self::search_with_threads`] with the rows handed out `block` at a time.
    ///
    /// With more than one thread, the caller and `threads - 1` helpers take blocks of
    /// rows from a shared counter until none is left, each into its own top-k, merged at
    /// the end. A thread whose core is busy with other work takes fewer blocks instead of
    /// holding up the answer, as a fixed split into halves did (it waits for the slower
    /// half: on a 2-core machine with one core loaded, a 100k x 50-d scan on two threads
    /// took 2.7x the one-thread time, docs/benchmarks.md). The top-k is the same whatever
    /// the split: candidates are totally ordered by (distance, id).
    fn search_in_blocks(
        &self,
        query: &[f32],
        k: usize,
        filter: IdFilter<'_>,
        threads: usize,
        block: usize,
    ) -> Vec<Candidate> {
        if k == 0 || self.is_empty() {
            return Vec::new();
        }
        let rows = self.len();
        let block = block.max(1);
        let threads = threads.clamp(1, rows.div_ceil(block));
        let mut top = TopK::new(k);
        if threads == 1 {
            self.scan_rows(query, filter, 0..rows, &mut top);
            return top.into_sorted();
        }
        let next = AtomicUsize::new(0);
        let work = || {
            let mut top = TopK::new(k);
            loop {
                let index = next.fetch_add(1, AtomicOrdering::Relaxed);
                let Some(start) = index.checked_mul(block).filter(|&start| start < rows) else {
                    break;
                };
                let end = start.saturating_add(block).min(rows);
                self.scan_rows(query, filter, start..end, &mut top);
            }
            top
        };
        let work = &work;
        std::thread::scope(|scope| {
            let helpers: Vec<_> = (1..threads).map(|_| scope.spawn(work)).collect();
            top.merge(work());
            for helper in helpers {
                match helper.join() {
                    Ok(partial) => top.merge(partial),
                    // A panic in a scan thread is a bug (the scan has no fallible step);
                    // re-raise it on the caller's thread rather than answer partially.
                    Err(payload) => std::panic::resume_unwind(payload),
                }
            }
        });
        top.into_sorted()
    }

    /// Offers the rows `rows` that pass `filter` to `top`.
    fn scan_rows(
        &self,
        query: &[f32],
        filter: IdFilter<'_>,
        rows: std::ops::Range<usize>,
        top: &mut TopK,
    ) {
        let data = self
            .data
            .get(rows.start * self.dim..rows.end * self.dim)
            .unwrap_or_default();
        let ids = self.ids.get(rows).unwrap_or_default();
        match filter {
            // The block kernel over contiguous rows (distance.rs, `scan_block`).
            None => distance::scan_block(self.metric, query, data, |row, distance| {
                if let Some(&id) = ids.get(row) {
                    top.push(Candidate { distance, id });
                }
            }),
            Some(keep) => {
                for (row, &id) in data.chunks_exact(self.dim).zip(ids) {
                    if keep(id) {
                        top.push(Candidate {
                            distance: distance::distance(self.metric, query, row),
                            id,
                        });
                    }
                }
            }
        }
    }

    /// Checks the storage invariants (see the module doc).
    pub(crate) fn verify(&self) -> Result<(), String> {
        if self.ids.len() * self.dim != self.data.len() || self.slots.len() != self.ids.len() {
            return Err(format!(
                "{} ids, {} slots, {} floats for dimension {}",
                self.ids.len(),
                self.slots.len(),
                self.data.len(),
                self.dim
            ));
        }
        for (slot, id) in self.ids.iter().enumerate() {
            if self.slots.get(id) != Some(&slot) {
                return Err(format!("id {id} at row {slot} is not mapped to it"));
            }
        }
        Ok(())
    }

    /// Internal distances from `query` to each live id of `ids` (others are skipped).
    pub(crate) fn distances_to<'a>(
        &'a self,
        query: &'a [f32],
        ids: impl IntoIterator<Item = u64> + 'a,
    ) -> impl Iterator<Item = Candidate> + 'a {
        ids.into_iter().filter_map(move |id| {
            self.get(id).map(|row| Candidate {
                distance: distance::distance(self.metric, query, row),
                id,
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::test_support::{random_unit_vectors, SplitMix64};

    fn naive(store: &ExactStore, query: &[f32], k: usize, keep: &dyn Fn(u64) -> bool) -> Vec<u64> {
        let mut all: Vec<Candidate> = store
            .ids()
            .iter()
            .filter(|&&id| keep(id))
            .map(|&id| Candidate {
                distance: distance::distance(store.metric, query, store.get(id).unwrap_or(&[])),
                id,
            })
            .collect();
        all.sort();
        all.truncate(k);
        all.into_iter().map(|c| c.id).collect()
    }

    #[test]
    fn search_matches_naive_loop_sequential_and_parallel() {
        for metric in [Metric::Cosine, Metric::L2] {
            let dim = 37; // not a multiple of the kernel width
            let vectors = random_unit_vectors(3, 1500, dim);
            let mut store = ExactStore::new(dim, metric);
            for (i, v) in vectors.iter().enumerate() {
                assert_eq!(store.insert(i as u64 * 3, v), InsertOutcome::Added);
            }
            // Remove a third, so swap-remove is exercised before searching.
            for i in (0..1500u64).step_by(3) {
                assert!(store.remove(i * 3));
            }
            let mut rng = SplitMix64::new(99);
            for _ in 0..20 {
                let query = &vectors[rng.below(vectors.len())];
                let k = 1 + rng.below(25);
                let even = |id: u64| id.is_multiple_of(2);
                for (threads, block) in [(1, 1000), (2, 1000), (5, 1000), (2, 7), (3, 64)] {
                    let got: Vec<u64> = store
                        .search_in_blocks(query, k, None, threads, block)
                        .iter()
                        .map(|c| c.id)
                        .collect();
                    assert_eq!(got, naive(&store, query, k, &|_| true));
                    let got: Vec<u64> = store
                        .search_in_blocks(query, k, Some(&even), threads, block)
                        .iter()
                        .map(|c| c.id)
                        .collect();
                    assert_eq!(got, naive(&store, query, k, &even));
                }
            }
        }
    }

    #[test]
    fn top_k_keeps_the_k_smallest_by_distance_then_id() {
        // Few distinct distances, so ties at the bound are common; +inf and -0.0 too.
        let values = [0.5f32, 0.25, f32::INFINITY, 0.5, -0.0, 0.0, 0.75, 0.25];
        let mut rng = SplitMix64::new(5);
        for k in [0usize, 1, 2, 3, 7, 40] {
            let all: Vec<Candidate> = (0..60u64)
                .map(|id| Candidate {
                    distance: values[rng.below(values.len())],
                    id: 1000 - id * 7 % 61,
                })
                .collect();
            let mut top = TopK::new(k);
            for &c in &all {
                top.push(c);
            }
            let mut want = all.clone();
            want.sort();
            want.truncate(k);
            let got = top.into_sorted();
            let key = |c: &Candidate| (c.distance.to_bits(), c.id);
            assert_eq!(
                got.iter().map(key).collect::<Vec<_>>(),
                want.iter().map(key).collect::<Vec<_>>(),
                "k {k}"
            );
        }
    }

    #[test]
    fn insert_replace_remove_keep_rows_dense() {
        let mut store = ExactStore::new(2, Metric::L2);
        assert_eq!(store.insert(7, &[1.0, 2.0]), InsertOutcome::Added);
        assert_eq!(store.insert(8, &[3.0, 4.0]), InsertOutcome::Added);
        assert_eq!(store.insert(7, &[1.0, 2.0]), InsertOutcome::Unchanged);
        assert_eq!(store.insert(7, &[5.0, 6.0]), InsertOutcome::Replaced);
        assert!(store.remove(7));
        assert!(!store.remove(7));
        assert_eq!(store.ids(), &[8]);
        assert_eq!(store.get(8), Some(&[3.0, 4.0][..]));
        assert_eq!(store.data.len(), 2);
        assert!(store.search(&[0.0, 0.0], 0, None).is_empty());
        assert_eq!(store.search(&[0.0, 0.0], 10, None).len(), 1);
    }
}
