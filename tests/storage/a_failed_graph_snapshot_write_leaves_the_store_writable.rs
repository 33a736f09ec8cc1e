//! Regression, issue 44 item 7: `build_index()` returned `Ok` when writing the graph
//! snapshot failed (the disk full), and the swallowed failure poisoned the store: the next
//! upsert failed with `Poisoned { … No space left on device }` even after space was freed,
//! and searches failed with `Storage(PreviousIo)` (redb refuses every operation on a handle
//! whose write failed). The snapshot is derived: its failed write is now reported
//! (`ReadError::IndexPersist`, and `index_info` shows nothing persisted), the engine opens
//! the file again instead of poisoning itself, and a later write of the snapshot succeeds.

use ratchetdb::testkit::{verify_clean, Disk, FaultMode};
use ratchetdb::{Chunk, Document, Options, ReadError, SearchOptions, Store, Version};
use std::time::Duration;

const DIM: usize = 8;
const N: usize = 400;

fn vector(i: usize) -> Vec<f32> {
    (0..DIM)
        .map(|d| ((i * 31 + d * 17) % 97) as f32 / 97.0 - 0.5 + (d == i % DIM) as u8 as f32)
        .collect()
}

fn doc(i: usize, version: u64) -> Document {
    Document::new("s", format!("d{i}"), Version::number(version))
        .with_chunk(Chunk::new(format!("chunk {i}"), vector(i)))
}

fn settle(store: &Store) {
    assert!(
        store.wait_for_index(Duration::from_secs(60)),
        "the index did not settle: {:?}",
        store.index_info()
    );
}

#[test]
fn a_graph_snapshot_that_cannot_be_written_is_reported_and_poisons_nothing() {
    let disk = Disk::new();
    let store = Store::open_with_backend(disk.backend(), Options::default()).expect("open");
    for batch in (0..N).collect::<Vec<_>>().chunks(100) {
        let ops = batch.iter().map(|&i| ratchetdb::Op::Upsert(doc(i, 1)));
        for outcome in store.write_batch(ops.collect()).expect("ingest") {
            outcome.expect("ingest op");
        }
    }
    settle(&store);

    // The disk is full: every write fails until space is freed.
    disk.fail_after(0, FaultMode::Forever);
    match store.build_index() {
        Err(ReadError::IndexPersist { detail }) => assert!(!detail.is_empty()),
        other => panic!("expected IndexPersist, got {other:?}"),
    }
    assert!(disk.faults_hit() > 0, "the snapshot's write met the fault");
    let info = store.index_info();
    assert!(info.graph_ready, "the built graph serves: {info:?}");
    assert_eq!(info.persisted_points, 0, "nothing persisted: {info:?}");

    // Space freed: writes and searches work without a reopen of the store.
    disk.heal();
    store
        .upsert(doc(N, 1))
        .expect("upsert after space is freed");
    store
        .upsert(doc(0, 2).with_meta(serde_json::json!({"revised": true})))
        .expect("a revision after space is freed");
    settle(&store);
    for i in [0, 7, N] {
        let hits = store
            .search(&vector(i), 1, &SearchOptions::default())
            .expect("search after space is freed");
        assert_eq!(hits[0].id, format!("d{i}"), "nearest to d{i}'s own vector");
    }

    // A later write of the snapshot succeeds, and the store is sound.
    store.build_index().expect("build and persist with space");
    let info = store.index_info();
    assert_eq!(info.persisted_points, info.graph_points, "{info:?}");
    verify_clean(&store).expect("verify after the retry");
    drop(store);

    // What the disk holds opens with its snapshot and every acknowledged write.
    let store =
        Store::open_with_backend(Disk::from_image(disk.image()).backend(), Options::default())
            .expect("reopen");
    settle(&store);
    assert!(store.index_info().graph_ready, "{:?}", store.index_info());
    assert_eq!(
        store.get("s", &format!("d{N}")).expect("get").map(|d| d.id),
        Some(format!("d{N}"))
    );
    verify_clean(&store).expect("verify after the reopen");
}
