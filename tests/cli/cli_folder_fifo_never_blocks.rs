//! Regression (issue 18, defect 3): a FIFO named `*.md` hung folder ingest forever (the open
//! blocks until a writer appears) while it held the database lock, so every reader was
//! refused. Anything that is not a regular file is skipped, counted and reported, and never
//! opened in a way that can block: the walk skips FIFOs, sockets and devices, and a link is
//! opened with `O_NONBLOCK` and checked on the open file.

use crate::common;

use common::cli;
use std::process::Command;
use std::time::Duration;

#[test]
fn a_fifo_named_md_is_skipped_not_waited_for() {
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    std::fs::write(docs.join("real.md"), "a real note about cats").unwrap();
    let fifo = docs.join("pipe.md");
    let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(made.success());
    std::os::unix::fs::symlink(&fifo, docs.join("link-to-pipe.md")).unwrap();
    let db = dir.path().join("store.redb");
    // Before the fix this never returned: the helper's one-minute deadline kills it and
    // fails the test.
    let run = cli::ingest_folder(&db, &docs, &[]);
    assert_eq!(run.code, Some(0), "{}{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains("not a regular file 2"),
        "{}",
        run.stdout
    );
    assert!(
        run.stderr.contains("pipe.md: not a regular file"),
        "{}",
        run.stderr
    );
    let export = cli::run(
        &["export", "--db", db.to_str().unwrap()],
        |_| {},
        None,
        Duration::from_secs(60),
    );
    // Documents only (an export of a store with a model starts with its `store` line).
    let documents = export
        .stdout
        .lines()
        .filter(|l| !l.starts_with("{\"op\":\"store\""));
    assert_eq!(documents.count(), 1, "{}", export.stdout);
    assert!(export.stdout.contains("real.md"));
    // --strict makes the skip an error code, as for any file skipped for what it is.
    let run = cli::ingest_folder(&db, &docs, &["--strict"]);
    assert_eq!(run.code, Some(3), "{}{}", run.stdout, run.stderr);
}
