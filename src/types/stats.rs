//! What a store says about itself: counters by outcome, gauges, and the refusals it logged.

use crate::options::Metric;
use crate::types::counters::Counters;
use crate::types::SkipReason;
use crate::types::Version;
use serde::{Deserialize, Serialize};

/// One refused write from the bounded skip log.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkipRecord {
    /// Position in the log (grows forever; the log keeps the most recent).
    pub seq: u64,
    /// The document's source.
    pub source: String,
    /// The document id (`(listing)` for a refused listing).
    pub id: String,
    /// Why it was refused.
    pub reason: SkipReason,
    /// What was stored.
    pub stored_version: Version,
    /// What arrived.
    pub incoming_version: Version,
}

/// What the store holds and what it has refused, from one snapshot.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Stats {
    /// Live documents.
    pub documents: u64,
    /// Tombstones (deleted documents, kept to refuse stale revisions until purged).
    pub tombstones: u64,
    /// Live chunks.
    pub chunks: u64,
    /// Stored vectors (one per live chunk).
    pub vectors: u64,
    /// Live chunks per live document (0 when there are none).
    pub chunks_per_document: f64,
    /// Listings recorded by `retain` and not yet purged.
    pub listings: u64,
    /// Of all refusals, the share whose version equalled the stored one (0 when nothing was
    /// refused). This measures the resolution of the version signal: near 1 means the guard
    /// cannot tell revisions apart (e.g. second-granularity timestamps) and is not guarding.
    pub equal_version_skip_share: f64,
    /// Every counter.
    pub counters: Counters,
    /// The most recent refusals, oldest first.
    pub recent_skips: Vec<SkipRecord>,
    /// The vector dimension, once fixed.
    pub dimension: Option<usize>,
    /// The metric.
    pub metric: Metric,
    /// The embedding model's name, if recorded.
    pub model: Option<String>,
    /// The vector spaces beside the default one (whose vectors are [`Stats::vectors`]), each
    /// with its model, dimension and coverage (see [`Store::spaces`](crate::Store::spaces)).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spaces: Vec<crate::types::SpaceInfo>,
}
