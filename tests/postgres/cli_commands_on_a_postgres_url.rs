//! Every `ratchet` command takes `--db postgres://...` through `Store::open`: the same
//! session (a JSONL ingest with a stale retry, a delete and a listing; a folder ingest and a
//! `--sync` after a file is removed; vector search; export; stats; verify) run against a
//! redb file and against a PostgreSQL store gives the same report, hits, export and
//! counters; `--mode text` (BM25) gives the same hits on both, and on the server prints
//! the live chunks holding the word.

use crate::pg;
use serde_json::Value;
use std::process::{Command, Output};

fn ratchet(args: &[&str], stdin: Option<&str>) -> Output {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_ratchet"))
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn ratchet");
    let mut pipe = child.stdin.take().expect("stdin");
    if let Some(input) = stdin {
        pipe.write_all(input.as_bytes()).expect("feed stdin");
    }
    drop(pipe);
    child.wait_with_output().expect("wait for ratchet")
}

fn ok(args: &[&str], stdin: Option<&str>) -> String {
    let output = ratchet(args, stdin);
    assert!(
        output.status.success(),
        "ratchet {args:?} failed: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("utf-8")
}

fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .collect()
}

const JSONL: &str = r#"{"op":"upsert","source":"s","id":"a","version":2,"chunks":[{"text":"alpha one","vector":[1.0,0.0,0.2]},{"text":"alpha two","vector":[0.9,0.1,0.2]}]}
{"op":"upsert","source":"s","id":"a","version":1,"chunks":[{"text":"stale","vector":[0.0,1.0,0.0]}]}
{"op":"upsert","source":"s","id":"b","version":1,"chunks":[{"text":"beta","vector":[0.0,1.0,0.1]}],"meta":{"lang":"en"}}
{"op":"upsert","source":"s","id":"c","version":1,"chunks":[{"text":"gamma","vector":[0.1,0.1,1.0]}]}
{"op":"delete","source":"s","id":"b","version":3}
{"op":"retain","source":"s","ids":["a","b"],"version":4}
"#;

/// A search's JSON hits without what the backends legitimately number differently
/// (generations, vector ids), scores rounded to 1e-4; sorted by text if `as_set`.
fn comparable_hits(output: &str, as_set: bool) -> Vec<Value> {
    let mut hits: Vec<Value> = json_lines(output)
        .into_iter()
        .map(|mut hit| {
            let object = hit.as_object_mut().expect("a hit object");
            let score = object
                .remove("score")
                .and_then(|s| s.as_f64())
                .expect("score");
            object.insert("score".into(), Value::from((score * 1e4).round() / 1e4));
            object.remove("generation");
            object.remove("vector_id");
            hit
        })
        .collect();
    if as_set {
        hits.sort_by_key(|h| h["text"].to_string());
    }
    hits
}

/// The whole session against `db`; what each step printed, normalised where the two
/// backends legitimately differ (internal generations).
fn session(db: &str, folder_db: &str, docs: &std::path::Path) -> Vec<Value> {
    let mut seen = Vec::new();
    seen.extend(json_lines(&ok(
        &["ingest", "--db", db, "--jsonl", "-", "--report"],
        Some(JSONL),
    )));
    let vector = ok(
        &[
            "search",
            "--db",
            db,
            "--vector",
            "[1.0, 0.0, 0.2]",
            "-k",
            "3",
            "--json",
            "--exact",
        ],
        None,
    );
    seen.extend(comparable_hits(&vector, false));
    // BM25 over the text index ("alpha one" and "alpha two" tie: compared as a set).
    let text = ok(
        &[
            "search", "--db", db, "alpha", "--mode", "text", "-k", "3", "--json",
        ],
        None,
    );
    let text_hits = comparable_hits(&text, true);
    assert_eq!(text_hits.len(), 2, "{text}");
    seen.extend(text_hits);
    for mut line in json_lines(&ok(&["export", "--db", db], None)) {
        line.as_object_mut().expect("object").remove("generation");
        seen.push(line);
    }
    let stats: Value =
        serde_json::from_str(&ok(&["stats", "--db", db, "--json"], None)).expect("stats");
    seen.push(stats["counters"].clone());
    seen.push(Value::from(vec![
        stats["documents"].clone(),
        stats["tombstones"].clone(),
    ]));
    assert!(ok(&["verify", "--db", db], None).starts_with("ok: "));
    // A folder goes to a second store (a store keeps one embedder: the folder's is the
    // built-in hashing embedder, the JSONL's vectors are 3-d).
    let folder_db = folder_db.to_string();
    ok(
        &["ingest", "--db", &folder_db, docs.to_str().unwrap()],
        None,
    );
    let removed = docs.join("two.md");
    let kept = std::fs::read_to_string(&removed).expect("read");
    std::fs::remove_file(&removed).expect("remove a file");
    ok(
        &[
            "ingest",
            "--db",
            &folder_db,
            "--sync",
            docs.to_str().unwrap(),
        ],
        None,
    );
    // Back as it was, modification time included (its version), for the next session.
    let mtime = std::fs::metadata(docs.join("one.md"))
        .and_then(|m| m.modified())
        .expect("mtime");
    std::fs::write(&removed, kept).expect("put the file back");
    std::fs::File::options()
        .write(true)
        .open(&removed)
        .and_then(|f| f.set_modified(mtime))
        .expect("restore the modification time");
    for mut line in json_lines(&ok(&["export", "--db", &folder_db], None)) {
        line.as_object_mut().expect("object").remove("generation");
        seen.push(line);
    }
    let hits = ok(
        &[
            "search",
            "--db",
            &folder_db,
            "ratchets turn",
            "--mode",
            "vector",
            "--json",
        ],
        None,
    );
    seen.extend(json_lines(&hits).into_iter().map(|hit| hit["text"].clone()));
    seen
}

#[test]
fn cli_commands_on_a_postgres_url() {
    let (Some(url), Some(folder_url)) =
        (pg::fresh_url("cli_cmds"), pg::fresh_url("cli_cmds_folder"))
    else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let docs = dir.path().join("notes");
    std::fs::create_dir(&docs).expect("mkdir");
    std::fs::write(
        docs.join("one.md"),
        "Ratchets turn one way.\n\nPawls stop them.",
    )
    .expect("write");
    std::fs::write(docs.join("two.md"), "Gears turn both ways.").expect("write");
    // Both files carry one modification time (the version), so putting one back can
    // restore it exactly.
    let mtime = std::fs::metadata(docs.join("one.md"))
        .and_then(|m| m.modified())
        .expect("mtime");
    std::fs::File::options()
        .write(true)
        .open(docs.join("two.md"))
        .and_then(|f| f.set_modified(mtime))
        .expect("set the modification time");
    let file = dir.path().join("store.redb");
    let folder_file = dir.path().join("folder.redb");
    let on_file = session(file.to_str().unwrap(), folder_file.to_str().unwrap(), &docs);
    let on_server = session(&url, &folder_url, &docs);
    assert_eq!(on_file.len(), on_server.len());
    for (file_step, server_step) in on_file.iter().zip(&on_server) {
        assert_eq!(
            file_step, server_step,
            "the redb file and PostgreSQL differ"
        );
    }

    // `--mode text` on the server: exit 0, the live chunks holding the word, human output.
    let text = ratchet(&["search", "--db", &url, "alpha", "--mode", "text"], None);
    let stdout = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&text.stderr)
    );
    assert!(stdout.contains("mode: text"), "{stdout}");
    assert!(
        stdout.contains("alpha one") && stdout.contains("alpha two"),
        "{stdout}"
    );
    assert!(!stdout.contains("stale"), "{stdout}");
}
