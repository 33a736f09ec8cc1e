//! What a write into a store with damage elsewhere does (issue 18, defect 2: `ingest` exited 0
//! and wrote into 99 of 100 damaged stores). A plain open trusts a cleanly closed file, and a
//! write reads only the pages on its own path, so it neither detects nor repairs damage
//! elsewhere: it succeeds, and the damage stays where it was, still found by
//! `ratchet verify --deep` afterwards. A revision that replaces the damaged row with new
//! vectors replaces the damage with it, once one more commit has moved redb's previous commit
//! (its fallback after a crash, which the check verifies too) past the old row. (A write whose
//! own path meets damage redb panics on is refused as `Corrupted` and poisons the store:
//! `corrupt_storage_panics_are_contained.rs`.)

use crate::common;

use common::cli;
use ratchetdb::{Chunk, Document, Metric, Options, Store, Version};
use std::path::Path;
use std::time::Duration;

const MARK: f32 = 4321.125;

/// A document whose vectors row (8 × 384-d, 12 KB) has pages of its own.
fn document(id: &str, version: u64, first: f32) -> Document {
    let mut doc = Document::new("src", id, Version::number(version));
    for c in 0..8 {
        let mut vector = vec![0.5f32; 384];
        vector[0] = if c == 0 { first } else { c as f32 };
        doc = doc.with_chunk(Chunk::new(format!("{id} chunk {c}"), vector));
    }
    doc
}

fn deep_verify_code(db: &Path) -> Option<i32> {
    let run = cli::run(
        &["verify", "--db", db.to_str().unwrap(), "--deep"],
        |_| {},
        None,
        Duration::from_secs(120),
    );
    cli::assert_no_panic(&run, &["verify", "--deep"]);
    run.code
}

fn damage(db: &Path) -> usize {
    let mut bytes = std::fs::read(db).unwrap();
    let mark = MARK.to_le_bytes();
    let mut changed = 0;
    for at in 0..bytes.len() - 4 {
        if bytes[at..at + 4] == mark {
            bytes[at] ^= 0x01;
            changed += 1;
        }
    }
    std::fs::write(db, &bytes).unwrap();
    changed
}

#[test]
fn a_write_neither_detects_nor_spreads_damage_elsewhere() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store.redb");
    {
        let store = Store::open(&db, Options::default().metric(Metric::L2)).unwrap();
        for i in 0..6 {
            let first = if i == 3 { MARK } else { i as f32 };
            store
                .upsert(document(&format!("doc-{i}"), 1, first))
                .unwrap();
        }
    }
    assert_eq!(deep_verify_code(&db), Some(0));
    assert!(damage(&db) >= 1);

    // A write of other documents succeeds: nothing on its path is damaged.
    {
        let store = Store::open(&db, Options::default()).unwrap();
        store.upsert(document("doc-new", 1, 9.0)).unwrap();
        store.upsert(document("doc-1", 2, 11.0)).unwrap();
    }
    // The damage is still there, and still found.
    assert_eq!(deep_verify_code(&db), Some(1), "the write hid the damage");

    // A revision of the damaged document replaces its vectors row, damage and all.
    {
        let store = Store::open(&db, Options::default()).unwrap();
        let mut revision = document("doc-3", 2, 33.0);
        for chunk in &mut revision.chunks {
            chunk.text.push_str(", revised");
        }
        store.upsert(revision).unwrap();
        // redb's previous commit (its fallback after a crash) still holds the old row until
        // the next commit.
        store.upsert(document("doc-later", 1, 5.0)).unwrap();
    }
    assert_eq!(deep_verify_code(&db), Some(0));
    let store = Store::open(&db, Options::default()).unwrap();
    assert!(store.verify().unwrap().is_ok());
}
