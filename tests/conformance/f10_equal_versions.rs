//! F10: two different revisions carry the same version (a second-granularity timestamp, two
//! editors within one second, clock drift between replicas).
//!
//! A naive guard must pick a comparison: with `>` the second real edit is silently lost,
//! with `>=` every redelivery and stale equal-stamped write gets in. ratchetdb never resolves
//! equal versions silently (I8): same content is a `Duplicate`; different content is a
//! `Conflict`, refused by default, or broken by the explicit, deterministic
//! `HighestContentHash` policy so that every delivery order converges. Equal-version refusals
//! are counted apart (`skipped_equal_version`, `equal_version_skip_share`), which measures
//! whether the version signal can tell revisions apart at all.

use crate::common;
use crate::fixture::Fixture;

use common::{assert_verified, counters, skipped};
use ratchetdb::{ConflictPolicy, Document, Options, Outcome, SkipReason, Store, Version};

crate::conformance!(
    under_refuse_equal_versions_are_duplicates_or_conflicts,
    highest_content_hash_converges_in_both_delivery_orders
);

fn open(backend: &dyn Fixture, name: &str, policy: ConflictPolicy) -> Store {
    backend.open_with(
        name,
        Options::default().dimension(3).conflict_policy(policy),
    )
}

/// The page saved at 12:00:05 (second granularity), in two different edits.
fn doc(version: u64, texts: &[&str]) -> Document {
    common::document("wiki", "release-notes", Version::number(version), texts)
}

const EDIT_A: [&str; 2] = ["2.0 ships Monday", "known issue: none"];
const EDIT_B: [&str; 2] = ["2.0 ships Tuesday", "known issue: login"];

fn texts(store: &Store) -> Vec<String> {
    common::texts_of_one_generation(store, "wiki", "release-notes")
}

fn conflict(reason: SkipReason) -> Outcome {
    skipped(reason, 5, 5)
}

fn under_refuse_equal_versions_are_duplicates_or_conflicts(backend: &dyn Fixture) {
    let store = open(backend, "db", ConflictPolicy::Refuse);
    store.upsert(doc(5, &EDIT_A)).unwrap();
    assert_verified(&store);
    let generation = store
        .get("wiki", "release-notes")
        .unwrap()
        .unwrap()
        .generation;

    // Same version, same content: a redelivery.
    let before = counters(&store);
    assert_eq!(
        store.upsert(doc(5, &EDIT_A)).unwrap(),
        conflict(SkipReason::Duplicate)
    );
    let mut expected = before;
    expected.skipped_duplicate += 1;
    expected.skipped_equal_version += 1;
    expected.commits += 1;
    assert_eq!(counters(&store), expected);
    assert_verified(&store);

    // Same version, other content: refused, never picked silently.
    let before = counters(&store);
    assert_eq!(
        store.upsert(doc(5, &EDIT_B)).unwrap(),
        conflict(SkipReason::Conflict)
    );
    let mut expected = before;
    expected.skipped_conflict += 1;
    expected.skipped_equal_version += 1;
    expected.commits += 1;
    assert_eq!(counters(&store), expected);
    assert_verified(&store);
    let stored = store.get("wiki", "release-notes").unwrap().unwrap();
    assert_eq!(
        (stored.version, stored.generation),
        (Version::number(5), generation)
    );
    assert_eq!(texts(&store), EDIT_A);

    // Metadata is content too: the same texts with other metadata also conflict.
    let with_meta = doc(5, &EDIT_A).with_meta(serde_json::json!({"author": "b"}));
    assert_eq!(
        store.upsert(with_meta).unwrap(),
        conflict(SkipReason::Conflict)
    );
    assert_eq!(counters(&store).skipped_conflict, 2);

    // Every refusal so far was at an equal version: the signal is not telling edits apart.
    let stats = store.stats().unwrap();
    assert_eq!(stats.equal_version_skip_share, 1.0);
    let reasons: Vec<SkipReason> = stats.recent_skips.iter().map(|s| s.reason).collect();
    assert_eq!(
        reasons,
        [
            SkipReason::Duplicate,
            SkipReason::Conflict,
            SkipReason::Conflict
        ]
    );
    // An ordinary older write lowers the share.
    assert_eq!(
        store.upsert(doc(4, &EDIT_B)).unwrap().skip_reason(),
        Some(SkipReason::Older)
    );
    assert_eq!(store.stats().unwrap().equal_version_skip_share, 0.75);

    // The way out is a version that says which edit is newer.
    let before = counters(&store);
    assert!(matches!(
        store.upsert(doc(6, &EDIT_B)).unwrap(),
        Outcome::Written { .. }
    ));
    let mut expected = before;
    expected.written_newer += 1;
    expected.chunks_written += 2;
    expected.commits += 1;
    assert_eq!(counters(&store), expected);
    assert_eq!(texts(&store), EDIT_B);
    assert_verified(&store);
}

