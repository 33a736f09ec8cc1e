//! The vector index, derived state kept in step with the file (see [`super::Derived`]).
//!
//! Invariant: the ANN index is derived; it can always be rebuilt from the vectors rows.
//! Each commit that changes the set of vectors writes a changelog row (vector ids added and
//! removed) in the same transaction; the index applies those rows in commit order and
//! records the last commit it covers. A search first brings the index up to its own read
//! snapshot, then resolves every candidate against that snapshot, so a superseded chunk is
//! never returned (I5).

use super::{CatchUp, Changes, Derived};
use crate::backend::redb::read::Snapshot;
use crate::backend::redb::schema::{
    split_vector_id, vector_id, VectorsRow, BUDGET_SNAPSHOT, INDEX_SNAPSHOT, VECTORS,
};
use crate::error::{Corruption, ReadError};
use crate::index::budget::{self, BudgetIndex};
use crate::index::{IndexError, Metric, VectorIndex};
use crate::options::IndexOptions;
use parking_lot::Mutex;
use redb::ReadableTable;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};

/// Vectors inserted into the index per lock round trip while loading.
const LOAD_CHUNK: usize = 4096;

/// The in-memory index and what it covers.
pub(crate) struct LiveIndex {
    /// The in-memory index (without a budget), or only the checks of vectors and queries
    /// (under a budget, where it stays empty).
    pub index: VectorIndex,
    /// Under `Options::memory_budget`: the index over compact codes that answers instead,
    /// its candidates scored again exactly on the file's vectors (`search::rerank`).
    pub budget: Option<BudgetIndex>,
    /// The last commit sequence applied. Held while applying, so changes apply in order.
    applied: Mutex<u64>,
    /// A graph build (or snapshot load) is running in the background.
    pub building: AtomicBool,
    /// Points in the graph the file's snapshot holds (0: none persisted by this process
    /// or loaded); see `indexer::absorb_and_refresh`.
    pub persisted_points: AtomicUsize,
    /// Under a budget: the commit the index saved in the file covers (0: none saved by
    /// this process or loaded).
    pub persisted_commit: AtomicU64,
    /// The number of live vectors when the last graph build failed (`usize::MAX`: the last
    /// one did not fail); see `indexer::build_retry_due`.
    pub failed_build_at: AtomicUsize,
    /// The last write of the graph snapshot failed (the disk full): the next absorbing
    /// pass writes it again, whatever the graph's growth.
    pub persist_due: AtomicBool,
    /// The index was loaded from a snapshot in the file (the full index's graph, or the
    /// budgeted index whole), not built from the vectors rows.
    pub from_file: AtomicBool,
}

fn index_error(error: IndexError) -> ReadError {
    ReadError::Corrupted {
        what: "vector index".into(),
        detail: error.to_string(),
    }
}

impl LiveIndex {
    /// An index loaded with every vector of `snapshot`, covering its commit sequence.
    /// With `memory_budget`, the index over compact codes ([`BudgetIndex`]): a first pass
    /// counts the vectors and samples them to train the codes, a second streams them into
    /// the graph.
    pub(crate) fn load(
        snapshot: &Snapshot,
        dimension: usize,
        metric: Metric,
        params: IndexOptions,
        memory_budget: Option<u64>,
    ) -> Result<LiveIndex, ReadError> {
        // The snapshot's own: a promotion may have changed it since the caller looked.
        let dimension = snapshot.dimension.unwrap_or(dimension);
        let mut index = VectorIndex::new(dimension, metric).map_err(index_error)?;
        index.set_graph_params(params.m, params.ef_construction);
        let budget = match memory_budget {
            Some(bytes) => Some(budgeted(snapshot, dimension, metric, params, bytes)?),
            None => None,
        };
        let live = LiveIndex {
            index,
            budget,
            applied: Mutex::new(snapshot.commit()?),
            building: AtomicBool::new(false),
            persisted_points: AtomicUsize::new(0),
            persisted_commit: AtomicU64::new(0),
            failed_build_at: AtomicUsize::new(usize::MAX),
            persist_due: AtomicBool::new(false),
            from_file: AtomicBool::new(false),
        };
        let vectors = snapshot
            .txn
            .open_table(VECTORS)
            .map_err(ReadError::storage)?;
        // A chunk's vectors decoded one after the other into one buffer the load reuses
        // (a `Vec` per vector cost an allocation and a free each); under a budget, a
        // chunk its share allows.
        let chunk = match memory_budget {
            Some(bytes) => budget::stream_batch(bytes, dimension),
            None => LOAD_CHUNK,
        };
        let mut ids: Vec<u64> = Vec::with_capacity(chunk);
        // (Bounded: the dimension comes from the file, and a damaged one must come back as
        // a corruption below, not as an allocation failure here.)
        let mut floats: Vec<f32> = Vec::with_capacity(chunk.saturating_mul(dimension).min(1 << 22));
        for entry in vectors.iter().map_err(ReadError::storage)? {
            let (key, value) = entry.map_err(ReadError::storage)?;
            let doc = key.value();
            let row = VectorsRow::parse(value.value())?;
            if row.len() > 0 && row.dimension() != dimension {
                return Err(Corruption::new(
                    "vector table",
                    format!(
                        "document {doc} has a vector of {} floats where the store's \
                         dimension is {dimension}",
                        row.dimension()
                    ),
                )
                .into());
            }
            // Cut inside a row too: a document of thousands of chunks is not one batch
            // (at 1536-d, 10,000 chunks are 61 MB of floats, past a budget's batch).
            for vector in row.vectors() {
                ids.push(vector_id(doc, vector.slot()));
                vector.extend_floats(&mut floats);
                if ids.len() >= chunk {
                    live.insert_rows(&ids, &floats, dimension)?;
                    ids.clear();
                    floats.clear();
                }
            }
        }
        live.insert_rows(&ids, &floats, dimension)?;
        if let Some(budget) = &live.budget {
            // Walks were held while it loaded (`budgeted`).
            budget.walk();
        }
        Ok(live)
    }

