//! F2: a revision fails, waits in a retry queue, and a newer revision of the same document
//! lands meanwhile; then the retry succeeds.
//!
//! A naive store lets the retried old revision overwrite the newer one: the index now serves
//! text the source no longer has, and nothing reports it. ratchetdb's version guard refuses a
//! write older than what is stored, counts it as `skipped_older` and records it in the skip
//! log (I1: a document's stored version never decreases).

use crate::common;
use crate::fixture::Fixture;

use common::{assert_verified, counters};
use ratchetdb::{Document, Outcome, SkipReason, Store, Version};

crate::conformance!(
    a_retry_that_was_never_written_is_refused_after_a_newer_revision,
    a_retry_of_a_written_revision_does_not_roll_the_document_back
);

fn doc(id: &str, version: u64, texts: &[&str]) -> Document {
    common::document("tickets", id, Version::number(version), texts)
}

fn texts(store: &Store, id: &str) -> Vec<String> {
    let stored = store.get("tickets", id).unwrap().unwrap();
    stored.chunks.iter().map(|c| c.text.clone()).collect()
}

const V1: [&str; 3] = ["status: open", "owner: nobody", "priority: low"];
const V2: [&str; 2] = ["status: closed", "resolution: fixed"];

fn a_retry_that_was_never_written_is_refused_after_a_newer_revision(backend: &dyn Fixture) {
    let store = backend.open("db");

    // v1's first attempt failed before reaching the store; v2 lands while v1 waits.
    let v2 = store.upsert(doc("T-1", 2, &V2)).unwrap();
    let Outcome::Written { generation, .. } = v2 else {
        panic!("{v2:?}")
    };
    assert_verified(&store);

    // The retry of v1.
    let before = counters(&store);
    let retry = store.upsert(doc("T-1", 1, &V1)).unwrap();
    assert_eq!(
        retry,
        Outcome::Skipped {
            reason: SkipReason::Older,
            stored_version: Version::number(2),
            incoming_version: Version::number(1),
        }
    );
    let mut expected = before;
    expected.skipped_older += 1;
    expected.commits += 1;
    assert_eq!(counters(&store), expected);
    assert_verified(&store);

    let stored = store.get("tickets", "T-1").unwrap().unwrap();
    assert_eq!(stored.version, Version::number(2));
    assert!(!stored.deleted);
    assert_eq!(stored.generation, generation);
    assert!(stored.chunks.iter().all(|c| c.generation == generation));
    assert_eq!(texts(&store, "T-1"), V2);

    let stats = store.stats().unwrap();
    assert_eq!((stats.documents, stats.chunks, stats.vectors), (1, 2, 2));
    assert_eq!(stats.equal_version_skip_share, 0.0);
    let skip = stats.recent_skips.last().unwrap();
    assert_eq!(
        (
            skip.id.as_str(),
            skip.reason,
            skip.stored_version,
            skip.incoming_version
        ),
        (
            "T-1",
            SkipReason::Older,
            Version::number(2),
            Version::number(1)
        )
    );
}

fn a_retry_of_a_written_revision_does_not_roll_the_document_back(backend: &dyn Fixture) {
    let store = backend.open("db");

    // v1 was written, but its ack was lost, so it sits in the retry queue.
    assert!(matches!(
        store.upsert(doc("T-2", 1, &V1)).unwrap(),
        Outcome::Written { .. }
    ));
    assert_verified(&store);
    // v2 lands: it has fewer chunks, so the surplus goes.
    let before = counters(&store);
    let v2 = store.upsert(doc("T-2", 2, &V2)).unwrap();
    let Outcome::Written { generation, .. } = v2 else {
        panic!("{v2:?}")
    };
    assert_eq!(
        v2,
        Outcome::Written {
            generation,
            chunks_written: 2,
            chunks_reused: 0,
            chunks_removed: 1,
        }
    );
    let mut expected = before;
    expected.written_newer += 1;
    expected.chunks_written += 2;
    expected.chunks_removed += 1;
    expected.commits += 1;
    assert_eq!(counters(&store), expected);
    assert_verified(&store);

    // The retry arrives three times (a retry policy with backoff).
    for attempt in 1..=3u64 {
        let before = counters(&store);
        let retry = store.upsert(doc("T-2", 1, &V1)).unwrap();
        assert_eq!(retry.skip_reason(), Some(SkipReason::Older), "{attempt}");
        let mut expected = before;
        expected.skipped_older += 1;
        expected.commits += 1;
        assert_eq!(counters(&store), expected);
        assert_verified(&store);
        let stored = store.get("tickets", "T-2").unwrap().unwrap();
        assert_eq!(
            (stored.version, stored.generation),
            (Version::number(2), generation)
        );
        assert_eq!(texts(&store, "T-2"), V2);
    }
    assert_eq!(counters(&store).skipped_older, 3);
    assert_eq!(counters(&store).written_newer, 1);
}
