//! `ratchet search --mode vector|text|hybrid` (issue 21): hybrid by default on a store with
//! an embedder and the text index, text on one with the text index and no embedder, and
//! `--vector` always vector; `--mode text` finds an exact code that vectors rank anywhere;
//! every hit line of `--json` is a live chunk; a bad mode is a usage error (exit 2), and
//! `--mode text` with `--vector` a request error (exit 1) naming the flags.

use crate::common::cli::{assert_no_panic, ingest_folder, run, Run};
use serde_json::Value;
use std::time::Duration;

fn ratchet(args: &[&str], stdin: Option<Vec<u8>>) -> Run {
    let run = run(
        args,
        |c| {
            c.env_remove("RATCHET_MODEL");
        },
        stdin,
        Duration::from_secs(60),
    );
    assert_no_panic(&run, args);
    run
}

fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

#[test]
fn cli_search_modes() {
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    std::fs::write(
        docs.join("errors.md"),
        "# Errors\n\nError E4711 means the boiler pressure is too low.",
    )
    .unwrap();
    std::fs::write(
        docs.join("coffee.md"),
        "# Coffee\n\nCoffee is brewed from roasted beans and hot water.",
    )
    .unwrap();
    std::fs::write(
        docs.join("tea.md"),
        "# Tea\n\nTea is brewed from leaves and hot water.",
    )
    .unwrap();
    let db = dir.path().join("index.redb");
    let ingest = ingest_folder(&db, &docs, &[]);
    assert_eq!(ingest.code, Some(0), "{}", ingest.stderr);
    let db_arg = db.to_str().unwrap();
    let search = |extra: &[&str]| {
        let mut args = vec!["search", "--db", db_arg];
        args.extend_from_slice(extra);
        ratchet(&args, None)
    };

    // Default on a folder store (the hashing embedder and the text index): hybrid.
    let default = search(&["E4711", "-k", "1"]);
    assert_eq!(default.code, Some(0), "{}", default.stderr);
    assert!(
        default.stdout.contains("mode: hybrid"),
        "{}",
        default.stdout
    );
    assert!(default.stdout.contains("errors.md"), "{}", default.stdout);

    for mode in ["vector", "text", "hybrid"] {
        let run = search(&["coffee beans", "--mode", mode, "-k", "3", "--json"]);
        assert_eq!(run.code, Some(0), "{mode}: {}", run.stderr);
        let hits = json_lines(&run.stdout);
        assert!(!hits.is_empty(), "{mode}: no hits");
        assert!(
            hits[0]["text"].as_str().unwrap().contains("roasted beans"),
            "{mode}: {hits:?}"
        );
    }
    // Text mode: only chunks with the word, scored by BM25.
    let text = search(&["E4711", "--mode", "text", "--json"]);
    let hits = json_lines(&text.stdout);
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert!(hits[0]["text"].as_str().unwrap().contains("E4711"));
    assert!(hits[0]["score"].as_f64().unwrap() > 0.0);

    // A store of raw vectors (no embedder recorded): text by default; --vector is vector.
    let raw = dir.path().join("raw.redb");
    let lines = br#"{"op":"upsert","source":"s","id":"a","version":1,"chunks":[{"text":"pawl and ratchet","vector":[1,0,0]},{"text":"gear","vector":[0,1,0]}]}
"#;
    let run = ratchet(
        &["ingest", "--db", raw.to_str().unwrap(), "--jsonl", "-"],
        Some(lines.to_vec()),
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let raw_arg = raw.to_str().unwrap();
    let run = ratchet(&["search", "--db", raw_arg, "ratchet"], None);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(run.stdout.contains("mode: text"), "{}", run.stdout);
    assert!(run.stdout.contains("pawl and ratchet"), "{}", run.stdout);
    let run = ratchet(
        &[
            "search", "--db", raw_arg, "--vector", "[0,1,0]", "-k", "1", "--json",
        ],
        None,
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(json_lines(&run.stdout)[0]["text"], "gear");

    // Refusals.
    let bad = search(&["coffee", "--mode", "fuzzy"]);
    assert_eq!(bad.code, Some(2), "{}", bad.stderr);
    assert!(bad.stderr.contains("--mode"), "{}", bad.stderr);
    let bad = search(&["--vector", "[1,0,0]", "--mode", "text"]);
    assert_eq!(bad.code, Some(1), "{}", bad.stderr);
    assert!(bad.stderr.contains("--vector"), "{}", bad.stderr);
    assert!(bad.stdout.is_empty());
}
