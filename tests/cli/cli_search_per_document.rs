//! Issue 45, item 5 (the CLI): the top 5 could be five chunks of one file. With
//! `--per-document`, `ratchet search` returns each document's best chunk and K distinct
//! documents, in vector, text and hybrid mode: the whole exact ranking reduced to each
//! document's first hit.

use crate::common::cli::{assert_no_panic, run, Run};
use ratchetdb::{Hit, SearchOptions, Store};
use serde_json::Value;
use std::time::Duration;

fn ratchet(args: &[&str], stdin: Option<Vec<u8>>) -> Run {
    let run = run(args, |_| {}, stdin, Duration::from_secs(60));
    assert_no_panic(&run, args);
    run
}

fn cli_hits(run: &Run) -> Vec<(String, u64)> {
    run.stdout
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("a JSON line");
            (
                v["id"].as_str().unwrap().to_string(),
                v["position"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// Each document's first hit of a whole ranking, at most `k`.
fn first_of_each_document(ranking: Vec<Hit>, k: usize) -> Vec<(String, u64)> {
    let mut seen = std::collections::HashSet::new();
    ranking
        .into_iter()
        .filter(|h| seen.insert(h.id.clone()))
        .take(k)
        .map(|h| (h.id, u64::from(h.position)))
        .collect()
}

#[test]
fn cli_search_per_document() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("own.redb");
    let db_arg = db.to_str().unwrap();
    let mut lines =
        String::from(r#"{"op":"upsert","source":"s","id":"big","version":1,"chunks":["#);
    for i in 0..8 {
        if i > 0 {
            lines.push(',');
        }
        lines.push_str(&format!(
            r#"{{"text":"pawl pawl part{i}","vector":[1,{},0]}}"#,
            0.01 * i as f32
        ));
    }
    lines.push_str("]}\n");
    for (d, id) in ["x", "y", "z", "w"].iter().enumerate() {
        lines.push_str(&format!(
            r#"{{"op":"upsert","source":"s","id":"{id}","version":1,"chunks":[{{"text":"pawl of {id} in a longer text","vector":[0.5,{},0.5]}},{{"text":"gear of {id}","vector":[0.4,0,{}]}}]}}"#,
            0.1 * d as f32,
            0.6 + 0.1 * d as f32
        ));
        lines.push('\n');
    }
    let ingest = ratchet(
        &["ingest", "--db", db_arg, "--jsonl", "-"],
        Some(lines.into_bytes()),
    );
    assert_eq!(ingest.code, Some(0), "{}", ingest.stderr);
    let store = Store::open_read_only(&db).expect("open the store");
    let exact = SearchOptions::default().exact(true);
    let q = [1.0f32, 0.0, 0.0];
    let all = 100;
    let search = |extra: &[&str]| {
        let mut args = vec!["search", "--db", db_arg, "--json", "-k", "3"];
        args.extend_from_slice(extra);
        ratchet(&args, None)
    };
    for (mode, args, ranking) in [
        (
            "vector",
            &["--vector", "[1,0,0]"][..],
            store.search(&q, all, &exact).expect("search"),
        ),
        (
            "text",
            &["pawl", "--mode", "text"][..],
            store.search_text("pawl", all, &exact).expect("search_text"),
        ),
        (
            "hybrid",
            &["pawl", "--vector", "[1,0,0]"][..],
            store
                .search_hybrid("pawl", &q, all, &exact)
                .expect("search_hybrid"),
        ),
    ] {
        let plain = search(args);
        assert_eq!(plain.code, Some(0), "{mode}: {}", plain.stderr);
        let hits = cli_hits(&plain);
        assert!(
            hits.len() == 3 && hits.iter().all(|h| h.0 == "big"),
            "{mode}: the scenario needs one document to fill the top 3: {hits:?}"
        );
        let per = search(&[args, &["--per-document"]].concat());
        assert_eq!(per.code, Some(0), "{mode}: {}", per.stderr);
        assert_eq!(
            cli_hits(&per),
            first_of_each_document(ranking, 3),
            "{mode} --per-document"
        );
    }
}
