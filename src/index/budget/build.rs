//! Parallel insertion of a large batch into a trained budgeted index (a load streams the
//! vectors rows in batches of thousands): the points are coded on every core, appended,
//! then linked on every core at once, each row behind one of [`STRIPES`] locks.
//!
//! While the batch links, the rows are atomics (the index's own arrays, converted in place
//! and back, so the links take no second copy): a point's search reads rows without a lock
//! (a row read while another thread rewrites it is a row of some moment, as in any
//! concurrent HNSW build), and each row is written under its stripe's lock, one row at a
//! time (no thread holds two stripes, so no two wait on each other). The batch's points
//! that would raise the graph's top level are linked first, one after the other, so the
//! entry point stays fixed while the rest link.
//!
//! Runs under the index's write lock on the caller's thread and scoped threads of its own
//! (`workers::for_each_on_threads`, the caller's priority), never on a rayon pool: a search
//! on rayon's global pool may be waiting for that lock (or for the applier holding it), and
//! would leave pool work unrun. A batch this large comes from a load or a bulk commit.

use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

use parking_lot::Mutex;

use super::{BudgetIndex, Inner, Near, Scratch, EMPTY};
use crate::index::distance::distance;
use crate::index::pq::Table;
use crate::index::reach::SlotSet;
use crate::index::workers::for_each_on_threads;
use crate::index::IdMap;

/// Batches of at least this many new points link in parallel (smaller ones serially).
pub(super) const PARALLEL_BATCH: usize = if cfg!(test) { 64 } else { 512 };

/// Row locks: a row's is `slot % STRIPES`.
const STRIPES: usize = 4096;

/// The rows while a batch links in parallel.
struct Links {
    layer0: Vec<AtomicU32>,
    upper: IdMap<Vec<AtomicU32>>,
    locks: Vec<Mutex<()>>,
    m: usize,
    m0: usize,
    /// Points a pruned layer-0 row dropped (`Inner::suspects`), when `record`.
    dropped: Mutex<Vec<u32>>,
    /// Not while loading, nor when the batch makes a walk due (it ends with that walk):
    /// a large batch would record up to `m0` points per insert.
    record: bool,
}

impl Links {
    fn row(&self, slot: u32, layer: usize) -> &[AtomicU32] {
        if layer == 0 {
            let at = slot as usize * self.m0;
            self.layer0.get(at..at + self.m0).unwrap_or(&[])
        } else {
            match self.upper.get(&u64::from(slot)) {
                Some(rows) => rows
                    .get((layer - 1) * self.m..layer * self.m)
                    .unwrap_or(&[]),
                None => &[],
            }
        }
    }

    fn lock(&self, slot: u32) -> parking_lot::MutexGuard<'_, ()> {
        self.locks[slot as usize % STRIPES].lock()
    }
}

impl BudgetIndex {
    /// Inserts `items` (ids not in the index, each once, vectors of the index's dimension)
    /// into the trained index `inner`, linking them in parallel.
    pub(super) fn add_parallel(&self, inner: &mut Inner, items: &[(u64, &[f32])]) {
        let Some(quantizer) = inner.quantizer.clone() else {
            return;
        };
        let code_len = self.plan.code_len;
        let first = inner.ids.len();
        if first.saturating_add(items.len()) >= EMPTY as usize {
            return;
        }
        inner.ids.reserve_exact(items.len());
        inner.codes.reserve_exact(items.len() * code_len);
        inner.levels.reserve_exact(items.len());
        inner.layer0.reserve_exact(items.len() * self.m0);
        {
            // Coded straight into the index's array (no second copy of the batch's codes);
            // each point's code is its own slice: handed out by index, written once.
            let at = inner.codes.len();
            inner.codes.resize(at + items.len() * code_len, 0);
            let parts: Vec<Mutex<&mut [u8]>> = inner.codes[at..]
                .chunks_mut(code_len.max(1))
                .map(Mutex::new)
                .collect();
            for_each_on_threads(
                items.len().min(parts.len()),
                || (),
                |_, i| quantizer.encode_into(items[i].1, &mut parts[i].lock()),
            );
        }
        for &(id, _) in items {
            self.push_point(inner, id);
        }
        // Points that raise the top level (and the first point of an empty graph), one
        // after the other: afterwards the entry point stays fixed.
        let mut rest = Vec::with_capacity(items.len());
        for (i, &(_, vector)) in items.iter().enumerate() {
            let slot = (first + i) as u32;
            let top = inner.entry.map(|e| e.1);
            if top.is_none_or(|top| inner.levels[slot as usize] > top) {
                self.link(inner, slot, &quantizer.table(vector));
            } else {
                rest.push((slot, vector));
            }
        }
        let links = Links {
            layer0: std::mem::take(&mut inner.layer0)
                .into_iter()
                .map(AtomicU32::new)
                .collect(),
            upper: std::mem::take(&mut inner.upper)
                .into_iter()
                .map(|(slot, rows)| (slot, rows.into_iter().map(AtomicU32::new).collect()))
                .collect(),
            locks: (0..STRIPES).map(|_| Mutex::new(())).collect(),
            m: self.m,
            m0: self.m0,
            dropped: Mutex::new(Vec::new()),
            record: !inner.loading && !inner.walk_due(first + items.len()),
        };
        {
            let inner: &Inner = inner;
            for_each_on_threads(
                rest.len(),
                || Scratch::new(self.dim),
                |scratch, i| {
                    let (slot, vector) = rest[i];
                    self.link_shared(inner, &links, slot, &quantizer.table(vector), scratch);
                },
            );
        }
        inner.layer0 = links
            .layer0
            .into_iter()
            .map(AtomicU32::into_inner)
            .collect();
        inner.upper = links
            .upper
            .into_iter()
            .map(|(slot, rows)| (slot, rows.into_iter().map(AtomicU32::into_inner).collect()))
            .collect();
        inner.suspects.append(&mut links.dropped.into_inner());
        inner.walk_when_due(self.m0);
    }

