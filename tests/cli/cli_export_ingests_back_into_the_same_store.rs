//! Issue 45, item 1: an export could not be ingested again (`ratchet export | ratchet ingest
//! --jsonl -` rejected every line: `deleted: unknown field`), although the schema-too-old
//! error tells users to do exactly that. Now every export line is an `ingest --jsonl` line:
//! on every fixture store (schema 1 to 5, converted first) and after a random schedule of
//! upserts, deletes, listings and versions of every kind (number, timestamp, ticket), with
//! metadata and vectors, export → ingest into a new store → export gives the same bytes.
//! No flag is needed: an export's first line (`store`) gives a new store the exported one's
//! metric and model, and counts its tickets as issued; a store of another metric refuses it
//! (and the run ends, nothing written).
//! Both ingest paths (single-threaded and `--workers`) are checked.

use super::common::cli;
use ratchetdb::testkit::SplitMix64;
use ratchetdb::{Chunk, Document, Metric, Op, Options, Store, Version};
use std::path::Path;
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(120);

fn export(db: &Path) -> String {
    let args = ["export", "--db", db.to_str().unwrap(), "--vectors"];
    let run = cli::run(&args, |_| {}, None, TIMEOUT);
    assert_eq!(run.code, Some(0), "export: {}", run.stderr);
    run.stdout
}

/// Ingests `exported` into a new store in `dir` (no flag but the input) and checks its export
/// is `exported` and its metric `metric`.
fn ingest_back(dir: &Path, name: &str, exported: &str, metric: Metric, workers: bool) {
    let db = dir.join(format!("{name}.redb"));
    let mut args = vec!["ingest", "--db", db.to_str().unwrap(), "--jsonl", "-"];
    if workers {
        args.extend_from_slice(&["--workers", "2"]);
    }
    let run = cli::run(&args, |_| {}, Some(exported.as_bytes().to_vec()), TIMEOUT);
    assert_eq!(run.code, Some(0), "{name}: ingest: {}", run.stderr);
    assert!(run.stderr.contains(" 0 rejected"), "{name}: {}", run.stderr);
    let again = export(&db);
    if again != exported {
        let first = exported
            .lines()
            .zip(again.lines())
            .find(|(a, b)| a != b)
            .map(|(a, b)| format!("\n  was {a}\n  now {b}"))
            .unwrap_or_default();
        panic!(
            "{name}: the export of the re-ingested store differs ({} lines, was {}){first}",
            again.lines().count(),
            exported.lines().count()
        );
    }
    let verify = cli::run(
        &["verify", "--db", db.to_str().unwrap()],
        |_| {},
        None,
        TIMEOUT,
    );
    assert_eq!(verify.code, Some(0), "{name}: {}", verify.stdout);
    assert_eq!(
        Store::open_read_only(&db).unwrap().metric(),
        metric,
        "{name}"
    );
}

#[test]
fn every_fixture_store_exports_into_an_ingest_that_reproduces_it() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    for schema in 1..=5 {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("store.redb");
        std::fs::copy(fixtures.join(format!("schema{schema}-store.redb")), &db).unwrap();
        // Converted on a writer's open (a read-only open refuses an older schema).
        let metric = Store::open(&db, Options::default().must_exist())
            .unwrap()
            .metric();
        let exported = export(&db);
        assert!(exported.lines().count() > 1, "schema {schema}: {exported}");
        for line in exported.lines() {
            let value: serde_json::Value = serde_json::from_str(line).unwrap();
            assert!(value["op"].is_string(), "schema {schema}: {line}");
        }
        ingest_back(dir.path(), "again", &exported, metric, false);
        ingest_back(dir.path(), "again-workers", &exported, metric, true);
    }
}

