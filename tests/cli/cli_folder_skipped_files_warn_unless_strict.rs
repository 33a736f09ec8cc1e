//! Regression (issue 18, defect 6): one non-UTF-8 file made every `ingest --sync` run exit 3,
//! and a file modified before 1970 was stored at version 0. Files skipped for what they are
//! (not UTF-8, modified before 1970) are now warnings, counted and named, with exit 0, unless
//! `--strict` asks for exit 3; a pre-1970 file is skipped with a hint, never stored at 0.

use crate::common;

use common::cli::{self, Run};
use std::fs::File;
use std::path::Path;
use std::time::{Duration, SystemTime};

fn ingest(db: &Path, dir: &Path, extra: &[&str]) -> Run {
    cli::ingest_folder(db, dir, extra)
}

#[test]
fn non_utf8_and_pre_1970_files_are_warnings_unless_strict() {
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    std::fs::write(docs.join("good.md"), "plain text").unwrap();
    std::fs::write(docs.join("latin1.md"), b"caf\xe9 au lait").unwrap();
    let old = docs.join("old.md");
    std::fs::write(&old, "written long ago").unwrap();
    File::options()
        .write(true)
        .open(&old)
        .unwrap()
        .set_modified(SystemTime::UNIX_EPOCH - Duration::from_secs(86_400 * 365))
        .unwrap();
    let db = dir.path().join("store.redb");

    for _ in 0..2 {
        let run = ingest(&db, &docs, &["--sync"]);
        assert_eq!(run.code, Some(0), "{}{}", run.stdout, run.stderr);
        assert!(run.stdout.contains("not UTF-8 1"), "{}", run.stdout);
        assert!(
            run.stdout.contains("modified before 1970 1"),
            "{}",
            run.stdout
        );
        assert!(
            run.stderr.contains("latin1.md is not UTF-8"),
            "{}",
            run.stderr
        );
        assert!(
            run.stderr.contains("old.md was last modified before 1970")
                && run.stderr.contains("`touch` it"),
            "{}",
            run.stderr
        );
    }
    let export = cli::run(
        &["export", "--db", db.to_str().unwrap()],
        |_| {},
        None,
        Duration::from_secs(60),
    );
    // Documents only (an export of a store with a model starts with its `store` line).
    let ids: Vec<&str> = export
        .stdout
        .lines()
        .filter(|l| !l.starts_with("{\"op\":\"store\""))
        .collect();
    assert_eq!(ids.len(), 1, "only good.md is stored: {}", export.stdout);
    assert!(ids[0].contains("\"id\":\"good.md\""));

    let strict = ingest(&db, &docs, &["--sync", "--strict"]);
    assert_eq!(strict.code, Some(3), "{}{}", strict.stdout, strict.stderr);
}
