//! The vector index of each space other than the default one (see `backend/redb/spaces.rs`),
//! derived from its rows in `space_vectors` as the default space's is from the vectors rows,
//! loaded by the first search of the space and brought to each search's snapshot from the
//! changelog (removals: every vector id a commit removed goes from every space) and the
//! space changelog (the space vectors each commit added).
//!
//! Invariant: a space's index covers one commit and is used only for a snapshot of that
//! commit; its ids are exactly the space's rows there (`verify` checks it).

use super::{CatchUp, Changes, Derived};
use crate::backend::redb::read::Snapshot;
use crate::backend::redb::schema::{self, SpaceChangeRow, SPACE_CHANGELOG, SPACE_VECTORS};
use crate::error::{Corruption, ReadError};
use crate::index::{VectorIndex, EXACT_THRESHOLD};
use crate::options::{IndexOptions, Metric};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;

/// Vectors inserted per call while loading.
const LOAD_CHUNK: usize = 4096;

/// One space's in-memory index and the commit it covers.
pub(crate) struct SpaceIndex {
    /// The space's id (its rows' key prefix).
    space: u32,
    /// The vectors' dimension.
    pub dimension: usize,
    pub index: VectorIndex,
    /// The last commit applied; held while applying, so changes apply in order.
    applied: Mutex<u64>,
}

fn corrupt(detail: String) -> ReadError {
    Corruption::new("space vectors", detail).into()
}

/// Decodes a space row's vector, checked against `dimension`.
fn floats(bytes: &[u8], dimension: usize, out: &mut Vec<f32>) -> Result<(), ReadError> {
    if bytes.len() != dimension * 4 {
        return Err(corrupt(format!(
            "a vector of {} bytes where the space holds {dimension}-dimensional vectors",
            bytes.len()
        )));
    }
    schema::extend_floats(bytes, out);
    Ok(())
}

impl SpaceIndex {
    /// Every vector of space `space` in `snapshot`, covering its commit.
    fn load(
        snapshot: &Snapshot,
        space: u32,
        dimension: usize,
        metric: Metric,
        params: IndexOptions,
    ) -> Result<SpaceIndex, ReadError> {
        let mut index = VectorIndex::new(dimension, metric).map_err(|e| corrupt(e.to_string()))?;
        index.set_graph_params(params.m, params.ef_construction);
        let loaded = SpaceIndex {
            space,
            dimension,
            index,
            applied: Mutex::new(snapshot.commit()?),
        };
        let table = snapshot
            .txn
            .open_table(SPACE_VECTORS)
            .map_err(ReadError::storage)?;
        let mut ids = Vec::with_capacity(LOAD_CHUNK);
        let mut values: Vec<f32> = Vec::new();
        for entry in table
            .range((space, 0u64)..=(space, u64::MAX))
            .map_err(ReadError::storage)?
        {
            let (key, value) = entry.map_err(ReadError::storage)?;
            ids.push(key.value().1);
            floats(value.value(), dimension, &mut values)?;
            if ids.len() == LOAD_CHUNK {
                loaded.insert(&ids, &values)?;
                ids.clear();
                values.clear();
            }
        }
        loaded.insert(&ids, &values)?;
        Ok(loaded)
    }

    fn insert(&self, ids: &[u64], values: &[f32]) -> Result<(), ReadError> {
        let items: Vec<(u64, &[f32])> = ids
            .iter()
            .copied()
            .zip(values.chunks_exact(self.dimension.max(1)))
            .collect();
        self.index
            .insert_batch(&items)
            .map_err(|e| corrupt(format!("a stored vector does not fit the index: {e}")))
    }

    /// The last commit applied.
    pub(crate) fn applied(&self) -> u64 {
        *self.applied.lock()
    }

    /// Applies every commit up to `snapshot`'s; `false` when the changelog no longer
    /// reaches back far enough (the caller loads it again).
    pub(crate) fn catch_up(&self, snapshot: &Snapshot) -> Result<bool, ReadError> {
        let mut applied = self.applied.lock();
        let mut applying = Applying {
            space: self,
            applied: &mut applied,
        };
        Ok(super::bring_to(&mut applying, snapshot)? == CatchUp::Done)
    }

