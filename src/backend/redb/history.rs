//! A store's history beside its documents: the listings `retain` recorded (with their
//! members), and the counters and skip log. Read from one snapshot; restored in one write
//! transaction. `ratchet copy` moves them between backends with these calls.

use crate::backend::redb::engine::Apply;
use crate::backend::redb::read::Snapshot;
use crate::backend::redb::schema::{self, ListingRow, SkipRow, LISTINGS, LISTING_MEMBERS};
use crate::backend::redb::write::Batch;
use crate::error::{InputError, ReadError, WriteError};
use crate::types::counters::{name, Counters};
use crate::types::Listing;
use crate::types::SkipRecord;
use crate::types::{Version, VersionKind};
use redb::ReadableTable;

/// Every persisted counter that counts outcomes (all of [`Counters`]), as its key, its
/// field's name and its value, except `commits`, which counts a store's own transactions.
pub(crate) fn outcome_counters(counters: &Counters) -> [(&'static str, &'static str, u64); 18] {
    [
        (name::WRITTEN_NEW, "written_new", counters.written_new),
        (name::WRITTEN_NEWER, "written_newer", counters.written_newer),
        (
            name::CONFLICTS_RESOLVED,
            "conflicts_resolved",
            counters.conflicts_resolved,
        ),
        (name::UNCHANGED, "unchanged", counters.unchanged),
        (name::DELETED, "deleted", counters.deleted),
        (
            name::DELETES_OVER_EQUAL_VERSION,
            "deletes_over_equal_version",
            counters.deletes_over_equal_version,
        ),
        (name::SKIPPED_OLDER, "skipped_older", counters.skipped_older),
        (
            name::SKIPPED_DUPLICATE,
            "skipped_duplicate",
            counters.skipped_duplicate,
        ),
        (
            name::SKIPPED_CONFLICT,
            "skipped_conflict",
            counters.skipped_conflict,
        ),
        (
            name::SKIPPED_TOMBSTONED,
            "skipped_tombstoned",
            counters.skipped_tombstoned,
        ),
        (
            name::SKIPPED_EQUAL_VERSION,
            "skipped_equal_version",
            counters.skipped_equal_version,
        ),
        (
            name::RETAIN_LISTINGS,
            "retain_listings",
            counters.retain_listings,
        ),
        (
            name::RETAIN_DOCUMENTS_REMOVED,
            "retain_documents_removed",
            counters.retain_documents_removed,
        ),
        (
            name::CHUNKS_WRITTEN,
            "chunks_written",
            counters.chunks_written,
        ),
        (name::CHUNKS_REUSED, "chunks_reused", counters.chunks_reused),
        (
            name::CHUNKS_REMOVED,
            "chunks_removed",
            counters.chunks_removed,
        ),
        (
            name::PURGED_TOMBSTONES,
            "purged_tombstones",
            counters.purged_tombstones,
        ),
        (
            name::PURGED_LISTINGS,
            "purged_listings",
            counters.purged_listings,
        ),
    ]
}

/// The largest value [`Store::restore_history`](crate::Store::restore_history) takes for a
/// counter: PostgreSQL keeps counters as `bigint`, and no store counts 2^63 outcomes.
pub(crate) const MAX_RESTORED_COUNTER: u64 = i64::MAX as u64;

/// Checks the counters to restore: each at most [`MAX_RESTORED_COUNTER`], else an error
/// naming its field.
pub(crate) fn check_counters(counters: &Counters) -> Result<(), InputError> {
    for (_, field, value) in outcome_counters(counters) {
        if value > MAX_RESTORED_COUNTER {
            return Err(InputError::new(
                format!("counters.{field}"),
                format!("{value} is above the largest a counter takes, 2^63 - 1"),
            ));
        }
    }
    Ok(())
}

/// A skip record as the skip log stores it (its `seq` is the log's own).
pub(crate) fn skip_row(record: &SkipRecord) -> SkipRow {
    SkipRow {
        source: record.source.clone(),
        id: record.id.clone(),
        reason: record.reason.to_byte(),
        stored_kind: record.stored_version.kind.to_byte(),
        stored_value: record.stored_version.value,
        incoming_kind: record.incoming_version.kind.to_byte(),
        incoming_value: record.incoming_version.value,
    }
}

/// Checks what a restore would write: names and ids within the store's limits.
pub(crate) fn check_skips(skips: &[SkipRecord], limits: &crate::Limits) -> Result<(), InputError> {
    for (i, skip) in skips.iter().enumerate() {
        crate::policy::prepare::check_name(&format!("skips[{i}].source"), &skip.source, limits)?;
        crate::policy::prepare::check_name(&format!("skips[{i}].id"), &skip.id, limits)?;
    }
    Ok(())
}

impl Snapshot {
    /// Every listing [`Store::retain`](crate::Store::retain) recorded, with its members, by
    /// `(source, version)`.
    pub fn listings(&self) -> Result<Vec<Listing>, ReadError> {
        let listings = self.txn.open_table(LISTINGS).map_err(ReadError::storage)?;
        let members = self
            .txn
            .open_table(LISTING_MEMBERS)
            .map_err(ReadError::storage)?;
        let mut out = Vec::new();
        for entry in listings.iter().map_err(ReadError::storage)? {
            let (key, value) = entry.map_err(ReadError::storage)?;
            let (source, version) = key.value();
            let row: ListingRow = schema::decode("listing row", value.value())?;
            let kind =
                VersionKind::from_byte(row.version_kind).ok_or_else(|| ReadError::Corrupted {
                    what: "listing row".into(),
                    detail: format!("unknown version kind {}", row.version_kind),
                })?;
            let mut present = Vec::new();
            for member in members
                .range((source, version, "")..)
                .map_err(ReadError::storage)?
            {
                let (member, _) = member.map_err(ReadError::storage)?;
                let (member_source, member_version, id) = member.value();
                if member_source != source || member_version != version {
                    break;
                }
                present.push(id.to_string());
            }
            out.push(Listing {
                source: source.to_string(),
                version: Version {
                    kind,
                    value: version,
                },
                present,
            });
        }
        Ok(out)
    }
}

/// The restore as one operation of a write transaction.
pub(crate) struct Restore {
    pub(crate) counters: Counters,
    pub(crate) skips: Vec<SkipRow>,
}

impl Apply for Restore {
    type Outcome = ();

    fn apply(&mut self, batch: &mut Batch<'_>) -> Result<(), WriteError> {
        let targets = outcome_counters(&self.counters).map(|(key, _, value)| (key, value));
        batch.restore(&targets, std::mem::take(&mut self.skips))
    }

    fn changed_nothing(_: &()) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The field names `outcome_counters` gives (what an `InputError` names) are the
    /// fields of `Counters` its keys set: setting each key shows up under its field alone.
    #[test]
    fn each_counter_key_names_its_field() {
        for (key, field, _) in outcome_counters(&Counters::default()) {
            let mut counters = Counters::default();
            counters.set(key, 7);
            let json = serde_json::to_value(&counters).expect("json");
            let set: Vec<&String> = json
                .as_object()
                .expect("an object")
                .iter()
                .filter(|(_, v)| v.as_u64() == Some(7))
                .map(|(k, _)| k)
                .collect();
            assert_eq!(set, vec![field], "{key}");
        }
    }
}
