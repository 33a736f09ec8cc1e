//! F11: a document disappears at the source and no delete event is ever produced (a file
//! removed from a share, a row purged by a batch job, a connector that only lists).
//!
//! A naive index only learns about documents from events, so the vanished one stays
//! retrievable forever. ratchetdb's `retain(source, present, version)` takes a listing of
//! what exists and applies it as a versioned delete of every id of that source it omits,
//! seen or not yet seen: a late stale upsert of an omitted id is refused as `Tombstoned`
//! whatever the delivery order, and documents newer than the listing are kept. `purge`
//! removes old tombstones and listings, and with them that protection: a stale revision
//! older than the purge point is accepted again. That trade-off is shown below.

use crate::common;
use crate::fixture::Fixture;

use common::{assert_verified, counters, skipped};
use ratchetdb::{
    Document, Outcome, PlannedAction, PurgeOutcome, RetainOutcome, SkipReason, Store, Version,
};

crate::conformance!(
    a_listing_deletes_every_omitted_id_seen_or_not,
    listing_before_or_after_the_upsert_ends_the_same,
    purge_drops_the_protection_of_old_tombstones_and_listings
);

fn doc(source: &str, id: &str, version: u64, chunks: usize) -> Document {
    let texts: Vec<String> = (0..chunks)
        .map(|position| format!("{id} v{version} part {position}"))
        .collect();
    common::document(source, id, Version::number(version), &texts)
}

/// The live documents as `(id, version, texts)`, sorted.
fn live(store: &Store) -> Vec<(String, u64, Vec<String>)> {
    let docs = store.documents(false).unwrap();
    docs.into_iter()
        .filter(|d| !d.deleted)
        .map(|d| {
            assert!(d.chunks.iter().all(|c| c.generation == d.generation));
            let texts = d.chunks.iter().map(|c| c.text.clone()).collect();
            (format!("{}/{}", d.source, d.id), d.version.value, texts)
        })
        .collect()
}

fn a_listing_deletes_every_omitted_id_seen_or_not(backend: &dyn Fixture) {
    let store = backend.open("db");
    for d in [
        doc("share", "a", 10, 2),
        doc("share", "b", 10, 1),
        doc("share", "c", 10, 3),
        doc("share", "e", 30, 1),
        doc("other", "c", 10, 1),
    ] {
        store.upsert(d).unwrap();
    }
    assert_verified(&store);

    // The share at version 20 holds a and b: c vanished (no event), e is newer than the
    // listing, d has never been seen.
    let before = counters(&store);
    let outcome = store
        .retain("share", ["a", "b"], Version::number(20))
        .unwrap();
    assert_eq!(
        outcome,
        RetainOutcome {
            skipped: None,
            documents_removed: 1,
            chunks_removed: 3,
            newer_kept: 1,
        }
    );
    let mut expected = before;
    expected.retain_listings += 1;
    expected.retain_documents_removed += 1;
    expected.chunks_removed += 3;
    expected.commits += 1;
    assert_eq!(counters(&store), expected);
    assert_verified(&store);
    let c = store.get("share", "c").unwrap().unwrap();
    assert!(c.deleted && c.chunks.is_empty());
    assert_eq!(c.version, Version::number(20));
    let stats = store.stats().unwrap();
    assert_eq!(
        (stats.documents, stats.tombstones, stats.listings),
        (4, 1, 1)
    );
    assert_eq!(
        live(&store),
        [
            ("other/c".to_string(), 10, vec!["c v10 part 0".to_string()]),
            (
                "share/a".to_string(),
                10,
                vec!["a v10 part 0".to_string(), "a v10 part 1".to_string()]
            ),
            ("share/b".to_string(), 10, vec!["b v10 part 0".to_string()]),
            ("share/e".to_string(), 30, vec!["e v30 part 0".to_string()]),
        ]
    );

    // Late upserts of omitted ids, the vanished one and the never-seen one.
    for (id, version, equal) in [("c", 15, false), ("d", 15, false), ("d", 20, true)] {
        let before = counters(&store);
        let outcome = store.upsert(doc("share", id, version, 2)).unwrap();
        assert_eq!(
            outcome,
            skipped(SkipReason::Tombstoned, 20, version),
            "{id}"
        );
        let mut expected = before;
        expected.skipped_tombstoned += 1;
        expected.skipped_equal_version += u64::from(equal);
        expected.commits += 1;
        assert_eq!(counters(&store), expected, "{id} v{version}");
        assert_verified(&store);
    }
    // The listing blocks d without a row for it.
    assert_eq!(store.get("share", "d").unwrap(), None);
    // A revision newer than the listing is written.
    let before = counters(&store);
    assert!(matches!(
        store.upsert(doc("share", "d", 21, 2)).unwrap(),
        Outcome::Written {
            chunks_written: 2,
            ..
        }
    ));
    let mut expected = before;
    expected.written_new += 1;
    expected.chunks_written += 2;
    expected.commits += 1;
    assert_eq!(counters(&store), expected);
    assert_verified(&store);

    // The same listing redelivered is a duplicate; another listing at that version conflicts.
    let before = counters(&store);
    let again = store
        .retain("share", ["b", "a", "a"], Version::number(20))
        .unwrap();
    assert_eq!(again.skipped, Some(SkipReason::Duplicate));
    let other = store.retain("share", ["a"], Version::number(20)).unwrap();
    assert_eq!(
        other,
        RetainOutcome {
            skipped: Some(SkipReason::Conflict),
            ..RetainOutcome::default()
        }
    );
    let mut expected = before;
    expected.skipped_duplicate += 1;
    expected.skipped_conflict += 1;
    expected.skipped_equal_version += 2;
    expected.commits += 2;
    assert_eq!(counters(&store), expected);
    assert_eq!(store.get("share", "b").unwrap().unwrap().version.value, 10);
    assert!(!store.get("share", "b").unwrap().unwrap().deleted);
    assert_verified(&store);
}

