//! What a restored history may hold, on either backend: the outcome counters by name,
//! each at most 2^63 - 1 (PostgreSQL's `bigint`), and skip records within the limits.

use crate::error::InputError;
use crate::types::counters::{name, Counters};
use crate::types::SkipRecord;

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

/// Checks what a restore would write: names and ids within the store's limits.
pub(crate) fn check_skips(skips: &[SkipRecord], limits: &crate::Limits) -> Result<(), InputError> {
    for (i, skip) in skips.iter().enumerate() {
        crate::policy::prepare::check_name(&format!("skips[{i}].source"), &skip.source, limits)?;
        crate::policy::prepare::check_name(&format!("skips[{i}].id"), &skip.id, limits)?;
    }
    Ok(())
}
