//! A writer killed mid-transaction leaves nothing partial (I7 on the Postgres backend): a
//! child process (this test binary, run again) writes one large batch (200 documents of 8
//! chunks, one SQL transaction); once the server shows its transaction has written rows,
//! the child is killed with SIGKILL. The server rolls the transaction back: not one of the
//! batch's documents, chunks or counters is visible, the store verifies clean, and the
//! next writer writes the same batch whole.

use crate::pg;
use ratchetdb::testkit;
use ratchetdb::{Chunk, Document, Op, Options, Store, Version};
use std::process::Command;
use std::time::{Duration, Instant};

const CHILD_ENV: &str = "RATCHETDB_PG_KILLED_CHILD";
const DOCS: u64 = 200;

fn batch() -> Vec<Op> {
    (0..DOCS)
        .map(|doc| {
            let mut d = Document::new("big", format!("doc{doc}"), Version::number(1));
            for position in 0..8 {
                d = d.with_chunk(Chunk::new(
                    format!("doc{doc} chunk{position}"),
                    (0..64)
                        .map(|i| 1.0 + ((doc * 8 + position) * 64 + i) as f32)
                        .collect(),
                ));
            }
            Op::Upsert(d)
        })
        .collect()
}

#[test]
#[ignore = "a child process of killed_writer_leaves_nothing_partial"]
fn killed_writer_child() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return;
    };
    let (schema, url) = spec.split_once(' ').expect("schema and url");
    let store = Store::open(pg::address(url, schema), Options::default()).expect("open");
    // Loops until killed: every batch is the same, so the first one's transaction is the
    // one in flight (the next ones would only be refused as duplicates).
    loop {
        let _ = store.write_batch(batch());
    }
}

#[test]
fn killed_writer_leaves_nothing_partial() {
    let Some((store, url)) = pg::fresh("killed_writer", Options::default()) else {
        return;
    };
    // One committed document first, so the store is not empty and its dimension is fixed.
    store
        .upsert(
            Document::new("small", "kept", Version::number(1))
                .with_chunk(Chunk::new("kept", vec![1.0; 64])),
        )
        .expect("first write");
    let before = store.documents(true).expect("export");
    let before_counters = store.stats().expect("stats").counters;
    let app = format!("killed_{}", std::process::id());
    let child_url = if url.contains('?') {
        format!("{url}&application_name={app}")
    } else {
        format!("{url}?application_name={app}")
    };
    let mut child = Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "--exact",
            "killed_writer_leaves_nothing_partial::killed_writer_child",
            "--ignored",
            "--quiet",
        ])
        .env(
            CHILD_ENV,
            format!("{} {child_url}", pg::schema("killed_writer")),
        )
        .spawn()
        .expect("spawn the writer");
    // Wait until the child's transaction has written something (it holds a transaction id).
    let started = Instant::now();
    let in_flight = format!(
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = '{app}' \
         AND backend_xid IS NOT NULL"
    );
    loop {
        if testkit::pg_query_i64(&url, &in_flight).expect("pg_stat_activity") > 0 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the writer never started its transaction"
        );
        assert!(
            child.try_wait().expect("try_wait").is_none(),
            "the writer exited"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    child.kill().expect("SIGKILL the writer");
    child.wait().expect("reap the writer");
    // The server notices the dead client and rolls its transaction back.
    let gone = format!("SELECT count(*) FROM pg_stat_activity WHERE application_name = '{app}'");
    let started = Instant::now();
    while testkit::pg_query_i64(&url, &gone).expect("pg_stat_activity") > 0 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the backend lingers"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(
        store.documents(true).expect("export"),
        before,
        "nothing of the batch is visible"
    );
    assert_eq!(store.stats().expect("stats").counters, before_counters);
    pg::assert_verified(&store);
    // The next writer writes the same batch whole.
    for result in store.write_batch(batch()).expect("batch") {
        result.expect("written");
    }
    assert_eq!(store.stats().expect("stats").documents, DOCS + 1);
    pg::assert_verified(&store);
    drop(store);
    pg::drop_schema(&url, &pg::schema("killed_writer"));
}
