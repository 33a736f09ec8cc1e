//! The version guard: the decision, and nothing but the decision.
//!
//! [`decide_upsert`] and [`decide_delete`] are pure functions of what is stored and what
//! arrives. They do no I/O; each backend's transaction code only carries their answer out.
//! Keeping them pure is what lets them be tested over every `(stored, incoming)` case.

use crate::options::ConflictPolicy;
use crate::types::{SkipReason, Version, VersionKind};

/// A blake3 digest of a document's ordered chunk texts and metadata.
pub(crate) type ContentHash = [u8; 32];

/// What the guard compares of a content hash: its first 16 bytes (the embedded store keeps
/// only these in a document's row). Two contents with equal keys are the same content (a
/// 128-bit collision is out of reach), and keys order as their hashes do but for such a tie.
pub(crate) type ContentKey = [u8; 16];

/// The [`ContentKey`] of a content hash: its first 16 bytes.
pub(crate) fn content_key(hash: &ContentHash) -> ContentKey {
    let mut key = [0; 16];
    key.copy_from_slice(&hash[..16]);
    key
}

/// The stored state of one document, as far as the guard needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stored {
    pub version: Version,
    pub deleted: bool,
    pub content_key: ContentKey,
}

impl Stored {
    /// A tombstone at `version`; also how a listing that omits an unseen id is represented.
    pub(crate) fn tombstone(version: Version) -> Stored {
        Stored {
            version,
            deleted: true,
            content_key: [0; 16],
        }
    }
}

/// An arriving write, as far as the guard needs it (for the case table's [`decide`]).
#[cfg(test)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Incoming {
    Upsert {
        version: Version,
        content_key: ContentKey,
    },
    Delete {
        version: Version,
    },
}

/// Why an accepted upsert is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WriteReason {
    /// No row yet.
    Insert,
    /// A newer version with different content, or a revision newer than a tombstone.
    Replace,
    /// Same version, different content, accepted by [`ConflictPolicy::HighestContentHash`]:
    /// a conflict resolved (counted as `conflicts_resolved`).
    ResolveConflict,
}

/// The guard's answer to an upsert.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum UpsertDecision {
    /// Write the revision.
    Write(WriteReason),
    /// A newer version with identical content: the outcome is `Unchanged`; the stored
    /// version is raised and no chunk is touched. Only over a live revision.
    Unchanged,
    /// Refuse. `equal_version` feeds the resolution-of-the-version-signal statistic.
    Skip {
        reason: SkipReason,
        equal_version: bool,
    },
    /// The stored and incoming versions are of different kinds and cannot be compared.
    KindMismatch { stored: VersionKind },
}

/// The guard's answer to a delete.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DeleteDecision {
    /// Write a tombstone, or raise an existing one. `over_equal_version` marks a delete that
    /// meets a live revision of the same version: deletes win ties so that every delivery
    /// order ends in the same state, and the store counts these apart
    /// (`deletes_over_equal_version`).
    Tombstone { over_equal_version: bool },
    /// Refuse. `equal_version` feeds the resolution-of-the-version-signal statistic.
    Skip {
        reason: SkipReason,
        equal_version: bool,
    },
    /// The stored and incoming versions are of different kinds and cannot be compared.
    KindMismatch { stored: VersionKind },
}

/// Either kind's answer in one type, for the case table, which runs upserts and deletes
/// through one [`decide`]. The store uses [`decide_upsert`] and [`decide_delete`], whose
/// answers cannot name the other kind's effects.
#[cfg(test)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Decision {
    /// [`WriteReason::Insert`].
    Insert,
    /// [`WriteReason::Replace`].
    Replace,
    /// [`UpsertDecision::Unchanged`].
    Unchanged,
    /// [`WriteReason::ResolveConflict`].
    ResolveConflict,
    /// [`DeleteDecision::Tombstone`].
    Tombstone { over_equal_version: bool },
    /// Refuse. `equal_version` feeds the resolution-of-the-version-signal statistic.
    Skip {
        reason: SkipReason,
        equal_version: bool,
    },
    /// The stored and incoming versions are of different kinds and cannot be compared.
    KindMismatch { stored: VersionKind },
}

