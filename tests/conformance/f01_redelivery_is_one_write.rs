//! F1: a worker writes a revision, dies before it acknowledges, and the queue redelivers the
//! same revision.
//!
//! A naive store that keys chunks by random ids writes a second full set of chunks; retrieval
//! then returns every passage twice. ratchetdb keys chunks by `(document, position)` and
//! guards by version: the same revision twice is one write, and the second delivery is
//! refused as `Duplicate` and counted (I7: a redelivery changes nothing but a counter).

use crate::common;
use crate::fixture::Fixture;

use common::{assert_verified, counters, export};
use ratchetdb::{Document, Outcome, SkipReason, Version};

crate::conformance!(
    the_same_revision_twice_is_one_write,
    a_redelivered_batch_is_refused_op_by_op
);

fn doc(id: &str, version: u64, texts: &[&str]) -> Document {
    common::document("wiki", id, Version::number(version), texts)
}

const TEXTS: [&str; 4] = ["Ratchets", "turn", "one", "way."];

fn the_same_revision_twice_is_one_write(backend: &dyn Fixture) {
    let store = backend.open("db");
    assert_verified(&store);

    // First delivery: written.
    let before = counters(&store);
    let first = store.upsert(doc("intro", 3, &TEXTS)).unwrap();
    let Outcome::Written { generation, .. } = first else {
        panic!("first delivery: {first:?}");
    };
    assert_eq!(
        first,
        Outcome::Written {
            generation,
            chunks_written: 4,
            chunks_reused: 0,
            chunks_removed: 0,
        }
    );
    let mut expected = before.clone();
    expected.written_new += 1;
    expected.chunks_written += 4;
    expected.commits += 1;
    assert_eq!(counters(&store), expected);
    assert_verified(&store);
    let state = export(&store);

    // The worker died before acking: the same revision is delivered again, twice.
    for redelivery in 1..=2u64 {
        let before = counters(&store);
        let again = store.upsert(doc("intro", 3, &TEXTS)).unwrap();
        assert_eq!(
            again,
            Outcome::Skipped {
                reason: SkipReason::Duplicate,
                stored_version: Version::number(3),
                incoming_version: Version::number(3),
            }
        );
        let mut expected = before.clone();
        expected.skipped_duplicate += 1;
        expected.skipped_equal_version += 1;
        expected.commits += 1;
        assert_eq!(counters(&store), expected, "redelivery {redelivery}");
        assert_verified(&store);

        // Nothing but the counter changed: same rows, same generation, same vectors.
        assert_eq!(export(&store), state, "redelivery {redelivery}");
        let stored = store.get("wiki", "intro").unwrap().unwrap();
        assert_eq!(stored.version, Version::number(3));
        assert!(!stored.deleted);
        assert_eq!(stored.generation, generation);
        let texts: Vec<&str> = stored.chunks.iter().map(|c| c.text.as_str()).collect();
        assert_eq!(texts, TEXTS);
        assert!(stored.chunks.iter().all(|c| c.generation == generation));
        let stats = store.stats().unwrap();
        assert_eq!((stats.documents, stats.chunks, stats.vectors), (1, 4, 4));
        let last = stats.recent_skips.last().unwrap();
        assert_eq!(
            (last.id.as_str(), last.reason),
            ("intro", SkipReason::Duplicate)
        );
        assert_eq!(stats.recent_skips.len() as u64, redelivery);
    }
}

fn a_redelivered_batch_is_refused_op_by_op(backend: &dyn Fixture) {
    let store = backend.open("db");
    let batch = || {
        (0..5)
            .map(|i| ratchetdb::Op::Upsert(doc(&format!("page-{i}"), 1, &TEXTS[..=i % 4])))
            .collect::<Vec<_>>()
    };
    let results = store.write_batch(batch()).unwrap();
    assert!(results.iter().all(|r| matches!(
        r,
        Ok(ratchetdb::OpOutcome::Document(Outcome::Written { .. }))
    )));
    assert_verified(&store);
    let state = export(&store);
    let before = counters(&store);

    let results = store.write_batch(batch()).unwrap();
    for result in results {
        match result.unwrap() {
            ratchetdb::OpOutcome::Document(outcome) => {
                assert_eq!(outcome.skip_reason(), Some(SkipReason::Duplicate))
            }
            other => panic!("{other:?}"),
        }
    }
    let mut expected = before;
    expected.skipped_duplicate += 5;
    expected.skipped_equal_version += 5;
    expected.commits += 1;
    assert_eq!(counters(&store), expected);
    assert_eq!(export(&store), state);
    let stats = store.stats().unwrap();
    assert_eq!((stats.documents, stats.chunks), (5, 1 + 2 + 3 + 4 + 1));
    assert_verified(&store);
}
