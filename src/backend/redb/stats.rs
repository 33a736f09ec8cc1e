//! Statistics: counters by outcome and reason, totals, and the recent refusals.

use crate::backend::redb::read::Snapshot;
use crate::backend::redb::schema::{self, SkipRow, COUNTERS, LISTINGS, SKIP_LOG};
use crate::error::ReadError;
use crate::types::counters::{name, Counters};
use crate::types::{SkipRecord, Stats};
use redb::{ReadableTable, ReadableTableMetadata};

impl Snapshot {
    /// Counters, totals and recent refusals.
    pub fn stats(&self) -> Result<Stats, ReadError> {
        crate::backend::redb::contain::contain(ReadError::contained, || self.stats_uncontained())
    }

    /// The `live.vectors` counter: the vectors the index holds at this snapshot.
    pub(crate) fn live_vectors(&self) -> Result<u64, ReadError> {
        let table = self.txn.open_table(COUNTERS).map_err(ReadError::storage)?;
        Ok(table
            .get(name::LIVE_VECTORS)
            .map_err(ReadError::storage)?
            .map(|v| v.value())
            .unwrap_or(0))
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
            spaces: crate::backend::redb::spaces::spaces(self)?
                .into_iter()
                .skip(1)
                .collect(),
        })
    }
}
