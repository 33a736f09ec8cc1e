//! Regression (issue 18, defect 2): a byte flip that changed a vector value left `verify`
//! clean (10 of 200 flips in the hostile round): no row can show that a float changed, and the
//! command line had no way to turn on redb's integrity check. `ratchet verify --deep` runs it:
//! every page checksum is verified, and the changed vector is reported as corruption (exit 1).

use crate::common;

use common::cli;
use ratchetdb::{Chunk, Document, Metric, Options, Store, Version};
use std::time::Duration;

/// A value no other byte run in the file is likely to match (L2 stores vectors as given).
const MARK: f32 = 1234.567;

#[test]
fn verify_deep_reports_a_vector_changed_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store.redb");
    {
        let store = Store::open(&db, Options::default().metric(Metric::L2)).unwrap();
        for id in 0..40 {
            store
                .upsert(
                    Document::new("src", format!("doc-{id:02}"), Version::number(1)).with_chunk(
                        Chunk::new(
                            format!("text {id}"),
                            vec![if id == 7 { MARK } else { id as f32 }, 0.5, -0.25, 2.0],
                        ),
                    ),
                )
                .unwrap();
        }
    }
    let db_arg = db.to_str().unwrap();
    let timeout = Duration::from_secs(120);
    let clean = cli::run(&["verify", "--db", db_arg, "--deep"], |_| {}, None, timeout);
    assert_eq!(clean.code, Some(0), "{}{}", clean.stdout, clean.stderr);
    assert!(
        clean.stdout.contains("every page checksum"),
        "{}",
        clean.stdout
    );

    // Change the mark's lowest mantissa byte wherever the file holds it.
    let mut bytes = std::fs::read(&db).unwrap();
    let mark = MARK.to_le_bytes();
    let mut changed = 0;
    for at in 0..bytes.len() - 4 {
        if bytes[at..at + 4] == mark {
            bytes[at] ^= 0x01;
            changed += 1;
        }
    }
    assert!(changed >= 1, "the vector was not found in the file");
    std::fs::write(&db, &bytes).unwrap();

    // The value read back changed: no row check can tell.
    {
        let store = Store::open(&db, Options::default()).unwrap();
        let doc = store
            .snapshot()
            .unwrap()
            .get_with_vectors("src", "doc-07")
            .unwrap()
            .unwrap();
        let stored = doc.chunks[0].vector.as_ref().unwrap()[0];
        assert_ne!(stored, MARK);
        assert!((stored - MARK).abs() < 0.01, "{stored}");
    }

    let deep = cli::run(&["verify", "--db", db_arg, "--deep"], |_| {}, None, timeout);
    cli::assert_no_panic(&deep, &["verify", "--deep"]);
    assert_eq!(deep.code, Some(1), "{}{}", deep.stdout, deep.stderr);
    assert!(deep.stderr.contains("corrupted"), "{}", deep.stderr);
}
