//! F5: a backfill writes a snapshot of the source taken before live edits that the live
//! pipeline has already indexed.
//!
//! A naive store compares nothing (or compares write times, and the backfill writes last):
//! the snapshot overwrites the live edits. ratchetdb compares the versions the source gave,
//! here its modification times in microseconds, never the time of the write: the snapshot's
//! stale revisions are refused as `Older`, unchanged ones are `Duplicate`, and documents the
//! live pipeline has not seen are written.

use crate::common;
use crate::fixture::Fixture;

use common::{assert_verified, counters};
use ratchetdb::{Document, Op, OpOutcome, Outcome, SkipReason, Store, Version};

crate::conformance!(a_backfill_snapshot_does_not_overwrite_live_edits);

/// 2024-01-01T00:00:00Z, in microseconds.
const T0: u64 = 1_704_067_200_000_000;
const SECOND: u64 = 1_000_000;

/// A file as the source reports it: its modification time is the version.
fn file(id: &str, modified_micros: u64, texts: &[&str]) -> Document {
    common::document(
        "drive",
        id,
        Version::timestamp_micros(modified_micros),
        texts,
    )
}

fn texts(store: &Store, id: &str) -> Vec<String> {
    common::texts_of_one_generation(store, "drive", id)
}

fn a_backfill_snapshot_does_not_overwrite_live_edits(backend: &dyn Fixture) {
    let store = backend.open("db");

    // What the source looked like when the backfill took its snapshot at T0.
    let plan_at_snapshot = file("plan.md", T0 - 3600 * SECOND, &["Q1: hire", "Q2: ship"]);
    let faq_at_snapshot = file("faq.md", T0 - 86_400 * SECOND, &["How do I log in?"]);
    let archive_at_snapshot = file("archive.md", T0 - 7 * 86_400 * SECOND, &["2019 notes"]);

    // The live pipeline, meanwhile: plan.md was edited a minute after the snapshot, and
    // faq.md was indexed as it was (the same modification time as in the snapshot).
    let live_plan = file(
        "plan.md",
        T0 + 60 * SECOND,
        &["Q1: hire two", "Q2: ship", "Q3: rest"],
    );
    assert!(matches!(
        store.upsert(live_plan).unwrap(),
        Outcome::Written { .. }
    ));
    assert!(matches!(
        store.upsert(faq_at_snapshot.clone()).unwrap(),
        Outcome::Written { .. }
    ));
    assert_verified(&store);
    let plan_generation = store.get("drive", "plan.md").unwrap().unwrap().generation;

    // Hours later, the backfill writes its snapshot. Its write time is the latest of all;
    // its versions are the source's times at T0.
    let before = counters(&store);
    let results = store
        .write_batch(vec![
            Op::Upsert(plan_at_snapshot),
            Op::Upsert(faq_at_snapshot),
            Op::Upsert(archive_at_snapshot),
        ])
        .unwrap();
    let outcomes: Vec<Outcome> = results
        .into_iter()
        .map(|r| match r.unwrap() {
            OpOutcome::Document(outcome) => outcome,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        outcomes[0],
        Outcome::Skipped {
            reason: SkipReason::Older,
            stored_version: Version::timestamp_micros(T0 + 60 * SECOND),
            incoming_version: Version::timestamp_micros(T0 - 3600 * SECOND),
        }
    );
    assert_eq!(
        outcomes[1],
        Outcome::Skipped {
            reason: SkipReason::Duplicate,
            stored_version: Version::timestamp_micros(T0 - 86_400 * SECOND),
            incoming_version: Version::timestamp_micros(T0 - 86_400 * SECOND),
        }
    );
    assert!(matches!(
        outcomes[2],
        Outcome::Written {
            chunks_written: 1,
            chunks_reused: 0,
            chunks_removed: 0,
            ..
        }
    ));
    let mut expected = before;
    expected.skipped_older += 1;
    expected.skipped_duplicate += 1;
    expected.skipped_equal_version += 1;
    expected.written_new += 1;
    expected.chunks_written += 1;
    expected.commits += 1;
    assert_eq!(counters(&store), expected);
    assert_verified(&store);

    // The live edit stands, untouched.
    let plan = store.get("drive", "plan.md").unwrap().unwrap();
    assert_eq!(plan.version, Version::timestamp_micros(T0 + 60 * SECOND));
    assert_eq!(plan.generation, plan_generation);
    assert!(!plan.deleted);
    assert_eq!(
        texts(&store, "plan.md"),
        ["Q1: hire two", "Q2: ship", "Q3: rest"]
    );
    assert_eq!(texts(&store, "faq.md"), ["How do I log in?"]);
    assert_eq!(texts(&store, "archive.md"), ["2019 notes"]);
    let stats = store.stats().unwrap();
    assert_eq!((stats.documents, stats.chunks, stats.vectors), (3, 5, 5));
    // One of the two refusals was at an equal version (the unchanged file).
    assert_eq!(stats.equal_version_skip_share, 0.5);

    // An edit made after the snapshot but before the live one is also stale now.
    let before = counters(&store);
    let outcome = store
        .upsert(file("plan.md", T0 + 30 * SECOND, &["Q1: hire one"]))
        .unwrap();
    assert_eq!(outcome.skip_reason(), Some(SkipReason::Older));
    let mut expected = before;
    expected.skipped_older += 1;
    expected.commits += 1;
    assert_eq!(counters(&store), expected);
    assert_eq!(
        texts(&store, "plan.md"),
        ["Q1: hire two", "Q2: ship", "Q3: rest"]
    );
    assert_verified(&store);
}
