//! F9: the source deletes a document; later, a stale revision of it arrives (a retry, a
//! replay, an upsert that the delete overtook in the queue).
//!
//! A naive store deletes the rows and forgets: the stale revision then looks new and
//! resurrects the document. ratchetdb writes a versioned tombstone, also for a document it
//! has never seen; an upsert not newer than the tombstone is refused as `Tombstoned` and
//! counted, and only a strictly newer revision brings the document back. A delete at the
//! same version as a live revision wins, so every delivery order converges.

use crate::common;
use crate::fixture::Fixture;

use common::{assert_verified, counters, export, skipped};
use ratchetdb::{Document, Options, Outcome, SkipReason, Store, Version};

crate::conformance!(
    a_stale_revision_does_not_resurrect_a_deleted_document,
    a_delete_that_overtakes_the_first_upsert_blocks_it,
    a_delete_at_the_same_version_wins_in_either_order
);

fn doc(id: &str, version: u64, texts: &[&str]) -> Document {
    common::document("cms", id, Version::number(version), texts)
}

fn assert_tombstone(store: &Store, id: &str, version: u64) {
    let stored = store.get("cms", id).unwrap().unwrap();
    assert!(stored.deleted, "{stored:?}");
    assert_eq!(stored.version, Version::number(version));
    assert!(stored.chunks.is_empty());
    assert_eq!(stored.generation, 0);
}