    /// Inserts the vectors of `ids`, `dimension` floats each (checked as they were
    /// decoded), one after the other in `floats`.
    fn insert_rows(&self, ids: &[u64], floats: &[f32], dimension: usize) -> Result<(), ReadError> {
        if ids.is_empty() {
            return Ok(());
        }
        debug_assert_eq!(floats.len(), ids.len() * dimension);
        let items: Vec<(u64, &[f32])> = ids
            .iter()
            .copied()
            .zip(floats.chunks_exact(dimension.max(1)))
            .collect();
        self.insert_items(&items)
    }

    fn insert_items(&self, items: &[(u64, &[f32])]) -> Result<(), ReadError> {
        let inserted = match &self.budget {
            Some(budget) => items
                .iter()
                .try_for_each(|(_, vector)| self.index.validate(vector))
                .and_then(|()| budget.insert_batch(items)),
            None => self.index.insert_batch(items),
        };
        if self.budget.is_some() && budget::links_in_parallel(items.len()) {
            // A batch linked on every core leaves its threads' temporaries (query tables,
            // search heaps) free in their allocator arenas, where they would stay resident
            // beside the index as it grows: handed back (outside the index's lock).
            crate::sys::release_free_heap();
        }
        inserted.map_err(|e| {
            ReadError::from(Corruption::new(
                "vector table",
                format!("a stored vector does not fit the index: {e}"),
            ))
        })
    }

    /// Number of live vectors.
    pub(crate) fn len_live(&self) -> usize {
        match &self.budget {
            Some(budget) => budget.len_live(),
            None => self.index.len_live(),
        }
    }

    /// Removes `id` from whichever index answers; returns whether it was live.
    fn remove(&self, id: u64) -> bool {
        match &self.budget {
            Some(budget) => budget.remove(id),
            None => self.index.remove(id),
        }
    }

    /// The live ids, sorted.
    fn live_ids(&self) -> Vec<u64> {
        match &self.budget {
            Some(budget) => budget.live_ids(),
            None => self.index.live_ids(),
        }
    }

    /// Whether a budgeted index would grow past its plan by `adding` points
    /// ([`BudgetIndex::outgrown`]): it is then loaded again with a plan for its size.
    fn outgrown(&self, adding: usize) -> bool {
        self.budget
            .as_ref()
            .is_some_and(|budget| budget.outgrown(adding))
    }

    /// The last commit sequence applied.
    pub(crate) fn applied(&self) -> u64 {
        *self.applied.lock()
    }

    /// Applies every committed change up to `snapshot`'s commit sequence. Returns `false`
    /// when the changelog no longer holds what is needed (the caller reloads).
    pub(crate) fn catch_up(&self, snapshot: &Snapshot) -> Result<bool, ReadError> {
        let mut applied = self.applied.lock();
        self.catch_up_locked(snapshot, &mut applied)
    }

    fn catch_up_locked(&self, snapshot: &Snapshot, applied: &mut u64) -> Result<bool, ReadError> {
        let mut applying = Applying {
            live: self,
            applied,
        };
        Ok(super::bring_to(&mut applying, snapshot)? == CatchUp::Done)
    }

