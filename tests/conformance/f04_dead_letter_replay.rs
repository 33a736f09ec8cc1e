//! F4: an operator replays a dead-letter queue, reintroducing payloads hours or months old
//! over documents that have moved on since.
//!
//! A naive store applies every replayed payload: a mass stale overwrite that rolls back every
//! document the queue touched. ratchetdb applies the same version guard to a replay as to any
//! write, so replay is a safe operation: every stale payload is refused as `Older`, counted
//! and logged, and the stored state is exactly what it was.

use crate::common;
use crate::fixture::Fixture;

use common::{assert_verified, counters, export};
use ratchetdb::{Document, Op, OpOutcome, Outcome, SkipReason, Version};

crate::conformance!(replaying_a_dead_letter_queue_over_newer_state_changes_nothing);

const DOCS: u64 = 20;
const CURRENT: u64 = 10;

/// Revision `version` of document `n`: 2 to 4 chunks, texts naming the revision.
fn revision(n: u64, version: u64) -> Document {
    let texts: Vec<String> = (0..2 + (n + version) % 3)
        .map(|position| format!("account {n} revision {version} part {position}"))
        .collect();
    let id = format!("account-{n}");
    common::document("crm", &id, Version::number(version), &texts)
}

fn replaying_a_dead_letter_queue_over_newer_state_changes_nothing(backend: &dyn Fixture) {
    let store = backend.open("db");
    let live: Vec<Op> = (0..DOCS)
        .map(|n| Op::Upsert(revision(n, CURRENT)))
        .collect();
    for result in store.write_batch(live).unwrap() {
        assert!(matches!(
            result.unwrap(),
            OpOutcome::Document(Outcome::Written { .. })
        ));
    }
    assert_verified(&store);
    let state = export(&store);
    let before = counters(&store);

    // The dead-letter queue: every older revision of every document, plus an old delete per
    // document, in a scrambled order.
    let mut replay: Vec<Op> = Vec::new();
    for n in 0..DOCS {
        for version in 1..CURRENT {
            replay.push(Op::Upsert(revision(n, version)));
        }
        replay.push(Op::Delete {
            source: "crm".into(),
            id: format!("account-{n}"),
            version: Version::number(4),
        });
    }
    let total = replay.len() as u64;
    assert_eq!(total, DOCS * CURRENT);
    let mut seed = 0x2545_f491_u64;
    for i in (1..replay.len()).rev() {
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        replay.swap(i, (seed >> 33) as usize % (i + 1));
    }

    let batches = replay.len().div_ceil(25) as u64;
    let mut batch = Vec::new();
    for (i, op) in replay.into_iter().enumerate() {
        batch.push(op);
        if batch.len() == 25 || i as u64 == total - 1 {
            for result in store.write_batch(std::mem::take(&mut batch)).unwrap() {
                let OpOutcome::Document(Outcome::Skipped {
                    reason,
                    stored_version,
                    incoming_version,
                }) = result.unwrap()
                else {
                    panic!("a replayed payload was applied");
                };
                assert_eq!(reason, SkipReason::Older);
                assert_eq!(stored_version, Version::number(CURRENT));
                assert!(incoming_version.value < CURRENT);
            }
            // The state is unchanged after every batch, not only at the end.
            assert_eq!(export(&store), state);
            assert_verified(&store);
        }
    }

    let mut expected = before;
    expected.skipped_older += total;
    expected.commits += batches;
    assert_eq!(counters(&store), expected);

    let stats = store.stats().unwrap();
    assert_eq!(stats.documents, DOCS);
    assert_eq!(stats.tombstones, 0);
    assert_eq!(stats.recent_skips.len() as u64, total);
    assert!(stats
        .recent_skips
        .iter()
        .all(|s| s.reason == SkipReason::Older && s.stored_version == Version::number(CURRENT)));
    assert_eq!(stats.equal_version_skip_share, 0.0);
    for n in 0..DOCS {
        let stored = store.get("crm", &format!("account-{n}")).unwrap().unwrap();
        assert_eq!(stored.version, Version::number(CURRENT));
        assert!(!stored.deleted);
        assert!(stored
            .chunks
            .iter()
            .all(|c| c.generation == stored.generation
                && c.text
                    .starts_with(&format!("account {n} revision {CURRENT} "))));
    }
}