#[cfg(test)]
impl From<UpsertDecision> for Decision {
    fn from(decision: UpsertDecision) -> Decision {
        match decision {
            UpsertDecision::Write(WriteReason::Insert) => Decision::Insert,
            UpsertDecision::Write(WriteReason::Replace) => Decision::Replace,
            UpsertDecision::Write(WriteReason::ResolveConflict) => Decision::ResolveConflict,
            UpsertDecision::Unchanged => Decision::Unchanged,
            UpsertDecision::Skip {
                reason,
                equal_version,
            } => Decision::Skip {
                reason,
                equal_version,
            },
            UpsertDecision::KindMismatch { stored } => Decision::KindMismatch { stored },
        }
    }
}

#[cfg(test)]
impl From<DeleteDecision> for Decision {
    fn from(decision: DeleteDecision) -> Decision {
        match decision {
            DeleteDecision::Tombstone { over_equal_version } => {
                Decision::Tombstone { over_equal_version }
            }
            DeleteDecision::Skip {
                reason,
                equal_version,
            } => Decision::Skip {
                reason,
                equal_version,
            },
            DeleteDecision::KindMismatch { stored } => Decision::KindMismatch { stored },
        }
    }
}

/// Decides what an incoming write does to a document (the case table's entry point).
#[cfg(test)]
pub(crate) fn decide(
    stored: Option<&Stored>,
    incoming: &Incoming,
    policy: ConflictPolicy,
) -> Decision {
    match *incoming {
        Incoming::Upsert {
            version,
            content_key,
        } => decide_upsert(stored, version, content_key, policy).into(),
        Incoming::Delete { version } => decide_delete(stored, version).into(),
    }
}

/// Compares `version` with the stored one: `Err` with the stored kind if they cannot be
/// compared.
fn compare(stored: &Stored, version: Version) -> Result<std::cmp::Ordering, VersionKind> {
    if stored.version.kind == version.kind {
        Ok(version.value.cmp(&stored.version.value))
    } else {
        Err(stored.version.kind)
    }
}

/// Decides what an upsert of `version` whose content has `content_key` does. Pure.
pub(crate) fn decide_upsert(
    stored: Option<&Stored>,
    version: Version,
    content_key: ContentKey,
    policy: ConflictPolicy,
) -> UpsertDecision {
    let Some(stored) = stored else {
        return UpsertDecision::Write(WriteReason::Insert);
    };
    let ordering = match compare(stored, version) {
        Ok(ordering) => ordering,
        Err(stored) => return UpsertDecision::KindMismatch { stored },
    };
    let skip = |reason| UpsertDecision::Skip {
        reason,
        equal_version: ordering.is_eq(),
    };
    use std::cmp::Ordering::{Equal, Greater, Less};
    let same_content = content_key == stored.content_key;
    match (stored.deleted, ordering) {
        // Against a tombstone: only a strictly newer revision brings the document back.
        (true, Greater) => UpsertDecision::Write(WriteReason::Replace),
        (true, Equal | Less) => skip(SkipReason::Tombstoned),
        // Against a live revision.
        (false, Greater) if same_content => UpsertDecision::Unchanged,
        (false, Greater) => UpsertDecision::Write(WriteReason::Replace),
        (false, Equal) if same_content => skip(SkipReason::Duplicate),
        (false, Equal) => match policy {
            ConflictPolicy::HighestContentHash if content_key > stored.content_key => {
                UpsertDecision::Write(WriteReason::ResolveConflict)
            }
            _ => skip(SkipReason::Conflict),
        },
        (false, Less) => skip(SkipReason::Older),
    }
}