    /// Checks index agreement (I5) against a snapshot it is brought up to first: the ids
    /// the index can return are exactly the snapshot's vector ids. Returns the problems.
    pub(crate) fn agreement(
        &self,
        take_snapshot: impl Fn() -> Result<Snapshot, ReadError>,
    ) -> Result<Vec<String>, ReadError> {
        // Hold the apply lock, then snapshot: no commit can be applied past this snapshot.
        let mut applied = self.applied.lock();
        let snapshot = take_snapshot()?;
        if !self.catch_up_locked(&snapshot, &mut applied)? {
            return Ok(vec![
                "the index could not catch up from the changelog".into()
            ]);
        }
        let mut problems = Vec::new();
        if *applied != snapshot.commit()? {
            problems.push(format!(
                "the index covers commit {} but the snapshot is at {}",
                *applied,
                snapshot.commit()?
            ));
            return Ok(problems);
        }
        let vectors = snapshot
            .txn
            .open_table(VECTORS)
            .map_err(ReadError::storage)?;
        let mut stored: Vec<u64> = Vec::new();
        for entry in vectors.iter().map_err(ReadError::storage)? {
            let (key, value) = entry.map_err(ReadError::storage)?;
            let doc = key.value();
            let row = VectorsRow::parse(value.value())?;
            stored.extend(row.slots().map(|slot| vector_id(doc, slot)));
        }
        stored.sort_unstable();
        let indexed = self.live_ids();
        if indexed != stored {
            let only_index: Vec<u64> = indexed
                .iter()
                .filter(|id| stored.binary_search(id).is_err())
                .take(10)
                .copied()
                .collect();
            let only_file: Vec<u64> = stored
                .iter()
                .filter(|id| indexed.binary_search(id).is_err())
                .take(10)
                .copied()
                .collect();
            problems.push(format!(
                "index holds {} vectors, the file {}; only in the index: {only_index:?}, only in the file: {only_file:?}",
                indexed.len(),
                stored.len()
            ));
        }
        let verified = match &self.budget {
            Some(budget) => budget.verify(),
            None => self.index.verify(),
        };
        if let Err(problem) = verified {
            problems.push(format!("index structure: {problem}"));
        }
        Ok(problems)
    }
}

/// A live index with its apply lock held: the changelog is applied through it, one
/// applier at a time, in commit order.
struct Applying<'a> {
    live: &'a LiveIndex,
    applied: &'a mut u64,
}

impl Applying<'_> {
    /// Inserts the vectors taken so far, and empties `rows`.
    fn insert_taken(&self, rows: &mut Vec<(u64, Vec<f32>)>) -> Result<(), ReadError> {
        let items: Vec<(u64, &[f32])> = rows
            .iter()
            .map(|(id, vector)| (*id, vector.as_slice()))
            .collect();
        self.live.insert_items(&items)?;
        rows.clear();
        Ok(())
    }
}

impl Derived for Applying<'_> {
    fn covers(&self) -> u64 {
        *self.applied
    }

    fn catch_up(&mut self, changes: &Changes<'_>) -> Result<CatchUp, ReadError> {
        let vectors = changes
            .snapshot()
            .txn
            .open_table(VECTORS)
            .map_err(ReadError::storage)?;
        if changes.replace_vectors()? {
            return Ok(CatchUp::Rebuild);
        }
        let adding: usize = changes.rows().iter().map(|c| c.added.len()).sum();
        if self.live.outgrown(adding) {
            return Ok(CatchUp::Rebuild);
        }
        // Under a budget the added vectors are decoded and inserted a budget's batch at a
        // time (one commit of 1,024 documents of 50 chunks at 384-d is 78 MB of floats).
        let batch = match &self.live.budget {
            Some(budget) => budget.stream_batch(),
            None => usize::MAX,
        };
        for change in changes.rows() {
            for id in &change.removed {
                self.live.remove(*id);
            }
            let mut rows = Vec::with_capacity(change.added.len().min(batch));
            // Added ids come grouped by document: read each document's row, and map its
            // slots to positions, once.
            let mut current: Option<(u64, Option<DocVectors>)> = None;
            for id in &change.added {
                let (doc, slot) = split_vector_id(*id);
                if current.as_ref().is_none_or(|(d, _)| *d != doc) {
                    let row = match vectors.get(doc).map_err(ReadError::storage)? {
                        Some(bytes) => Some(DocVectors::new(bytes)?),
                        None => None,
                    };
                    current = Some((doc, row));
                }
                // Absent: removed again by a later commit this snapshot already covers.
                if let Some((_, Some(row))) = &mut current {
                    if let Some(vector) = row.take(slot) {
                        rows.push((*id, vector));
                    }
                }
                if rows.len() >= batch {
                    self.insert_taken(&mut rows)?;
                }
            }
            self.insert_taken(&mut rows)?;
        }
        *self.applied = changes.target();
        Ok(CatchUp::Done)
    }
}

