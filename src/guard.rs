//! The version guard: the decision, and nothing but the decision.
//!
//! [`decide`] is a pure function of what is stored and what arrives. It does no I/O; the
//! transaction code in `write` only carries its answer out. Keeping it pure is what lets it be
//! tested over every `(stored, incoming)` case.

use crate::version::{Version, VersionKind};
use serde::{Deserialize, Serialize};
use std::fmt;

/// A blake3 digest of a document's ordered chunk texts and metadata.
pub(crate) type ContentHash = [u8; 32];

/// Why a write was refused. Every refusal is counted by reason.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SkipReason {
    /// The incoming version is lower than the stored one (a late retry, a replay, a backfill).
    Older,
    /// The same version with the same content is already stored (a redelivery).
    Duplicate,
    /// The same version with different content: the version signal cannot tell the two apart,
    /// and the store will not pick one silently (see [`ConflictPolicy`]).
    Conflict,
    /// The document was deleted (or omitted by a listing) at a version not older than this one.
    Tombstoned,
}

impl SkipReason {
    /// The name used in JSON, counters and messages.
    pub fn as_str(self) -> &'static str {
        match self {
            SkipReason::Older => "older",
            SkipReason::Duplicate => "duplicate",
            SkipReason::Conflict => "conflict",
            SkipReason::Tombstoned => "tombstoned",
        }
    }

    pub(crate) fn to_byte(self) -> u8 {
        match self {
            SkipReason::Older => 0,
            SkipReason::Duplicate => 1,
            SkipReason::Conflict => 2,
            SkipReason::Tombstoned => 3,
        }
    }

    pub(crate) fn from_byte(byte: u8) -> Option<SkipReason> {
        match byte {
            0 => Some(SkipReason::Older),
            1 => Some(SkipReason::Duplicate),
            2 => Some(SkipReason::Conflict),
            3 => Some(SkipReason::Tombstoned),
            _ => None,
        }
    }
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What to do when two different contents arrive with the same version (failure F10).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ConflictPolicy {
    /// Refuse the second content and count a `conflict` skip. The default: a tie is never
    /// resolved silently.
    #[default]
    Refuse,
    /// Keep the content whose blake3 content hash is larger. Deterministic, so every delivery
    /// order converges on the same content; each tie it breaks is counted as
    /// `conflicts_resolved`, and the losing side as a `conflict` skip.
    HighestContentHash,
}

/// The stored state of one document, as far as the guard needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stored {
    pub version: Version,
    pub deleted: bool,
    pub content_hash: ContentHash,
}

impl Stored {
    /// A tombstone at `version`; also how a listing that omits an unseen id is represented.
    pub(crate) fn tombstone(version: Version) -> Stored {
        Stored {
            version,
            deleted: true,
            content_hash: [0; 32],
        }
    }
}

/// An arriving write, as far as the guard needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Incoming {
    Upsert {
        version: Version,
        content_hash: ContentHash,
    },
    Delete {
        version: Version,
    },
}

impl Incoming {
    pub(crate) fn version(&self) -> Version {
        match self {
            Incoming::Upsert { version, .. } | Incoming::Delete { version } => *version,
        }
    }
}

/// The guard's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Decision {
    /// No row yet: write the revision.
    Insert,
    /// A newer version with different content, or a revision newer than a tombstone.
    Replace,
    /// A newer version with identical content: raise the version, touch no chunk.
    BumpVersion,
    /// Same version, different content, accepted by [`ConflictPolicy::HighestContentHash`].
    ReplaceOnTie,
    /// Write a tombstone, or raise an existing one. `over_equal_live` marks a delete that
    /// meets a live revision of the same version: deletes dominate ties so that every
    /// delivery order ends in the same state, and the store counts these apart.
    Tombstone { over_equal_live: bool },
    /// Refuse. `equal_version` feeds the resolution-of-the-version-signal statistic.
    Skip {
        reason: SkipReason,
        equal_version: bool,
    },
    /// The stored and incoming versions are of different kinds and cannot be compared.
    KindMismatch { stored: VersionKind },
}

/// Decides what an incoming write does to a document. Pure: no I/O, no clock, no state.
pub(crate) fn decide(
    stored: Option<&Stored>,
    incoming: &Incoming,
    policy: ConflictPolicy,
) -> Decision {
    let Some(stored) = stored else {
        return match incoming {
            Incoming::Upsert { .. } => Decision::Insert,
            Incoming::Delete { .. } => Decision::Tombstone {
                over_equal_live: false,
            },
        };
    };
    let version = incoming.version();
    if stored.version.kind != version.kind {
        return Decision::KindMismatch {
            stored: stored.version.kind,
        };
    }
    let ordering = version.value.cmp(&stored.version.value);
    let skip = |reason| Decision::Skip {
        reason,
        equal_version: ordering.is_eq(),
    };
    use std::cmp::Ordering::{Equal, Greater, Less};
    match (incoming, stored.deleted, ordering) {
        // Upserts against a tombstone: only a strictly newer revision brings the document back.
        (Incoming::Upsert { .. }, true, Greater) => Decision::Replace,
        (Incoming::Upsert { .. }, true, Equal | Less) => skip(SkipReason::Tombstoned),
        // Upserts against a live revision.
        (Incoming::Upsert { content_hash, .. }, false, Greater) => {
            if *content_hash == stored.content_hash {
                Decision::BumpVersion
            } else {
                Decision::Replace
            }
        }
        (Incoming::Upsert { content_hash, .. }, false, Equal) => {
            if *content_hash == stored.content_hash {
                skip(SkipReason::Duplicate)
            } else {
                match policy {
                    ConflictPolicy::HighestContentHash if *content_hash > stored.content_hash => {
                        Decision::ReplaceOnTie
                    }
                    _ => skip(SkipReason::Conflict),
                }
            }
        }
        (Incoming::Upsert { .. }, false, Less) => skip(SkipReason::Older),
        // Deletes.
        (Incoming::Delete { .. }, _, Greater) => Decision::Tombstone {
            over_equal_live: false,
        },
        (Incoming::Delete { .. }, true, Equal) => skip(SkipReason::Duplicate),
        (Incoming::Delete { .. }, false, Equal) => Decision::Tombstone {
            over_equal_live: true,
        },
        (Incoming::Delete { .. }, _, Less) => skip(SkipReason::Older),
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
            content_hash: [hash; 32],
        }
    }

    fn upsert(value: u64, hash: u8) -> Incoming {
        Incoming::Upsert {
            version: v(value),
            content_hash: [hash; 32],
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
                    over_equal_live: false,
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
            (
                Some(live(5, 1)),
                upsert(6, 1),
                Refuse,
                Decision::BumpVersion,
            ),
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
            (Some(live(5, 1)), upsert(5, 2), High, Decision::ReplaceOnTie),
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
                    over_equal_live: true,
                },
            ),
            (
                Some(live(5, 1)),
                delete(6),
                Refuse,
                Decision::Tombstone {
                    over_equal_live: false,
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
                    over_equal_live: false,
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
                            content_hash: [1; 32],
                        };
                        for incoming in [
                            Incoming::Upsert {
                                version: Version {
                                    kind: incoming_kind,
                                    value: 9,
                                },
                                content_hash: [2; 32],
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
                            content_hash: [stored_hash; 32],
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
                                                Decision::ReplaceOnTie
                                                    | Decision::Tombstone {
                                                        over_equal_live: true
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
