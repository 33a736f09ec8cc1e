//! Two operations for the same document inside one batch are decided in submission order
//! against the state the earlier one left — exactly as if committed one by one — and an
//! operation refused for its input is answered with its error without disturbing the batch.

use ratchetdb::{
    Chunk, Document, Op, OpOutcome, Options, Outcome, SkipReason, Store, Version, WriteError,
    WriterOptions,
};
use std::time::Duration;

fn doc(id: &str, version: u64, text: &str) -> Document {
    Document::new("s", id, Version::number(version)).with_chunk(Chunk::new(text, vec![1.0, 0.5]))
}

fn outcome(result: Result<OpOutcome, WriteError>) -> Outcome {
    match result.expect("outcome") {
        OpOutcome::Document(outcome) => outcome,
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn same_document_twice_in_one_batch_is_decided_in_order() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path().join("db.redb"), Options::default()).expect("open");
    // A long batch window so that all five operations land in one transaction.
    let writer = store
        .writer_with(WriterOptions::for_store(&store).max_batch_wait(Duration::from_millis(300)));
    let pending = vec![
        writer
            .submit(Op::Upsert(doc("a", 2, "two")))
            .expect("submit"),
        writer
            .submit(Op::Upsert(doc("a", 1, "one")))
            .expect("submit"),
        writer
            .submit(Op::Upsert(doc("a", 2, "two")))
            .expect("submit"),
        writer
            .submit(Op::Delete {
                source: "s".into(),
                id: "a".into(),
                version: Version::number(3),
            })
            .expect("submit"),
        writer
            .submit(Op::Upsert(doc("a", 3, "three")))
            .expect("submit"),
    ];
    let outcomes: Vec<Outcome> = pending.into_iter().map(|p| outcome(p.wait())).collect();
    assert!(matches!(outcomes[0], Outcome::Written { .. }));
    assert_eq!(outcomes[1].skip_reason(), Some(SkipReason::Older));
    assert_eq!(outcomes[2].skip_reason(), Some(SkipReason::Duplicate));
    assert_eq!(outcomes[3], Outcome::Deleted { chunks_removed: 1 });
    assert_eq!(outcomes[4].skip_reason(), Some(SkipReason::Tombstoned));
    let stats = writer.stats();
    assert_eq!(
        (stats.batches, stats.ops),
        (1, 5),
        "all five in one transaction"
    );
    writer.shutdown();
    let stored = store.get("s", "a").expect("get").expect("row");
    assert!(stored.deleted);
    assert_eq!(stored.version, Version::number(3));
    assert!(store.verify().expect("verify").is_ok());
}

#[test]
fn a_bad_operation_does_not_disturb_its_batch() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store =
        Store::open(dir.path().join("db.redb"), Options::default().dimension(2)).expect("open");
    let writer = store
        .writer_with(WriterOptions::for_store(&store).max_batch_wait(Duration::from_millis(300)));
    let good = writer
        .submit(Op::Upsert(doc("good", 1, "fine")))
        .expect("submit");
    // Invalid input is refused in the producer's thread, before it reaches the queue.
    let bad_input = writer.submit(Op::Upsert(
        Document::new("s", "", Version::number(1)).with_chunk(Chunk::new("x", vec![1.0, 0.0])),
    ));
    assert!(matches!(bad_input, Err(WriteError::Input(ref e)) if e.field == "id"));
    // A version-kind mismatch can only be found inside the transaction; it fails alone.
    let also_good = writer
        .submit(Op::Upsert(doc("other", 1, "fine too")))
        .expect("submit");
    let mismatch = writer
        .submit(Op::Upsert(
            Document::new("s", "good", Version::ticket(5))
                .with_chunk(Chunk::new("t", vec![0.0, 1.0])),
        ))
        .expect("submit");
    let third = writer
        .submit(Op::Upsert(doc("third", 1, "fine three")))
        .expect("submit");
    assert!(matches!(outcome(good.wait()), Outcome::Written { .. }));
    assert!(matches!(outcome(also_good.wait()), Outcome::Written { .. }));
    assert!(matches!(
        mismatch.wait(),
        Err(WriteError::VersionKindMismatch { .. })
    ));
    assert!(matches!(outcome(third.wait()), Outcome::Written { .. }));
    writer.shutdown();
    assert_eq!(store.stats().expect("stats").documents, 3);
    assert_eq!(
        store.get("s", "good").expect("get").expect("row").version,
        Version::number(1)
    );
    assert!(store.verify().expect("verify").is_ok());
}