/// The plan of a budgeted index of `count` vectors under `bytes`. A budget refused at open
/// cannot reach here; one the store has grown past since gets the smallest plan (the next
/// open refuses it).
fn plan_for(count: usize, dimension: usize, params: IndexOptions, bytes: u64) -> budget::Plan {
    budget::plan(bytes, count, dimension, params.m).unwrap_or_else(|smallest| {
        budget::plan(smallest, count, dimension, params.m).unwrap_or(budget::Plan {
            code_len: dimension.div_ceil(16).max(1),
            links0: params.m,
            capacity: count,
            train_at: 256,
            cache_bytes: budget::MIN_CACHE_BYTES,
            budget: u64::MAX,
            planned: count,
        })
    })
}

/// A budgeted index loaded from the file's budget snapshot (`index::budget::persist`),
/// brought up to `snapshot` from the changelog, under `bytes`. `Ok(None)` when the file has
/// none, or one that cannot serve here: damaged or torn, of another format, dimension,
/// metric or `M`, coded for a plan other than today's (a point's code and layer-0 links
/// more than a sixteenth below the plan's, or above it), larger than the budget allows, or stamped with a commit
/// the changelog no longer reaches back to; the caller then builds the index from the
/// vectors rows. Streaming: the snapshot's parts are read one at a time into the index's
/// arrays.
pub(crate) fn load_budget_snapshot(
    snapshot: &Snapshot,
    dimension: usize,
    metric: Metric,
    params: IndexOptions,
    bytes: u64,
) -> Result<Option<LiveIndex>, ReadError> {
    let table = match snapshot.txn.open_table(BUDGET_SNAPSHOT) {
        Ok(table) => table,
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(None),
        Err(e) => return Err(ReadError::storage(e)),
    };
    let Some(header) = table.get(0).map_err(ReadError::storage)? else {
        return Ok(None);
    };
    let Ok(header) = budget::read_header(header.value(), metric, dimension) else {
        return Ok(None);
    };
    // Its arrays are sized from the header: each mapped on its own (see `budgeted`).
    crate::sys::bound_large_allocations();
    let commit = snapshot.commit()?;
    if header.stamp > commit {
        return Ok(None);
    }
    let count = usize::try_from(snapshot.live_vectors()?).unwrap_or(usize::MAX);
    let mut plan = plan_for(count, dimension, params, bytes);
    // A point's code and layer-0 links as saved, against today's plan: not more, nor more
    // than a sixteenth less (another budget).
    let saved = header.code_len + 4 * header.links0;
    let planned = plan.code_len + 4 * plan.links0;
    let slack = (planned / 16).max(1);
    if saved > planned || saved + slack < planned {
        return Ok(None);
    }
    plan.code_len = header.code_len;
    plan.links0 = header.links0;
    let parts = table
        .range(1u32..)
        .map_err(ReadError::storage)?
        .map(|entry| {
            entry.map(|(_, value)| SnapshotPart(value)).map_err(|e| {
                crate::index::IndexError::Corrupted {
                    detail: e.to_string(),
                }
            })
        });
    let Ok(index) = BudgetIndex::load(
        &header,
        metric,
        params.m,
        params.ef_construction,
        plan,
        parts,
    ) else {
        return Ok(None);
    };
    let mut checks = VectorIndex::new(dimension, metric).map_err(index_error)?;
    checks.set_graph_params(params.m, params.ef_construction);
    let live = LiveIndex {
        index: checks,
        budget: Some(index),
        applied: Mutex::new(header.stamp),
        building: AtomicBool::new(false),
        persisted_points: AtomicUsize::new(header.points),
        persisted_commit: AtomicU64::new(header.stamp),
        failed_build_at: AtomicUsize::new(usize::MAX),
        persist_due: AtomicBool::new(false),
        from_file: AtomicBool::new(true),
    };
    // Caught up to the snapshot's commit, it must hold exactly its live vectors (a count
    // that differs means a snapshot from another history: rebuilt, never trusted).
    if !live.catch_up(snapshot)? || live.applied() != commit || live.len_live() != count {
        return Ok(None);
    }
    Ok(Some(live))
}

