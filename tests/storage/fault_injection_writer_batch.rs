//! The concurrent writer under an I/O fault in the middle of a group commit.
//!
//! Four producers' operations are queued into one batch; the disk fails each I/O call of that
//! batch's commit in turn (once, and forever). Every producer of the batch must be answered
//! `WriteError::BatchFailed` (never a panic, never a hang, never a success); later submissions
//! are refused until the store is reopened. After reopening (process crash, and power losses
//! keeping a random part of the unsynced writes) `verify()` is clean and the batch is there
//! whole or not at all — never a part of it. Redelivering the batch then converges.
//!
//! Finding (documented in `WriteError::BatchFailed` and docs/guarantees.md): when the call that
//! fails is the commit's final `sync_data`, the batch's writes have already reached the file;
//! a reopen without power loss then finds the whole batch committed. A failed batch is "not
//! acknowledged", not "not written": redelivery (a duplicate, refused as such) is the answer.

use crate::support;

use ratchetdb::testkit::{
    harness_doc, harness_options, store_rows, verify_clean, Disk, FaultMode, Model, ModelOutcome,
};
use ratchetdb::{Op, Store, Version, WriteError, WriterOptions};
use std::time::Duration;
use support::no_panic;

fn setup(disk: &Disk) -> (Store, Model) {
    let store = Store::open_with_backend(disk.backend(), harness_options()).expect("open");
    // The background index loader holds a read snapshot while it loads, and a live snapshot
    // changes which pages a commit may reuse, so the I/O calls of the commits below (and of
    // the batch the test sweeps) would depend on its timing. Let it finish first.
    assert!(
        store.wait_for_index(std::time::Duration::from_secs(30)),
        "index load"
    );
    let mut model = Model::new();
    for op in [
        Op::Upsert(harness_doc("wiki", "a", 1, 3, 1)),
        Op::Upsert(harness_doc("wiki", "b", 1, 2, 2)),
    ] {
        let outcome = store
            .write_batch(vec![op.clone()])
            .expect("setup")
            .remove(0)
            .expect("setup op");
        assert_eq!(ModelOutcome::of(&outcome), model.apply(&op).expect("model"));
        // The index applier's catch-up holds a read snapshot too: let it finish.
        assert!(
            store.wait_for_index(Duration::from_secs(30)),
            "index applier"
        );
    }
    (store, model)
}

fn batch() -> Vec<Op> {
    vec![
        Op::Upsert(harness_doc("docs", "x", 1, 2, 3)),
        Op::Upsert(harness_doc("wiki", "a", 2, 1, 4)),
        Op::Delete {
            source: "wiki".into(),
            id: "b".into(),
            version: Version::number(2),
        },
        Op::Retain {
            source: "docs".into(),
            present: vec!["x".into()],
            version: Version::number(1),
        },
    ]
}

fn writer_options(store: &Store) -> WriterOptions {
    WriterOptions::for_store(store)
        .max_batch_ops(4)
        .max_batch_wait(Duration::from_secs(5))
}

#[test]
fn a_fault_in_a_group_commit_fails_every_producer_and_the_batch_whole() {
    // Fault-free: which I/O calls the batch's commit makes.
    let disk = Disk::new();
    let (store, before) = setup(&disk);
    let first = disk.io_ops();
    let writer = store.writer_with(writer_options(&store));
    let pending: Vec<_> = batch()
        .into_iter()
        .map(|op| writer.submit(op).expect("queue"))
        .collect();
    let mut after = before.clone();
    for (op, p) in batch().iter().zip(pending) {
        let outcome = p.wait().expect("fault-free batch");
        assert_eq!(ModelOutcome::of(&outcome), after.apply(op).expect("model"));
    }
    writer.shutdown();
    assert_eq!(writer.stats().batches, 1, "the four ops were one batch");
    let last = disk.io_ops();
    assert!(last > first + 2, "the commit makes several I/O calls");
    drop(store);

    let (mut points, mut images, mut visible) = (0, 0, 0);
    for mode in [FaultMode::Once, FaultMode::Forever] {
        for call in first..last {
            let disk = Disk::new();
            let (store, _) = setup(&disk);
            disk.fail_at(call, mode);
            let writer = store.writer_with(writer_options(&store));
            let pending: Vec<_> = batch()
                .into_iter()
                .map(|op| writer.submit(op).expect("queue"))
                .collect();
            let answers: Vec<_> = no_panic("waiting for the batch", || {
                pending.into_iter().map(|p| p.wait()).collect()
            });
            for answer in &answers {
                assert!(
                    matches!(answer, Err(WriteError::BatchFailed { .. })),
                    "fault at call {call} ({mode:?}): every producer is told BatchFailed: {answers:?}"
                );
            }
            writer.shutdown();
            let writer = store.writer();
            let later = writer.upsert(harness_doc("wiki", "z", 1, 1, 1));
            assert!(
                matches!(&later, Err(WriteError::BatchFailed { cause }) if cause.contains("refuses writes")),
                "{later:?}"
            );
            assert!(matches!(
                store.upsert(harness_doc("wiki", "z", 1, 1, 1)),
                Err(WriteError::Poisoned { .. })
            ));
            writer.shutdown();
            points += 1;
            let crash_image = disk.image();
            let power_losses: Vec<Vec<u8>> = (0..3)
                .map(|seed| disk.power_loss_image(call * 7 + seed))
                .collect();
            drop(store);
            for (i, image) in std::iter::once(crash_image).chain(power_losses).enumerate() {
                let what = format!("fault {mode:?} at call {call}, image {i}");
                let store = no_panic("reopening", || {
                    Store::open_with_backend(Disk::from_image(image).backend(), harness_options())
                })
                .unwrap_or_else(|e| panic!("{what}: reopen failed: {e}"));
                verify_clean(&store).unwrap_or_else(|e| panic!("{what}: {e}"));
                let rows = store_rows(&store).expect("rows");
                if rows == after.rows {
                    visible += 1;
                    assert_eq!(
                        call,
                        last - 1,
                        "{what}: only a failed final sync may leave the batch on disk"
                    );
                } else {
                    assert_eq!(rows, before.rows, "{what}: a part of the batch is on disk");
                }
                // At-least-once redelivery converges either way.
                for op in batch() {
                    store.write_batch(vec![op]).expect("redelivery")[0]
                        .as_ref()
                        .expect("redelivered op");
                }
                assert_eq!(store_rows(&store).expect("rows"), after.rows, "{what}");
                verify_clean(&store).unwrap_or_else(|e| panic!("{what}: {e}"));
                images += 1;
            }
        }
    }
    println!(
        "writer batch: {points} fault points (calls {first}..{last} of the commit, 2 modes), \
         {images} images reopened: the batch was whole in {visible} (failed final sync), \
         absent in the rest; never partial"
    );
}
