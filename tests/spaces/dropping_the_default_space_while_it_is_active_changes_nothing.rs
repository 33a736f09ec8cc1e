//! Dropping the default space while it is the active one has nothing to promote in its
//! place (issue 46): refused with an `InputError` naming `name`, with a complete second
//! space present or none, and the store is left exactly as it was (documents with their
//! vectors, spaces, recorded model and dimension, counters), `verify` clean.

use super::{open, revision, Wide, WIDE};
use ratchetdb::{Store, WriteError};

fn state(store: &Store) -> String {
    format!(
        "{:?}\n{:?}\n{:?}\n{:?} {:?}",
        store.documents(true).expect("documents"),
        store.spaces().expect("spaces"),
        store.stats().expect("stats").counters,
        store.dimension(),
        store.model()
    )
}

fn refused(store: &Store) {
    let before = state(store);
    match store.drop_space("default").unwrap_err() {
        WriteError::Input(e) => {
            assert_eq!(e.field, "name");
            assert!(e.problem.contains("default"), "{}", e.problem);
        }
        other => panic!("expected an input error, got {other:?}"),
    }
    assert_eq!(state(store), before);
    let report = store.verify().expect("verify");
    assert!(report.is_ok(), "{:#?}", report.violations);
}

#[test]
fn dropping_the_default_space_while_it_is_active_changes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(dir.path());
    for d in 0..5 {
        store
            .upsert(revision(&format!("d{d}"), 1, 2))
            .expect("write");
    }
    refused(&store);
    store.add_space("wide", "wide-test", WIDE).expect("add");
    store
        .reembed("wide", &Wide, 4, &mut |_| {})
        .expect("reembed");
    refused(&store);
    // Activated and back: still the default space's turn.
    store.activate("wide").expect("activate");
    store.activate("default").expect("activate default");
    refused(&store);
}
