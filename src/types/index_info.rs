//! What the derived vector index covers, for progress and diagnostics.

use serde::{Deserialize, Serialize};

/// The state of the derived index, from [`Store::index_info`](crate::Store::index_info).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct IndexInfo {
    /// The in-memory index holds the live vectors (before that, searches scan the file).
    pub loaded: bool,
    /// An ANN graph is ready (searches above the exact threshold use it).
    pub graph_ready: bool,
    /// A graph build or snapshot load is running in the background.
    pub building: bool,
    /// Live vectors in the index.
    pub live_vectors: u64,
    /// Share of the graph's settled points that are dead (removed or superseded), waiting
    /// for a rebuild; a point being inserted counts once it settles.
    pub dead_fraction: f64,
    /// The last commit sequence the index has applied. `0` on PostgreSQL, whose files have
    /// no commit sequence: pgvector's index changes inside each commit, so it is never
    /// behind.
    pub applied_commit: u64,
    /// Points (live or dead) in the ANN graph; 0 without one.
    pub graph_points: u64,
    /// Live vectors scored exactly beside the graph: new ones the background absorber has
    /// not moved in yet, and points no graph search would reach.
    pub outside_vectors: u64,
    /// Points of the graph snapshot this process loaded or last wrote into the file (0:
    /// none yet). The snapshot is rewritten after a build, and once absorbing has grown
    /// the graph by half (at least 4096 points) past it.
    pub persisted_points: u64,
    /// Under [`Options::memory_budget`](crate::Options::memory_budget): the bytes the
    /// budgeted index holds by its own accounting (codes, links, ids, the id map, the
    /// quantiser, vectors not yet coded), and the budget it was planned for. `0` without a
    /// budget (and on PostgreSQL).
    #[serde(default)]
    pub budgeted_bytes: u64,
    /// The budget the loaded index was planned for (`0`: none).
    #[serde(default)]
    pub memory_budget: u64,
    /// Vectors of the spaces other than the default one held in memory by their indexes
    /// (each loaded by the first search of its space). Always `0` under a memory budget:
    /// a search of such a space scans its rows in the file instead.
    #[serde(default)]
    pub space_vectors: u64,
    /// The index serving was loaded from the snapshot the file holds (the graph without a
    /// budget, the whole budgeted index under one), not built from the vectors rows.
    /// `false` on PostgreSQL (the server keeps its own index).
    #[serde(default)]
    pub loaded_from_file: bool,
}
