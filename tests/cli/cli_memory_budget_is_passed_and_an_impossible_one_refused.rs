//! `--memory-budget MiB` reaches `Options::memory_budget` on the commands that open a store:
//! a budget that holds the store opens it, one too small is refused naming `memory_budget`
//! and the smallest budget that works, and a value that is not a whole number of MiB is a
//! usage error. A budgeted `search` takes `--rerank` (the candidates scored exactly from the
//! file) and still finds a stored vector itself, scored exactly.

use super::common::cli;
use ratchetdb::{Chunk, Document, Options, Store, Version};
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(120);
const DIM: usize = 384;

#[test]
fn stats_takes_a_budget_and_refuses_one_too_small() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store.redb");
    {
        let store = Store::open(&db, Options::default().dimension(DIM)).unwrap();
        let ops = (0..2000u32)
            .map(|i| {
                let mut v: Vec<f32> = (0..DIM)
                    .map(|j| ((i as usize * 31 + j * 17) % 97) as f32 - 48.0)
                    .collect();
                let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
                v.iter_mut().for_each(|x| *x /= norm);
                ratchetdb::Op::Upsert(
                    Document::new("s", format!("d{i}"), Version::number(1))
                        .with_chunk(Chunk::new(format!("text {i}"), v)),
                )
            })
            .collect();
        store.write_batch(ops).unwrap();
    }
    let db = db.to_str().unwrap();
    let first: Vec<f32> = {
        let mut v: Vec<f32> = (0..DIM).map(|j| ((j * 17) % 97) as f32 - 48.0).collect();
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter_mut().for_each(|x| *x /= norm);
        v
    };
    let refused = cli::run(
        &["stats", "--db", db, "--memory-budget", "1"],
        |_| {},
        None,
        TIMEOUT,
    );
    assert_ne!(refused.code, Some(0));
    assert!(
        refused.stderr.contains("memory_budget")
            && refused.stderr.contains("smallest budget that works"),
        "{}",
        refused.stderr
    );
    // Regression (review): `verify --deep` and `reembed` opened the store with options of
    // their own and ignored the budget.
    for command in [
        vec!["verify", "--deep", "--db", db, "--memory-budget", "1"],
        vec![
            "reembed",
            "--db",
            db,
            "--hashing",
            "16",
            "--memory-budget",
            "1",
        ],
    ] {
        let refused = cli::run(&command, |_| {}, None, TIMEOUT);
        assert_ne!(refused.code, Some(0), "{command:?}");
        assert!(
            refused.stderr.contains("memory_budget"),
            "{command:?}: {}",
            refused.stderr
        );
    }
    let stats = cli::run(
        &["stats", "--db", db, "--memory-budget", "64"],
        |_| {},
        None,
        TIMEOUT,
    );
    assert_eq!(stats.code, Some(0), "{}", stats.stderr);
    let query = format!("{first:?}");
    let searched = cli::run(
        &[
            "search",
            "--db",
            db,
            "--memory-budget",
            "64",
            "--vector",
            &query,
            "-k",
            "3",
            "--ef",
            "64",
            "--rerank",
            "5",
            "--json",
        ],
        |_| {},
        None,
        TIMEOUT,
    );
    assert_eq!(searched.code, Some(0), "{}", searched.stderr);
    let best: serde_json::Value =
        serde_json::from_str(searched.stdout.lines().next().unwrap_or_default()).unwrap();
    // d0's vector repeats every 97 documents (d97, d194, ...): any of them is the query's.
    let best_id = best["id"].as_str().unwrap_or_default();
    let index: u32 = best_id.trim_start_matches('d').parse().unwrap_or(1);
    assert_eq!(index % 97, 0, "{}", searched.stdout);
    let score = best["score"].as_f64().unwrap();
    assert!((score - 1.0).abs() < 1e-5, "{score}");
    let not_a_number = cli::run(
        &["stats", "--db", db, "--memory-budget", "lots"],
        |_| {},
        None,
        TIMEOUT,
    );
    assert_ne!(not_a_number.code, Some(0));
    assert!(
        not_a_number.stderr.contains("MiB"),
        "{}",
        not_a_number.stderr
    );
}
