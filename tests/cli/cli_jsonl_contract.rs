//! The `ratchet` binary's JSONL contract, driven the way a real client drives it: a process,
//! a file or stdin, exit codes, stderr lines naming the bad line and field, and stdout JSONL.
//!
//! Exit codes under test: 0 success, 1 error (open/read/write failure, verify violations),
//! 3 `ingest` rejected some lines (all others applied).

use crate::common;

use common::cli::{self, Run};
use ratchetdb::{Options, Store};
use serde_json::Value;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Long enough for a debug build on a loaded machine; a hang is what it guards against.
const TIMEOUT: Duration = Duration::from_secs(60);

/// Runs the binary with `args`, feeding `stdin`, killing it (and failing) after [`TIMEOUT`].
fn ratchet(args: &[&str], stdin: Option<Vec<u8>>) -> Run {
    let run = cli::run(args, |_| {}, stdin, TIMEOUT);
    cli::assert_no_panic(&run, args);
    run
}

fn json_lines(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect()
}

const MAX_LINE: usize = 4096;

/// What the report of a rejected line must say.
struct Rejected {
    line: usize,
    /// The field it names (`None`: the line as a whole).
    field: Option<&'static str>,
    /// Text the message contains.
    text: &'static str,
}

fn rejected(line: usize, field: Option<&'static str>, text: &'static str) -> Rejected {
    Rejected { line, field, text }
}

/// The input: good lines, bad lines of every kind, and what each bad line's report must say.
fn fixture() -> (Vec<u8>, Vec<Rejected>) {
    let mut lines: Vec<Vec<u8>> = vec![
        // 1
        br#"{"op":"upsert","source":"wiki","id":"a","version":1,"chunks":[{"text":"alpha","vector":[1,0,0]},{"text":"beta","vector":[0,2,0],"meta":{"h":1}}],"meta":{"title":"A"}}"#.to_vec(),
        // 2
        br#"{"op":"upsert","source":"wiki","id":"b","version":1,"chunks":[{"text":"gamma","vector":[0,0,1]}]}"#.to_vec(),
        // 3: JSON cannot carry NaN/inf; 1e999 is serde_json's "number out of range".
        br#"{"op":"upsert","source":"wiki","id":"c","version":1,"chunks":[{"text":"x","vector":[0.1,0.2,1e999]}]}"#.to_vec(),
        // 4: wrong dimension (the first vector fixed it at 3).
        br#"{"op":"upsert","source":"wiki","id":"d","version":1,"chunks":[{"text":"x","vector":[0.1,0.2]}]}"#.to_vec(),
        // 5
        br#"{"op":"delete","source":"wiki","id":"b","version":2}"#.to_vec(),
        // 6
        b"not json".to_vec(),
        // 7
        br#"{"op":"upsert","source":"wiki","id":"","version":1,"chunks":[]}"#.to_vec(),
        // 8
        br#"{"op":"upsert","source":"wiki","id":"e","version":"7","chunks":[]}"#.to_vec(),
        // 9
        br#"{"op":"frobnicate","source":"wiki","id":"e","version":7}"#.to_vec(),
        // 10
        br#"{"op":"upsert","source":"docs","id":"x","version":1700000000000000,"version_kind":"timestamp_micros","chunks":[{"text":"docs x","vector":[3,4,0]}]}"#.to_vec(),
        // 11
        br#"{"op":"upsert","source":"wiki","id":"g","version":1,"chunks":[]}"#.to_vec(),
        // 12: the sweep: g is omitted, so it is deleted at 3.
        br#"{"op":"retain","source":"wiki","ids":["a","b"],"version":3}"#.to_vec(),
        // 13
        br#"{"op":"delete","source":"wiki","id":"a"}"#.to_vec(),
        // 14
        b"{\"op\":\"delete\",\"source\":\"wiki\xff\",\"id\":\"a\",\"version\":9}".to_vec(),
        // 15: nesting past serde_json's recursion limit: an error, not a stack overflow.
        format!(
            r#"{{"op":"upsert","source":"wiki","id":"n","version":1,"chunks":[],"meta":{}0{}}}"#,
            "[".repeat(1000),
            "]".repeat(1000)
        )
        .into_bytes(),
        // 16
        br#"{"op":"upsert","source":"wiki","id":"h","version":1,"chunks":[{"text":"t","vector":[1,0,0],"colour":"red"}]}"#.to_vec(),
        // 17
        b"".to_vec(),
        // 18: a late retry of an older revision: skipped, not rejected.
        br#"{"op":"upsert","source":"wiki","id":"a","version":0,"chunks":[]}"#.to_vec(),
        // 19: longer than --max-line-bytes.
        format!(
            r#"{{"op":"upsert","source":"wiki","id":"long","version":1,"chunks":[{{"text":"{}","vector":[1,0,0]}}]}}"#,
            "x".repeat(MAX_LINE)
        )
        .into_bytes(),
        // 20: a chunk without a vector and nothing stored to reuse.
        br#"{"op":"upsert","source":"notes","id":"nv","version":1,"chunks":[{"text":"never embedded"}]}"#.to_vec(),
        // 21: a number too large for a 32-bit float.
        br#"{"op":"upsert","source":"wiki","id":"big","version":1,"chunks":[{"text":"t","vector":[0,1e300,0]}]}"#.to_vec(),
    ];
    lines.push(br#"{"op":"delete","source":"docs","id":"gone","version":4}"#.to_vec());
    let mut input = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        input.extend_from_slice(line);
        // CRLF line ends are accepted too.
        input.extend_from_slice(if i.is_multiple_of(3) { b"\r\n" } else { b"\n" });
    }
    let expected = vec![
        rejected(3, Some("chunks[0].vector[2]"), "must be finite"),
        rejected(4, Some("chunks[0].vector"), "3-dimensional"),
        rejected(6, None, "invalid JSON"),
        rejected(7, Some("id"), "must not be empty"),
        rejected(8, Some("version"), "invalid type: string"),
        rejected(9, Some("op"), "unknown op"),
        rejected(13, Some("version"), "is required"),
        rejected(14, None, "not valid UTF-8"),
        rejected(15, Some("meta"), "nested too deeply"),
        rejected(16, Some("chunks[0].colour"), "unknown field"),
        rejected(19, None, "the limit is 4096"),
        rejected(20, Some("chunks[0].vector"), "embed it"),
        rejected(21, Some("chunks[0].vector[1]"), "must be finite"),
    ];
    (input, expected)
}