fn listing_before_or_after_the_upsert_ends_the_same(backend: &dyn Fixture) {
    let listing_first = backend.open("x");
    let upsert_first = backend.open("y");
    for store in [&listing_first, &upsert_first] {
        store.upsert(doc("share", "a", 10, 1)).unwrap();
    }

    // x: the listing at 20 (without b) arrives before b's upsert at 15.
    let listing = listing_first
        .retain("share", ["a"], Version::number(20))
        .unwrap();
    assert_eq!(listing, RetainOutcome::default());
    assert_eq!(
        listing_first.upsert(doc("share", "b", 15, 2)).unwrap(),
        skipped(SkipReason::Tombstoned, 20, 15)
    );
    assert_verified(&listing_first);

    // y: b's upsert lands first, then the listing removes it.
    assert!(matches!(
        upsert_first.upsert(doc("share", "b", 15, 2)).unwrap(),
        Outcome::Written { .. }
    ));
    let listing = upsert_first
        .retain("share", ["a"], Version::number(20))
        .unwrap();
    assert_eq!(
        listing,
        RetainOutcome {
            skipped: None,
            documents_removed: 1,
            chunks_removed: 2,
            newer_kept: 0,
        }
    );
    assert_verified(&upsert_first);

    // The same live documents, and b is not live in either.
    assert_eq!(live(&listing_first), live(&upsert_first));
    assert_eq!(live(&listing_first).len(), 1);
    for store in [&listing_first, &upsert_first] {
        assert!(store.get("share", "b").unwrap().is_none_or(|b| b.deleted));
        assert_eq!(store.stats().unwrap().chunks, 1);
    }
    // Note: the representation differs. In y, b has a tombstone row (get() returns it with
    // `deleted: true`, stats().tombstones is 1); in x the listing alone blocks b and get()
    // returns None. Everything the guard decides about b is the same, as shown next.

    // Both stores give the same answers about b from now on.
    for store in [&listing_first, &upsert_first] {
        let plan = store.plan(&doc("share", "b", 18, 1)).unwrap();
        assert_eq!(
            plan.action,
            PlannedAction::Skip {
                reason: SkipReason::Tombstoned,
                stored_version: Version::number(20),
            }
        );
        assert_eq!(
            store.upsert(doc("share", "b", 18, 1)).unwrap(),
            skipped(SkipReason::Tombstoned, 20, 18)
        );
        assert_eq!(
            store.upsert(doc("share", "b", 20, 1)).unwrap(),
            skipped(SkipReason::Tombstoned, 20, 20)
        );
        assert!(matches!(
            store.upsert(doc("share", "b", 21, 1)).unwrap(),
            Outcome::Written { .. }
        ));
        assert_verified(store);
    }
    assert_eq!(live(&listing_first), live(&upsert_first));
    assert_eq!(live(&listing_first).len(), 2);
}

fn purge_drops_the_protection_of_old_tombstones_and_listings(backend: &dyn Fixture) {
    let store = backend.open("db");
    store.upsert(doc("share", "a", 10, 1)).unwrap();
    store.upsert(doc("share", "b", 10, 2)).unwrap();
    store.retain("share", ["a"], Version::number(20)).unwrap();
    assert!(store.get("share", "b").unwrap().unwrap().deleted);
    assert_verified(&store);
    let blocked = PlannedAction::Skip {
        reason: SkipReason::Tombstoned,
        stored_version: Version::number(20),
    };
    for id in ["b", "never-seen"] {
        let plan = store.plan(&doc("share", id, 15, 1)).unwrap();
        assert_eq!(plan.action, blocked, "{id}");
    }

    // Purging below the listing's own version removes nothing.
    let before = counters(&store);
    assert_eq!(
        store.purge("share", Version::number(20)).unwrap(),
        PurgeOutcome::default()
    );
    let mut expected = before;
    expected.commits += 1;
    assert_eq!(counters(&store), expected);

    // Purging above it removes b's tombstone and the listing.
    let before = counters(&store);
    assert_eq!(
        store.purge("share", Version::number(21)).unwrap(),
        PurgeOutcome {
            tombstones_purged: 1,
            listings_purged: 1,
        }
    );
    let mut expected = before;
    expected.purged_tombstones += 1;
    expected.purged_listings += 1;
    expected.commits += 1;
    assert_eq!(counters(&store), expected);
    assert_verified(&store);
    let stats = store.stats().unwrap();
    assert_eq!(
        (stats.documents, stats.tombstones, stats.listings),
        (1, 0, 0)
    );
    assert_eq!(store.get("share", "b").unwrap(), None);

    // The trade-off: stale revisions from before the purge point are accepted again, both
    // of the vanished document and of an id the listing had blocked unseen.
    for id in ["b", "never-seen"] {
        let before = counters(&store);
        assert!(matches!(
            store.upsert(doc("share", id, 15, 1)).unwrap(),
            Outcome::Written { .. }
        ));
        let mut expected = before;
        expected.written_new += 1;
        expected.chunks_written += 1;
        expected.commits += 1;
        assert_eq!(counters(&store), expected);
        assert_verified(&store);
    }
    assert_eq!(live(&store).len(), 3);
}
