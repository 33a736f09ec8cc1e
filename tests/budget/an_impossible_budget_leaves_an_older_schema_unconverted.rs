//! Regression: an impossible budget on an existing store was refused only after the open had
//! written to the file. A file of an older schema was backed up (`<file>.schema6-backup`)
//! and converted first, then the open failed with an `InputError` on `memory_budget`. The
//! refusal now comes before any write: no backup is made, every row of every table is as
//! it was (still schema 6; redb's own header and allocator pages aside, which any writable
//! open rewrites), and an open that the budget does not refuse converts it.

use crate::store_rows::every_row;
use ratchetdb::{OpenError, Options, Store};

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/schema6-store.redb"
);

/// The names of the files in `dir`, sorted.
fn files(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("list the directory")
        .map(|entry| {
            entry
                .expect("a directory entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    names
}

#[test]
fn an_impossible_budget_on_a_schema_6_file_converts_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("old.redb");
    std::fs::copy(FIXTURE, &path).expect("copy the fixture");
    let before = every_row(&path);

    // Below the page cache's least share alone: too small for any store.
    match Store::open(&path, Options::default().memory_budget(1 << 20)) {
        Err(OpenError::Input(error)) => assert_eq!(error.field, "memory_budget"),
        Err(other) => panic!("expected an InputError, got {other}"),
        Ok(_) => panic!("a budget of 1 MiB was accepted"),
    }

    assert_eq!(
        files(dir.path()),
        ["old.redb"],
        "the refused open made a backup"
    );
    let after = every_row(&path);
    assert_eq!(
        before.0, after.0,
        "the refused open added or removed tables"
    );
    assert_eq!(
        before.1["meta"], after.1["meta"],
        "the refused open changed the metadata (schema version 6)"
    );
    assert!(before.1 == after.1, "the refused open changed rows");

    // Without the budget the file converts, as it would have.
    let store = Store::open(&path, Options::default()).expect("convert the file");
    assert!(store.stats().expect("stats").documents > 0);
    drop(store);
    assert_eq!(
        files(dir.path()),
        ["old.redb", "old.redb.schema6-backup"],
        "the conversion's backup"
    );
}