fn ingest(db: &Path, input: &Path, extra: &[&str]) -> Run {
    let max = MAX_LINE.to_string();
    let mut args = vec![
        "ingest",
        "--db",
        db.to_str().unwrap(),
        "--jsonl",
        input.to_str().unwrap(),
        "--max-line-bytes",
        &max,
        "--batch-size",
        "4",
    ];
    args.extend_from_slice(extra);
    ratchet(&args, None)
}

fn export(db: &Path, extra: &[&str]) -> Run {
    let mut args = vec!["export", "--db", db.to_str().unwrap()];
    args.extend_from_slice(extra);
    ratchet(&args, None)
}

#[test]
fn bad_lines_are_rejected_alone_and_named() {
    let dir = tempfile::tempdir().unwrap();
    let (input, rejected) = fixture();
    let input_path = dir.path().join("ops.jsonl");
    std::fs::write(&input_path, &input).unwrap();
    let db = dir.path().join("index.redb");

    let run = ingest(&db, &input_path, &["--report"]);
    assert_eq!(run.code, Some(3), "stderr: {}", run.stderr);
    for Rejected { line, field, text } in &rejected {
        let prefix = match field {
            Some(field) => format!("line {line}: {field}: "),
            None => format!("line {line}: "),
        };
        let message = run
            .stderr
            .lines()
            .find(|l| l.starts_with(&prefix))
            .unwrap_or_else(|| panic!("no {prefix:?} in stderr:\n{}", run.stderr));
        assert!(message.contains(text), "{message:?} lacks {text:?}");
    }
    let summary = run.stderr.lines().last().unwrap();
    assert!(
        summary.starts_with("ingest: 22 lines")
            && summary.contains("13 rejected")
            && summary.contains("1 blank")
            && summary.contains("older 1"),
        "{summary}"
    );

    // One report line per input line, in input order.
    let report = json_lines(&run.stdout);
    assert_eq!(report.len(), 22);
    for (i, entry) in report.iter().enumerate() {
        assert_eq!(entry["line"], i + 1, "{entry}");
    }
    for Rejected { line, field, text } in &rejected {
        let entry = &report[line - 1];
        assert!(entry["error"].as_str().unwrap().contains(text), "{entry}");
        assert_eq!(entry["field"].as_str(), *field, "{entry}");
    }
    let outcome = |line: usize| report[line - 1]["outcome"].as_str().unwrap().to_string();
    assert_eq!(outcome(1), "written");
    assert_eq!(report[0]["op"], "upsert");
    assert_eq!(report[0]["source"], "wiki");
    assert_eq!(report[0]["id"], "a");
    assert_eq!(report[0]["chunks_written"], 2);
    assert_eq!(outcome(5), "deleted");
    assert_eq!(outcome(10), "written");
    assert_eq!(outcome(12), "retained");
    assert_eq!(report[11]["documents_removed"], 1);
    assert_eq!(outcome(17), "blank");
    assert_eq!(outcome(18), "skipped");
    assert_eq!(report[17]["reason"], "older");
    assert_eq!(outcome(22), "deleted");

    // The good lines are applied: two live documents, three tombstones, sorted by (source, id).
    let exported = export(&db, &[]);
    assert_eq!(exported.code, Some(0), "{}", exported.stderr);
    let lines = json_lines(&exported.stdout);
    // Each export line is an ingest line: the documents (upserts and deletes), then the
    // listing as the retain that records it.
    let (documents, listings): (Vec<Value>, Vec<Value>) =
        lines.into_iter().partition(|line| line["op"] != "retain");
    assert_eq!(listings.len(), 1, "{listings:?}");
    assert_eq!(listings[0]["source"], "wiki");
    assert_eq!(listings[0]["version"], 3);
    assert_eq!(listings[0]["ids"], serde_json::json!(["a", "b"]));
    for d in &documents {
        let op = if d["deleted"] == true {
            "delete"
        } else {
            "upsert"
        };
        assert_eq!(d["op"], op, "{d}");
    }
    let keys: Vec<(String, String, bool)> = documents
        .iter()
        .map(|d| {
            (
                d["source"].as_str().unwrap().to_string(),
                d["id"].as_str().unwrap().to_string(),
                d["deleted"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        keys,
        [
            ("docs", "gone", true),
            ("docs", "x", false),
            ("wiki", "a", false),
            ("wiki", "b", true),
            ("wiki", "g", true),
        ]
        .map(|(s, i, d)| (s.to_string(), i.to_string(), d))
    );
    let a = &documents[2];
    assert_eq!(a["version"], 1);
    assert_eq!(a["version_kind"], "number");
    assert_eq!(a["meta"]["title"], "A");
    assert_eq!(a["chunks"][0]["position"], 0);
    assert_eq!(a["chunks"][0]["text"], "alpha");
    assert_eq!(a["chunks"][1]["meta"]["h"], 1);
    assert!(a["chunks"][0].get("vector").is_none());
    assert_eq!(documents[1]["version_kind"], "timestamp_micros");
    assert_eq!(documents[1]["version"], 1_700_000_000_000_000u64);
    for tombstone in [&documents[0], &documents[3], &documents[4]] {
        assert!(tombstone.get("chunks").is_none(), "{tombstone}");
    }
    assert_eq!(documents[4]["version"], 3, "g deleted by the listing");

    // --vectors adds each chunk's vector, as stored (unit length under cosine).
    let with_vectors = json_lines(&export(&db, &["--vectors"]).stdout);
    let vector: Vec<f64> = with_vectors[1]["chunks"][0]["vector"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    assert_eq!(vector.len(), 3);
    assert!((vector[0] - 0.6).abs() < 1e-6 && (vector[1] - 0.8).abs() < 1e-6);

    // verify: exit 0 with a one-line summary.
    let verify = ratchet(&["verify", "--db", db.to_str().unwrap()], None);
    assert_eq!(verify.code, Some(0), "{}", verify.stdout);
    assert_eq!(verify.stdout.lines().count(), 1);
    assert!(verify.stdout.starts_with("ok:"));

    // stats --json parses and agrees with the export.
    let stats = ratchet(&["stats", "--db", db.to_str().unwrap(), "--json"], None);
    assert_eq!(stats.code, Some(0), "{}", stats.stderr);
    let stats: Value = serde_json::from_str(stats.stdout.trim()).unwrap();
    let live = documents.iter().filter(|d| d["deleted"] == false);
    let chunks: usize = live
        .clone()
        .map(|d| d["chunks"].as_array().unwrap().len())
        .sum();
    assert_eq!(stats["documents"], live.count());
    assert_eq!(stats["tombstones"], 3);
    assert_eq!(stats["chunks"], chunks);
    assert_eq!(stats["vectors"], chunks);
    assert_eq!(stats["dimension"], 3);
    assert_eq!(stats["counters"]["skipped_older"], 1);
    assert_eq!(stats["counters"]["retain_documents_removed"], 1);
    assert_eq!(stats["recent_skips"][0]["reason"], "older");

    let table = ratchet(&["stats", "--db", db.to_str().unwrap()], None);
    assert_eq!(table.code, Some(0));
    assert!(table.stdout.contains("equal-version share of skips"));
    assert!(table
        .stdout
        .contains("wiki/a: older (stored number:1, incoming number:0)"));
}

#[test]
fn a_second_ingest_is_idempotent_and_stdin_matches_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let (input, rejected) = fixture();
    let input_path = dir.path().join("ops.jsonl");
    std::fs::write(&input_path, &input).unwrap();
    let db = dir.path().join("index.redb");

    assert_eq!(ingest(&db, &input_path, &[]).code, Some(3));
    let first = export(&db, &["--vectors"]).stdout;

    let again = ingest(&db, &input_path, &["--report"]);
    assert_eq!(again.code, Some(3), "the same lines are rejected again");
    let report = json_lines(&again.stdout);
    assert_eq!(report.len(), 22);
    for entry in &report {
        let line = entry["line"].as_u64().unwrap() as usize;
        if rejected.iter().any(|r| r.line == line) {
            assert!(entry.get("error").is_some(), "{entry}");
        } else if line != 17 {
            assert_eq!(
                entry["outcome"], "skipped",
                "nothing is applied twice: {entry}"
            );
        }
    }
    for line in [1, 10, 12, 22] {
        assert_eq!(
            report[line - 1]["reason"],
            "duplicate",
            "{}",
            report[line - 1]
        );
    }
    assert!(again
        .stderr
        .contains(" 0 written, 0 unchanged, 0 deleted, 0 retained"));
    assert_eq!(
        export(&db, &["--vectors"]).stdout,
        first,
        "export is byte-identical"
    );

    // The same input through stdin, into a new store, exports the same bytes.
    let piped = dir.path().join("piped.redb");
    let max = MAX_LINE.to_string();
    let run = ratchet(
        &[
            "ingest",
            "--db",
            piped.to_str().unwrap(),
            "--jsonl",
            "-",
            "--max-line-bytes",
            &max,
        ],
        Some(input),
    );
    assert_eq!(run.code, Some(3), "{}", run.stderr);
    assert_eq!(export(&piped, &["--vectors"]).stdout, first);
}

#[test]
fn a_clean_ingest_exits_zero_and_options_apply() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("index.redb");
    let input = br#"{"op":"upsert","source":"s","id":"d","version":5,"chunks":[{"text":"t","vector":[3,4]}]}
{"op":"delete","source":"s","id":"e","version":5}
"#;
    let run = ratchet(
        &[
            "ingest",
            "--db",
            db.to_str().unwrap(),
            "--jsonl",
            "-",
            "--version-kind",
            // Not "ticket": a ticket must have been issued by the store (issue 18).
            "timestamp_micros",
            "--metric",
            "l2",
            "--dim",
            "2",
            "--model",
            "test-model",
        ],
        Some(input.to_vec()),
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let lines = json_lines(&export(&db, &["--vectors"]).stdout);
    // An l2 store with a model: the export starts with its `store` line.
    assert_eq!(lines[0]["op"], "store");
    assert_eq!(lines[0]["metric"], "l2");
    assert_eq!(lines[0]["model"], "test-model");
    let documents = &lines[1..];
    assert_eq!(documents[0]["version_kind"], "timestamp_micros");
    assert_eq!(
        documents[0]["chunks"][0]["vector"],
        serde_json::json!([3.0, 4.0])
    );
    let stats = ratchet(&["stats", "--db", db.to_str().unwrap(), "--json"], None);
    let stats: Value = serde_json::from_str(stats.stdout.trim()).unwrap();
    assert_eq!(stats["metric"], "l2");
    assert_eq!(stats["model"], "test-model");

    // The store's settings are fixed: another metric is refused before anything is read.
    let run = ratchet(
        &[
            "ingest",
            "--db",
            db.to_str().unwrap(),
            "--jsonl",
            "-",
            "--metric",
            "cosine",
        ],
        Some(input.to_vec()),
    );
    assert_eq!(run.code, Some(1));
    assert!(run
        .stderr
        .starts_with("error: the store was created with metric l2"));
}

#[test]
fn a_locked_database_is_a_clear_error_not_a_hang() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("index.redb");
    let input = dir.path().join("ops.jsonl");
    std::fs::write(
        &input,
        br#"{"op":"delete","source":"s","id":"d","version":1}"#,
    )
    .unwrap();
    let held = Store::open(&db, Options::default()).unwrap();
    let db_arg = db.to_str().unwrap();
    let input_arg = input.to_str().unwrap();
    // The reading commands open read-only, beside the writer (issue 22).
    for args in [
        vec!["export", "--db", db_arg],
        vec!["verify", "--db", db_arg],
        vec!["stats", "--db", db_arg],
    ] {
        let run = ratchet(&args, None);
        assert_eq!(run.code, Some(0), "{args:?}: {}", run.stderr);
    }
    // A second writer is refused, in one line.
    let run = ratchet(&["ingest", "--db", db_arg, "--jsonl", input_arg], None);
    assert_eq!(run.code, Some(1), "ingest: {}", run.stderr);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(
        run.stderr.starts_with("error: ") && run.stderr.contains("open in another process"),
        "{}",
        run.stderr
    );
    drop(held);
    let run = ingest(&db, &input, &[]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
}

#[test]
fn reading_commands_never_create_a_database() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("missing.redb");
    for command in ["export", "verify", "stats"] {
        let run = ratchet(&[command, "--db", db.to_str().unwrap()], None);
        assert_eq!(run.code, Some(1), "{command}");
        assert!(
            run.stderr.starts_with("error: no database at"),
            "{command}: {}",
            run.stderr
        );
        assert!(!db.exists(), "{command} created the database");
    }
    // Nor does an ingest whose input cannot be read.
    let run = ingest(&db, &dir.path().join("no-such-input.jsonl"), &[]);
    assert_eq!(run.code, Some(1));
    assert!(run.stderr.starts_with("error: cannot read"));
    assert!(!db.exists());
}

#[test]
fn export_into_a_closed_pipe_exits_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("index.redb");
    // Well over a pipe buffer of export, so the reader goes away mid-stream.
    let text = "t".repeat(1000);
    let mut input = String::new();
    for i in 0..2000 {
        input.push_str(&format!(
            r#"{{"op":"upsert","source":"s","id":"{i:05}","version":1,"chunks":[{{"text":"{text} {i}","vector":[1,{i}]}}]}}"#
        ));
        input.push('\n');
    }
    let run = ratchet(
        &["ingest", "--db", db.to_str().unwrap(), "--jsonl", "-"],
        Some(input.into_bytes()),
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);

    let mut child = Command::new(env!("CARGO_BIN_EXE_ratchet"))
        .args(["export", "--db", db.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 100];
    stdout.read_exact(&mut first).unwrap();
    drop(stdout);
    let deadline = Instant::now() + TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "export hung on a closed pipe");
        std::thread::sleep(Duration::from_millis(10));
    };
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(status.success(), "{status}: {stderr}");
    assert!(stderr.is_empty(), "{stderr}");
}

