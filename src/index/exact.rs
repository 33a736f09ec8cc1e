//! Exact (brute-force) search over every live vector: the index's ground truth.
//!
//! Each live vector is held ONCE in memory, in one of two places:
//! - **in the graph** ("backed"): the vector of a live graph point is read in place from
//!   the graph's contiguous slot-major array ([`Hnsw::vectors`]); the store keeps only
//!   id -> slot and a per-slot live mark. Dead slots (removed or superseded ids, points
//!   no search reached when installed or absorbed) are skipped by the scan. A backed point
//!   that a later absorb leaves unreachable is scored outside the graph's search but stays
//!   backed: its slot still holds its id's current vector.
//! - **in the store's own rows** ([`Rows`]): vectors the graph lacks (written since the
//!   graph was built or loaded, points no search reaches, everything before the first
//!   graph): ONE contiguous row-major `Vec<f32>` with a parallel `Vec<u64>` of ids and an
//!   id -> row map. Removal swap-removes, so the rows stay dense.
//!
//! A scan is a pass over contiguous blocks of rows: the runs of live slots of the graph's
//! array, then the own rows. The graph's array is immutable per slot (a point's vector
//! never changes), so a backed vector is exactly the one its id was written with as long
//! as its slot is marked live; a new vector for the id goes to the own rows and unmarks
//! the slot. When a new graph is installed ([`ExactStore::rebind`]) or the absorber has
//! linked new points ([`ExactStore::adopt`]), the vectors it holds for live points leave
//! the own rows.
//!
//! Invariant: an id is in the own rows xor backed; `backed.at[id] == slot` iff
//! `backed.live[slot]`, and then the graph's `ids[slot] == id`.

use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};
use std::sync::Arc;

use super::candidates::{Candidate, IdFilter, TopK};
use super::graph::{Hnsw, VectorsRead};
use super::workers::{map_in_halves, PARALLEL_MIN};
use super::{distance, IdMap, Metric};

/// Above this many rows a scan is split across `available_parallelism()` threads.
pub(crate) const PARALLEL_SCAN_THRESHOLD: usize = 32 * 1024;

/// Floats per block of rows a parallel scan hands out (1 MiB): small enough that a thread
/// held up by a busy core delays the answer by little, large enough that the shared
/// counter is touched a few hundred times per scan at most.
const SCAN_BLOCK_FLOATS: usize = 256 * 1024;

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

/// How many unused floats (16 MiB) the own rows' array keeps before it is shrunk
/// ([`Rows::shrink_if_sparse`]); a shrink leaves a quarter of that free for new rows.
const SHRINK_SLACK_FLOATS: usize = 4 << 20;

/// Dense own rows: the live vectors the graph does not hold.
struct Rows {
    dim: usize,
    data: Vec<f32>,
    ids: Vec<u64>,
    slots: IdMap<usize>,
    /// Whether `data` grew since [`Rows::release_tail`] last looked: rows still arriving,
    /// so its unused tail is room for them, not memory to give back.
    grew: bool,
}

impl Rows {
    fn new(dim: usize) -> Self {
        Rows {
            dim,
            data: Vec::new(),
            ids: Vec::new(),
            slots: IdMap::default(),
            grew: false,
        }
    }

    #[inline]
    fn row(&self, slot: usize) -> &[f32] {
        &self.data[slot * self.dim..(slot + 1) * self.dim]
    }

    fn get(&self, id: u64) -> Option<&[f32]> {
        self.slots.get(&id).map(|&slot| self.row(slot))
    }

    fn insert(&mut self, id: u64, vector: &[f32]) -> InsertOutcome {
        match self.slots.get(&id) {
            Some(&slot) => {
                let range = slot * self.dim..(slot + 1) * self.dim;
                let row = &mut self.data[range];
                if same_bits(row, vector) {
                    InsertOutcome::Unchanged
                } else {
                    row.copy_from_slice(vector);
                    InsertOutcome::Replaced
                }
            }
            None => {
                self.slots.insert(id, self.ids.len());
                self.ids.push(id);
                let capacity = self.data.capacity();
                self.data.extend_from_slice(vector);
                self.grew |= self.data.capacity() != capacity;
                InsertOutcome::Added
            }
        }
    }

