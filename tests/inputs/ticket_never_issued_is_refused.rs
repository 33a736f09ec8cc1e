//! Regression (issue 18, defect 6): a `ticket` version the store never issued was accepted;
//! such a ticket outranks every real ticket of its document forever. A ticket above the
//! highest the store has issued (across restarts: the persisted high water) is refused as
//! invalid input naming `version`, through every write path, and nothing is written.

use crate::common;

use common::cli;
use ratchetdb::{Chunk, Document, Op, Options, Store, Version, WriteError};
use std::time::Duration;

fn doc(id: &str, version: Version) -> Document {
    Document::new("jobs", id, version)
        .with_chunk(Chunk::new(format!("text of {id}"), vec![1.0, 0.0]))
}

fn refused(result: Result<impl std::fmt::Debug, WriteError>) -> bool {
    matches!(result, Err(WriteError::Input(ref e)) if e.field == "version" && e.problem.contains("never issued"))
}

#[test]
fn tickets_above_the_issued_counter_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store.redb");
    let issued = {
        let store = Store::open(&db, Options::default()).unwrap();
        // Nothing issued yet.
        assert!(refused(store.upsert(doc("a", Version::ticket(5)))));
        let ticket = store.ticket().unwrap();
        assert!(store.upsert(doc("a", ticket)).is_ok());
        let next = Version::ticket(ticket.value + 1);
        assert!(refused(store.upsert(doc("b", next))));
        assert!(refused(store.delete("jobs", "a", next)));
        assert!(refused(store.retain("jobs", ["a"], next)));
        let results = store
            .write_batch(vec![
                Op::Upsert(doc("c", next)),
                Op::Upsert(doc("d", ticket)),
            ])
            .unwrap();
        assert!(refused(results.into_iter().next().unwrap()));
        let writer = store.writer();
        let pending = writer.submit(Op::Upsert(doc("e", next))).unwrap();
        assert!(refused(pending.wait()));
        // Taken while nothing else runs: the next ticket is accepted.
        let later = store.ticket().unwrap();
        assert_eq!(later, next);
        assert!(writer
            .submit(Op::Upsert(doc("e", later)))
            .unwrap()
            .wait()
            .is_ok());
        writer.shutdown();
        let snapshot = store.snapshot().unwrap();
        for id in ["b", "c"] {
            assert!(
                snapshot.get("jobs", id).unwrap().is_none(),
                "{id} was written"
            );
        }
        later
    };
    // After a restart, every ticket up to the persisted high water may have been issued (by
    // the process before); past what the new process issues, none was.
    let store = Store::open(&db, Options::default()).unwrap();
    assert!(store
        .upsert(doc("f", Version::ticket(issued.value + 1)))
        .is_ok());
    let fresh = store.ticket().unwrap();
    assert!(fresh.value > issued.value);
    assert!(refused(
        store.upsert(doc("g", Version::ticket(fresh.value + 1)))
    ));
    drop(store);

    // The command line rejects the line, naming the field.
    let fresh_db = dir.path().join("fresh.redb");
    let line = br#"{"op":"delete","source":"s","id":"d","version":5,"version_kind":"ticket"}"#;
    let run = cli::run(
        &[
            "ingest",
            "--db",
            fresh_db.to_str().unwrap(),
            "--jsonl",
            "-",
            "--report",
        ],
        |_| {},
        Some(line.to_vec()),
        Duration::from_secs(60),
    );
    assert_eq!(run.code, Some(3), "{}", run.stderr);
    assert!(
        run.stdout.contains(r#""field":"version""#),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("never issued"), "{}", run.stdout);
}