/// The summary line without its timing.
fn summary_without_time(stderr: &str) -> String {
    let summary = stderr.lines().last().unwrap_or_default();
    match (summary.find(" in "), summary.find("s: ")) {
        (Some(start), Some(end)) if start < end => {
            format!("{}{}", &summary[..start], &summary[end + 1..])
        }
        _ => summary.to_string(),
    }
}

/// Many operations on few documents, so that one batch often holds several of a document:
/// upserts with random versions and duplicates, deletes, retains, and bad lines.
fn contended_input() -> Vec<u8> {
    let mut state = 0x5eed_u64;
    let mut next = |n: u64| {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 33) % n
    };
    let mut input = String::new();
    for i in 0..1500 {
        let doc = next(12);
        // Versions drift upwards with noise, as live traffic with late retries does.
        let version = i / 10 + next(30);
        let line = match next(20) {
            0 => format!(r#"{{"op":"delete","source":"s","id":"d{doc}","version":{version}}}"#),
            1 => format!(
                r#"{{"op":"retain","source":"s","ids":["d1","d2","d3","d4","d5","d6"],"version":{version}}}"#
            ),
            2 => r#"{"op":"upsert","source":"s","id":"","version":1,"chunks":[]}"#.to_string(),
            3 => String::new(),
            // A vector of the wrong dimension, for a document that the guard would write
            // (new, in a source without listings). For one the guard refuses anyway, the
            // library's answer depends on whether the dimension was known when the line was
            // validated, that is on batch boundaries: a refusal before the dimension is
            // fixed, a dimension error after.
            4 => format!(
                r#"{{"op":"upsert","source":"t","id":"new{i}","version":{version},"chunks":[{{"text":"t","vector":[1,2]}}]}}"#
            ),
            _ => {
                let chunks: Vec<String> = (0..next(4))
                    .map(|p| {
                        format!(
                            r#"{{"text":"d{doc} v{version} p{p}","vector":[{},{},1]}}"#,
                            doc + 1,
                            version % 7
                        )
                    })
                    .collect();
                format!(
                    r#"{{"op":"upsert","source":"s","id":"d{doc}","version":{version},"chunks":[{}]}}"#,
                    chunks.join(",")
                )
            }
        };
        input.push_str(&line);
        input.push('\n');
    }
    input.into_bytes()
}