/// A random schedule over three sources, one per version kind.
fn torture(store: &Store, seed: u64) {
    let mut rng = SplitMix64::new(seed);
    let kinds = ["numbers", "stamps", "tickets"];
    let mut next = [1u64, 1_700_000_000_000_000, 0];
    for step in 0..300u64 {
        let which = rng.below(3) as usize;
        let source = kinds[which];
        let id = format!("d{}", rng.below(8));
        let version = match which {
            0 => Version::number(next[0] + rng.below(3)),
            1 => Version::timestamp_micros(next[1] + rng.below(1000)),
            _ => store.ticket().unwrap(),
        };
        if which != 2 && rng.one_in(3) {
            next[which] += 1 + rng.below(2);
        }
        let op = match rng.below(10) {
            0 | 1 => Op::Delete {
                source: source.to_string(),
                id,
                version,
            },
            2 => Op::Retain {
                source: source.to_string(),
                present: (0..8)
                    .filter(|_| !rng.one_in(4))
                    .map(|i| format!("d{i}"))
                    .collect(),
                version,
            },
            _ => {
                let mut document = Document::new(source, id, version).with_meta(
                    serde_json::json!({"step": step, "tags": ["a", step % 3], "x": {"y": null}}),
                );
                for c in 0..rng.below(5) {
                    let v = [
                        1.0 + rng.below(100) as f32 / 7.0,
                        (step % 11) as f32 - 5.0,
                        c as f32 + 0.25,
                    ];
                    document = document.with_chunk(
                        Chunk::new(format!("{source} step {step} chunk {c} é"), v.to_vec())
                            .with_meta(serde_json::json!({"c": c})),
                    );
                }
                Op::Upsert(document)
            }
        };
        // Refusals (older, conflicting, tombstoned) are part of the schedule.
        let _ = store.write_batch(vec![op]);
    }
}

#[test]
fn a_random_schedule_of_every_version_kind_exports_into_an_ingest_that_reproduces_it() {
    for (seed, metric) in [(45, Metric::Cosine), (46, Metric::L2), (47, Metric::Dot)] {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("store.redb");
        {
            let store = Store::open(&db, Options::default().dimension(3).metric(metric)).unwrap();
            torture(&store, seed);
            assert!(!store.listings().unwrap().is_empty());
        }
        let exported = export(&db);
        for needed in [
            "\"op\":\"store\"",
            "\"op\":\"delete\"",
            "\"op\":\"retain\"",
            "\"version_kind\":\"ticket\"",
            "\"version_kind\":\"timestamp_micros\"",
            "\"version_kind\":\"number\"",
        ] {
            assert!(exported.contains(needed), "seed {seed}: no {needed}");
        }
        ingest_back(
            dir.path(),
            &format!("again-{seed}"),
            &exported,
            metric,
            false,
        );
        ingest_back(
            dir.path(),
            &format!("workers-{seed}"),
            &exported,
            metric,
            true,
        );
        // A store of another metric refuses the export's store line, naming the field.
        if metric != Metric::Cosine {
            let other = dir.path().join("cosine.redb");
            let args = [
                "ingest",
                "--db",
                other.to_str().unwrap(),
                "--jsonl",
                "-",
                "--metric",
                "cosine",
            ];
            let run = cli::run(&args, |_| {}, Some(exported.as_bytes().to_vec()), TIMEOUT);
            // (Issue 46 item 2: the run ends, exit 1, and no store is made.)
            assert_eq!(run.code, Some(1), "{}", run.stderr);
            assert!(run.stderr.contains("line 1: metric: "), "{}", run.stderr);
            assert!(!other.exists(), "{}", run.stderr);
        }
    }
}

#[test]
fn an_export_line_changed_after_the_export_is_refused_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store.redb");
    {
        let store = Store::open(&db, Options::default().dimension(3)).unwrap();
        let doc = Document::new("s", "a", Version::number(1))
            .with_chunk(Chunk::new("hello", vec![1.0, 2.0, 3.0]));
        store.upsert(doc).unwrap();
    }
    let exported = export(&db);
    let cases = [
        (exported.replace("hello", "hellO"), "content_hash"),
        (
            exported.replace("\"deleted\":false", "\"deleted\":true"),
            "deleted",
        ),
        (
            exported.replace("\"position\":0", "\"position\":1"),
            "chunks[0].position",
        ),
    ];
    for (changed, field) in cases {
        let target = dir.path().join("target.redb");
        let args = ["ingest", "--db", target.to_str().unwrap(), "--jsonl", "-"];
        let run = cli::run(&args, |_| {}, Some(changed.into_bytes()), TIMEOUT);
        assert_eq!(run.code, Some(3), "{field}: {}", run.stderr);
        assert!(run.stderr.contains(&format!("{field}: ")), "{}", run.stderr);
        let store = Store::open_read_only(&target).unwrap();
        assert!(store.documents(false).unwrap().is_empty(), "{field}");
    }
}
