//! Regression (issue 45, item 10): after a re-ingest the summary said `unchanged 2231`
//! while `ratchet stats` showed `unchanged 0 ... skipped_duplicate 4457` (the summary counted
//! files already stored as "unchanged"); the recent-skips list filled with those duplicates
//! and buried a real `older` refusal; and the note `1 file is older than what the store
//! holds ... touch it` named no file and did not say what search serves. The summary's rows
//! now count what the stats counters of the same words count, the stats table lists the
//! refusals that matter before the duplicates, and the notes name the files (up to a limit,
//! then "and N more") and what search serves.

use crate::common;

use common::cli::{self, Run};
use ratchetdb::{Counters, Store};
use std::path::Path;
use std::time::Duration;

const T: u64 = 1_700_000_000;

fn ingest(db: &Path, dir: &Path, extra: &[&str]) -> Run {
    let run = cli::ingest_folder(db, dir, extra);
    assert_eq!(run.code, Some(0), "{}{}", run.stdout, run.stderr);
    run
}

/// The number on the summary row `row` (rows are `  NAME   N  (detail)`).
fn row(stdout: &str, row: &str) -> u64 {
    let line = stdout
        .lines()
        .find(|l| {
            l.trim_start()
                .strip_prefix(row)
                .is_some_and(|rest| rest.starts_with("  "))
        })
        .unwrap_or_else(|| panic!("no {row:?} row in:\n{stdout}"));
    line.trim_start()[row.len()..]
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no number in {line:?}"))
}

fn counters(db: &Path) -> Counters {
    Store::open_read_only(db)
        .expect("open")
        .stats()
        .expect("stats")
        .counters
}

#[test]
fn the_summary_and_stats_agree_and_refusals_stay_visible() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store.redb");
    let docs = dir.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    cli::write_file_at(&docs.join("a-restored.md"), "alpha", T);
    cli::write_file_at(&docs.join("b-touched.md"), "beta", T);
    for n in 0..12 {
        cli::write_file_at(
            &docs.join(format!("same-{n:02}.md")),
            &format!("same {n}"),
            T,
        );
    }
    for n in 0..7 {
        cli::write_file_at(&docs.join(format!("gone-{n}.md")), &format!("gone {n}"), T);
    }
    ingest(&db, &docs, &[]);
    // The gone-* files are removed by --sync, then come back with older times.
    for n in 0..7 {
        std::fs::remove_file(docs.join(format!("gone-{n}.md"))).unwrap();
    }
    ingest(&db, &docs, &["--sync"]);
    for n in 0..7 {
        cli::write_file_at(&docs.join(format!("gone-{n}.md")), "back", T - 10);
    }
    // a-restored.md: restored from a backup (older time); b-touched.md: touched (same
    // text, newer time: written, for its `mtime` metadata); same-*: untouched.
    cli::write_file_at(
        &docs.join("a-restored.md"),
        "alpha from the backup",
        T - 100,
    );
    cli::write_file_at(&docs.join("b-touched.md"), "beta", T + 100);

    let before = counters(&db);
    let run = ingest(&db, &docs, &[]);
    let after = counters(&db);
    // Same words, same counts.
    assert_eq!(
        row(&run.stdout, "unchanged"),
        after.unchanged - before.unchanged
    );
    // The touched file is a new revision (its `mtime` metadata changed), not `unchanged`.
    assert_eq!(
        row(&run.stdout, "written"),
        after.written_new + after.written_newer - before.written_new - before.written_newer
    );
    assert_eq!(row(&run.stdout, "written"), 1, "{}", run.stdout);
    assert_eq!(
        row(&run.stdout, "already stored"),
        after.skipped_duplicate - before.skipped_duplicate
    );
    assert_eq!(row(&run.stdout, "already stored"), 12, "{}", run.stdout);
    assert!(
        run.stdout.contains("older 1") && run.stdout.contains("tombstoned 7"),
        "{}",
        run.stdout
    );

    // The notes name the files, and say what search serves.
    let note = |reason: &str| -> String {
        run.stdout
            .lines()
            .find(|l| l.starts_with("note:") && l.contains(reason))
            .unwrap_or_else(|| panic!("no note on {reason}:\n{}", run.stdout))
            .to_string()
    };
    let older = note("older than what the store holds");
    assert!(older.contains("a-restored.md"), "{older}");
    assert!(
        older.contains("search serves the stored, newer version"),
        "{older}"
    );
    let tombstoned = note("deleted from the store");
    let named = (0..7)
        .filter(|n| tombstoned.contains(&format!("gone-{n}.md")))
        .count();
    assert_eq!(named, 5, "{tombstoned}");
    assert!(tombstoned.contains("and 2 more"), "{tombstoned}");
    assert!(tombstoned.contains("search serves nothing"), "{tombstoned}");

    // The stats table: the same words beside the counters, and the older refusal shown
    // although twelve duplicates came after it.
    let stats = cli::run(
        &["stats", "--db", db.to_str().unwrap()],
        |_| {},
        None,
        Duration::from_secs(60),
    );
    assert_eq!(stats.code, Some(0), "{}", stats.stderr);
    let counter_line = |name: &str| -> String {
        stats
            .stdout
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no {name} in:\n{}", stats.stdout))
            .to_string()
    };
    assert!(
        counter_line("skipped_duplicate").contains("already stored"),
        "{}",
        stats.stdout
    );
    assert!(
        counter_line("unchanged").contains("same content"),
        "{}",
        stats.stdout
    );
    assert!(
        stats.stdout.contains("docs/a-restored.md: older"),
        "the older refusal is listed:\n{}",
        stats.stdout
    );
    let listed_duplicates = stats
        .stdout
        .lines()
        .filter(|l| l.contains(": duplicate"))
        .count();
    assert!(listed_duplicates <= 3, "{}", stats.stdout);
}