#[test]
fn workers_give_the_same_report_and_export_as_one_thread() {
    let dir = tempfile::tempdir().unwrap();
    let (fixture, _) = fixture();
    for (name, input) in [("fixture", fixture), ("contended", contended_input())] {
        let input_path = dir.path().join(format!("{name}.jsonl"));
        std::fs::write(&input_path, &input).unwrap();
        let single_db = dir.path().join(format!("{name}-single.redb"));
        let single = ingest(&single_db, &input_path, &["--report"]);
        for workers in ["1", "4"] {
            let db = dir.path().join(format!("{name}-workers-{workers}.redb"));
            let run = ingest(&db, &input_path, &["--report", "--workers", workers]);
            assert_eq!(
                run.code, single.code,
                "{name} --workers {workers}: {}",
                run.stderr
            );
            assert_eq!(
                run.stdout, single.stdout,
                "{name} --workers {workers}: the --report differs"
            );
            let lines = |stderr: &str| -> Vec<String> {
                let mut lines: Vec<String> = stderr.lines().map(str::to_string).collect();
                lines.pop();
                lines
            };
            assert_eq!(lines(&run.stderr), lines(&single.stderr), "{name}");
            assert_eq!(
                summary_without_time(&run.stderr),
                summary_without_time(&single.stderr),
                "{name}"
            );
            assert_eq!(
                export(&db, &["--vectors"]).stdout,
                export(&single_db, &["--vectors"]).stdout,
                "{name} --workers {workers}: the export differs"
            );
        }
    }
}

