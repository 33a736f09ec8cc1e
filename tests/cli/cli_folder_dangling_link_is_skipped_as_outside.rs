//! Issue 46 (review of today's merges), item 5: a link in the folder that could not be
//! resolved when the folder was walked (dangling, or a loop) was taken to be inside the
//! folder and read, failing as an unreadable file (exit code 3), or, with its target made
//! outside the folder between the walk and the read, followed there. It now counts as a link
//! to a file outside the folder: skipped with a warning naming it, counted as such, exit 0
//! (3 only with `--strict`).

use crate::common;

use common::cli;

#[cfg(unix)]
#[test]
fn a_dangling_link_is_skipped_as_a_link_outside_the_folder() {
    use std::os::unix::fs::symlink;
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    std::fs::write(docs.join("readme.md"), "kettle manual").unwrap();
    symlink("../later/creds.md", docs.join("dangling.md")).unwrap();

    let db = dir.path().join("store.redb");
    let run = cli::ingest_folder(&db, &docs, &[]);
    assert_eq!(run.code, Some(0), "{}{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains("dangling.md") && run.stderr.contains("outside"),
        "a warning names it: {}",
        run.stderr
    );
    assert!(
        run.stdout.contains("link to a file outside the folder 1"),
        "the summary counts it: {}",
        run.stdout
    );
    let strict = cli::ingest_folder(&db, &docs, &["--strict"]);
    assert_eq!(strict.code, Some(3), "{}{}", strict.stdout, strict.stderr);
}
