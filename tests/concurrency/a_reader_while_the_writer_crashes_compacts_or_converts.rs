//! Issue 44, "not yet tried": a reader opened while the writer crashes, compacts on close or
//! converts the schema. In each case every read either sees one consistent commit (the
//! documents of a commit the writer made, whole; `verify` clean; searches answer) or fails
//! with a typed error; never a panic, never a mix.
//!
//! - crash: a read-only store opened beside a `ratchet ingest` process that is then killed
//!   keeps reading the last commit (every acknowledged line); a new read-only open gets
//!   `NeedsRecovery` (or recovers, when asked);
//! - compaction on close: a reader opened beside a writer whose close compacts the file
//!   (most of it freed by deletes) reads the final state after the compaction;
//! - conversion: readers opening a schema-1 file over and over while a writer converts it
//!   get `NeedsConversion` (or a lock error) before, and the converted store whole after.

use ratchetdb::{Chunk, Document, OpenError, Options, SearchOptions, Store, Version};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

fn doc(i: usize, version: u64) -> Document {
    Document::new("s", format!("d{i}"), Version::number(version))
        .with_chunk(Chunk::new(
            format!("a {i} {version}"),
            vec![1.0, i as f32, 2.0],
        ))
        .with_chunk(Chunk::new(
            format!("b {i} {version} {}", "x".repeat(2000)),
            vec![2.0, 1.0, i as f32],
        ))
}

/// Checks one consistent state: every live document has its two chunks of one version,
/// `verify` is clean, a search answers with live chunks only.
fn consistent(store: &Store) -> usize {
    let report = store.verify().expect("verify");
    assert!(report.is_ok(), "{:?}", report.violations);
    let documents = store.documents(false).expect("documents");
    for d in documents.iter().filter(|d| !d.deleted) {
        assert_eq!(d.chunks.len(), 2, "{d:?}");
        let v = d.version.value;
        assert!(
            d.chunks.iter().all(|c| c.text.contains(&format!(" {v}"))),
            "{d:?}"
        );
    }
    let hits = store
        .search(&[1.0, 2.0, 3.0], 5, &SearchOptions::default())
        .expect("search");
    assert!(hits.len() <= 5);
    documents.iter().filter(|d| !d.deleted).count()
}

