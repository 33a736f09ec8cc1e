//! `Store::open_read_only` never writes: a store opened read-only reads everything (get,
//! documents, stats, verify, search through the loaded index),
//! refuses every write with `WriteError::ReadOnly`, and leaves the directory exactly as it
//! was: the same file names, and every file's bytes and modification time unchanged (no
//! recovery, conversion, recorded dimension, persisted graph or scratch file beside it).
//! A missing, empty, older-schema or foreign file is refused with its own error, untouched.

use crate::common;

use common::document;
use ratchetdb::{Chunk, Document, OpenError, Options, SearchOptions, Store, Version, WriteError};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, SystemTime};

/// Every file in `dir`: its bytes and modification time.
fn fingerprint(dir: &Path) -> BTreeMap<String, (Vec<u8>, SystemTime)> {
    std::fs::read_dir(dir)
        .expect("read dir")
        .map(|entry| {
            let entry = entry.expect("entry");
            let meta = entry.metadata().expect("metadata");
            (
                entry.file_name().to_string_lossy().into_owned(),
                (
                    std::fs::read(entry.path()).expect("read"),
                    meta.modified().expect("mtime"),
                ),
            )
        })
        .collect()
}

fn assert_unchanged(dir: &Path, before: &BTreeMap<String, (Vec<u8>, SystemTime)>, what: &str) {
    let after = fingerprint(dir);
    assert_eq!(
        after.keys().collect::<Vec<_>>(),
        before.keys().collect::<Vec<_>>(),
        "{what}: the directory's files changed"
    );
    for (name, (bytes, mtime)) in before {
        let (now_bytes, now_mtime) = &after[name];
        assert!(now_bytes == bytes, "{what}: {name}'s bytes changed");
        assert_eq!(
            now_mtime, mtime,
            "{what}: {name}'s modification time changed"
        );
    }
}

/// An 8-dimensional vector for (document, chunk): spread, never zero.
fn vector(doc: usize, chunk: usize) -> Vec<f32> {
    (0..8)
        .map(|d| 1.0 + ((doc * 31 + chunk * 7 + d * 13) % 29) as f32)
        .collect()
}

/// Documents and chunks of the store the reader opens.
const DOCS: usize = 60;
const CHUNKS: usize = 20;

fn big_doc(doc: usize, version: u64) -> Document {
    let mut d = Document::new("s", format!("d{doc}"), Version::number(version));
    for chunk in 0..CHUNKS {
        d = d.with_chunk(Chunk::new(
            format!("doc {doc} v{version} chunk {chunk}"),
            vector(doc, chunk),
        ));
    }
    d
}

#[test]
fn a_read_only_store_reads_everything_and_changes_no_byte() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.redb");
    let query = vector(3, 4);
    let (expected_hits, expected_stats, expected_docs) = {
        let store = Store::open(&path, Options::default().model("m")).unwrap();
        for start in (0..DOCS).step_by(30) {
            let ops = (start..(start + 30).min(DOCS))
                .map(|doc| ratchetdb::Op::Upsert(big_doc(doc, 1)))
                .collect();
            for result in store.write_batch(ops).unwrap() {
                result.unwrap();
            }
        }
        store.delete("s", "d7", Version::number(2)).unwrap();
        let hits = store.search(&query, 10, &SearchOptions::default()).unwrap();
        (hits, store.stats().unwrap(), common::export(&store))
    };
    let before = fingerprint(dir.path());

    let reader = Store::open_read_only(&path).unwrap();
    assert!(reader.is_read_only());
    assert_eq!(reader.dimension(), Some(8));
    assert_eq!(reader.model(), Some("m"));
    assert!(reader.wait_for_index(Duration::from_secs(60)), "index load");
    let info = reader.index_info();
    assert!(info.loaded, "{info:?}");
    assert_eq!(info.live_vectors as usize, (DOCS - 1) * CHUNKS);
    let hits = reader
        .search(&query, 10, &SearchOptions::default())
        .unwrap();
    let ids = |hits: &[ratchetdb::Hit]| -> Vec<(String, u32)> {
        hits.iter().map(|h| (h.id.clone(), h.position)).collect()
    };
    assert_eq!(ids(&hits), ids(&expected_hits));
    let exact = reader
        .search(&query, 10, &SearchOptions::default().exact(true))
        .unwrap();
    assert_eq!(ids(&exact), ids(&expected_hits));
    assert_eq!(reader.stats().unwrap(), expected_stats);
    assert_eq!(common::export(&reader), expected_docs);
    assert!(reader.get("s", "d7").unwrap().unwrap().deleted);
    let report = reader.verify().unwrap();
    assert!(report.is_ok(), "{:?}", report.violations);
    // An explicit build of the graph works in memory and persists nothing.
    reader.build_index().unwrap();
    assert!(reader.index_info().graph_ready);
    let hits = reader
        .search(&query, 10, &SearchOptions::default())
        .unwrap();
    assert_eq!(hits.len(), 10);
    drop(reader);
    assert_unchanged(dir.path(), &before, "after reading");
}

