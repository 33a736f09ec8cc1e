//! The writer's queue is bounded: `try_submit` says `Full` instead of growing memory, and a
//! shutdown commits everything that was accepted before it, then refuses new work.

use ratchetdb::{Chunk, Document, Op, Options, Store, Version, WriteError, WriterOptions};

fn doc(i: u64) -> Document {
    Document::new("s", format!("d{i}"), Version::number(1))
        .with_chunk(Chunk::new(format!("text {i}"), vec![1.0, i as f32]))
}

#[test]
fn a_full_queue_says_full_and_shutdown_drains_what_was_accepted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path().join("db.redb"), Options::default()).expect("open");
    let writer = store.writer_with(
        WriterOptions::for_store(&store)
            .queue_capacity(4)
            .max_batch_ops(2),
    );
    let mut accepted = Vec::new();
    let mut full = 0;
    for i in 0..2000 {
        match writer.try_submit(Op::Upsert(doc(i))) {
            Ok(pending) => accepted.push((i, pending)),
            Err(WriteError::Full) => full += 1,
            Err(other) => panic!("unexpected {other}"),
        }
    }
    assert!(
        full > 0,
        "a 4-slot queue never filled in 2000 fast submissions"
    );
    writer.shutdown();
    for (_, pending) in accepted.iter() {
        let _ = pending;
    }
    let accepted_ids: Vec<u64> = accepted.iter().map(|(i, _)| *i).collect();
    for (_, pending) in accepted {
        assert!(
            pending.wait().is_ok(),
            "an accepted operation was not committed"
        );
    }
    let stats = store.stats().expect("stats");
    assert_eq!(stats.documents, accepted_ids.len() as u64);
    for i in accepted_ids {
        assert!(store.get("s", &format!("d{i}")).expect("get").is_some());
    }
    assert!(matches!(
        writer.submit(Op::Upsert(doc(99_999))),
        Err(WriteError::Closed)
    ));
    assert!(store.verify().expect("verify").is_ok());
}

#[test]
fn dropping_the_last_handle_commits_what_was_accepted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("db.redb");
    let store = Store::open(&path, Options::default()).expect("open");
    let writer = store.writer();
    let pendings: Vec<_> = (0..50)
        .map(|i| writer.submit(Op::Upsert(doc(i))).expect("submit"))
        .collect();
    drop(writer);
    for pending in pendings {
        assert!(pending.wait().is_ok());
    }
    assert_eq!(store.stats().expect("stats").documents, 50);
}