    /// Removes `id`; the last row moves into the hole. Memory is given back once the rows
    /// fill less than a quarter of it ([`Self::shrink_if_sparse`]; a graph taking the rows
    /// over also calls [`Self::release_tail`]).
    fn remove(&mut self, id: u64) -> bool {
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
        self.shrink_if_sparse();
        true
    }

    /// Keeps only the rows whose id `keep` accepts, in one pass: the kept rows move up in
    /// order and the id map is rebuilt. (Removing most rows one by one, as installing a
    /// graph does, moved the last row into each hole: a copy of every vector.)
    fn retain(&mut self, keep: impl Fn(u64) -> bool) {
        let dim = self.dim;
        let mut kept = 0usize;
        for slot in 0..self.ids.len() {
            let id = self.ids[slot];
            if !keep(id) {
                continue;
            }
            if kept != slot {
                self.data
                    .copy_within(slot * dim..(slot + 1) * dim, kept * dim);
                self.ids[kept] = id;
            }
            kept += 1;
        }
        self.ids.truncate(kept);
        self.data.truncate(kept * dim);
        self.slots.clear();
        self.slots
            .extend(self.ids.iter().enumerate().map(|(slot, &id)| (id, slot)));
        self.shrink_if_sparse();
    }

    /// Gives back the memory of rows that left once they fill less than a quarter of it.
    fn shrink_if_sparse(&mut self) {
        const MIN_FLOATS: usize = 1 << 16;
        if self.data.capacity() > MIN_FLOATS && self.data.capacity() / 4 > self.data.len() {
            self.data.shrink_to_fit();
            self.ids.shrink_to_fit();
            self.slots.shrink_to_fit();
        }
    }

    /// Gives back the vectors' array's unused tail once it reaches
    /// [`SHRINK_SLACK_FLOATS`], unless the array grew since the last call (rows still
    /// arriving: the tail is their room, and shrinking it only to grow it again would
    /// copy the array over and over on allocators whose `realloc` copies).
    ///
    /// Called after a graph took a batch of rows over ([`ExactStore::adopt`]): a build
    /// from written vectors empties the rows while the graph's array fills, and with only
    /// the quarter rule the rows' array stayed at its high-water mark until three quarters
    /// had left, holding most vectors twice at the build's peak. An array that large is usually its own mapping (above glibc's
    /// mmap threshold, at most 32 MiB), so the shrink unmaps the tail's pages
    /// (`mremap`) rather than copying the rows.
    fn release_tail(&mut self) {
        if !std::mem::take(&mut self.grew)
            && self.data.capacity() - self.data.len() >= SHRINK_SLACK_FLOATS
        {
            self.data
                .shrink_to(self.data.len() + SHRINK_SLACK_FLOATS / 4);
        }
    }
}

/// Whether `a` and `b` are bit for bit the same vector. Branch-free over the floats (the
/// compiler vectorises it), where stopping at the first difference did not: installing a
/// graph compares every live vector.
fn same_bits(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .fold(0u32, |differ, (x, y)| differ | (x.to_bits() ^ y.to_bits()))
            == 0
}

/// The live vectors held in place in a graph's array (see the module docs).
struct Backed {
    links: Arc<Hnsw>,
    /// Backed id -> its slot.
    at: IdMap<u32>,
    /// Slot -> whether its vector is the live vector of its id.
    live: Vec<bool>,
}

/// The live vectors (each held once: in a graph's array or in own rows), with exact
/// top-k search.
pub(crate) struct ExactStore {
    dim: usize,
    metric: Metric,
    own: Rows,
    backed: Option<Backed>,
}

/// A read view of an [`ExactStore`]: holds the backing graph's arrays read-locked, so
/// that backed vectors can be borrowed. Take one per operation, never two at once on
/// one thread (the lock is not re-entrant while a writer waits).
pub(crate) struct ExactView<'a> {
    store: &'a ExactStore,
    vectors: Option<VectorsRead<'a>>,
}

