//! A file of a schema older than any this build can convert (below 1; schemas 1 to 5 are
//! converted on open, see `schema_1_file_is_converted_on_open.rs` to
//! `schema_5_file_is_converted_on_open.rs`) is
//! refused with
//! `OpenError::SchemaTooOld`, naming both versions and saying how to move the data (export
//! with the build that wrote it, ingest the export). Never a panic, and the
//! file's schema version and rows are left as they were: no partial conversion. (The bytes
//! may differ: redb records its own clean shutdown when the refused open closes the file.)
//! Issue 46 (review of today's merges), item 3: the advice said `ratchet export`, whose
//! output (without vectors) a new store cannot take; it now says to read the documents with
//! their vectors. Issue 47 item 8: the library names its own call for that
//! (`Store::documents`); the command line adds `ratchet export --vectors`.

use crate::support;

use ratchetdb::testkit::{harness_doc, harness_options, store_rows, ModelRow};
use ratchetdb::{OpenError, Store};
use std::collections::BTreeMap;
use std::path::Path;
use support::{no_panic, schema_version, set_schema_version};

type Rows = BTreeMap<(String, String), ModelRow>;

/// A schema-10 store of one document at `path`; returns its rows.
fn one_document_store(path: &Path) -> Rows {
    let store = Store::open(path, harness_options()).expect("create");
    store
        .upsert(harness_doc("wiki", "a", 1, 2, 1))
        .expect("write");
    store_rows(&store).expect("rows")
}

/// Marks the file schema 10 again and checks that its rows are still `rows`.
fn assert_rows_unchanged(path: &Path, rows: &Rows) {
    set_schema_version(path, 10);
    let store = Store::open(path, harness_options()).expect("schema 10 opens");
    assert_eq!(
        &store_rows(&store).expect("rows"),
        rows,
        "the rows were changed"
    );
}

#[test]
fn older_schema_version_is_refused_with_export_advice() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("old.redb");
    let rows = one_document_store(&path);
    let old = 0u64;
    set_schema_version(&path, old);
    let opened = no_panic("open", || Store::open(&path, harness_options()));
    match opened {
        Err(e @ OpenError::SchemaTooOld { .. }) => {
            let OpenError::SchemaTooOld {
                found, supported, ..
            } = &e
            else {
                unreachable!()
            };
            assert_eq!(u64::from(*found), old);
            assert_eq!(*supported, 10);
            let message = e.to_string();
            assert!(message.contains("schema version"), "{message}");
            assert!(message.contains("with their vectors"), "{message}");
            assert!(message.contains("Store::documents"), "{message}");
            assert!(message.contains("into a new store"), "{message}");
        }
        other => panic!("schema {old}: expected SchemaTooOld, got {other:?}"),
    }
    assert_eq!(schema_version(&path), old, "the schema version was changed");
    assert_rows_unchanged(&path, &rows);
}

/// A file of this schema (10) whose marker says 1 to 5 does not hold that schema's rows: the
/// conversion finds that out and refuses the file as corrupted, changing nothing.
#[test]
fn a_current_file_marked_older_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    for marked in [1u64, 2, 3, 4, 5] {
        let path = dir.path().join(format!("mislabelled-{marked}.redb"));
        let rows = one_document_store(&path);
        set_schema_version(&path, marked);
        match no_panic("open", || Store::open(&path, harness_options())) {
            Err(OpenError::Corrupted { what, .. }) => {
                assert!(what.contains(&format!("schema-{marked}")), "{what}")
            }
            other => panic!("marked {marked}: expected Corrupted, got {other:?}"),
        }
        assert_eq!(
            schema_version(&path),
            marked,
            "the schema version was changed"
        );
        assert_rows_unchanged(&path, &rows);
    }
}
