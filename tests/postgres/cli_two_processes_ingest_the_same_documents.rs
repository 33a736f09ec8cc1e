//! Issue 44, "not yet tried by anyone": two CLI processes writing the same documents on
//! PostgreSQL. Two `ratchet ingest --db postgres://… --jsonl` processes start together on an
//! empty schema (both may create the store) and write overlapping revisions of the same
//! documents in small batches, one of them through the concurrent writer. Stream A carries
//! versions 1 to 3 of every document and then version 3 again (a redelivery); stream B
//! versions 2 to 4 of the even ones, rising for half of them and falling for the others, so
//! every even document's versions 2 and 3 arrive twice, byte for byte. Afterwards:
//! - each document holds its highest delivered version, with that version's chunks;
//! - every line is accounted for: the two `--report`s' outcomes add up to the lines sent,
//!   and to the store's counters (written = new + newer, skipped = older + duplicate, no
//!   conflict, every document new exactly once);
//! - `ratchet verify` is clean.

use crate::pg;
use serde_json::Value;
use std::collections::BTreeMap;
use std::process::{Command, Output, Stdio};

const DOCS: u64 = 120;

/// The line of version `version` of document `doc`: its content follows from both, so the
/// same revision sent by both processes is the same bytes.
fn line(doc: u64, version: u64) -> String {
    let x = (doc % 7) as f32 / 7.0;
    format!(
        r#"{{"op":"upsert","source":"s","id":"d{doc:03}","version":{version},"chunks":[{{"text":"doc {doc} version {version}","vector":[1,{x},{v}]}},{{"text":"doc {doc} tail {version}","vector":[{x},1,{v}]}}]}}"#,
        v = version as f32 / 10.0
    )
}

fn stream_a() -> Vec<String> {
    // Versions 1 to 3, then version 3 redelivered (a restarted pipeline).
    [1, 2, 3, 3]
        .into_iter()
        .flat_map(|v| (0..DOCS).map(move |d| line(d, v)))
        .collect()
}

fn stream_b() -> Vec<String> {
    // Oldest first for half the even documents (A's versions arrive again, as duplicates or
    // late), newest first for the other half (stale lines after newer ones).
    let rising = (2..=4).flat_map(|v| (0..DOCS).filter(|d| d % 4 == 0).map(move |d| line(d, v)));
    let falling = (2..=4)
        .rev()
        .flat_map(|v| (0..DOCS).filter(|d| d % 4 == 2).map(move |d| line(d, v)));
    rising.chain(falling).collect()
}

fn spawn_ingest(url: &str, lines: &[String], extra: &[&str]) -> std::process::Child {
    use std::io::Write;
    let mut args = vec![
        "ingest",
        "--db",
        url,
        "--jsonl",
        "-",
        "--report",
        "--batch-size",
        "7",
    ];
    args.extend_from_slice(extra);
    let mut child = Command::new(env!("CARGO_BIN_EXE_ratchet"))
        .args(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ratchet");
    let mut input = lines.join("\n");
    input.push('\n');
    let mut stdin = child.stdin.take().expect("stdin");
    std::thread::spawn(move || {
        let _ = stdin.write_all(input.as_bytes());
    });
    child
}

fn finished(child: std::process::Child, what: &str) -> Output {
    let output = child.wait_with_output().expect("wait for ratchet");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{what} panicked: {stderr}");
    assert!(output.status.success(), "{what} failed: {stderr}");
    output
}

/// Outcomes of a `--report`, counted by "outcome" or "outcome/reason".
fn outcomes(output: &Output, lines: usize) -> BTreeMap<String, u64> {
    let text = String::from_utf8(output.stdout.clone()).expect("utf-8 report");
    let mut counts = BTreeMap::new();
    let mut seen = 0;
    for report in text.lines() {
        let report: Value = serde_json::from_str(report).expect("a JSON report line");
        let outcome = report["outcome"].as_str().expect("an outcome").to_string();
        let key = match report["reason"].as_str() {
            Some(reason) => format!("{outcome}/{reason}"),
            None => outcome,
        };
        *counts.entry(key).or_insert(0) += 1;
        seen += 1;
    }
    assert_eq!(seen, lines, "one report line per input line");
    counts
}

fn ratchet(args: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_ratchet"))
        .args(args)
        .output()
        .expect("run ratchet");
    assert!(
        output.status.success(),
        "ratchet {:?}: {}",
        &args[..1],
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("utf-8")
}

#[test]
fn cli_two_processes_ingest_the_same_documents() {
    let Some(url) = pg::fresh_url("cli_two_ingests") else {
        return;
    };
    let (a, b) = (stream_a(), stream_b());
    let first = spawn_ingest(&url, &a, &[]);
    let second = spawn_ingest(&url, &b, &["--workers", "3"]);
    let (first, second) = (finished(first, "ingest A"), finished(second, "ingest B"));
    let mut counts = outcomes(&first, a.len());
    for (key, n) in outcomes(&second, b.len()) {
        *counts.entry(key).or_insert(0) += n;
    }
    println!("outcomes of both processes: {counts:?}");

    // Each document at its highest version, with that version's chunks.
    let exported: Vec<Value> = ratchet(&["export", "--db", &url])
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(exported.len(), DOCS as usize);
    for doc in &exported {
        let n: u64 = doc["id"].as_str().expect("id")[1..]
            .parse()
            .expect("number");
        let highest = if n.is_multiple_of(2) { 4 } else { 3 };
        assert_eq!(doc["version"], highest, "{doc}");
        assert_eq!(doc["deleted"], false, "{doc}");
        let texts: Vec<&str> = doc["chunks"]
            .as_array()
            .expect("chunks")
            .iter()
            .map(|c| c["text"].as_str().expect("text"))
            .collect();
        assert_eq!(
            texts,
            [
                format!("doc {n} version {highest}"),
                format!("doc {n} tail {highest}")
            ],
            "{doc}"
        );
    }

    // Every line accounted for, by the reports and by the counters alike.
    let stats: Value =
        serde_json::from_str(&ratchet(&["stats", "--db", &url, "--json"])).expect("stats");
    let c = &stats["counters"];
    let get = |name: &str| c[name].as_u64().unwrap_or_else(|| panic!("{name}: {c}"));
    let lines = (a.len() + b.len()) as u64;
    let report = |key: &str| counts.get(key).copied().unwrap_or(0);
    assert_eq!(counts.values().sum::<u64>(), lines);
    assert_eq!(get("written_new"), DOCS, "every document is new once: {c}");
    assert_eq!(
        report("written"),
        get("written_new") + get("written_newer"),
        "{c}"
    );
    assert_eq!(report("skipped/older"), get("skipped_older"), "{c}");
    assert_eq!(report("skipped/duplicate"), get("skipped_duplicate"), "{c}");
    assert_eq!(report("unchanged"), get("unchanged"), "{c}");
    assert!(
        get("skipped_duplicate") >= DOCS / 2,
        "the odd documents' redelivered version 3 is a duplicate: {c}"
    );
    assert_eq!(get("skipped_conflict"), 0, "{c}");
    assert_eq!(get("skipped_tombstoned"), 0, "{c}");
    assert_eq!(
        get("written_new")
            + get("written_newer")
            + get("unchanged")
            + get("skipped_older")
            + get("skipped_duplicate"),
        lines,
        "the counters add up to the lines sent: {c}"
    );
    assert_eq!(stats["documents"], DOCS);
    assert_eq!(stats["chunks"], DOCS * 2);
    assert!(ratchet(&["verify", "--db", &url]).starts_with("ok: "));
}
