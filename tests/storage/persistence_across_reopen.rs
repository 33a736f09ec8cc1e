//! What a store records survives closing and reopening it: counters, the skip log, the
//! ticket sequence, and the dimension, metric and model it was created with. Opening it with
//! other settings is refused with `OpenError::Mismatch` naming the field (two models or two
//! dimensions are two embedding spaces, never to be mixed in one file), and a file already
//! open elsewhere is refused with `OpenError::Locked`.

use crate::common;

use common::{assert_verified, export};
use ratchetdb::{Document, Metric, OpenError, Options, SkipReason, Store, Version};

fn doc(id: &str, version: u64, texts: &[&str]) -> Document {
    common::document("src", id, Version::number(version), texts)
}

/// The settings the store is created with.
fn created() -> Options {
    Options::default()
        .dimension(3)
        .metric(Metric::L2)
        .model("mini-lm")
}

#[test]
fn counters_skip_log_tickets_and_settings_survive_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.redb");
    let store = Store::create(&path, created()).unwrap();
    store.upsert(doc("a", 2, &["x", "y"])).unwrap();
    store.upsert(doc("a", 1, &["old"])).unwrap();
    store.upsert(doc("a", 2, &["x", "y"])).unwrap();
    store.delete("src", "b", Version::number(4)).unwrap();
    store.upsert(doc("b", 3, &["z"])).unwrap();
    let mut last_ticket = store.ticket().unwrap();
    for _ in 0..2 {
        last_ticket = store.ticket().unwrap();
    }
    assert_verified(&store);
    let stats = store.stats().unwrap();
    let reasons: Vec<SkipReason> = stats.recent_skips.iter().map(|s| s.reason).collect();
    assert_eq!(
        reasons,
        [
            SkipReason::Older,
            SkipReason::Duplicate,
            SkipReason::Tombstoned
        ]
    );
    assert_eq!(stats.counters.commits, 5);
    let state = export(&store);
    drop(store);

    // Reopened with no settings at all: everything comes from the file.
    let store = Store::open(&path, Options::default().must_exist()).unwrap();
    assert_eq!(store.dimension(), Some(3));
    assert_eq!(store.metric(), Metric::L2);
    assert_eq!(store.model(), Some("mini-lm"));
    let reopened = store.stats().unwrap();
    assert_eq!(reopened, stats);
    assert_eq!(
        (
            reopened.dimension,
            reopened.metric,
            reopened.model.as_deref()
        ),
        (Some(3), Metric::L2, Some("mini-lm"))
    );
    assert_eq!(export(&store), state);
    assert!(store.ticket().unwrap().value > last_ticket.value);
    assert_verified(&store);

    // The counters go on from where they were.
    store.upsert(doc("a", 1, &["old"])).unwrap();
    let counters = store.stats().unwrap().counters;
    assert_eq!(counters.skipped_older, stats.counters.skipped_older + 1);
    assert_eq!(counters.commits, stats.counters.commits + 1);
    drop(store);

    // Reopened with the same settings as at creation: fine too.
    let store = Store::open(&path, created()).unwrap();
    assert_eq!(store.stats().unwrap().counters, counters);
    assert_eq!(store.stats().unwrap().recent_skips.len(), 4);
}

#[test]
fn other_settings_are_refused_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.redb");
    let store = Store::create(&path, created()).unwrap();
    store.upsert(doc("a", 1, &["x"])).unwrap();
    let stats = store.stats().unwrap();
    drop(store);

    let cases = [
        (created().dimension(4), "dimension", "3", "4"),
        (created().metric(Metric::Cosine), "metric", "l2", "cosine"),
        (
            created().model("other-model"),
            "model",
            "mini-lm",
            "other-model",
        ),
    ];
    for (options, want_field, want_stored, want_requested) in cases {
        match Store::open(&path, options) {
            Err(OpenError::Mismatch {
                field,
                stored,
                requested,
            }) => assert_eq!(
                (field, stored.as_str(), requested.as_str()),
                (want_field, want_stored, want_requested)
            ),
            other => panic!("{want_field}: {other:?}"),
        }
    }
    // The refused opens changed nothing.
    let store = Store::open(&path, Options::default()).unwrap();
    assert_eq!(store.stats().unwrap(), stats);
    assert_verified(&store);
}

#[test]
fn a_dimension_fixed_by_the_first_vector_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.redb");
    let store = Store::open(&path, Options::default()).unwrap();
    assert_eq!(store.dimension(), None);
    store.upsert(doc("a", 1, &["x"])).unwrap();
    assert_eq!(store.dimension(), Some(3));
    drop(store);

    let store = Store::open(&path, Options::default()).unwrap();
    assert_eq!(store.dimension(), Some(3));
    assert_eq!(store.stats().unwrap().dimension, Some(3));
    drop(store);
    match Store::open(&path, Options::default().dimension(8)) {
        Err(OpenError::Mismatch { field, .. }) => assert_eq!(field, "dimension"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_second_open_while_a_store_is_alive_is_locked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.redb");
    let store = Store::open(&path, Options::default()).unwrap();
    store.upsert(doc("a", 1, &["x"])).unwrap();
    let clone = store.clone();

    match Store::open(&path, Options::default()) {
        Err(OpenError::Locked { path: locked }) => assert_eq!(locked, path),
        other => panic!("{other:?}"),
    }
    // Clones are the way to share a store; the refused open left it working.
    assert!(clone.get("src", "a").unwrap().is_some());
    clone.upsert(doc("a", 2, &["y"])).unwrap();
    drop(store);
    drop(clone);

    let store = Store::open(&path, Options::default()).unwrap();
    assert_eq!(
        store.get("src", "a").unwrap().unwrap().version,
        Version::number(2)
    );
    assert_verified(&store);
}
