//! A store's history beside its documents: the listings `retain` recorded (with their
//! members), and the counters and skip log. Read from one snapshot; restored in one write
//! transaction. `ratchet copy` moves them between backends with these calls.

use crate::backend::redb::engine::Apply;
use crate::backend::redb::read::Snapshot;
use crate::backend::redb::schema::{self, ListingRow, SkipRow, LISTINGS, LISTING_MEMBERS};
use crate::backend::redb::write::Batch;
use crate::error::{ReadError, WriteError};
use crate::policy::history::outcome_counters;
use crate::types::counters::Counters;
use crate::types::Listing;
use crate::types::SkipRecord;
use crate::types::{Version, VersionKind};
use redb::ReadableTable;

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