/// `search --where` and `--queries` (issue 19): a filter restricts the hits by chunk and
/// document metadata; a JSONL file of questions and vectors is answered in one run, each
/// hit tagged with its query; bad filters, `-k 0`, `--ef 0`, a `k` past the limit and an
/// unknown source are refused with the exit codes of the contract (2: the command line, 1:
/// the request) and a message naming what is wrong.
#[test]
fn search_where_and_queries() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("index.redb");
    let input = br#"{"op":"upsert","source":"s","id":"a","version":1,"meta":{"lang":"en"},"chunks":[{"text":"one","vector":[1,0,0],"meta":{"year":2020}},{"text":"two","vector":[0.9,0.1,0],"meta":{"year":2024,"lang":"de"}}]}
{"op":"upsert","source":"s","id":"b","version":1,"meta":{"lang":"de"},"chunks":[{"text":"three","vector":[0,1,0],"meta":{"year":2022}}]}
"#;
    let run = ratchet(
        &["ingest", "--db", db.to_str().unwrap(), "--jsonl", "-"],
        Some(input.to_vec()),
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let db_arg = db.to_str().unwrap();
    let search = |extra: &[&str]| {
        let mut args = vec!["search", "--db", db_arg];
        args.extend_from_slice(extra);
        ratchet(&args, None)
    };
    let texts = |run: &Run| -> Vec<String> {
        assert_eq!(run.code, Some(0), "{}", run.stderr);
        json_lines(&run.stdout)
            .iter()
            .map(|hit| hit["text"].as_str().unwrap().to_string())
            .collect()
    };
    let vector = "[1,0,0]";
    // The chunk's key wins over the document's: "two" is German although its document is not.
    let de = search(&["--vector", vector, "--where", r#"{"lang":"de"}"#, "--json"]);
    assert_eq!(texts(&de), ["two", "three"]);
    let recent = search(&[
        "--vector",
        vector,
        "--where",
        r#"{"$and":[{"year":{"$gte":2021}},{"$not":{"lang":"de"}}]}"#,
        "--json",
    ]);
    assert!(texts(&recent).is_empty());
    let exact = search(&[
        "--vector",
        vector,
        "--where",
        r#"{"year":{"$in":[2020,2022]}}"#,
        "--exact",
        "--json",
    ]);
    assert_eq!(texts(&exact), ["one", "three"]);

    let queries = dir.path().join("queries.jsonl");
    std::fs::write(
        &queries,
        "[0,1,0]\n\n{\"vector\":[1,0,0],\"id\":\"q-one\"}\n",
    )
    .unwrap();
    let many = search(&["--queries", queries.to_str().unwrap(), "-k", "1", "--json"]);
    assert_eq!(many.code, Some(0), "{}", many.stderr);
    let hits = json_lines(&many.stdout);
    assert_eq!(hits.len(), 2);
    assert_eq!(
        (hits[0]["query"].clone(), hits[0]["text"].clone()),
        (0.into(), "three".into())
    );
    assert_eq!(hits[1]["query"], 1);
    assert_eq!(hits[1]["query_id"], "q-one");
    assert_eq!(hits[1]["text"], "one");
    // The same file on stdin, filtered.
    let filtered = ratchet(
        &[
            "search",
            "--db",
            db_arg,
            "--queries",
            "-",
            "-k",
            "1",
            "--json",
            "--where",
            r#"{"lang":"en"}"#,
        ],
        Some(std::fs::read(&queries).unwrap()),
    );
    let hits = json_lines(&filtered.stdout);
    assert_eq!(hits.len(), 2, "{}", filtered.stderr);
    assert_eq!(hits[0]["text"], "one");

    let bad_line = dir.path().join("bad.jsonl");
    std::fs::write(&bad_line, "[1,0,0]\n{\"texts\":\"x\"}\n").unwrap();
    let run = search(&["--queries", bad_line.to_str().unwrap()]);
    assert_eq!(run.code, Some(1));
    assert!(run.stderr.contains("line 2"), "{}", run.stderr);

    let refused = |extra: &[&str], code: i32, needle: &str| {
        let run = search(extra);
        assert_eq!(run.code, Some(code), "{extra:?}: {}", run.stderr);
        assert!(run.stdout.is_empty(), "{extra:?}: {}", run.stdout);
        assert!(run.stderr.contains(needle), "{extra:?}: {}", run.stderr);
    };
    refused(
        &["--vector", vector, "--where", r#"{"year":{"$gte":[1]}}"#],
        1,
        "where.year.$gte",
    );
    refused(&["--vector", vector, "--where", "{not json"], 1, "--where");
    refused(&["--vector", vector, "-k", "0"], 2, "at least 1");
    refused(&["--vector", vector, "--ef", "0"], 2, "at least 1");
    refused(&["--vector", vector, "--rerank", "0"], 2, "at least 1");
    refused(&["--vector", vector, "--rerank", "1000000000"], 1, "rerank");
    refused(&["--vector", vector, "-k", "18446744073709551615"], 1, "k");
    refused(&["--vector", vector, "-k", "1000000000"], 1, "at most");
    refused(&["--vector", vector, "--source", "nope"], 1, "nope");
}
