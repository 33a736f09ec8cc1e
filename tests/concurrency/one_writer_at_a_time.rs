//! One process writes a file at a time: a second writer is refused at once with
//! `OpenError::Locked` (a message saying what to do), or waits for up to
//! `Options::wait_for_lock` / `ratchet ingest --wait SECONDS` and takes over when the first
//! closes. Readers open beside a writer that lets them in (the default), and are refused
//! (`OpenError::HeldExclusively`), or wait, beside one that holds the file exclusively
//! (`allow_readers(false)`, or `Durability::None`, whose commits redb cannot share).

use crate::common;

use common::cli;
use common::document;
use ratchetdb::{Durability, OpenError, Options, Store, Version};
use std::time::{Duration, Instant};

#[test]
fn a_second_writer_is_refused_at_once_or_waits_for_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.redb");
    let first = common::open_file(&path);
    first
        .upsert(document("s", "a", Version::number(1), &["one"]))
        .unwrap();

    let started = Instant::now();
    let error = Store::open(&path, Options::default()).unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "refusing took {:?}",
        started.elapsed()
    );
    match &error {
        OpenError::Locked { path: locked } => assert_eq!(locked, &path),
        other => panic!("{other:?}"),
    }
    let message = error.to_string();
    assert!(
        message.contains("Options::wait_for_lock") && message.contains("open_read_only"),
        "{message}"
    );

    // Waiting: shorter than the first writer's life is still refused, after the wait.
    let started = Instant::now();
    let error = Store::open(
        &path,
        Options::default().wait_for_lock(Duration::from_millis(300)),
    )
    .unwrap_err();
    assert!(matches!(error, OpenError::Locked { .. }), "{error:?}");
    assert!(started.elapsed() >= Duration::from_millis(300));

    // Longer: it opens once the first closes, and sees its writes.
    let waiter = {
        let path = path.clone();
        std::thread::spawn(move || {
            Store::open(
                &path,
                Options::default().wait_for_lock(Duration::from_secs(20)),
            )
        })
    };
    std::thread::sleep(Duration::from_millis(200));
    // Readers are let in meanwhile.
    let reader = Store::open_read_only(&path).unwrap();
    assert!(reader.get("s", "a").unwrap().is_some());
    drop(first);
    let second = waiter.join().unwrap().expect("the waiting writer opens");
    second
        .upsert(document("s", "a", Version::number(2), &["two"]))
        .unwrap();
    assert_eq!(
        reader.get("s", "a").unwrap().unwrap().version,
        Version::number(2)
    );
}

#[test]
fn an_exclusive_writer_keeps_readers_out_until_it_closes() {
    for options in [
        Options::default().allow_readers(false),
        Options::default().durability(Durability::None),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.redb");
        let writer = Store::open(&path, options.clone().dimension(3)).unwrap();
        writer
            .upsert(document("s", "a", Version::number(1), &["one"]))
            .unwrap();
        writer.sync().unwrap();
        assert!(
            matches!(
                Store::open_read_only(&path),
                Err(OpenError::HeldExclusively { .. })
            ),
            "{options:?}"
        );
        let waiting = {
            let path = path.clone();
            std::thread::spawn(move || {
                Store::open_read_only_with(
                    &path,
                    Options::default().wait_for_lock(Duration::from_secs(20)),
                )
            })
        };
        std::thread::sleep(Duration::from_millis(200));
        drop(writer);
        let reader = waiting.join().unwrap().expect("the waiting reader opens");
        assert!(reader.get("s", "a").unwrap().is_some(), "{options:?}");
    }
}

#[test]
fn ingest_refuses_a_second_writer_or_waits_with_the_wait_flag() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.redb");
    let db = path.to_str().unwrap();
    let line = |id: &str, version: u64| {
        format!(
            "{{\"op\":\"upsert\",\"source\":\"s\",\"id\":\"{id}\",\"version\":{version},\"chunks\":[{{\"text\":\"t\",\"vector\":[1,2,3]}}]}}\n"
        )
    };
    let holder = common::open_file(&path);
    let run = cli::run(
        &["ingest", "--db", db, "--jsonl", "-"],
        |_| {},
        Some(line("a", 1).into_bytes()),
        Duration::from_secs(60),
    );
    assert_eq!(run.code, Some(1), "stderr: {}", run.stderr);
    assert!(
        run.stderr.contains("open in another process") && run.stderr.contains("--wait"),
        "{}",
        run.stderr
    );

    // With --wait it takes over once the holder closes.
    let releaser = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(500));
        drop(holder);
    });
    let run = cli::run(
        &["ingest", "--db", db, "--jsonl", "-", "--wait", "30"],
        |_| {},
        Some(line("b", 1).into_bytes()),
        Duration::from_secs(60),
    );
    releaser.join().unwrap();
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    let reader = Store::open_read_only(&path).unwrap();
    assert!(reader.get("s", "b").unwrap().is_some());

    // The flag is checked.
    let run = cli::run(
        &["stats", "--db", db, "--wait", "-1"],
        |_| {},
        None,
        Duration::from_secs(60),
    );
    assert_eq!(run.code, Some(2), "stderr: {}", run.stderr);
}
