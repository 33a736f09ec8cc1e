//! The names of the persisted counters and gauges, and the typed view of them.

use serde::{Deserialize, Serialize};

use crate::types::SkipReason;

/// The counters a refused write bumps by one: the one for its reason, and
/// `skipped.equal_version` when it carried the stored version itself. Both backends
/// count refusals through this, so their counters agree.
pub(crate) fn for_skip(
    reason: SkipReason,
    equal_version: bool,
) -> impl Iterator<Item = &'static str> {
    let by_reason = match reason {
        SkipReason::Older => name::SKIPPED_OLDER,
        SkipReason::Duplicate => name::SKIPPED_DUPLICATE,
        SkipReason::Conflict => name::SKIPPED_CONFLICT,
        SkipReason::Tombstoned => name::SKIPPED_TOMBSTONED,
    };
    std::iter::once(by_reason).chain(equal_version.then_some(name::SKIPPED_EQUAL_VERSION))
}

/// Names in the `counters` table. Counters only grow; gauges are the live totals that
/// `verify` recomputes from the rows.
pub(crate) mod name {
    pub(crate) const WRITTEN_NEW: &str = "written.new";
    pub(crate) const WRITTEN_NEWER: &str = "written.newer";
    /// `conflicts_resolved` (the persisted key keeps its first name).
    pub(crate) const CONFLICTS_RESOLVED: &str = "written.tie_broken";
    pub(crate) const UNCHANGED: &str = "unchanged";
    pub(crate) const DELETED: &str = "deleted";
    /// `deletes_over_equal_version` (the persisted key keeps its first name).
    pub(crate) const DELETES_OVER_EQUAL_VERSION: &str = "deleted.over_equal_live";
    pub(crate) const SKIPPED_OLDER: &str = "skipped.older";
    pub(crate) const SKIPPED_DUPLICATE: &str = "skipped.duplicate";
    pub(crate) const SKIPPED_CONFLICT: &str = "skipped.conflict";
    pub(crate) const SKIPPED_TOMBSTONED: &str = "skipped.tombstoned";
    pub(crate) const SKIPPED_EQUAL_VERSION: &str = "skipped.equal_version";
    pub(crate) const RETAIN_LISTINGS: &str = "retain.listings";
    pub(crate) const RETAIN_DOCUMENTS_REMOVED: &str = "retain.documents_removed";
    pub(crate) const CHUNKS_WRITTEN: &str = "chunks.written";
    pub(crate) const CHUNKS_REUSED: &str = "chunks.reused";
    pub(crate) const CHUNKS_REMOVED: &str = "chunks.removed";
    pub(crate) const PURGED_TOMBSTONES: &str = "purged.tombstones";
    pub(crate) const PURGED_LISTINGS: &str = "purged.listings";
    pub(crate) const COMMITS: &str = "commits";
    pub(crate) const LIVE_DOCUMENTS: &str = "live.documents";
    pub(crate) const LIVE_TOMBSTONES: &str = "live.tombstones";
    pub(crate) const LIVE_CHUNKS: &str = "live.chunks";
    pub(crate) const LIVE_VECTORS: &str = "live.vectors";
}

/// Every outcome and refusal the store has counted since it was created. Persisted in the
/// file, updated in the same transaction as the writes they count.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Counters {
    /// Revisions written for a document with no live revision (new, or after a tombstone).
    pub written_new: u64,
    /// Revisions written over an older live revision.
    pub written_newer: u64,
    /// Equal-version conflicts accepted by [`ConflictPolicy::HighestContentHash`](crate::ConflictPolicy).
    pub conflicts_resolved: u64,
    /// Newer versions with identical content (version raised, no chunk touched).
    pub unchanged: u64,
    /// Deletes applied (tombstones written or raised), including by nothing else than a delete.
    pub deleted: u64,
    /// Of `deleted`: deletes that met a live revision of the same version (deletes win ties).
    pub deletes_over_equal_version: u64,
    /// Refused: older than what is stored.
    pub skipped_older: u64,
    /// Refused: this exact revision is already stored.
    pub skipped_duplicate: u64,
    /// Refused: same version, other content.
    pub skipped_conflict: u64,
    /// Refused: not newer than a delete or a listing that omitted the document.
    pub skipped_tombstoned: u64,
    /// Of all refusals: those whose version equalled the stored one.
    pub skipped_equal_version: u64,
    /// Listings recorded by `retain`.
    pub retain_listings: u64,
    /// Live documents tombstoned by listings.
    pub retain_documents_removed: u64,
    /// Chunks written with a new vector.
    pub chunks_written: u64,
    /// Chunks that kept (or copied) a stored vector for identical text.
    pub chunks_reused: u64,
    /// Chunks removed (surplus positions, deleted documents).
    pub chunks_removed: u64,
    /// Tombstones removed by `purge`.
    pub purged_tombstones: u64,
    /// Listings removed by `purge`.
    pub purged_listings: u64,
    /// Write transactions committed.
    pub commits: u64,
}

impl Counters {
    /// All refusals (saturating at `u64::MAX`: the counters are read from the file, and a
    /// damaged one must not overflow the sum).
    pub fn skipped(&self) -> u64 {
        self.skipped_older
            .saturating_add(self.skipped_duplicate)
            .saturating_add(self.skipped_conflict)
            .saturating_add(self.skipped_tombstoned)
    }

    pub(crate) fn set(&mut self, key: &str, value: u64) {
        let slot = match key {
            name::WRITTEN_NEW => &mut self.written_new,
            name::WRITTEN_NEWER => &mut self.written_newer,
            name::CONFLICTS_RESOLVED => &mut self.conflicts_resolved,
            name::UNCHANGED => &mut self.unchanged,
            name::DELETED => &mut self.deleted,
            name::DELETES_OVER_EQUAL_VERSION => &mut self.deletes_over_equal_version,
            name::SKIPPED_OLDER => &mut self.skipped_older,
            name::SKIPPED_DUPLICATE => &mut self.skipped_duplicate,
            name::SKIPPED_CONFLICT => &mut self.skipped_conflict,
            name::SKIPPED_TOMBSTONED => &mut self.skipped_tombstoned,
            name::SKIPPED_EQUAL_VERSION => &mut self.skipped_equal_version,
            name::RETAIN_LISTINGS => &mut self.retain_listings,
            name::RETAIN_DOCUMENTS_REMOVED => &mut self.retain_documents_removed,
            name::CHUNKS_WRITTEN => &mut self.chunks_written,
            name::CHUNKS_REUSED => &mut self.chunks_reused,
            name::CHUNKS_REMOVED => &mut self.chunks_removed,
            name::PURGED_TOMBSTONES => &mut self.purged_tombstones,
            name::PURGED_LISTINGS => &mut self.purged_listings,
            name::COMMITS => &mut self.commits,
            _ => return,
        };
        *slot = value;
    }
}

#[cfg(test)]
mod tests {
    use super::name;

    /// The Rust names follow the concepts' one name; the keys in the file never change.
    #[test]
    fn renamed_counters_keep_their_persisted_keys() {
        assert_eq!(name::CONFLICTS_RESOLVED, "written.tie_broken");
        assert_eq!(name::DELETES_OVER_EQUAL_VERSION, "deleted.over_equal_live");
        assert_eq!(name::UNCHANGED, "unchanged");
    }
}