#[test]
fn writes_to_a_read_only_store_are_refused_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.redb");
    {
        let store = common::open_file(&path);
        store
            .upsert(document("s", "a", Version::number(1), &["one", "two"]))
            .unwrap();
    }
    let before = fingerprint(dir.path());
    let reader = Store::open_read_only(&path).unwrap();
    let read_only = |result: Result<(), WriteError>, what: &str| match result {
        Err(WriteError::ReadOnly { path: named }) => assert_eq!(named, path, "{what}"),
        other => panic!("{what}: {other:?}"),
    };
    read_only(
        reader
            .upsert(document("s", "a", Version::number(2), &["three"]))
            .map(drop),
        "upsert",
    );
    read_only(
        reader
            .upsert(document("s", "new", Version::number(1), &["x"]))
            .map(drop),
        "upsert of a new document",
    );
    read_only(
        reader.delete("s", "a", Version::number(3)).map(drop),
        "delete",
    );
    read_only(
        reader
            .retain("s", Vec::<String>::new(), Version::number(4))
            .map(drop),
        "retain",
    );
    read_only(reader.purge("s", Version::number(9)).map(drop), "purge");
    read_only(
        reader
            .write_batch(vec![ratchetdb::Op::Upsert(document(
                "s",
                "b",
                Version::number(1),
                &["y"],
            ))])
            .map(drop),
        "write_batch",
    );
    read_only(reader.sync(), "sync");
    read_only(reader.ticket().map(drop), "ticket");
    // Bad input is still reported as such, before the store's mode is looked at.
    assert!(matches!(
        reader.upsert(document("", "a", Version::number(5), &["z"])),
        Err(WriteError::Input(_))
    ));
    let writer = reader.writer();
    match writer
        .submit(ratchetdb::Op::Upsert(document(
            "s",
            "c",
            Version::number(1),
            &["w"],
        )))
        .and_then(|pending| pending.wait())
    {
        // Refused at submit, as on PostgreSQL (it was a failed batch before the backends
        // shared one writer: tests/conformance/read_only_stores_refuse_writes.rs).
        Err(WriteError::ReadOnly { .. }) => {}
        other => panic!("writer: {other:?}"),
    }
    writer.shutdown();
    // Nothing was written, and the store still reads what it held.
    let stored = reader.get("s", "a").unwrap().unwrap();
    assert_eq!(stored.version, Version::number(1));
    assert!(reader.get("s", "c").unwrap().is_none());
    drop(reader);
    assert_unchanged(dir.path(), &before, "after refused writes");
}

#[test]
fn missing_empty_older_and_foreign_files_are_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();

    let missing = dir.path().join("missing.redb");
    assert!(matches!(
        Store::open_read_only(&missing),
        Err(OpenError::NotFound { .. })
    ));
    assert!(!missing.exists(), "a read-only open created the file");

    let empty = dir.path().join("empty.redb");
    std::fs::write(&empty, b"").unwrap();
    let before = fingerprint(dir.path());
    let error = Store::open_read_only(&empty).unwrap_err();
    assert!(matches!(error, OpenError::Empty { .. }), "{error:?}");
    assert!(error.to_string().contains("Store::open"), "{error}");

    let foreign = dir.path().join("foreign.txt");
    std::fs::write(&foreign, b"just some text, not a database at all").unwrap();
    let older = dir.path().join("schema2.redb");
    std::fs::copy(
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/schema2-store.redb"
        ),
        &older,
    )
    .unwrap();
    let before_more = fingerprint(dir.path());
    assert_eq!(before_more.len(), before.len() + 2);
    match Store::open_read_only(&older) {
        Err(error @ OpenError::NeedsConversion { found: 2, .. }) => {
            assert!(error.to_string().contains("Store::open"), "{error}")
        }
        other => panic!("schema 2: {other:?}"),
    }
    assert!(matches!(
        Store::open_read_only(&foreign),
        Err(OpenError::NotAStore { .. })
    ));
    assert_unchanged(dir.path(), &before_more, "after the refused opens");
}
