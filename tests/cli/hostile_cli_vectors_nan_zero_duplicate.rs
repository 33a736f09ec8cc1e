//! Issue 44, "not yet tried by anyone": NaN, all-zero and duplicate vectors through the CLI
//! (`ratchet ingest --jsonl` with vectors, `ratchet search --vector`) on a cosine store.
//! - A vector holding `NaN` (not JSON, so a parse error), a number past the range of a 32-bit
//!   float (`1e39`, which would become infinity), or all zeros (no direction under cosine) is
//!   rejected on its own line, naming the line and the vector's field, with exit code 3;
//!   nothing is written: the export and the counters are as before.
//! - The same three as a `--vector` query: an error naming `--vector`, exit code 2 or 1,
//!   never a panic and never hits.
//! - Two documents with the same vector are both stored, and a search for that vector
//!   returns both first, with equal scores, by the graph as by `--exact`.

use crate::common::cli::{assert_no_panic, run, Run};
use serde_json::Value;
use std::time::Duration;

fn ratchet(args: &[&str], stdin: Option<&str>) -> Run {
    let result = run(
        args,
        |c| {
            c.env_remove("RATCHET_MODEL");
        },
        stdin.map(|s| s.as_bytes().to_vec()),
        Duration::from_secs(60),
    );
    assert_no_panic(&result, args);
    result
}

fn upsert(id: &str, vector: &str) -> String {
    format!(
        r#"{{"op":"upsert","source":"s","id":"{id}","version":1,"chunks":[{{"text":"text of {id}","vector":{vector}}}]}}"#
    )
}

#[test]
fn hostile_cli_vectors_nan_zero_duplicate() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("vectors.redb");
    let db = db.to_str().expect("utf-8 path");

    // Duplicates and a neighbour: all written.
    let good = [
        upsert("dup-a", "[0.3, 0.4, 0.5]"),
        upsert("dup-b", "[0.3, 0.4, 0.5]"),
        upsert("other", "[0.9, -0.2, 0.1]"),
        upsert("far", "[-1, 0.5, 0.0]"),
    ]
    .join("\n");
    let first = ratchet(&["ingest", "--db", db, "--jsonl", "-"], Some(&good));
    assert_eq!(first.code, Some(0), "{}", first.stderr);
    let export_before = ratchet(&["export", "--db", db, "--vectors"], None);
    assert_eq!(export_before.code, Some(0), "{}", export_before.stderr);
    assert_eq!(export_before.stdout.lines().count(), 4);
    let stats_before = ratchet(&["stats", "--db", db, "--json"], None).stdout;

    // Bad vectors: each rejected alone, named by line and field, nothing written.
    let bad = [
        upsert("nan", "[NaN, 0.1, 0.2]"),
        upsert("huge", "[1e39, 0.1, 0.2]"),
        upsert("zero", "[0, 0, 0]"),
        upsert("negzero", "[-0.0, 0.0, -0.0]"),
    ]
    .join("\n");
    let second = ratchet(
        &["ingest", "--db", db, "--jsonl", "-", "--report"],
        Some(&bad),
    );
    assert_eq!(second.code, Some(3), "{}", second.stderr);
    let reports: Vec<Value> = second
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON report"))
        .collect();
    assert_eq!(reports.len(), 4, "{}", second.stdout);
    for (i, report) in reports.iter().enumerate() {
        let line = i + 1;
        assert_eq!(report["line"], line, "{report}");
        let error = report["error"].as_str().unwrap_or_else(|| {
            panic!("line {line} was not rejected: {report}");
        });
        assert!(
            second.stderr.contains(&format!("line {line}")),
            "stderr names line {line}: {}",
            second.stderr
        );
        let field = report["field"].as_str().unwrap_or("");
        assert!(
            field.contains("vector") || error.contains("vector"),
            "line {line}'s error names the vector: {report}"
        );
    }
    // The ones JSON can carry are refused for what they are, not as unparsable lines.
    assert!(
        reports[1]["error"]
            .as_str()
            .is_some_and(|e| e.contains("finite")),
        "{}",
        reports[1]
    );
    for zero in &reports[2..] {
        assert_eq!(zero["field"], "chunks[0].vector", "{zero}");
        assert!(
            zero["error"]
                .as_str()
                .is_some_and(|e| e.contains("zero length")),
            "{zero}"
        );
    }
    let export_after = ratchet(&["export", "--db", db, "--vectors"], None);
    assert_eq!(
        export_after.stdout, export_before.stdout,
        "a rejected line changed the store"
    );
    assert_eq!(
        ratchet(&["stats", "--db", db, "--json"], None).stdout,
        stats_before,
        "a rejected line moved the counters"
    );

    // The same vectors as queries: refused, naming --vector.
    for query in ["[NaN, 0.1, 0.2]", "[1e39, 0.1, 0.2]", "[0, 0, 0]"] {
        let args = ["search", "--db", db, "--vector", query, "--json"];
        let searched = ratchet(&args, None);
        assert!(
            matches!(searched.code, Some(1) | Some(2)),
            "{query}: exit {:?}, stdout {}, stderr {}",
            searched.code,
            searched.stdout,
            searched.stderr
        );
        assert!(searched.stdout.is_empty(), "{query}: {}", searched.stdout);
        assert!(
            searched.stderr.contains("--vector"),
            "{query}: the error names --vector: {}",
            searched.stderr
        );
    }

    // Duplicate vectors: both found first, with equal scores.
    for exact in [false, true] {
        let mut args = vec![
            "search",
            "--db",
            db,
            "--vector",
            "[0.3, 0.4, 0.5]",
            "-k",
            "3",
            "--json",
        ];
        if exact {
            args.push("--exact");
        }
        let searched = ratchet(&args, None);
        assert_eq!(searched.code, Some(0), "{}", searched.stderr);
        let hits: Vec<Value> = searched
            .stdout
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON hit"))
            .collect();
        assert_eq!(hits.len(), 3, "{}", searched.stdout);
        let mut top: Vec<&str> = hits[..2]
            .iter()
            .map(|h| h["id"].as_str().expect("id"))
            .collect();
        top.sort_unstable();
        assert_eq!(
            top,
            ["dup-a", "dup-b"],
            "exact {exact}: {}",
            searched.stdout
        );
        let score = |h: &Value| h["score"].as_f64().expect("score");
        assert_eq!(
            score(&hits[0]),
            score(&hits[1]),
            "exact {exact}: {}",
            searched.stdout
        );
        assert!(score(&hits[2]) < score(&hits[0]), "{}", searched.stdout);
    }
    let verified = ratchet(&["verify", "--db", db], None);
    assert!(verified.stdout.starts_with("ok:"), "{}", verified.stdout);
}