fn a_stale_revision_does_not_resurrect_a_deleted_document(backend: &dyn Fixture) {
    let store = backend.open("db");
    store.upsert(doc("page", 1, &["a", "b", "c"])).unwrap();
    assert_verified(&store);

    // The source deletes the page at version 5.
    let before = counters(&store);
    let outcome = store.delete("cms", "page", Version::number(5)).unwrap();
    assert_eq!(outcome, Outcome::Deleted { chunks_removed: 3 });
    let mut expected = before;
    expected.deleted += 1;
    expected.chunks_removed += 3;
    expected.commits += 1;
    assert_eq!(counters(&store), expected);
    assert_verified(&store);
    assert_tombstone(&store, "page", 5);
    let stats = store.stats().unwrap();
    assert_eq!(
        (
            stats.documents,
            stats.tombstones,
            stats.chunks,
            stats.vectors
        ),
        (0, 1, 0, 0)
    );
    let state = export(&store);

    // Stale revisions: older than the delete, and at the delete's own version.
    for (version, equal) in [(3, false), (5, true)] {
        let before = counters(&store);
        let outcome = store.upsert(doc("page", version, &["stale"])).unwrap();
        assert_eq!(outcome, skipped(SkipReason::Tombstoned, 5, version));
        let mut expected = before;
        expected.skipped_tombstoned += 1;
        expected.skipped_equal_version += u64::from(equal);
        expected.commits += 1;
        assert_eq!(counters(&store), expected, "v{version}");
        assert_eq!(export(&store), state, "v{version}");
        assert_verified(&store);
    }
    // An older delete and a redelivered delete change nothing either.
    let before = counters(&store);
    assert_eq!(
        store.delete("cms", "page", Version::number(4)).unwrap(),
        skipped(SkipReason::Older, 5, 4)
    );
    assert_eq!(
        store.delete("cms", "page", Version::number(5)).unwrap(),
        skipped(SkipReason::Duplicate, 5, 5)
    );
    let mut expected = before;
    expected.skipped_older += 1;
    expected.skipped_duplicate += 1;
    expected.skipped_equal_version += 1;
    expected.commits += 2;
    assert_eq!(counters(&store), expected);
    assert_eq!(export(&store), state);
    assert_verified(&store);

    // A strictly newer revision brings it back (counted as a new write: nothing was live).
    let before = counters(&store);
    let outcome = store.upsert(doc("page", 6, &["back", "again"])).unwrap();
    let Outcome::Written { generation, .. } = outcome else {
        panic!("{outcome:?}")
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
    let mut expected = before;
    expected.written_new += 1;
    expected.chunks_written += 2;
    expected.commits += 1;
    assert_eq!(counters(&store), expected);
    assert_verified(&store);
    let stored = store.get("cms", "page").unwrap().unwrap();
    assert_eq!(
        (stored.version, stored.deleted),
        (Version::number(6), false)
    );
    let texts: Vec<&str> = stored.chunks.iter().map(|c| c.text.as_str()).collect();
    assert_eq!(texts, ["back", "again"]);
    assert!(stored.chunks.iter().all(|c| c.generation == generation));
    let stats = store.stats().unwrap();
    assert_eq!((stats.documents, stats.tombstones, stats.chunks), (1, 0, 2));
}

fn a_delete_that_overtakes_the_first_upsert_blocks_it(backend: &dyn Fixture) {
    let store = backend.open("db");

    // The delete of a page the store has never seen arrives first.
    let before = counters(&store);
    let outcome = store.delete("cms", "draft", Version::number(2)).unwrap();
    assert_eq!(outcome, Outcome::Deleted { chunks_removed: 0 });
    let mut expected = before;
    expected.deleted += 1;
    expected.commits += 1;
    assert_eq!(counters(&store), expected);
    assert_verified(&store);
    assert_tombstone(&store, "draft", 2);
    assert_eq!(store.stats().unwrap().tombstones, 1);
    let state = export(&store);

    // Then the upserts it overtook.
    for version in [2, 1] {
        let before = counters(&store);
        let outcome = store
            .upsert(doc("draft", version, &["draft text"]))
            .unwrap();
        assert_eq!(outcome, skipped(SkipReason::Tombstoned, 2, version));
        let mut expected = before;
        expected.skipped_tombstoned += 1;
        expected.skipped_equal_version += u64::from(version == 2);
        expected.commits += 1;
        assert_eq!(counters(&store), expected);
        assert_eq!(export(&store), state);
        assert_verified(&store);
    }
    let stats = store.stats().unwrap();
    assert_eq!((stats.documents, stats.tombstones, stats.chunks), (0, 1, 0));
    let log: Vec<(&str, SkipReason)> = stats
        .recent_skips
        .iter()
        .map(|s| (s.id.as_str(), s.reason))
        .collect();
    assert_eq!(
        log,
        [
            ("draft", SkipReason::Tombstoned),
            ("draft", SkipReason::Tombstoned)
        ]
    );
}

fn a_delete_at_the_same_version_wins_in_either_order(backend: &dyn Fixture) {
    let upsert_first = backend.open_with("a", Options::default());
    let delete_first = backend.open_with("b", Options::default());

    upsert_first.upsert(doc("faq", 7, &["q", "a"])).unwrap();
    let before = counters(&upsert_first);
    assert_eq!(
        upsert_first
            .delete("cms", "faq", Version::number(7))
            .unwrap(),
        Outcome::Deleted { chunks_removed: 2 }
    );
    let mut expected = before;
    expected.deleted += 1;
    expected.deletes_over_equal_version += 1;
    expected.chunks_removed += 2;
    expected.commits += 1;
    assert_eq!(counters(&upsert_first), expected);
    assert_verified(&upsert_first);

    delete_first
        .delete("cms", "faq", Version::number(7))
        .unwrap();
    let before = counters(&delete_first);
    assert_eq!(
        delete_first.upsert(doc("faq", 7, &["q", "a"])).unwrap(),
        skipped(SkipReason::Tombstoned, 7, 7)
    );
    let mut expected = before;
    expected.skipped_tombstoned += 1;
    expected.skipped_equal_version += 1;
    expected.commits += 1;
    assert_eq!(counters(&delete_first), expected);
    assert_verified(&delete_first);

    // Both orders end in the same state: a tombstone at version 7.
    assert_tombstone(&upsert_first, "faq", 7);
    assert_eq!(export(&upsert_first), export(&delete_first));
}
