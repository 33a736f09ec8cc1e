//! F3: two consumers process two revisions of one document at the same time.
//!
//! A naive store reads the stored version, decides, and writes in separate steps: whichever
//! consumer commits last wins, even with the older revision; or the chunk writes of both
//! interleave and the document ends with chunks of two revisions. In ratchetdb the guard's
//! read, the decision and the whole chunk set change in one ACID write transaction, so the
//! higher revision wins whatever the timing, and its chunks are all of one generation (I2, I3).

use crate::common;
use crate::fixture::Fixture;

use ratchetdb::{Document, Outcome, SkipReason, Version};
use std::sync::Barrier;

crate::conformance!(the_higher_revision_wins_every_race_and_is_never_mixed);

const ROUNDS: u64 = 200;

/// Revision `version` of the one document: odd versions have 5 chunks, even ones 3, and
/// every text names its version, so a mix of revisions is visible in the texts.
fn revision(version: u64) -> Document {
    let count = if version % 2 == 1 { 5 } else { 3 };
    let texts: Vec<String> = (0..count)
        .map(|position| format!("v{version} chunk {position}"))
        .collect();
    common::document("queue", "doc", Version::number(version), &texts)
}

fn the_higher_revision_wins_every_race_and_is_never_mixed(backend: &dyn Fixture) {
    let store = backend.open("db");
    let barrier = Barrier::new(3);
    let mut older_skips = 0u64;
    let mut lower_first = 0u64;

    std::thread::scope(|scope| {
        let consumers: Vec<_> = (0..2u64)
            .map(|consumer| {
                let store = store.clone();
                let barrier = &barrier;
                scope.spawn(move || {
                    let mut outcomes = Vec::new();
                    for round in 0..ROUNDS {
                        // The consumers swap revisions every round.
                        let version = 2 * round + 1 + (consumer + round) % 2;
                        barrier.wait();
                        outcomes.push((version, store.upsert(revision(version)).unwrap()));
                        barrier.wait();
                    }
                    outcomes
                })
            })
            .collect();

        for round in 0..ROUNDS {
            barrier.wait();
            barrier.wait();
            let (low, high) = (2 * round + 1, 2 * round + 2);
            let stored = store.get("queue", "doc").unwrap().unwrap();
            assert!(!stored.deleted, "round {round}");
            assert_eq!(stored.version, Version::number(high), "round {round}");
            let texts: Vec<String> = stored.chunks.iter().map(|c| c.text.clone()).collect();
            let expected: Vec<String> = (0..3).map(|p| format!("v{high} chunk {p}")).collect();
            assert_eq!(texts, expected, "round {round}: low was v{low}");
            assert!(
                stored
                    .chunks
                    .iter()
                    .all(|c| c.generation == stored.generation),
                "round {round}: chunks of two generations: {stored:?}"
            );
            let stats = store.stats().unwrap();
            assert_eq!((stats.documents, stats.chunks, stats.vectors), (1, 3, 3));
            let report = store.verify().unwrap();
            assert!(report.is_ok(), "round {round}: {:?}", report.violations);
        }

        let mut by_version = std::collections::BTreeMap::new();
        for consumer in consumers {
            for (version, outcome) in consumer.join().unwrap() {
                by_version.insert(version, outcome);
            }
        }
        assert_eq!(by_version.len() as u64, 2 * ROUNDS);
        for round in 0..ROUNDS {
            let (low, high) = (2 * round + 1, 2 * round + 2);
            // The higher revision is always written (over the previous round's, or the lower).
            assert!(
                matches!(by_version[&high], Outcome::Written { .. }),
                "v{high}: {:?}",
                by_version[&high]
            );
            // The lower one is written only if it committed first, else refused as older.
            match &by_version[&low] {
                Outcome::Written { .. } => lower_first += 1,
                Outcome::Skipped {
                    reason: SkipReason::Older,
                    stored_version,
                    incoming_version,
                } => {
                    assert_eq!(*stored_version, Version::number(high));
                    assert_eq!(*incoming_version, Version::number(low));
                    older_skips += 1;
                }
                other => panic!("v{low}: {other:?}"),
            }
        }
    });

    // Every delivery is accounted for exactly once, by the outcome it got.
    let counters = store.stats().unwrap().counters;
    assert_eq!(lower_first + older_skips, ROUNDS);
    assert_eq!(counters.written_new, 1);
    assert_eq!(counters.written_newer, ROUNDS + lower_first - 1);
    assert_eq!(counters.skipped_older, older_skips);
    assert_eq!(counters.skipped(), older_skips);
    assert_eq!(counters.unchanged, 0);
    assert_eq!(counters.conflicts_resolved, 0);
    assert_eq!(counters.deleted, 0);
    assert_eq!(counters.commits, 2 * ROUNDS);
    eprintln!("lower revision committed first in {lower_first} of {ROUNDS} rounds");
}
