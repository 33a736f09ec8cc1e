//! Issue 47 item 8: the library's open errors name library calls (`Options::wait_for_lock`,
//! `Store::documents`); the command line adds its own advice where it prints them. A store of
//! a schema too old to convert: `ratchet stats` and `ratchet ingest` say to export it with
//! `ratchet export --vectors` of the build that wrote it and to ingest the export with
//! `--jsonl` (the advice the library message gave before it named library calls).

use crate::common;
use crate::support;

use common::cli::{self, Run};
use ratchetdb::testkit::{harness_doc, harness_options};
use ratchetdb::Store;
use std::time::Duration;

fn ratchet(args: &[&str]) -> Run {
    let run = cli::run(
        args,
        |c| {
            c.env_remove("RATCHET_MODEL");
        },
        None,
        Duration::from_secs(60),
    );
    cli::assert_no_panic(&run, args);
    run
}

#[test]
fn cli_open_errors_add_the_command_lines_advice() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("old.redb");
    {
        let store = Store::open(&path, harness_options()).expect("create");
        store
            .upsert(harness_doc("wiki", "a", 1, 2, 1))
            .expect("write");
    }
    support::set_schema_version(&path, 0);
    let db = path.to_str().expect("utf-8 path");
    for args in [
        vec!["stats", "--db", db],
        vec!["ingest", "--db", db, "--jsonl", "/dev/null"],
    ] {
        let run = ratchet(&args);
        assert_eq!(run.code, Some(1), "{args:?}: {}", run.stderr);
        assert!(
            run.stderr.contains("schema version 0"),
            "{args:?}: {}",
            run.stderr
        );
        assert!(
            run.stderr.contains("ratchet export --vectors"),
            "{args:?}: {}",
            run.stderr
        );
        assert!(
            run.stderr.contains("ingest --jsonl"),
            "{args:?}: {}",
            run.stderr
        );
    }
    assert_eq!(support::schema_version(&path), 0, "the file was converted");
}