/// Vectors sampled to train a budgeted index's codes, at most (see [`budgeted`]).
fn sample_every(count: usize, want: usize) -> usize {
    count.div_ceil(want.max(1)).max(1)
}

/// A budgeted index of the vectors of `snapshot`: planned from their count, its codes
/// trained on an evenly spaced sample, then every vector streamed in (the caller inserts
/// them, [`budget::stream_batch`] at a time); none is held in `f32` beyond the sample
/// (freed before the first is inserted) and one batch. One pass counts and samples: the
/// spacing comes from the live count the file records (a count that is off only makes the
/// sample uneven; the plan is made for the vectors counted).
fn budgeted(
    snapshot: &Snapshot,
    dimension: usize,
    metric: Metric,
    params: IndexOptions,
    bytes: u64,
) -> Result<BudgetIndex, ReadError> {
    let vectors = snapshot
        .txn
        .open_table(VECTORS)
        .map_err(ReadError::storage)?;
    // Large blocks are mapped on their own from here on (`sys::bound_large_allocations`),
    // and what the index this one replaces held (freed by now) and what the writes left free
    // with the allocator go back to the system before this one fills: kept, they stayed
    // resident beside it (a load's peak was the old index's bytes above the new one's).
    crate::sys::bound_large_allocations();
    crate::sys::release_free_heap();
    let recorded = usize::try_from(snapshot.live_vectors()?).unwrap_or(usize::MAX);
    let want = plan_for(recorded, dimension, params, bytes).train_at;
    let every = sample_every(recorded, want);
    // (Bounded: `want` is at most `MAX_TRAIN_AT` vectors, the dimension the file's.)
    let sample_len = want.saturating_mul(dimension).min(1 << 24);
    let mut sample: Vec<f32> = Vec::with_capacity(sample_len);
    let mut count = 0usize;
    for entry in vectors.iter().map_err(ReadError::storage)? {
        let (_, value) = entry.map_err(ReadError::storage)?;
        let row = VectorsRow::parse(value.value())?;
        for vector in row.vectors() {
            if count.is_multiple_of(every)
                && sample.len() < sample_len
                && row.dimension() == dimension
            {
                vector.extend_floats(&mut sample);
            }
            count += 1;
        }
    }
    let plan = plan_for(count, dimension, params, bytes);
    let index = BudgetIndex::new(dimension, metric, params.m, params.ef_construction, plan)
        .map_err(index_error)?;
    if count >= index.train_at() {
        index.train(&sample);
    }
    drop(sample);
    // Reserved once the sample is freed: the arrays fill as the vectors stream in.
    index.reserve(count);
    // No search runs on it before the load's end walks it (`LiveIndex::load`).
    index.hold_walks();
    Ok(index)
}

/// One document's vectors row, decoded once (a coded row in one pass), by slot.
struct DocVectors {
    vectors: HashMap<u32, Vec<f32>>,
}

impl DocVectors {
    fn new(bytes: redb::AccessGuard<'static, &'static [u8]>) -> Result<DocVectors, ReadError> {
        let row = VectorsRow::parse(bytes.value())?;
        let vectors = row
            .vectors()
            .map(|vector| {
                let mut floats = Vec::with_capacity(row.dimension());
                vector.extend_floats(&mut floats);
                (vector.slot(), floats)
            })
            .collect();
        Ok(DocVectors { vectors })
    }

    /// The vector under `slot`, if the row holds it (handed over: each added id names a
    /// slot once).
    fn take(&mut self, slot: u32) -> Option<Vec<f32>> {
        self.vectors.remove(&slot)
    }
}

/// Reads a persisted graph snapshot's parts in order (empty when there is none).
pub(crate) fn read_graph_snapshot(snapshot: &Snapshot) -> Result<Vec<SnapshotPart>, ReadError> {
    let table = match snapshot.txn.open_table(INDEX_SNAPSHOT) {
        Ok(table) => table,
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
        Err(e) => return Err(ReadError::storage(e)),
    };
    let mut parts = Vec::new();
    for entry in table.range::<u32>(..).map_err(ReadError::storage)? {
        let (_, value) = entry.map_err(ReadError::storage)?;
        parts.push(SnapshotPart(value));
    }
    Ok(parts)
}

/// One blob of the persisted graph, read in place (no copy out of redb's buffer).
pub(crate) struct SnapshotPart(redb::AccessGuard<'static, &'static [u8]>);

impl AsRef<[u8]> for SnapshotPart {
    fn as_ref(&self) -> &[u8] {
        self.0.value()
    }
}