/// Decides what a delete at `version` does. Pure.
pub(crate) fn decide_delete(stored: Option<&Stored>, version: Version) -> DeleteDecision {
    let Some(stored) = stored else {
        return DeleteDecision::Tombstone {
            over_equal_version: false,
        };
    };
    let ordering = match compare(stored, version) {
        Ok(ordering) => ordering,
        Err(stored) => return DeleteDecision::KindMismatch { stored },
    };
    let skip = |reason| DeleteDecision::Skip {
        reason,
        equal_version: ordering.is_eq(),
    };
    use std::cmp::Ordering::{Equal, Greater, Less};
    match (stored.deleted, ordering) {
        (_, Greater) => DeleteDecision::Tombstone {
            over_equal_version: false,
        },
        (true, Equal) => skip(SkipReason::Duplicate),
        (false, Equal) => DeleteDecision::Tombstone {
            over_equal_version: true,
        },
        (_, Less) => skip(SkipReason::Older),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KINDS: [VersionKind; 3] = [
        VersionKind::Number,
        VersionKind::TimestampMicros,
        VersionKind::Ticket,
    ];
    const POLICIES: [ConflictPolicy; 2] =
        [ConflictPolicy::Refuse, ConflictPolicy::HighestContentHash];

    fn v(value: u64) -> Version {
        Version::number(value)
    }

    fn live(value: u64, hash: u8) -> Stored {
        Stored {
            version: v(value),
            deleted: false,
            content_key: [hash; 16],
        }
    }

    fn upsert(value: u64, hash: u8) -> Incoming {
        Incoming::Upsert {
            version: v(value),
            content_key: [hash; 16],
        }
    }

    fn delete(value: u64) -> Incoming {
        Incoming::Delete { version: v(value) }
    }

    fn skip(reason: SkipReason, equal_version: bool) -> Decision {
        Decision::Skip {
            reason,
            equal_version,
        }
    }

    /// The whole table: every stored state (none, live, tombstone) against every incoming
    /// kind (upsert with same or other content, delete) at lower, equal and higher versions,
    /// under both policies. The expected column is written out case by case.
    #[test]
    fn every_stored_incoming_case() {
        use ConflictPolicy::{HighestContentHash as High, Refuse};
        let tomb = Stored::tombstone(v(5));
        let cases: Vec<(Option<Stored>, Incoming, ConflictPolicy, Decision)> = vec![
            // Nothing stored.
            (None, upsert(1, 1), Refuse, Decision::Insert),
            (
                None,
                delete(1),
                Refuse,
                Decision::Tombstone {
                    over_equal_version: false,
                },
            ),
            // Live, same content.
            (
                Some(live(5, 1)),
                upsert(4, 1),
                Refuse,
                skip(SkipReason::Older, false),
            ),
            (
                Some(live(5, 1)),
                upsert(5, 1),
                Refuse,
                skip(SkipReason::Duplicate, true),
            ),
            (Some(live(5, 1)), upsert(6, 1), Refuse, Decision::Unchanged),
            // Live, other content.
            (
                Some(live(5, 1)),
                upsert(4, 2),
                Refuse,
                skip(SkipReason::Older, false),
            ),
            (
                Some(live(5, 1)),
                upsert(5, 2),
                Refuse,
                skip(SkipReason::Conflict, true),
            ),
            (
                Some(live(5, 1)),
                upsert(5, 2),
                High,
                Decision::ResolveConflict,
            ),
            (
                Some(live(5, 2)),
                upsert(5, 1),
                High,
                skip(SkipReason::Conflict, true),
            ),
            (Some(live(5, 1)), upsert(6, 2), Refuse, Decision::Replace),
            (
                Some(live(5, 1)),
                upsert(4, 2),
                High,
                skip(SkipReason::Older, false),
            ),
            // Live, delete.
            (
                Some(live(5, 1)),
                delete(4),
                Refuse,
                skip(SkipReason::Older, false),
            ),
            (
                Some(live(5, 1)),
                delete(5),
                Refuse,
                Decision::Tombstone {
                    over_equal_version: true,
                },
            ),
            (
                Some(live(5, 1)),
                delete(6),
                Refuse,
                Decision::Tombstone {
                    over_equal_version: false,
                },
            ),
            // Tombstone, upsert: never brought back by a version that is not newer.
            (
                Some(tomb),
                upsert(4, 1),
                Refuse,
                skip(SkipReason::Tombstoned, false),
            ),
            (
                Some(tomb),
                upsert(5, 1),
                Refuse,
                skip(SkipReason::Tombstoned, true),
            ),
            (
                Some(tomb),
                upsert(5, 1),
                High,
                skip(SkipReason::Tombstoned, true),
            ),
            (Some(tomb), upsert(6, 1), Refuse, Decision::Replace),
            // Tombstone, delete.
            (
                Some(tomb),
                delete(4),
                Refuse,
                skip(SkipReason::Older, false),
            ),
            (
                Some(tomb),
                delete(5),
                Refuse,
                skip(SkipReason::Duplicate, true),
            ),
            (
                Some(tomb),
                delete(6),
                Refuse,
                Decision::Tombstone {
                    over_equal_version: false,
                },
            ),
        ];
        for (stored, incoming, policy, expected) in cases {
            assert_eq!(
                decide(stored.as_ref(), &incoming, policy),
                expected,
                "stored {stored:?}, incoming {incoming:?}, policy {policy:?}"
            );
        }
    }

    #[test]
    fn kinds_never_compare() {
        for stored_kind in KINDS {
            for incoming_kind in KINDS {
                for policy in POLICIES {
                    for deleted in [false, true] {
                        let stored = Stored {
                            version: Version {
                                kind: stored_kind,
                                value: 5,
                            },
                            deleted,
                            content_key: [1; 16],
                        };
                        for incoming in [
                            Incoming::Upsert {
                                version: Version {
                                    kind: incoming_kind,
                                    value: 9,
                                },
                                content_key: [2; 16],
                            },
                            Incoming::Delete {
                                version: Version {
                                    kind: incoming_kind,
                                    value: 9,
                                },
                            },
                        ] {
                            let decision = decide(Some(&stored), &incoming, policy);
                            if stored_kind == incoming_kind {
                                assert!(!matches!(decision, Decision::KindMismatch { .. }));
                            } else {
                                assert_eq!(
                                    decision,
                                    Decision::KindMismatch {
                                        stored: stored_kind
                                    }
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    /// Exhaustive over small versions and hashes: the guard never lets the stored version
    /// go down, and equal versions are only ever accepted by an explicit rule.
    #[test]
    fn never_backwards_and_no_silent_tie() {
        for policy in POLICIES {
            for stored_value in 0..4u64 {
                for deleted in [false, true] {
                    for stored_hash in 0..3u8 {
                        let stored = Stored {
                            version: v(stored_value),
                            deleted,
                            content_key: [stored_hash; 16],
                        };
                        for incoming_value in 0..4u64 {
                            for incoming_hash in 0..3u8 {
                                for incoming in [
                                    upsert(incoming_value, incoming_hash),
                                    delete(incoming_value),
                                ] {
                                    let decision = decide(Some(&stored), &incoming, policy);
                                    let accepted = !matches!(decision, Decision::Skip { .. });
                                    if accepted {
                                        assert!(
                                            incoming_value >= stored_value,
                                            "{stored:?} {incoming:?}"
                                        );
                                    }
                                    if accepted && incoming_value == stored_value {
                                        assert!(
                                            matches!(
                                                decision,
                                                Decision::ResolveConflict
                                                    | Decision::Tombstone {
                                                        over_equal_version: true
                                                    }
                                            ),
                                            "silent tie: {stored:?} {incoming:?} -> {decision:?}"
                                        );
                                    }
                                    if let Decision::Skip { equal_version, .. } = decision {
                                        assert_eq!(equal_version, incoming_value == stored_value);
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}
