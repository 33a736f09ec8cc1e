//! Writer processes on separate connections racing revisions of the same documents converge
//! to the model (I1, I2 across processes): three child processes (this test binary, run
//! again) each deliver every revision and delete of 10 documents, in their own shuffled
//! order and in batches of 1–4 operations over different documents (so batches lock
//! overlapping documents in different orders). Serialised per document by the server's
//! locks, the result is each document's highest-versioned operation (a delete at versions
//! divisible by 7), every delivery is counted exactly once as written, unchanged, deleted
//! or skipped, and `verify()` is clean.

use crate::pg;
use ratchetdb::testkit::SplitMix64;
use ratchetdb::{Chunk, Document, Op, Options, Store, Version};
use std::process::Command;

const DOCS: u64 = 10;
const VERSIONS: u64 = 20;
const WRITERS: u64 = 3;
const CHILD_ENV: &str = "RATCHETDB_PG_RACING_CHILD";

fn op(doc: u64, version: u64) -> Op {
    let (source, id) = ("race".to_string(), format!("doc{doc}"));
    if version.is_multiple_of(7) {
        return Op::Delete {
            source,
            id,
            version: Version::number(version),
        };
    }
    let mut d = Document::new(source, id, Version::number(version));
    for position in 0..(version % 4) {
        d = d.with_chunk(Chunk::new(
            format!("doc{doc} v{version} p{position}"),
            vec![1.0, doc as f32, version as f32, position as f32],
        ));
    }
    Op::Upsert(d)
}

/// The child's role: deliver everything in a seed's order.
#[test]
#[ignore = "a child process of racing_writers_on_separate_connections_converge"]
fn racing_writer_child() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return;
    };
    let mut parts = spec.splitn(3, ' ');
    let (seed, schema, url) = (
        parts
            .next()
            .and_then(|s| s.parse::<u64>().ok())
            .expect("seed"),
        parts.next().expect("schema"),
        parts.next().expect("url"),
    );
    let store = Store::open(pg::address(url, schema), Options::default()).expect("open");
    let mut rng = SplitMix64::new(seed);
    let mut ops: Vec<Op> = (0..DOCS)
        .flat_map(|doc| (1..=VERSIONS).map(move |v| op(doc, v)))
        .collect();
    for i in (1..ops.len()).rev() {
        ops.swap(i, rng.below(i as u64 + 1) as usize);
    }
    while !ops.is_empty() {
        let n = (1 + rng.below(4) as usize).min(ops.len());
        let batch: Vec<Op> = ops.drain(..n).collect();
        for result in store.write_batch(batch).expect("batch") {
            result.expect("operation");
        }
    }
}

#[test]
fn racing_writers_on_separate_connections_converge() {
    let Some((store, url)) = pg::fresh("racing_writers", Options::default()) else {
        return;
    };
    let exe = std::env::current_exe().expect("test binary");
    let children: Vec<_> = (0..WRITERS)
        .map(|seed| {
            Command::new(&exe)
                .args([
                    "--exact",
                    "racing_writers_on_separate_connections_converge::racing_writer_child",
                    "--ignored",
                    "--quiet",
                ])
                .env(
                    CHILD_ENV,
                    format!("{seed} {} {url}", pg::schema("racing_writers")),
                )
                .spawn()
                .expect("spawn a writer process")
        })
        .collect();
    for mut child in children {
        assert!(
            child.wait().expect("wait").success(),
            "a writer process failed"
        );
    }
    for doc in 0..DOCS {
        let stored = store
            .get("race", &format!("doc{doc}"))
            .expect("get")
            .expect("every document has a row");
        let expected = op(doc, VERSIONS);
        assert_eq!(stored.version, Version::number(VERSIONS), "doc{doc}");
        match expected {
            Op::Upsert(d) => {
                assert!(!stored.deleted);
                let texts: Vec<&str> = stored.chunks.iter().map(|c| c.text.as_str()).collect();
                let want: Vec<&str> = d.chunks.iter().map(|c| c.text.as_str()).collect();
                assert_eq!(texts, want, "doc{doc}");
            }
            _ => assert!(stored.deleted, "doc{doc}"),
        }
    }
    let c = store.stats().expect("stats").counters;
    let deliveries = WRITERS * DOCS * VERSIONS;
    assert_eq!(
        c.written_new + c.written_newer + c.unchanged + c.deleted + c.skipped(),
        deliveries,
        "{c:?}"
    );
    // Each (document, version) was applied at most once; the rest were refused.
    assert!(
        c.written_new + c.written_newer + c.deleted <= DOCS * VERSIONS,
        "{c:?}"
    );
    assert!(
        c.skipped_duplicate > 0,
        "redeliveries are refused as duplicates"
    );
    pg::assert_verified(&store);
    drop(store);
    pg::drop_schema(&url, &pg::schema("racing_writers"));
}
