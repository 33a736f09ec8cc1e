//! Regression (issue 18, defect 1): `verify` passed a store that `export` could not read. One
//! damaged byte in a tombstone's metadata (`null` → `,ull`) left `verify` clean (exit 0) while
//! `export` failed with "corrupted metadata". `verify` now decodes everything any read decodes:
//! every document's metadata (tombstones included), every chunk's, every vector, and the
//! listing, skip-log and changelog rows.

use crate::common;

use common::cli;
use ratchetdb::{Chunk, Document, Options, Store, Version};
use std::time::Duration;

/// Replaces every occurrence of `from` in the file by `to` (redb may hold older copies of a
/// page too); returns how many there were.
fn patch_file(path: &std::path::Path, from: &[u8], to: &[u8]) -> usize {
    let mut bytes = std::fs::read(path).unwrap();
    let mut count = 0;
    let mut at = 0;
    while let Some(found) = bytes[at..].windows(from.len()).position(|w| w == from) {
        let start = at + found;
        bytes[start..start + to.len()].copy_from_slice(to);
        count += 1;
        at = start + from.len();
    }
    std::fs::write(path, bytes).unwrap();
    count
}

#[test]
fn a_damaged_tombstone_metadata_value_is_a_violation() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store.redb");
    {
        let store = Store::open(&db, Options::default()).unwrap();
        for id in ["a", "b", "c"] {
            store
                .upsert(
                    Document::new("src", id, Version::number(1))
                        .with_meta(serde_json::json!({"doc": id}))
                        .with_chunk(
                            Chunk::new(format!("text of {id}"), vec![1.0, 0.5])
                                .with_meta(serde_json::json!({"chunk": 1})),
                        ),
                )
                .unwrap();
        }
        store.delete("src", "b", Version::number(2)).unwrap();
        assert!(store.verify().unwrap().is_ok());
    }
    // The tombstone is the only row whose metadata is `null` (bincode: length 4, then the
    // text).
    let damaged = patch_file(&db, b"\x04null", b"\x04,ull");
    assert!(
        damaged >= 1,
        "the tombstone's metadata was not found in the file"
    );

    // The library's verify names the document and what is wrong.
    {
        let store = Store::open(&db, Options::default()).unwrap();
        let report = store.verify().unwrap();
        assert!(!report.is_ok(), "verify passed a store export cannot read");
        let violation = &report.violations[0];
        assert_eq!(violation.id.as_deref(), Some("b"), "{violation}");
        assert!(violation.problem.contains("metadata"), "{violation}");
        // What export meets is exactly what verify reported.
        let export: Result<Vec<_>, _> = store
            .snapshot()
            .unwrap()
            .documents(false)
            .unwrap()
            .collect();
        assert!(export.is_err());
    }

    // And the command line exits 1 with the violation, as export does.
    let db_arg = db.to_str().unwrap();
    let timeout = Duration::from_secs(60);
    let verify = cli::run(&["verify", "--db", db_arg], |_| {}, None, timeout);
    cli::assert_no_panic(&verify, &["verify"]);
    assert_eq!(verify.code, Some(1), "{}{}", verify.stdout, verify.stderr);
    assert!(
        verify
            .stdout
            .contains("src/b: the document's metadata does not decode"),
        "{}",
        verify.stdout
    );
    let export = cli::run(&["export", "--db", db_arg], |_| {}, None, timeout);
    assert_eq!(export.code, Some(1), "{}", export.stderr);
    assert!(
        export.stderr.contains("corrupted metadata"),
        "{}",
        export.stderr
    );
}
