//! A file written by a newer ratchetdb (its `meta["schema_version"]`, u64 little-endian, above
//! what this build knows) is refused with `OpenError::SchemaTooNew` saying which version it
//! has, which this build reads, and to upgrade. Never a panic, and the file's schema version
//! and rows are left as they were (no "upgrade" or repair of a format this build does not
//! know).

use crate::support;

use ratchetdb::testkit::{harness_doc, harness_options};
use ratchetdb::{OpenError, Store};
use support::{no_panic, schema_version, set_schema_version};

#[test]
fn a_future_schema_version_is_refused_with_a_clear_message() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (i, future) in [11u64, 12, u64::from(u32::MAX) + 5].into_iter().enumerate() {
        let path = dir.path().join(format!("future-{i}.redb"));
        {
            let store = Store::open(&path, harness_options()).expect("create");
            store
                .upsert(harness_doc("wiki", "a", 1, 2, 1))
                .expect("write");
        }
        set_schema_version(&path, future);
        let opened = no_panic("open", || Store::open(&path, harness_options()));
        match opened {
            Err(e @ OpenError::SchemaTooNew { .. }) => {
                let OpenError::SchemaTooNew {
                    found, supported, ..
                } = &e
                else {
                    unreachable!()
                };
                assert_eq!(u64::from(*found), future.min(u64::from(u32::MAX)));
                assert_eq!(*supported, 10);
                let message = e.to_string();
                assert!(message.contains("upgrade ratchetdb"), "{message}");
                assert!(message.contains("reads up to 10"), "{message}");
            }
            other => panic!("schema {future}: expected SchemaTooNew, got {other:?}"),
        }
        assert_eq!(
            schema_version(&path),
            future,
            "the schema version was changed"
        );
        // The current version opens again once the marker is put back.
        set_schema_version(&path, 10);
        let store = Store::open(&path, harness_options()).expect("schema 10 opens");
        assert!(store.get("wiki", "a").expect("get").is_some());
    }
}
