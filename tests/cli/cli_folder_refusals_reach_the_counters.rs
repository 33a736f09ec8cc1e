//! Regression (issue 18, defect 4): folder ingest's refusals never reached the store's
//! counters. Files refused as `older`, `conflict` or `tombstoned`, and files found
//! unchanged, appeared in the run summary, but `stats` showed 0 and "recent skips: none",
//! while the same refusals through `--jsonl` were counted. Folder ingest now sends every
//! planned file to the store, which refuses and counts it as for any write.

use crate::common;

use common::cli::{self, Run};
use ratchetdb::{Options, Store};
use std::path::Path;
use std::time::Duration;

fn ingest(db: &Path, dir: &Path, extra: &[&str]) -> Run {
    let run = cli::ingest_folder(db, dir, extra);
    assert_eq!(run.code, Some(0), "{}{}", run.stdout, run.stderr);
    run
}

fn write_file(file: &Path, text: &str, secs: u64) {
    cli::write_file_at(file, text, secs);
}

#[test]
fn every_refusal_of_a_folder_ingest_is_counted_by_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store.redb");
    let docs = dir.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    const T: u64 = 1_700_000_000;
    write_file(&docs.join("a.md"), "alpha text", T);
    write_file(&docs.join("b.md"), "beta text", T);
    write_file(&docs.join("c.md"), "gamma text", T);
    ingest(&db, &docs, &[]);

    // Unchanged: three duplicates.
    let run = ingest(&db, &docs, &[]);
    assert!(run.stdout.contains("unchanged"), "{}", run.stdout);
    let counters = |db: &Path| {
        let store = Store::open(db, Options::default()).unwrap();
        let stats = store.stats().unwrap();
        (stats.counters, stats.recent_skips)
    };
    let (counted, recent) = counters(&db);
    assert_eq!(counted.skipped_duplicate, 3);
    assert_eq!(recent.len(), 3);

    // Older: a.md restored with an older time; conflict: b.md changed under the same time;
    // tombstoned: c.md removed by --sync, then back with an older time.
    write_file(&docs.join("a.md"), "alpha restored from a backup", T - 100);
    write_file(&docs.join("b.md"), "beta edited, time kept", T);
    std::fs::remove_file(docs.join("c.md")).unwrap();
    ingest(&db, &docs, &["--sync"]);
    write_file(&docs.join("c.md"), "gamma back", T - 50);
    let run = ingest(&db, &docs, &[]);
    assert!(
        run.stdout.contains("refused by the guard"),
        "{}",
        run.stdout
    );

    let (counted, recent) = counters(&db);
    assert_eq!(counted.skipped_older, 2, "a.md in both runs");
    assert_eq!(counted.skipped_conflict, 2, "b.md in both runs");
    assert_eq!(counted.skipped_tombstoned, 1, "c.md");
    let reasons: Vec<String> = recent.iter().map(|s| s.reason.to_string()).collect();
    for reason in ["older", "conflict", "tombstoned"] {
        assert!(reasons.iter().any(|r| r == reason), "{reasons:?}");
    }
    // The table says so too.
    let stats = cli::run(
        &["stats", "--db", db.to_str().unwrap()],
        |_| {},
        None,
        Duration::from_secs(60),
    );
    assert!(
        !stats.stdout.contains("recent skips: none"),
        "{}",
        stats.stdout
    );
    assert!(
        stats.stdout.contains("docs/c.md: tombstoned"),
        "{}",
        stats.stdout
    );
}
