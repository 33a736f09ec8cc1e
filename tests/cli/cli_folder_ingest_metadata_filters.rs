//! Folder ingest stores what a user filters on (issue 19), per chunk: `path`, `file`,
//! `ext`, `title`, `headings` and `mtime`; `ratchet search --where '{"ext": "md"}'` works
//! out of the box, and the text output shows each hit's path and headings.

use crate::common;

use common::cli::{self, Run};
use serde_json::{json, Value};
use std::fs::File;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, SystemTime};

const TIMEOUT: Duration = Duration::from_secs(120);

fn ratchet(args: &[&str]) -> Run {
    let run = cli::run(
        args,
        |c: &mut Command| {
            c.env_remove("RATCHET_MODEL");
        },
        None,
        TIMEOUT,
    );
    cli::assert_no_panic(&run, args);
    assert_eq!(run.code, Some(0), "{args:?}: {}", run.stderr);
    run
}

fn write(file: &Path, text: &str, modified: SystemTime) {
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(file, text).unwrap();
    File::options()
        .write(true)
        .open(file)
        .unwrap()
        .set_modified(modified)
        .unwrap();
}

#[test]
fn folder_metadata_is_filterable_and_shown() {
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("docs");
    let db = dir.path().join("index.redb");
    let when = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    write(
        &docs.join("guide/kettle.md"),
        "# Kettle guide\n\nAbout the kettle.\n\n## Warranty\n\nThe kettle warranty lasts two years.\n",
        when,
    );
    write(
        &docs.join("notes.txt"),
        "The toaster warranty lasts one year.\n",
        when + Duration::from_secs(60),
    );
    let db_arg = db.to_str().unwrap();
    ratchet(&["ingest", "--db", db_arg, docs.to_str().unwrap()]);

    let run = ratchet(&[
        "search",
        "--db",
        db_arg,
        "warranty",
        "-k",
        "10",
        "--json",
        "--where",
        r#"{"ext": "md"}"#,
    ]);
    let hits: Vec<Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(!hits.is_empty());
    for hit in &hits {
        let meta = &hit["meta"];
        assert_eq!(meta["path"], "guide/kettle.md");
        assert_eq!(meta["file"], "kettle.md");
        assert_eq!(meta["ext"], "md");
        assert_eq!(meta["title"], "Kettle guide");
        assert_eq!(meta["mtime"], 1_700_000_000u64);
        assert_eq!(meta["headings"][0], "Kettle guide");
    }
    let txt = ratchet(&[
        "search",
        "--db",
        db_arg,
        "toaster",
        "--json",
        "--where",
        r#"{"ext": {"$ne": "md"}}"#,
    ]);
    let hits: Vec<Value> = txt
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(hits.len(), 1);
    assert_eq!(
        hits[0]["meta"],
        json!({"path": "notes.txt", "file": "notes.txt", "ext": "txt", "title": "notes", "headings": [], "mtime": 1_700_000_060u64})
    );
    let newer = ratchet(&[
        "search",
        "--db",
        db_arg,
        "warranty",
        "--json",
        "--where",
        r#"{"mtime": {"$gt": 1700000000}}"#,
    ]);
    assert_eq!(newer.stdout.lines().count(), 1, "{}", newer.stdout);

    // The text output names where each hit comes from.
    let text = ratchet(&[
        "search",
        "--db",
        db_arg,
        "kettle warranty",
        "-k",
        "1",
        "--where",
        r#"{"headings": {"$contains": "Kettle guide"}}"#,
    ]);
    assert!(
        text.stdout.contains("guide/kettle.md › Kettle guide"),
        "{}",
        text.stdout
    );
}