    /// Links the appended point `slot` (the entry fixed, its level at most the top's) with
    /// the rows shared between threads.
    fn link_shared(
        &self,
        inner: &Inner,
        links: &Links,
        slot: u32,
        table: &Table,
        scratch: &mut Scratch,
    ) {
        let Some((entry, top)) = inner.entry else {
            return;
        };
        let code_len = self.plan.code_len;
        let level = inner.levels[slot as usize];
        let mut nearest = Near(table.distance(inner.code(entry, code_len)), entry);
        for layer in (usize::from(level) + 1..=usize::from(top)).rev() {
            nearest = self.greedy_shared(inner, links, table, nearest, layer);
        }
        let mut entries = vec![nearest];
        for layer in (0..=usize::from(level.min(top))).rev() {
            let mut found =
                self.search_shared(inner, links, table, &entries, self.ef_construction, layer);
            found.retain(|n| n.1 != slot);
            let cap = if layer == 0 { self.m0 } else { self.m };
            let chosen = self.select(inner, &found, cap, scratch);
            {
                // (Overwrites links other threads may have put in this row: all to points
                // of this batch, added since the last walk, which a search that runs out
                // seeds anyway.)
                let _row = links.lock(slot);
                for (i, out) in links.row(slot, layer).iter().enumerate() {
                    out.store(chosen.get(i).map_or(EMPTY, |n| n.1), Relaxed);
                }
            }
            for near in &chosen {
                self.add_reverse_shared(inner, links, near.1, slot, near.0, layer, scratch);
            }
            entries = found;
        }
    }

    fn greedy_shared(
        &self,
        inner: &Inner,
        links: &Links,
        table: &Table,
        mut at: Near,
        layer: usize,
    ) -> Near {
        loop {
            let mut moved = false;
            for n in links.row(at.1, layer) {
                let n = n.load(Relaxed);
                if n == EMPTY {
                    break;
                }
                let d = table.distance(inner.code(n, self.plan.code_len));
                if d < at.0 {
                    at = Near(d, n);
                    moved = true;
                }
            }
            if !moved {
                return at;
            }
        }
    }

    /// The `ef` nearest points reached from `entries` in `layer`, ascending.
    fn search_shared(
        &self,
        inner: &Inner,
        links: &Links,
        table: &Table,
        entries: &[Near],
        ef: usize,
        layer: usize,
    ) -> Vec<Near> {
        let mut visited = SlotSet::new(inner.ids.len());
        let mut frontier: BinaryHeap<std::cmp::Reverse<Near>> = BinaryHeap::new();
        let mut best: BinaryHeap<Near> = BinaryHeap::new();
        for &e in entries {
            if visited.insert(e.1) {
                frontier.push(std::cmp::Reverse(e));
                best.push(e);
            }
        }
        while best.len() > ef {
            best.pop();
        }
        while let Some(std::cmp::Reverse(current)) = frontier.pop() {
            if best.len() >= ef && best.peek().is_some_and(|w| current.0 > w.0) {
                break;
            }
            for n in links.row(current.1, layer) {
                let n = n.load(Relaxed);
                if n == EMPTY {
                    break;
                }
                if !visited.insert(n) {
                    continue;
                }
                let d = table.distance(inner.code(n, self.plan.code_len));
                if best.len() < ef || best.peek().is_some_and(|w| d < w.0) {
                    frontier.push(std::cmp::Reverse(Near(d, n)));
                    best.push(Near(d, n));
                    if best.len() > ef {
                        best.pop();
                    }
                }
            }
        }
        best.into_sorted_vec()
    }

