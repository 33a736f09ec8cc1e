//! Issue 46 (review of today's merges), item 2: an export's `store` line whose metric
//! disagreed with `--metric` or with the store was only a rejected line, and ingest went on
//! writing every later line into a store the export was not made for. It now ends the run
//! (exit 1, naming `metric`) and nothing of that export is written: with `--metric` no store
//! is created; after a cosine export, an l2 export that follows in the same input (its
//! `store` line is read once the store is open) adds nothing (both ingest paths).

use super::common::cli;
use ratchetdb::{Chunk, Document, Metric, Options, Store, Version};
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(120);

fn export_of(dir: &std::path::Path, metric: Metric) -> String {
    let source = dir.join(format!("source-{metric}.redb"));
    {
        let store = Store::open(&source, Options::default().dimension(3).metric(metric)).unwrap();
        for i in 0..3 {
            store
                .upsert(
                    Document::new("s", format!("{metric}-{i}"), Version::number(1))
                        .with_chunk(Chunk::new(format!("text {i}"), vec![1.0, i as f32, 2.0])),
                )
                .unwrap();
        }
    }
    let args = ["export", "--db", source.to_str().unwrap(), "--vectors"];
    let run = cli::run(&args, |_| {}, None, TIMEOUT);
    assert_eq!(run.code, Some(0), "export: {}", run.stderr);
    run.stdout
}

fn l2_export(dir: &std::path::Path) -> String {
    export_of(dir, Metric::L2)
}

#[test]
fn an_l2_export_with_metric_cosine_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let exported = l2_export(dir.path());
    let db = dir.path().join("cosine.redb");
    let args = [
        "ingest",
        "--db",
        db.to_str().unwrap(),
        "--jsonl",
        "-",
        "--metric",
        "cosine",
    ];
    let run = cli::run(&args, |_| {}, Some(exported.into_bytes()), TIMEOUT);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(run.stderr.contains("metric"), "{}", run.stderr);
    assert!(!db.exists(), "a store was created: {}", run.stderr);
}

#[test]
fn an_l2_export_after_a_cosine_export_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let cosine = export_of(dir.path(), Metric::Cosine);
    let input = format!("{cosine}{}", l2_export(dir.path()));
    for workers in [false, true] {
        let db = dir.path().join(format!("cosine-{workers}.redb"));
        let mut args = vec!["ingest", "--db", db.to_str().unwrap(), "--jsonl", "-"];
        if workers {
            args.extend_from_slice(&["--workers", "2"]);
        }
        let run = cli::run(&args, |_| {}, Some(input.clone().into_bytes()), TIMEOUT);
        assert_eq!(run.code, Some(1), "workers {workers}: {}", run.stderr);
        assert!(run.stderr.contains("metric"), "{}", run.stderr);
        let store = Store::open_read_only(&db).unwrap();
        let ids: Vec<String> = store
            .documents(true)
            .unwrap()
            .into_iter()
            .map(|d| d.id)
            .collect();
        assert_eq!(
            ids,
            ["cosine-0", "cosine-1", "cosine-2"],
            "workers {workers}: {}",
            run.stderr
        );
    }
}
