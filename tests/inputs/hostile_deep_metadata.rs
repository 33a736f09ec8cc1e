//! Metadata nested deeper than anything sensible: refused with an `InputError` naming the
//! field, without recursion, so that neither a store-unreadable document nor a stack overflow
//! can result.
//!
//! Regression (two bugs): (1) metadata nested 128 levels or more was accepted and written, but
//! serde_json refuses to parse JSON nested past 128 levels, so `get` and every export then
//! failed with `ReadError::Corrupted` ("recursion limit exceeded"): one bad document made the
//! whole store unexportable. (2) A `serde_json::Value` nested ~100,000 deep, built in memory by
//! a library caller, overflowed the stack (an abort, not a panic) inside `upsert` (canonical
//! JSON is recursive, and so is dropping the value) and inside `plan` (it cloned the value).
//! Now `Limits::max_meta_depth` (default 64, at most 127) is checked iteratively before
//! anything recursive, and a refused value is dismantled without recursion.

use ratchetdb::testkit::harness_doc;
use ratchetdb::{Chunk, Options, Outcome, ReadError, Store, WriteError};

fn nested(depth: usize) -> serde_json::Value {
    let mut value = serde_json::json!("leaf");
    for i in 0..depth {
        value = if i % 2 == 0 {
            serde_json::Value::Array(vec![value])
        } else {
            let mut map = serde_json::Map::new();
            map.insert("k".to_string(), value);
            serde_json::Value::Object(map)
        };
    }
    value
}

#[test]
fn metadata_depth_is_bounded_and_accepted_metadata_reads_back() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut limits = ratchetdb::Limits::default();
    limits.max_meta_depth = 1000; // Asks for more than a read can parse: capped at 127.
    let store = Store::open(
        dir.path().join("deep.redb"),
        Options::default().dimension(4).limits(limits),
    )
    .expect("open");
    for depth in [1, 64, 100, 127, 128, 129, 500] {
        let id = format!("d{depth}");
        let doc = harness_doc("s", &id, 1, 1, 1).with_meta(nested(depth));
        match store.upsert(doc) {
            Ok(Outcome::Written { .. }) => {
                assert!(depth <= 127, "depth {depth} was accepted");
                let got = store.get("s", &id).expect("accepted metadata reads back");
                assert_eq!(got.expect("doc").meta, nested(depth));
            }
            Err(WriteError::Input(e)) => {
                assert!(depth > 127, "depth {depth} was refused: {e}");
                assert_eq!(e.field, "meta");
                assert!(e.problem.contains("127 levels"), "{e}");
            }
            other => panic!("depth {depth}: {other:?}"),
        }
    }
    let snapshot = store.snapshot().expect("snapshot");
    let exported = snapshot.documents(false).expect("docs");
    let exported: Vec<_> = exported
        .collect::<Result<_, _>>()
        .expect("every document exports");
    assert_eq!(exported.len(), 4);
    assert!(store.verify().expect("verify").is_ok());
}

#[test]
fn a_value_nested_past_the_stack_is_refused_not_a_crash() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(
        dir.path().join("deeper.redb"),
        Options::default().dimension(4),
    )
    .expect("open");
    // A small stack, as a caller's worker thread might have: a recursion of 200,000 levels
    // would overflow it.
    std::thread::Builder::new()
        .stack_size(1 << 20)
        .spawn(move || {
            let doc = harness_doc("s", "deep", 1, 1, 1).with_meta(nested(200_000));
            match store.plan(&doc) {
                Err(ReadError::Input(e)) => assert_eq!(e.field, "meta"),
                other => panic!("plan: {other:?}"),
            }
            match store.upsert(doc) {
                Err(WriteError::Input(e)) => assert_eq!(e.field, "meta"),
                other => panic!("upsert: {other:?}"),
            }
            let chunk = Chunk::new("t", vec![1.0, 0.0, 0.0, 0.0]).with_meta(nested(200_000));
            let doc = harness_doc("s", "deep-chunk", 1, 0, 1).with_chunk(chunk);
            match store.writer().upsert(doc) {
                Err(WriteError::Input(e)) => assert_eq!(e.field, "chunks[0].meta"),
                other => panic!("writer: {other:?}"),
            }
            assert_eq!(store.stats().expect("stats").documents, 0);
        })
        .expect("spawn")
        .join()
        .expect("no crash");
}