#[test]
fn a_reader_open_beside_a_writer_process_that_is_killed_keeps_its_last_commit() {
    const ACKED: usize = 10;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.redb");
    let mut child = Command::new(env!("CARGO_BIN_EXE_ratchet"))
        .args(["ingest", "--db", db.to_str().unwrap(), "--jsonl", "-"])
        .args(["--report", "--batch-size", "1"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn ratchet ingest");
    let mut stdin = child.stdin.take().unwrap();
    let mut report = BufReader::new(child.stdout.take().unwrap());
    let mut reader = None;
    for i in 0..ACKED {
        writeln!(
            stdin,
            r#"{{"op":"upsert","source":"s","id":"d{i}","version":1,"chunks":[{{"text":"a {i} 1","vector":[1,{i},2]}},{{"text":"b {i} 1","vector":[2,1,{i}]}}]}}"#
        )
        .unwrap();
        stdin.flush().unwrap();
        let mut ack = String::new();
        report.read_line(&mut ack).unwrap();
        assert!(ack.contains("\"written\""), "{ack}");
        if i == 2 {
            reader = Some(Store::open_read_only(&db).expect("reader beside the writer"));
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let reader = reader.unwrap();
    assert_eq!(consistent(&reader), ACKED);
    drop(reader);
    assert!(matches!(
        Store::open_read_only(&db),
        Err(OpenError::NeedsRecovery { .. })
    ));
    let recovered =
        Store::open_read_only_with(&db, Options::default().recover_on_read_open(true)).unwrap();
    assert!(recovered.recovered_at_open());
    assert_eq!(consistent(&recovered), ACKED);
}

#[test]
fn a_reader_beside_a_writer_that_compacts_on_close_reads_the_final_state() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.redb");
    let writer = Store::open(&db, Options::default().dimension(3)).unwrap();
    for i in 0..200 {
        writer.upsert(doc(i, 1)).unwrap();
    }
    let reader = Store::open_read_only(&db).unwrap();
    assert_eq!(consistent(&reader), 200);
    for i in 0..180 {
        writer
            .delete("s", &format!("d{i}"), Version::number(2))
            .unwrap();
    }
    let before = std::fs::metadata(&db).unwrap().len();
    // Readers read while the writer closes (and compacts).
    let stop = Arc::new(AtomicBool::new(false));
    // Both readers have read once before the writer closes, so each keeps reading through
    // the close (a loaded machine could otherwise finish the close before they start).
    let started = Arc::new(std::sync::Barrier::new(3));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (reader, stop, started) = (reader.clone(), stop.clone(), started.clone());
            std::thread::spawn(move || {
                let mut reads = 0;
                loop {
                    let live = consistent(&reader);
                    assert!((20..=200).contains(&live), "{live}");
                    reads += 1;
                    if reads == 1 {
                        started.wait();
                    }
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                }
                reads
            })
        })
        .collect();
    started.wait();
    drop(writer);
    stop.store(true, Ordering::SeqCst);
    for r in readers {
        assert!(r.join().expect("a reader panicked") > 0);
    }
    assert_eq!(consistent(&reader), 20);
    drop(reader);
    let after = std::fs::metadata(&db).unwrap().len();
    // A later reader opens the compacted (or, if a read held it off, uncompacted) file.
    let later = Store::open_read_only(&db).unwrap();
    assert_eq!(consistent(&later), 20);
    // The scenario is the compaction one only if the close compacted the file.
    assert!(after <= before, "{after} > {before}");
}

/// Opens `db` read-only until `stop`; every open and read is a typed error or the whole
/// converted store.
fn read_while_converting(db: &Path, expected: &[ratchetdb::StoredDocument], stop: &AtomicBool) {
    let mut seen = 0;
    loop {
        let stopping = stop.load(Ordering::SeqCst);
        match Store::open_read_only(db) {
            Ok(store) => {
                assert_eq!(store.documents(true).expect("documents"), expected);
                assert!(store.verify().expect("verify").is_ok());
                seen += 1;
            }
            Err(
                OpenError::NeedsConversion { .. }
                | OpenError::NeedsRecovery { .. }
                | OpenError::HeldExclusively { .. }
                | OpenError::Locked { .. },
            ) => {}
            Err(other) => panic!("a reader beside the conversion got {other:?}"),
        }
        if stopping {
            assert!(seen > 0, "no reader saw the converted store");
            return;
        }
    }
}

#[test]
fn readers_opening_while_a_writer_converts_the_schema_see_none_or_all_of_it() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/schema1-store.redb");
    // The converted store, from a conversion nobody watched.
    let dir = tempfile::tempdir().unwrap();
    let reference = dir.path().join("reference.redb");
    std::fs::copy(&fixture, &reference).unwrap();
    let expected = {
        let store = Store::open(&reference, Options::default().must_exist()).unwrap();
        store.documents(true).unwrap()
    };
    assert!(!expected.is_empty());
    for round in 0..3 {
        let db = dir.path().join(format!("db{round}.redb"));
        std::fs::copy(&fixture, &db).unwrap();
        assert!(matches!(
            Store::open_read_only(&db),
            Err(OpenError::NeedsConversion { .. })
        ));
        let stop = Arc::new(AtomicBool::new(false));
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let (db, expected, stop) = (db.clone(), expected.clone(), stop.clone());
                std::thread::spawn(move || read_while_converting(&db, &expected, &stop))
            })
            .collect();
        let writer = Store::open(&db, Options::default().must_exist()).unwrap();
        assert_eq!(writer.documents(true).unwrap(), expected);
        drop(writer);
        stop.store(true, Ordering::SeqCst);
        for r in readers {
            r.join().expect("a reader panicked");
        }
    }
}
