//! What `Durability::None` promises, on the simulated disk: a crash (process or power loss)
//! loses at most the commits since the last durable one (`Store::sync`, an `Immediate`
//! commit, or the concurrent writer's periodic sync), each commit whole, in commit order: the
//! reopened store is exactly the state after some prefix of the commits, never earlier than
//! the last sync, never a part of a commit. With the writer's periodic sync, what was
//! acknowledged more than one sync interval ago survives.

use ratchetdb::testkit::{harness_doc, harness_options, store_rows, verify_clean, Disk, Model};
use ratchetdb::{Durability, Op, Store, WriterOptions};
use std::time::Duration;

fn op(i: usize) -> Op {
    // Rewrites of 4 documents with rising versions: each commit changes the state.
    Op::Upsert(harness_doc(
        "s",
        &format!("d{}", i % 4),
        i as u64 + 1,
        1 + i % 3,
        i as u64,
    ))
}

#[test]
fn a_crash_loses_only_whole_commits_since_the_last_sync() {
    let (mut crashes, mut at_last_sync) = (0, 0);
    for crash_after in 0..16usize {
        let disk = Disk::new();
        let store = Store::open_with_backend(
            disk.backend(),
            harness_options().durability(Durability::None),
        )
        .expect("open");
        let mut states = vec![Model::new()];
        let mut last_sync = 0;
        for i in 0..=crash_after {
            store
                .write_batch(vec![op(i)])
                .expect("write")
                .remove(0)
                .expect("op");
            let mut next = states.last().expect("state").clone();
            next.apply(&op(i)).expect("model");
            states.push(next);
            if i % 5 == 4 {
                store.sync().expect("sync");
                last_sync = i + 1;
            }
        }
        let images: Vec<(String, Vec<u8>)> =
            std::iter::once(("process crash".to_string(), disk.image()))
                .chain((0..4).map(|seed| {
                    (
                        format!("power loss {seed}"),
                        disk.power_loss_image(seed * 13 + crash_after as u64),
                    )
                }))
                .collect();
        drop(store);
        for (what, image) in images {
            let what = format!("crash after op {crash_after}, {what}");
            let store =
                Store::open_with_backend(Disk::from_image(image).backend(), harness_options())
                    .unwrap_or_else(|e| panic!("{what}: reopen: {e}"));
            verify_clean(&store).unwrap_or_else(|e| panic!("{what}: {e}"));
            let rows = store_rows(&store).expect("rows");
            let prefix = states
                .iter()
                .position(|s| s.rows == rows)
                .unwrap_or_else(|| {
                    panic!("{what}: the state is no prefix of the commits: {rows:?}")
                });
            assert!(
                prefix >= last_sync,
                "{what}: lost synced commits (state after {prefix} commits, synced {last_sync})"
            );
            crashes += 1;
            at_last_sync += usize::from(prefix == last_sync);
        }
    }
    println!("Durability::None: {crashes} crashes, {at_last_sync} came back exactly at the last sync, the rest at a later whole commit");
}

#[test]
fn the_writers_periodic_sync_makes_older_writes_durable() {
    let disk = Disk::new();
    let store = Store::open_with_backend(
        disk.backend(),
        harness_options().durability(Durability::None),
    )
    .expect("open");
    let writer = store.writer_with(
        WriterOptions::for_store(&store)
            .durability(Durability::None)
            .sync_interval(Duration::from_millis(20)),
    );
    let mut model = Model::new();
    for i in 0..10 {
        writer.submit(op(i)).expect("queue").wait().expect("write");
        model.apply(&op(i)).expect("model");
    }
    // Several sync intervals later, with the writer idle.
    std::thread::sleep(Duration::from_millis(300));
    for seed in 0..4 {
        let image = disk.power_loss_image(seed);
        let reopened =
            Store::open_with_backend(Disk::from_image(image).backend(), harness_options())
                .expect("reopen");
        assert_eq!(
            store_rows(&reopened).expect("rows"),
            model.rows,
            "power loss {seed}"
        );
    }
    writer.shutdown();
}
