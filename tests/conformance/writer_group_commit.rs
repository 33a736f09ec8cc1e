//! The concurrent `Writer`: many threads submit, one committer groups what is queued into
//! ONE transaction per batch (fewer batches than operations under contention, none larger
//! than `max_batch_ops`), every producer gets its own operation's outcome (written, or a
//! stale revision refused as older), an invalid operation is refused in the producer's
//! thread, the writer is `Closed` after shutdown, and the store ends in the model's state.

use crate::common::assert_verified;
use crate::fixture::Fixture;
use ratchetdb::WriterOptions;
use ratchetdb::{Chunk, Document, Op, Options, Outcome, SkipReason, Version, WriteError};

crate::conformance!(writer_group_commit);

const THREADS: u64 = 8;
const DOCS: u64 = 40;

fn revision(id: u64, version: u64) -> Document {
    Document::new("s", format!("doc{id}"), Version::number(version)).with_chunk(Chunk::new(
        format!("doc{id} v{version}"),
        vec![1.0, id as f32, version as f32],
    ))
}

fn writer_group_commit(b: &dyn Fixture) {
    let store = b.open_with("db", Options::default());
    let writer = store.writer_with(WriterOptions::for_store(&store).max_batch_ops(16));
    // Each thread writes versions 1..=3 of its own documents, newest first, so versions
    // 2 and 1 are refused as older: every producer's answer is its own.
    std::thread::scope(|scope| {
        for t in 0..THREADS {
            let writer = writer.clone();
            scope.spawn(move || {
                let pending: Vec<_> = (0..DOCS)
                    .filter(|d| d % THREADS == t)
                    .flat_map(|d| [(d, 3), (d, 2), (d, 1)])
                    .map(|(d, v)| {
                        (
                            v,
                            writer.submit(Op::Upsert(revision(d, v))).expect("submit"),
                        )
                    })
                    .collect();
                for (version, pending) in pending {
                    match pending.wait().expect("answer") {
                        ratchetdb::OpOutcome::Document(Outcome::Written { .. }) => {
                            assert_eq!(version, 3)
                        }
                        ratchetdb::OpOutcome::Document(outcome) => {
                            assert_eq!(outcome.skip_reason(), Some(SkipReason::Older));
                            assert!(version < 3);
                        }
                        other => panic!("{other:?}"),
                    }
                }
            });
        }
    });
    let bad = writer
        .submit(Op::Upsert(Document::new("s", "", Version::number(1))))
        .unwrap_err();
    assert!(
        matches!(bad, WriteError::Input(ref e) if e.field == "id"),
        "{bad:?}"
    );
    assert!(matches!(
        writer
            .delete("s", "doc0", Version::number(9))
            .expect("delete"),
        Outcome::Deleted { .. }
    ));
    let stats = writer.stats();
    writer.shutdown();
    assert!(matches!(
        writer.upsert(revision(0, 10)),
        Err(WriteError::Closed)
    ));
    assert_eq!(stats.ops, DOCS * 3 + 1);
    assert!(stats.max_batch_ops <= 16, "{stats:?}");
    assert!(
        stats.batches < stats.ops,
        "no operations were grouped: {stats:?}"
    );
    let server = store.stats().expect("stats");
    assert_eq!(server.documents, DOCS - 1);
    assert_eq!(server.tombstones, 1);
    assert_eq!(server.counters.skipped(), DOCS * 2);
    for d in 1..DOCS {
        let stored = store
            .get("s", &format!("doc{d}"))
            .expect("get")
            .expect("stored");
        assert_eq!(stored.version, Version::number(3));
    }
    assert_verified(&store);
}