impl ExactView<'_> {
    /// The vector of `id`, if live.
    pub(crate) fn get(&self, id: u64) -> Option<&[f32]> {
        if let Some(vector) = self.store.own.get(id) {
            return Some(vector);
        }
        let backed = self.store.backed.as_ref()?;
        let slot = *backed.at.get(&id)?;
        // (A slot outside the graph's array, which the invariants rule out, is no vector:
        // never an empty one scored at distance zero.)
        self.vectors
            .as_ref()
            .map(|v| v.row(slot))
            .filter(|row| !row.is_empty())
    }

    /// Blocks of live rows with their ids: the runs of live slots of the graph's array,
    /// then the own rows. Every block is contiguous.
    fn blocks(&self) -> Vec<Block<'_>> {
        let mut blocks = Vec::new();
        if let (Some(backed), Some(vectors)) = (self.store.backed.as_ref(), self.vectors.as_ref()) {
            let n = backed.live.len().min(vectors.len());
            let mut slot = 0;
            while slot < n {
                if !backed.live[slot] {
                    slot += 1;
                    continue;
                }
                let start = slot;
                while slot < n && backed.live[slot] {
                    slot += 1;
                }
                blocks.push(Block {
                    ids: &vectors.ids()[start..slot],
                    rows: vectors.rows(start..slot),
                });
            }
        }
        if !self.store.own.ids.is_empty() {
            blocks.push(Block {
                ids: &self.store.own.ids,
                rows: &self.store.own.data,
            });
        }
        blocks
    }
}

/// A contiguous block of rows and their ids.
#[derive(Clone, Copy)]
struct Block<'a> {
    ids: &'a [u64],
    rows: &'a [f32],
}

impl ExactStore {
    /// An empty store of `dim`-dimensional vectors compared with `metric`.
    pub(crate) fn new(dim: usize, metric: Metric) -> Self {
        ExactStore {
            dim,
            metric,
            own: Rows::new(dim),
            backed: None,
        }
    }