    /// Links `to` from `from` in `layer` (distance `d` between them) under `from`'s row
    /// lock, pruning the row with the heuristic when it is full.
    #[allow(clippy::too_many_arguments)]
    fn add_reverse_shared(
        &self,
        inner: &Inner,
        links: &Links,
        from: u32,
        to: u32,
        d: f32,
        layer: usize,
        scratch: &mut Scratch,
    ) {
        let _row = links.lock(from);
        let row = links.row(from, layer);
        let mut current: Vec<u32> = Vec::with_capacity(row.len());
        for link in row {
            match link.load(Relaxed) {
                EMPTY => break,
                n if n == to => return,
                n => current.push(n),
            }
        }
        if let Some(free) = row.get(current.len()) {
            free.store(to, Relaxed);
            return;
        }
        let mut origin = vec![0f32; self.dim];
        self.decode(inner, from, &mut origin);
        let mut candidates: Vec<Near> = current
            .iter()
            .map(|&n| {
                self.decode(inner, n, &mut scratch.one);
                Near(distance(self.metric, &origin, &scratch.one), n)
            })
            .collect();
        candidates.push(Near(d, to));
        candidates.sort_unstable();
        let chosen = self.select(inner, &candidates, row.len(), scratch);
        if layer == 0 && links.record {
            let mut dropped = links.dropped.lock();
            // (`to` is new since the last walk: seeded anyway.)
            for c in candidates
                .iter()
                .filter(|c| c.1 != to && !chosen.iter().any(|kept| kept.1 == c.1))
            {
                dropped.push(c.1);
            }
        }
        for (i, out) in row.iter().enumerate() {
            out.store(chosen.get(i).map_or(EMPTY, |n| n.1), Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::Plan;
    use super::*;
    use crate::index::test_support::low_rank_vectors;
    use crate::index::Metric;

    #[test]
    fn a_batch_linked_in_parallel_finds_the_true_neighbours() {
        let dim = 64;
        let data = low_rank_vectors(17, 5000, dim);
        let plan = Plan {
            code_len: 16,
            links0: 32,
            capacity: 10_000,
            train_at: 512,
            cache_bytes: 1 << 20,
            budget: 64 << 20,
            planned: 0,
        };
        let index = BudgetIndex::new(dim, Metric::Cosine, 16, 100, plan).expect("index");
        let items: Vec<(u64, &[f32])> = data
            .iter()
            .enumerate()
            .map(|(i, v)| (i as u64, v.as_slice()))
            .collect();
        // Trained on the first 512 (linked in parallel as training moves them in), then
        // the rest in two large batches, one repeating ids already in.
        index.insert_batch(&items[..512]).expect("first");
        assert!(index.is_trained());
        index.insert_batch(&items[400..3000]).expect("second");
        index.insert_batch(&items[3000..]).expect("third");
        assert_eq!(index.len_live(), 5000);
        assert_eq!(index.point_count(), 5000);
        index.verify().expect("verify");
        let (mut found, mut total) = (0, 0);
        for q in 0..50 {
            let query = &data[q * 97];
            let mut reranked: Vec<(f32, usize)> = index
                .search(query, 10, 64, None)
                .expect("search")
                .iter()
                .map(|&(id, _)| {
                    (
                        distance(Metric::Cosine, query, &data[id as usize]),
                        id as usize,
                    )
                })
                .collect();
            reranked.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            let got: Vec<usize> = reranked.into_iter().take(10).map(|x| x.1).collect();
            let mut exact: Vec<(f32, usize)> = data
                .iter()
                .enumerate()
                .map(|(i, v)| (distance(Metric::Cosine, query, v), i))
                .collect();
            exact.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            found += exact[..10].iter().filter(|e| got.contains(&e.1)).count();
            total += 10;
        }
        assert!(found * 100 >= total * 95, "recall {found}/{total}");
    }
}
