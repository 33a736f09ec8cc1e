//! Issue 45, item 4 (the CLI): on a store of the user's own vectors (no embedder recorded),
//! `ratchet search QUESTION` in hybrid mode said to pass `--vector`, and `--vector` could
//! not be given beside a QUESTION. Now `QUESTION --vector '[...]'` is a hybrid search (the
//! QUESTION's words, the given vector), with or without `--mode hybrid`, and gives the
//! library's `search_hybrid` hits; `--mode text QUESTION` gives `search_text`'s; and the
//! combinations that cannot be searched are request errors naming the arguments.

use crate::common::cli::{assert_no_panic, run, Run};
use ratchetdb::{Hit, SearchOptions, Store};
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

/// `(source, id, position, score)` of each `--json` hit line.
fn cli_hits(run: &Run) -> Vec<(String, String, u64, f64)> {
    run.stdout
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("a JSON line");
            (
                v["source"].as_str().unwrap().to_string(),
                v["id"].as_str().unwrap().to_string(),
                v["position"].as_u64().unwrap(),
                v["score"].as_f64().unwrap(),
            )
        })
        .collect()
}

fn library_hits(hits: Vec<Hit>) -> Vec<(String, String, u64, f64)> {
    hits.into_iter()
        .map(|h| (h.source, h.id, u64::from(h.position), f64::from(h.score)))
        .collect()
}

#[test]
fn cli_search_hybrid_with_a_question_and_a_vector() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("own.redb");
    let db_arg = db.to_str().unwrap();
    let lines = br#"{"op":"upsert","source":"s","id":"a","version":1,"chunks":[{"text":"pawl and ratchet","vector":[1,0,0]},{"text":"gear train","vector":[0,1,0]}]}
{"op":"upsert","source":"s","id":"b","version":1,"chunks":[{"text":"a wrench with a ratchet","vector":[0,0,1]}]}
{"op":"upsert","source":"s","id":"c","version":1,"chunks":[{"text":"spring","vector":[0.9,0.1,0]}]}
"#;
    let ingest = ratchet(
        &["ingest", "--db", db_arg, "--jsonl", "-"],
        Some(lines.to_vec()),
    );
    assert_eq!(ingest.code, Some(0), "{}", ingest.stderr);
    let search = |extra: &[&str]| {
        let mut args = vec!["search", "--db", db_arg];
        args.extend_from_slice(extra);
        ratchet(&args, None)
    };

    // The advice a QUESTION alone gets on this store...
    let alone = search(&["wrench", "--mode", "hybrid"]);
    assert_eq!(alone.code, Some(1), "{}", alone.stderr);
    assert!(alone.stderr.contains("--vector"), "{}", alone.stderr);
    // ...followed: hybrid, the QUESTION's words beside the vector.
    let store = Store::open_read_only(&db).expect("open the store");
    let query = [1.0f32, 0.0, 0.0];
    let want = library_hits(
        store
            .search_hybrid("wrench", &query, 4, &SearchOptions::default())
            .expect("search_hybrid"),
    );
    assert!(
        want.iter().any(|h| h.1 == "b") && want.iter().any(|h| h.1 == "a"),
        "the scenario needs a text hit and a vector hit: {want:?}"
    );
    for extra in [&["--mode", "hybrid"][..], &[][..]] {
        let mut args = vec!["wrench", "--vector", "[1,0,0]", "-k", "4"];
        args.extend_from_slice(extra);
        let json = search(&[&args[..], &["--json"]].concat());
        assert_eq!(json.code, Some(0), "{args:?}: {}", json.stderr);
        let got = cli_hits(&json);
        assert_eq!(got.len(), want.len(), "{args:?}: {got:?}");
        for (g, w) in got.iter().zip(&want) {
            assert_eq!((&g.0, &g.1, g.2), (&w.0, &w.1, w.2), "{args:?}");
            assert!((g.3 - w.3).abs() < 1e-6, "{args:?}: {g:?} against {w:?}");
        }
        let text = search(&args);
        assert_eq!(text.code, Some(0), "{}", text.stderr);
        assert!(text.stdout.contains("mode: hybrid"), "{}", text.stdout);
    }

    // --mode text with a QUESTION: BM25 over the words, as the library ranks them.
    let text = search(&["wrench", "--mode", "text", "--json"]);
    assert_eq!(text.code, Some(0), "{}", text.stderr);
    let want = library_hits(
        store
            .search_text("wrench", 5, &SearchOptions::default())
            .expect("search_text"),
    );
    assert!(!want.is_empty());
    let got = cli_hits(&text);
    assert_eq!(
        got.iter().map(|h| (&h.0, &h.1, h.2)).collect::<Vec<_>>(),
        want.iter().map(|h| (&h.0, &h.1, h.2)).collect::<Vec<_>>()
    );

    // What cannot be searched: a request error naming the arguments, nothing printed.
    for (args, names) in [
        (
            &["--vector", "[1,0,0]", "--mode", "hybrid"][..],
            &["--mode hybrid", "QUESTION", "--vector"][..],
        ),
        (
            &["wrench", "--vector", "[1,0,0]", "--mode", "text"][..],
            &["--mode text", "--vector"][..],
        ),
        (
            &["wrench", "--vector", "[1,0,0]", "--mode", "vector"][..],
            &["--mode vector", "QUESTION", "--vector"][..],
        ),
    ] {
        let bad = search(args);
        assert_eq!(bad.code, Some(1), "{args:?}: {}", bad.stderr);
        assert!(bad.stdout.is_empty(), "{args:?}: {}", bad.stdout);
        for name in names {
            assert!(
                bad.stderr.contains(name),
                "{args:?} names {name}: {}",
                bad.stderr
            );
        }
    }
    // --queries is its own set of queries: not beside --vector (a usage error).
    let queries = dir.path().join("queries.jsonl");
    std::fs::write(&queries, "\"wrench\"\n").unwrap();
    let bad = search(&[
        "--queries",
        queries.to_str().unwrap(),
        "--vector",
        "[1,0,0]",
    ]);
    assert_eq!(bad.code, Some(2), "{}", bad.stderr);
    assert!(bad.stderr.contains("--vector"), "{}", bad.stderr);
}
