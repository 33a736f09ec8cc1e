//! Regression: a wait given as `Duration::MAX` (or `ratchet --wait 1e19`, which parses to
//! about that) was added to `Instant::now()`, which overflowed and panicked: in
//! `Options::wait_for_lock` the open failed with a contained panic reported as a damaged
//! file; in `WriterOptions::max_batch_wait` the committer thread died, so every write was
//! refused as `Closed`; in `Store::wait_for_index` the caller panicked. A wait the clock
//! cannot hold now has no deadline: opening waits until the lock is free, a batch waits for
//! company until it is full, and `wait_for_index` until the index settles.

use crate::common;

use common::{cli, document};
use ratchetdb::{Options, Outcome, Store, Version, WriterOptions};
use std::time::Duration;

#[test]
fn opening_with_an_endless_lock_wait_waits_for_the_writer_to_close() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.redb");
    // Nothing holds the file: it opens at once.
    drop(Store::open(&path, Options::default().wait_for_lock(Duration::MAX)).unwrap());

    let first = common::open_file(&path);
    first
        .upsert(document("s", "a", Version::number(1), &["one"]))
        .unwrap();
    let waiter = {
        let path = path.clone();
        std::thread::spawn(move || {
            Store::open(&path, Options::default().wait_for_lock(Duration::MAX))
        })
    };
    std::thread::sleep(Duration::from_millis(300));
    assert!(!waiter.is_finished(), "the second writer did not wait");
    drop(first);
    let second = waiter.join().unwrap().expect("the waiting writer opens");
    assert!(second.get("s", "a").unwrap().is_some());
    assert!(second.wait_for_index(Duration::MAX));
}

#[test]
fn a_writer_with_an_endless_batch_wait_commits_each_full_batch() {
    let dir = tempfile::tempdir().unwrap();
    let store = common::open(dir.path());
    let writer = store.writer_with(
        WriterOptions::for_store(&store)
            .max_batch_wait(Duration::MAX)
            .max_batch_ops(2),
    );
    let handles: Vec<_> = ["a", "b", "c", "d"]
        .into_iter()
        .map(|id| {
            let writer = writer.clone();
            std::thread::spawn(move || writer.upsert(document("s", id, Version::number(1), &[id])))
        })
        .collect();
    for handle in handles {
        let outcome = handle.join().unwrap().expect("the write commits");
        assert!(matches!(outcome, Outcome::Written { .. }), "{outcome:?}");
    }
    writer.shutdown();
    assert_eq!(store.stats().unwrap().documents, 4);
}

#[test]
fn ingest_with_an_endless_wait_flag_opens_a_free_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.redb");
    let db = path.to_str().unwrap();
    let line = "{\"op\":\"upsert\",\"source\":\"s\",\"id\":\"a\",\"version\":1,\"chunks\":[{\"text\":\"t\",\"vector\":[1,2,3]}]}\n";
    let run = cli::run(
        &["ingest", "--db", db, "--jsonl", "-", "--wait", "1e19"],
        |_| {},
        Some(line.as_bytes().to_vec()),
        Duration::from_secs(60),
    );
    cli::assert_no_panic(&run, &["ingest", "--wait", "1e19"]);
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    let reader = Store::open_read_only(&path).unwrap();
    assert!(reader.get("s", "a").unwrap().is_some());
}
