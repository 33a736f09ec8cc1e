//! Regression (review of the index load's own handle): the load reads a shared file through
//! a second read-only handle, and redb keeps a dropped handle's file and lock bytes until
//! its last read transaction ends. A store dropped while its index still loaded kept the
//! file locked until the load finished, so opening it exclusively right after the drop
//! (`allow_readers(false)`, or `Durability::None`) was refused with `Locked`. Closing the
//! store now closes that handle outright: the exclusive open succeeds at once, however far
//! the load had got, and reads everything written.

use ratchetdb::{Chunk, Document, Durability, Op, Options, Store, Version};

const DOCS: u64 = 20_000;
const DIM: usize = 64;

fn doc(n: u64) -> Document {
    let vector: Vec<f32> = (0..DIM as u64)
        .map(|d| 1.0 + ((n * 131 + d * 17) % 97) as f32)
        .collect();
    Document::new("s", format!("d{n}"), Version::number(1))
        .with_chunk(Chunk::new(format!("text {n}"), vector))
}

#[test]
fn an_exclusive_open_right_after_closing_a_loading_store_succeeds() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("db.redb");
    {
        let store =
            Store::open(&path, Options::default().durability(Durability::None)).expect("create");
        let all: Vec<Op> = (0..DOCS).map(|n| Op::Upsert(doc(n))).collect();
        for batch in all.chunks(2_000) {
            for outcome in store.write_batch(batch.to_vec()).expect("batch") {
                outcome.expect("upsert");
            }
        }
        store.sync().expect("sync");
    }
    for (round, after_ms) in [1u64, 3, 6, 10, 20].into_iter().enumerate() {
        // Shared (the default): the index starts loading in the background, through the
        // load's own handle; the store is dropped a few milliseconds into it.
        let shared = Store::open(&path, Options::default()).expect("shared open");
        std::thread::sleep(std::time::Duration::from_millis(after_ms));
        drop(shared);
        let exclusive = Store::open(&path, Options::default().allow_readers(false))
            .unwrap_or_else(|e| panic!("round {round}: exclusive open after the close: {e}"));
        let last = format!("d{}", DOCS - 1);
        assert!(
            exclusive.get("s", &last).expect("get").is_some(),
            "round {round}: {last} missing"
        );
        drop(exclusive);
    }
}
