//! Regression (issue 18, defect 2): on a file damaged outside redb, 3 of 200 byte flips made
//! redb panic inside `verify` and `export` (exit 101). A panic from the storage layer is now
//! contained at the API boundary: reads return `ReadError::Corrupted`, a write returns
//! `WriteError::Corrupted` and poisons the store, and the command line exits 1 with one
//! `error: corrupted …` line.
//!
//! The damage: a document id's first byte set to 0xFF in the file, so redb's `&str` key decode
//! (`str::from_utf8(..).unwrap()`, `types.rs`) panics wherever the key is read.

use crate::common;

use common::cli;
use ratchetdb::{Chunk, Document, Options, ReadError, Store, Version, WriteError};
use std::time::Duration;

const ID: &str = "qqqqqqqqqqqqqqqqqqqq";

#[test]
fn a_panic_inside_redb_is_a_corrupted_error() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store.redb");
    {
        let store = Store::open(&db, Options::default()).unwrap();
        for id in ["a", ID, "z"] {
            store
                .upsert(
                    Document::new("src", id, Version::number(1))
                        .with_chunk(Chunk::new(format!("text {id}"), vec![1.0, 0.0])),
                )
                .unwrap();
        }
    }
    let mut bytes = std::fs::read(&db).unwrap();
    let mut damaged = 0;
    for at in 0..bytes.len() - ID.len() {
        if &bytes[at..at + ID.len()] == ID.as_bytes() {
            bytes[at] = 0xff;
            damaged += 1;
        }
    }
    assert!(damaged >= 1);
    std::fs::write(&db, &bytes).unwrap();

    let store = Store::open(&db, Options::default()).unwrap();
    let contained = |error: &ReadError| {
        matches!(error, ReadError::Corrupted { what, detail }
            if what == "storage layer" && detail.contains("panicked"))
    };
    match store.verify() {
        Err(error) => assert!(contained(&error), "{error}"),
        Ok(report) => panic!("verify passed a damaged key: {report:?}"),
    }
    let exported: Vec<Result<_, _>> = store
        .snapshot()
        .unwrap()
        .documents(false)
        .unwrap()
        .collect();
    let error = exported
        .iter()
        .find_map(|r| r.as_ref().err())
        .expect("export read the damaged key");
    assert!(contained(error), "{error}");
    // The stream ended at the panic.
    assert!(exported.last().is_some_and(|r| r.is_err()));
    assert!(matches!(
        store.stats(),
        Ok(_) | Err(ReadError::Corrupted { .. })
    ));

    // A write that reaches the damaged key: a typed error, then the store refuses writes.
    let write = store.upsert(
        Document::new("src", "qqqqqqqqqqqqqqqqqqqr", Version::number(1))
            .with_chunk(Chunk::new("next to it", vec![0.0, 1.0])),
    );
    match write {
        Err(error @ WriteError::Corrupted { .. }) => {
            let again = store.upsert(
                Document::new("src", "b", Version::number(1))
                    .with_chunk(Chunk::new("after", vec![0.0, 1.0])),
            );
            assert!(
                matches!(again, Err(WriteError::Poisoned { .. })),
                "{error}: {again:?}"
            );
        }
        // The write's path through the tree did not compare against the damaged key.
        Ok(_) => {}
        Err(other) => panic!("unexpected error {other}"),
    }
    drop(store);

    let timeout = Duration::from_secs(60);
    let db_arg = db.to_str().unwrap();
    for command in ["verify", "export"] {
        let run = cli::run(&[command, "--db", db_arg], |_| {}, None, timeout);
        assert_eq!(run.code, Some(1), "{command}: {}", run.stderr);
        assert!(
            run.stderr
                .contains("error: corrupted storage layer: the storage engine panicked"),
            "{command}: {}",
            run.stderr
        );
    }
}