    /// A read view (see [`ExactView`]).
    pub(crate) fn view(&self) -> ExactView<'_> {
        ExactView {
            store: self,
            vectors: self.backed.as_ref().map(|b| b.links.vectors()),
        }
    }

    /// Number of live vectors.
    pub(crate) fn len(&self) -> usize {
        self.own.ids.len() + self.backed.as_ref().map_or(0, |b| b.at.len())
    }

    /// True when no vector is live.
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of live vectors held in the store's own rows (not in a graph's array).
    #[cfg(test)]
    pub(crate) fn own_len(&self) -> usize {
        self.own.ids.len()
    }

    /// The ids of the vectors held in the store's own rows.
    #[cfg(test)]
    pub(crate) fn own_ids(&self) -> Vec<u64> {
        self.own.ids.clone()
    }

    /// Whether `id` is live.
    pub(crate) fn contains(&self, id: u64) -> bool {
        self.own.slots.contains_key(&id)
            || self.backed.as_ref().is_some_and(|b| b.at.contains_key(&id))
    }

    /// Whether `id` is live with exactly `vector`.
    pub(crate) fn holds(&self, id: u64, vector: &[f32]) -> bool {
        self.view().get(id).is_some_and(|v| same_bits(v, vector))
    }

    /// The live ids (not sorted).
    pub(crate) fn ids(&self) -> Vec<u64> {
        let mut ids = self.own.ids.clone();
        if let Some(backed) = &self.backed {
            ids.extend(backed.at.keys().copied());
        }
        ids
    }

    /// Inserts or overwrites `id`. The caller has validated `vector` (length `dim`,
    /// finite); a wrong length is a programmer error and is caught by a debug assertion.
    /// A new vector for a backed id goes to the own rows (the graph's copy is its old one).
    pub(crate) fn insert(&mut self, id: u64, vector: &[f32]) -> InsertOutcome {
        debug_assert_eq!(vector.len(), self.dim);
        if !self.own.slots.contains_key(&id) {
            if let Some(backed) = self.backed.as_mut() {
                if let Some(&slot) = backed.at.get(&id) {
                    if same_bits(backed.links.vectors().row(slot), vector) {
                        return InsertOutcome::Unchanged;
                    }
                    backed.at.remove(&id);
                    backed.live[slot as usize] = false;
                    self.own.insert(id, vector);
                    return InsertOutcome::Replaced;
                }
            }
        }
        self.own.insert(id, vector)
    }

    /// Removes `id`; returns whether it was live.
    pub(crate) fn remove(&mut self, id: u64) -> bool {
        if self.own.remove(id) {
            return true;
        }
        let Some(backed) = self.backed.as_mut() else {
            return false;
        };
        match backed.at.remove(&id) {
            Some(slot) => {
                backed.live[slot as usize] = false;
                true
            }
            None => false,
        }
    }

    /// Reads the live vectors from `links` from now on: every live point of it
    /// (`live_point(id)`, the graph's membership) whose id is live here is backed by its
    /// slot, and leaves the own rows or the previous graph's array; vectors backed by the
    /// previous graph that `links` does not hold live move to the own rows. Call with
    /// writers excluded, when a graph is installed. A live point holds its id's current
    /// vector (the index's invariant), so no vector changes.
    pub(crate) fn rebind(&mut self, links: Arc<Hnsw>, live_point: impl Fn(u64) -> bool + Sync) {
        let old = self.backed.take();
        let (at, live) = {
            let vectors = links.vectors();
            // (The same graph again is not read-locked twice.)
            let old_view = old
                .as_ref()
                .filter(|b| !Arc::ptr_eq(&b.links, &links))
                .map(|b| (b, b.links.vectors()));
            let same = old.as_ref().filter(|b| Arc::ptr_eq(&b.links, &links));
            let own = &self.own;
            let ids = vectors.ids();
            // A live point holds its id's current vector; checked, not assumed: a point
            // whose vector differs stays unbacked (never scored with it). Decided for every
            // slot in two halves at once (a hash probe, a membership probe and a row compare
            // each: a quarter of a 1M-point reopen on one thread; under the exact store's
            // write lock, so on plain threads, see `map_in_halves`), then mapped in order.
            let live: Vec<bool> = map_in_halves(ids.len(), PARALLEL_MIN, |slot| {
                let Some(&id) = ids.get(slot) else {
                    return false;
                };
                let current = own.get(id).or_else(|| {
                    if let Some(b) = same {
                        return b.at.get(&id).map(|&s| vectors.row(s));
                    }
                    let (b, v) = old_view.as_ref()?;
                    b.at.get(&id).map(|&s| v.row(s))
                });
                live_point(id) && current.is_some_and(|c| same_bits(c, vectors.row(slot as u32)))
            });
            let mut at = IdMap::with_capacity_and_hasher(
                live.iter().filter(|&&l| l).count(),
                Default::default(),
            );
            for (slot, (&id, _)) in ids.iter().zip(&live).enumerate().filter(|(_, (_, &l))| l) {
                at.insert(id, slot as u32);
            }
            if let Some((b, v)) = &old_view {
                for (&id, &slot) in &b.at {
                    if !at.contains_key(&id) {
                        self.own.insert(id, v.row(slot));
                    }
                }
            }
            if let Some(b) = same {
                for (&id, &slot) in &b.at {
                    if !at.contains_key(&id) {
                        self.own.insert(id, vectors.row(slot));
                    }
                }
            }
            (at, live)
        };
        self.own.retain(|id| !at.contains_key(&id));
        self.backed = Some(Backed { links, at, live });
    }

    /// The points of `slots` in `links` (just linked by the absorber) whose id is now a
    /// live point (`live_point`) and lives in the own rows with the same vector: backed
    /// from now on, their own rows freed. Nothing happens unless `links` backs this store.
    /// Call with writers excluded.
    pub(crate) fn adopt(
        &mut self,
        links: &Arc<Hnsw>,
        slots: Range<u32>,
        live_point: impl Fn(u64) -> bool,
    ) {
        let Some(backed) = self.backed.as_mut() else {
            return;
        };
        if !Arc::ptr_eq(&backed.links, links) {
            return;
        }
        let links = Arc::clone(&backed.links);
        let vectors = links.vectors();
        if backed.live.len() < vectors.len() {
            backed.live.resize(vectors.len(), false);
        }
        let mut moved = Vec::new();
        for slot in slots {
            let Some(&id) = vectors.ids().get(slot as usize) else {
                continue;
            };
            if live_point(id)
                && self
                    .own
                    .get(id)
                    .is_some_and(|v| same_bits(v, vectors.row(slot)))
            {
                backed.at.insert(id, slot);
                backed.live[slot as usize] = true;
                moved.push(id);
            }
        }
        drop(vectors);
        for id in moved {
            self.own.remove(id);
        }
        self.own.release_tail();
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
    /// holding up the answer, as a fixed split into halves would (it waits for the slower
    /// half). The top-k is the same whatever
    /// the split: candidates are totally ordered by (distance, id).
    pub(super) fn search_in_blocks(
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
        let view = self.view();
        // The rows in pieces of at most `block`, cut out of the view's contiguous runs in
        // order.
        let block = block.max(1);
        let mut pieces: Vec<Block<'_>> = Vec::new();
        for run in view.blocks() {
            let mut run = run;
            while !run.ids.is_empty() {
                let take = run.ids.len().min(block);
                let (ids, rest_ids) = run.ids.split_at(take);
                let (rows, rest_rows) = run.rows.split_at((take * self.dim).min(run.rows.len()));
                pieces.push(Block { ids, rows });
                run = Block {
                    ids: rest_ids,
                    rows: rest_rows,
                };
            }
        }
        let threads = threads.clamp(1, pieces.len().max(1));
        let mut top = TopK::new(k);
        if threads == 1 {
            for piece in &pieces {
                self.scan_block(query, filter, *piece, &mut top);
            }
            return top.into_sorted();
        }
        let next = AtomicUsize::new(0);
        let work = || {
            let mut top = TopK::new(k);
            while let Some(piece) = pieces.get(next.fetch_add(1, AtomicOrdering::Relaxed)) {
                self.scan_block(query, filter, *piece, &mut top);
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

    /// Scores one contiguous block of rows into `top`: unfiltered, through the block
    /// kernel over contiguous rows (`distance::scan_block`); filtered, a row at a time.
    fn scan_block(&self, query: &[f32], filter: IdFilter<'_>, block: Block<'_>, top: &mut TopK) {
        let ids = block.ids;
        match filter {
            None => distance::scan_block(self.metric, query, block.rows, |row, distance| {
                if let Some(&id) = ids.get(row) {
                    top.push(Candidate { distance, id });
                }
            }),
            Some(keep) => {
                for (row, &id) in block.rows.chunks_exact(self.dim).zip(ids) {
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
        let own = &self.own;
        if own.ids.len() * self.dim != own.data.len() || own.slots.len() != own.ids.len() {
            return Err(format!(
                "{} ids, {} slots, {} floats for dimension {}",
                own.ids.len(),
                own.slots.len(),
                own.data.len(),
                self.dim
            ));
        }
        for (slot, id) in own.ids.iter().enumerate() {
            if own.slots.get(id) != Some(&slot) {
                return Err(format!("id {id} at row {slot} is not mapped to it"));
            }
        }
        if let Some(backed) = &self.backed {
            let vectors = backed.links.vectors();
            for (&id, &slot) in &backed.at {
                if own.slots.contains_key(&id) {
                    return Err(format!("id {id} is both backed and in the own rows"));
                }
                if !backed.live.get(slot as usize).copied().unwrap_or(false)
                    || vectors.ids().get(slot as usize) != Some(&id)
                {
                    return Err(format!("backed id {id} does not own live slot {slot}"));
                }
            }
            let live = backed.live.iter().filter(|&&l| l).count();
            if live != backed.at.len() {
                return Err(format!(
                    "{live} live slots for {} backed ids",
                    backed.at.len()
                ));
            }
        }
        Ok(())
    }

    /// Internal distances from `query` to each live id of `ids` (others are skipped).
    pub(crate) fn distances_to(
        &self,
        query: &[f32],
        ids: impl IntoIterator<Item = u64>,
    ) -> Vec<Candidate> {
        let view = self.view();
        ids.into_iter()
            .filter_map(|id| {
                view.get(id).map(|row| Candidate {
                    distance: distance::distance(self.metric, query, row),
                    id,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::test_support::{random_unit_vectors, SplitMix64};

    #[test]
    fn the_rows_array_gives_back_its_unused_tail_once_rows_stop_arriving() {
        const DIM: usize = 64;
        let n = 2 * SHRINK_SLACK_FLOATS / DIM;
        let vectors = random_unit_vectors(11, n, DIM);
        let mut rows = Rows::new(DIM);
        for (id, v) in vectors.iter().enumerate() {
            rows.insert(id as u64, v);
        }
        let full = rows.data.capacity();
        // Rows leave in batches, as a graph takes them over, in any order.
        let gone = n * 3 / 4;
        let mut order = (0..n as u64)
            .rev()
            .step_by(2)
            .chain((0..n as u64).step_by(2));
        for batch in 0..3 {
            for id in order.by_ref().take(gone / 3) {
                assert!(rows.remove(id));
            }
            rows.release_tail();
            let unused = rows.data.capacity() - rows.data.len();
            if batch == 0 {
                // The array grew since the last look: its tail is room for arriving rows.
                assert_eq!(rows.data.capacity(), full, "shrunk right after growing");
            } else {
                assert!(unused < SHRINK_SLACK_FLOATS, "{unused} floats unused");
            }
        }
        assert!(rows.data.capacity() < full, "the tail was given back");
        assert_eq!(rows.ids.len(), n - gone);
        for (id, v) in vectors.iter().enumerate() {
            if let Some(row) = rows.get(id as u64) {
                assert!(same_bits(row, v), "row of {id}");
            }
        }
        assert_eq!(
            (0..n as u64).filter(|&id| rows.get(id).is_some()).count(),
            n - gone
        );
    }

    #[test]
    fn retained_rows_keep_their_vectors_and_are_found_by_id() {
        let vectors = random_unit_vectors(5, 300, 8);
        let mut rows = Rows::new(8);
        for (id, v) in vectors.iter().enumerate() {
            rows.insert(id as u64 * 3, v);
        }
        rows.retain(|id| id.is_multiple_of(2));
        assert_eq!(rows.ids.len(), 150);
        assert_eq!(rows.data.len(), 150 * 8);
        for (i, v) in vectors.iter().enumerate() {
            let id = i as u64 * 3;
            match rows.get(id) {
                Some(row) => {
                    assert!(id.is_multiple_of(2));
                    assert!(same_bits(row, v), "row of {id}");
                }
                None => assert!(!id.is_multiple_of(2), "{id} lost"),
            }
        }
        for (slot, id) in rows.ids.iter().enumerate() {
            assert_eq!(rows.slots.get(id), Some(&slot));
        }
        rows.retain(|_| false);
        assert!(rows.ids.is_empty() && rows.data.is_empty() && rows.slots.is_empty());
    }

    #[test]
    fn same_bits_tells_every_difference() {
        let a = [1.0f32, -0.0, 3.5, f32::MIN_POSITIVE];
        assert!(same_bits(&a, &a));
        for i in 0..a.len() {
            let mut b = a;
            b[i] = f32::from_bits(b[i].to_bits() ^ 1);
            assert!(!same_bits(&a, &b), "{i}");
        }
        let mut zero = a;
        zero[1] = 0.0;
        assert!(!same_bits(&a, &zero), "-0.0 and 0.0 differ in bits");
        assert!(!same_bits(&a, &a[..3]));
    }

    fn naive(store: &ExactStore, query: &[f32], k: usize, keep: &dyn Fn(u64) -> bool) -> Vec<u64> {
        let mut all: Vec<Candidate> = store
            .ids()
            .iter()
            .filter(|&&id| keep(id))
            .map(|&id| Candidate {
                distance: distance::distance(
                    store.metric,
                    query,
                    store.view().get(id).unwrap_or(&[]),
                ),
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
        assert_eq!(store.ids(), vec![8]);
        assert_eq!(store.view().get(8), Some(&[3.0, 4.0][..]));
        assert_eq!(store.own.data.len(), 2);
        assert!(store.search(&[0.0, 0.0], 0, None).is_empty());
        assert_eq!(store.search(&[0.0, 0.0], 10, None).len(), 1);
    }
}
