//! Regression: `Store::backup` copied only the tables it knew, and refused a store holding
//! the vector spaces' tables as "not one this build knows". A backup of a store with a
//! second space, active, holds that space whole: the same spaces and coverage, `verify`
//! clean, and searches of the backup use the space.

use super::{open, revision, wide, Wide, WIDE};
use ratchetdb::{SearchOptions, Store};

#[test]
fn a_backup_keeps_every_space() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(dir.path());
    for d in 0..10 {
        store
            .upsert(revision(&format!("d{d}"), 1, 3))
            .expect("write");
    }
    store.add_space("wide", "wide-test", WIDE).expect("add");
    store
        .reembed("wide", &Wide, 4, &mut |_| {})
        .expect("reembed");
    store.activate("wide").expect("activate");
    let copy = dir.path().join("copy.redb");
    store.backup(&copy).expect("backup");
    let restored = Store::open_read_only(&copy).expect("open the backup");
    assert_eq!(
        restored.spaces().expect("spaces"),
        store.spaces().expect("spaces")
    );
    let report = restored.verify().expect("verify");
    assert!(report.is_ok(), "{:#?}", report.violations);
    let hits = restored
        .search(&wide("d7 v1 c2"), 1, &SearchOptions::default())
        .expect("search the active space");
    assert_eq!(hits[0].text, "d7 v1 c2");
}
