//! Statistics: counters by outcome and reason, totals, and the recent refusals.

use crate::backend::redb::read::Snapshot;
use crate::backend::redb::schema::{self, SkipRow, COUNTERS, LISTINGS, SKIP_LOG};
use crate::error::ReadError;
use crate::options::Metric;
use crate::policy::guard::SkipReason;
use crate::types::counters::{name, Counters};
use crate::types::Version;
use redb::{ReadableTable, ReadableTableMetadata};
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
}

impl Snapshot {
    /// Counters, totals and recent refusals.
    pub fn stats(&self) -> Result<Stats, ReadError> {
        crate::backend::redb::contain::contain(ReadError::contained, || self.stats_uncontained())
    }

    fn stats_uncontained(&self) -> Result<Stats, ReadError> {
        let table = self.txn.open_table(COUNTERS).map_err(ReadError::storage)?;
        let mut counters = Counters::default();
        let gauge = |key: &str| -> Result<u64, ReadError> {
            Ok(table
                .get(key)
                .map_err(ReadError::storage)?
                .map(|v| v.value())
                .unwrap_or(0))
        };
        let documents = gauge(name::LIVE_DOCUMENTS)?;
        let tombstones = gauge(name::LIVE_TOMBSTONES)?;
        let chunks = gauge(name::LIVE_CHUNKS)?;
        let vectors = gauge(name::LIVE_VECTORS)?;
        for entry in table.iter().map_err(ReadError::storage)? {
            let (key, value) = entry.map_err(ReadError::storage)?;
            counters.set(key.value(), value.value());
        }
        let mut recent_skips = Vec::new();
        let log = self.txn.open_table(SKIP_LOG).map_err(ReadError::storage)?;
        for entry in log.iter().map_err(ReadError::storage)? {
            let (key, value) = entry.map_err(ReadError::storage)?;
            let row: SkipRow = schema::decode("skip log row", value.value())?;
            let (stored_version, incoming_version) = row.versions()?;
            recent_skips.push(SkipRecord {
                seq: key.value(),
                reason: row.reason()?,
                source: row.source,
                id: row.id,
                stored_version,
                incoming_version,
            });
        }
        let listings = self
            .txn
            .open_table(LISTINGS)
            .map_err(ReadError::storage)?
            .len()
            .map_err(ReadError::storage)?;
        let skipped = counters.skipped();
        Ok(Stats {
            documents,
            tombstones,
            chunks,
            vectors,
            chunks_per_document: if documents == 0 {
                0.0
            } else {
                chunks as f64 / documents as f64
            },
            listings,
            equal_version_skip_share: if skipped == 0 {
                0.0
            } else {
                counters.skipped_equal_version as f64 / skipped as f64
            },
            counters,
            recent_skips,
            dimension: self.dimension,
            metric: self.metric,
            model: self.model.clone(),
        })
    }
}
