//! Issue 45, item 11: `ratchet search --vector '[1,2]'` on a store of 3-dimensional vectors
//! said `invalid queries[0]: ...`, naming a field the user never wrote. Every refusal of
//! the `--vector` query (its dimension, a vector with no direction) names `--vector`, in
//! vector and in hybrid search; a `--queries` file still names the query by its place.

use crate::common::cli::{assert_no_panic, run, Run};
use std::time::Duration;

fn ratchet(args: &[&str], stdin: Option<Vec<u8>>) -> Run {
    let run = run(args, |_| {}, stdin, Duration::from_secs(60));
    assert_no_panic(&run, args);
    run
}

#[test]
fn cli_search_vector_errors_name_the_argument() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("own.redb");
    let db_arg = db.to_str().unwrap();
    let lines = br#"{"op":"upsert","source":"s","id":"a","version":1,"chunks":[{"text":"pawl and ratchet","vector":[1,0,0]}]}
"#;
    let ingest = ratchet(
        &["ingest", "--db", db_arg, "--jsonl", "-"],
        Some(lines.to_vec()),
    );
    assert_eq!(ingest.code, Some(0), "{}", ingest.stderr);
    for args in [
        &["--vector", "[1,2]"][..],
        &["--vector", "[1,2]", "--mode", "vector"][..],
        &["ratchet", "--vector", "[1,2]"][..],
        &["--vector", "[1,2,3,4]", "--per-document"][..],
    ] {
        let mut all = vec!["search", "--db", db_arg];
        all.extend_from_slice(args);
        let bad = ratchet(&all, None);
        assert_eq!(bad.code, Some(1), "{args:?}: {}", bad.stderr);
        assert!(
            bad.stderr.contains("invalid --vector: has") && bad.stderr.contains("3-dimensional"),
            "{args:?}: {}",
            bad.stderr
        );
        assert!(!bad.stderr.contains("queries["), "{args:?}: {}", bad.stderr);
    }
    // No direction to compare by cosine: named --vector too.
    for args in [
        &["--vector", "[0,0,0]"][..],
        &["ratchet", "--vector", "[0,0,0]"][..],
    ] {
        let mut all = vec!["search", "--db", db_arg];
        all.extend_from_slice(args);
        let bad = ratchet(&all, None);
        assert_eq!(bad.code, Some(1), "{args:?}: {}", bad.stderr);
        assert!(
            bad.stderr.contains("invalid --vector"),
            "{args:?}: {}",
            bad.stderr
        );
    }
    // A --queries file: the query is named by its place in the file.
    let queries = dir.path().join("queries.jsonl");
    std::fs::write(&queries, "[1,0,0]\n[1,2]\n").unwrap();
    let bad = ratchet(
        &[
            "search",
            "--db",
            db_arg,
            "--queries",
            queries.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(bad.code, Some(1), "{}", bad.stderr);
    assert!(bad.stderr.contains("queries[1]"), "{}", bad.stderr);
}