fn highest_content_hash_converges_in_both_delivery_orders(backend: &dyn Fixture) {
    let policy = ConflictPolicy::HighestContentHash;
    // The content hash of each edit alone, to know which one the policy must keep.
    let hash_of = |name: &str, texts: &[&str]| {
        let store = open(backend, name, policy);
        store.upsert(doc(5, texts)).unwrap();
        store
            .get("wiki", "release-notes")
            .unwrap()
            .unwrap()
            .content_hash
    };
    let (hash_a, hash_b) = (hash_of("a", &EDIT_A), hash_of("b", &EDIT_B));
    assert_ne!(hash_a, hash_b);
    let (winner, winner_hash, loser) = if hash_a > hash_b {
        (EDIT_A, hash_a, EDIT_B)
    } else {
        (EDIT_B, hash_b, EDIT_A)
    };

    let mut finals = Vec::new();
    for (name, first, second) in [("ab", EDIT_A, EDIT_B), ("ba", EDIT_B, EDIT_A)] {
        let store = open(backend, name, policy);
        store.upsert(doc(5, &first)).unwrap();
        assert_verified(&store);
        let before = counters(&store);
        let outcome = store.upsert(doc(5, &second)).unwrap();
        let mut expected = before;
        expected.commits += 1;
        if second == winner {
            // The tie is broken in favour of the arriving content, and counted.
            let Outcome::Written { generation, .. } = outcome else {
                panic!("{name}: {outcome:?}")
            };
            assert_eq!(
                outcome,
                Outcome::Written {
                    generation,
                    chunks_written: 2,
                    chunks_reused: 0,
                    chunks_removed: 0,
                }
            );
            expected.conflicts_resolved += 1;
            expected.chunks_written += 2;
        } else {
            // The arriving content loses the tie: refused as a conflict, and counted.
            assert_eq!(outcome, conflict(SkipReason::Conflict), "{name}");
            expected.skipped_conflict += 1;
            expected.skipped_equal_version += 1;
        }
        assert_eq!(counters(&store), expected, "{name}");
        assert_verified(&store);

        // Redeliveries after the tie: the winner is a duplicate, the loser a conflict again.
        assert_eq!(
            store.upsert(doc(5, &winner)).unwrap(),
            conflict(SkipReason::Duplicate)
        );
        assert_eq!(
            store.upsert(doc(5, &loser)).unwrap(),
            conflict(SkipReason::Conflict)
        );
        assert_verified(&store);
        let stored = store.get("wiki", "release-notes").unwrap().unwrap();
        assert_eq!(stored.content_hash, winner_hash, "{name}");
        assert_eq!(
            (stored.version, stored.deleted),
            (Version::number(5), false)
        );
        finals.push((texts(&store), stored.content_hash));
    }
    assert_eq!(finals[0], finals[1]);
    assert_eq!(finals[0].0, winner);
}
