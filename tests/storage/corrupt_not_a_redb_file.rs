//! Opening a file that is not a redb database: random bytes of several sizes, a text file, a
//! JSON file, a file of zeros. Each is refused with `OpenError::NotAStore` naming the problem
//! (redb's missing magic number), with or without `check_integrity_on_open`, never a panic,
//! and the file is left byte for byte as it was.
//!
//! The one exception, by design: an EMPTY file (length 0) is a new store. redb initialises an
//! empty file, so `Store::open` (even with `must_exist`, since the file exists) and
//! `Store::create` turn it into an empty ratchetdb store. A zero-length file holds nothing
//! that could be lost.

use crate::support;

use ratchetdb::testkit::{harness_doc, harness_options, SplitMix64};
use ratchetdb::{Outcome, Store};
use support::no_panic;

#[test]
fn foreign_files_are_refused_and_left_untouched() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut rng = SplitMix64::new(0x0bad);
    let mut files: Vec<(String, Vec<u8>)> = [1usize, 100, 511, 4096, 100_000]
        .iter()
        .map(|&len| {
            let bytes = (0..len).map(|_| rng.next_u64() as u8).collect();
            (format!("random-{len}"), bytes)
        })
        .collect();
    files.push((
        "text".into(),
        "Lorem ipsum dolor sit amet.\n".repeat(500).into_bytes(),
    ));
    files.push((
        "json".into(),
        br#"{"op":"upsert","source":"s","id":"a","version":1,"chunks":[]}"#.repeat(100),
    ));
    files.push(("zeros".into(), vec![0; 8192]));
    for (name, bytes) in &files {
        for check in [false, true] {
            let path = dir.path().join(format!("{name}.bin"));
            std::fs::write(&path, bytes).expect("write");
            let opened = no_panic(&format!("opening {name}"), || {
                Store::open(&path, harness_options().check_integrity_on_open(check))
            });
            match opened {
                Err(e @ ratchetdb::OpenError::NotAStore { .. }) => {
                    let message = e.to_string();
                    assert!(
                        message.contains("not a ratchetdb store"),
                        "{name}: {message}"
                    );
                    assert!(message.contains("magic number"), "{name}: {message}");
                }
                other => panic!("{name} (check {check}): expected NotAStore, got {other:?}"),
            }
            assert_eq!(
                &std::fs::read(&path).expect("read"),
                bytes,
                "{name} was modified"
            );
        }
    }
}

#[test]
fn an_empty_file_becomes_a_new_store() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (i, open) in ["open", "open must_exist", "create", "open checked"]
        .iter()
        .enumerate()
    {
        let path = dir.path().join(format!("empty-{i}.redb"));
        std::fs::write(&path, b"").expect("write");
        let store = no_panic(open, || match *open {
            "open" => Store::open(&path, harness_options()),
            "open must_exist" => Store::open(&path, harness_options().must_exist()),
            "create" => Store::create(&path, harness_options()),
            _ => Store::open(&path, harness_options().check_integrity_on_open(true)),
        })
        .unwrap_or_else(|e| panic!("{open} on an empty file: {e}"));
        assert_eq!(store.stats().expect("stats").documents, 0);
        assert!(matches!(
            store.upsert(harness_doc("wiki", "a", 1, 2, 1)),
            Ok(Outcome::Written { .. })
        ));
        assert!(store.verify().expect("verify").is_ok());
    }
}