    /// The ids the index holds, against the space's rows in `snapshot` (which it must
    /// cover): the problems found.
    pub(crate) fn agreement(&self, snapshot: &Snapshot) -> Result<Vec<String>, ReadError> {
        if !self.catch_up(snapshot)? || self.applied() != snapshot.commit()? {
            return Ok(Vec::new());
        }
        let table = snapshot
            .txn
            .open_table(SPACE_VECTORS)
            .map_err(ReadError::storage)?;
        let mut stored = Vec::new();
        for entry in table
            .range((self.space, 0u64)..=(self.space, u64::MAX))
            .map_err(ReadError::storage)?
        {
            stored.push(entry.map_err(ReadError::storage)?.0.value().1);
        }
        let indexed = self.index.live_ids();
        if indexed != stored {
            return Ok(vec![format!(
                "the index holds {} vectors, the space's rows {}",
                indexed.len(),
                stored.len()
            )]);
        }
        Ok(Vec::new())
    }
}

/// A space index with its apply lock held.
struct Applying<'a> {
    space: &'a SpaceIndex,
    applied: &'a mut u64,
}

impl Derived for Applying<'_> {
    fn covers(&self) -> u64 {
        *self.applied
    }

    fn catch_up(&mut self, changes: &Changes<'_>) -> Result<CatchUp, ReadError> {
        let snapshot = changes.snapshot();
        let added = snapshot
            .txn
            .open_table(SPACE_CHANGELOG)
            .map_err(ReadError::storage)?;
        let rows = snapshot
            .txn
            .open_table(SPACE_VECTORS)
            .map_err(ReadError::storage)?;
        let space = self.space.space;
        let mut commit = *self.applied;
        for change in changes.rows() {
            commit += 1;
            for id in &change.removed {
                self.space.index.remove(*id);
            }
            let Some(bytes) = added.get(commit).map_err(ReadError::storage)? else {
                continue;
            };
            let row: SpaceChangeRow = schema::decode("space changelog row", bytes.value())?;
            let mut ids = Vec::new();
            let mut values = Vec::new();
            for (s, id) in row.added {
                if s != space {
                    continue;
                }
                // Absent: removed again by a later commit this snapshot already covers.
                if let Some(v) = rows.get((space, id)).map_err(ReadError::storage)? {
                    ids.push(id);
                    floats(v.value(), self.space.dimension, &mut values)?;
                }
            }
            self.space.insert(&ids, &values)?;
        }
        *self.applied = changes.target();
        Ok(CatchUp::Done)
    }
}

/// Every space's index, by space id, each loaded by the first search of its space.
#[derive(Default)]
pub(crate) struct SpaceIndexes {
    loaded: Mutex<HashMap<u32, Arc<SpaceIndex>>>,
}

impl SpaceIndexes {
    /// Space `space`'s index brought up to `snapshot` (loaded from it if it was not loaded,
    /// or could not catch up), or `None` when another search has taken it past `snapshot`
    /// (the caller retries on a newer snapshot).
    pub(crate) fn at(
        &self,
        snapshot: &Snapshot,
        space: u32,
        dimension: usize,
        metric: Metric,
        params: IndexOptions,
    ) -> Result<Option<Arc<SpaceIndex>>, ReadError> {
        let existing = self.loaded.lock().get(&space).cloned();
        let index = match existing {
            Some(index) if index.dimension == dimension && index.catch_up(snapshot)? => index,
            stale => {
                // A replaced index's graph build stops (a search holding it still answers):
                // left running, it built a graph nothing would use.
                if let Some(stale) = stale {
                    stale.index.close();
                }
                let index = Arc::new(SpaceIndex::load(
                    snapshot, space, dimension, metric, params,
                )?);
                if index.index.len_live() >= EXACT_THRESHOLD {
                    let building = index.clone();
                    // No thread: the space is searched exactly.
                    let _ = std::thread::Builder::new()
                        .name("ratchetdb-space-index".into())
                        .spawn(move || building.index.build_graph_in_background());
                }
                self.loaded.lock().insert(space, index.clone());
                index
            }
        };
        Ok((index.applied() == snapshot.commit()?).then_some(index))
    }

    /// The loaded indexes, by space id.
    pub(crate) fn all(&self) -> Vec<(u32, Arc<SpaceIndex>)> {
        self.loaded
            .lock()
            .iter()
            .map(|(id, index)| (*id, index.clone()))
            .collect()
    }

    /// Forgets the index of space `space` (dropped: its id is never used again).
    pub(crate) fn forget(&self, space: u32) {
        if let Some(index) = self.loaded.lock().remove(&space) {
            index.index.close();
        }
    }

    /// Stops their graph builds (the store is closing).
    pub(crate) fn close(&self) {
        for index in self.loaded.lock().values() {
            index.index.close();
        }
    }
}
