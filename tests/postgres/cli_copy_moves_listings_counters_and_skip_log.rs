//! `ratchet copy` moves a store's history with its documents, both ways: the listings
//! `retain` recorded (with their members, so an id a listing omitted and that was never
//! written is still refused as tombstoned at the destination), the outcome counters, and
//! the skip log's refusals. File → PostgreSQL → file: each end's listings, counters (all
//! but `commits`, which counts each store's own transactions) and skip log equal the
//! original's, and `copy` reports `ok` only after checking that itself.

use crate::pg;
use ratchetdb::{Chunk, Document, Options, SkipReason, Stats, Store, Version};
use std::process::Command;

fn copy(from: &str, to: &str) {
    let output = Command::new(env!("CARGO_BIN_EXE_ratchet"))
        .args(["copy", "--from", from, "--to", to])
        .output()
        .expect("run ratchet copy");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.starts_with("ok: "),
        "ratchet copy failed: {stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn doc(source: &str, id: &str, version: u64) -> Document {
    Document::new(source, id, Version::number(version)).with_chunk(Chunk::new(
        format!("{id} v{version}"),
        vec![1.0, version as f32],
    ))
}

/// The history as compared: counters without `commits`, refusals without their `seq`.
fn history(store: &Store) -> (serde_json::Value, Vec<String>, Vec<ratchetdb::Listing>) {
    let stats: Stats = store.stats().expect("stats");
    let mut counters = serde_json::to_value(&stats.counters).expect("json");
    counters.as_object_mut().expect("object").remove("commits");
    let skips = stats
        .recent_skips
        .iter()
        .map(|s| {
            format!(
                "{}/{} {} {} {}",
                s.source, s.id, s.reason, s.stored_version, s.incoming_version
            )
        })
        .collect();
    (counters, skips, store.listings().expect("listings"))
}

#[test]
fn cli_copy_moves_listings_counters_and_skip_log() {
    let Some(url) = pg::fresh_url("copy_history") else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let original = dir.path().join("original.redb");
    {
        let store = Store::open(&original, Options::default()).expect("open");
        for (id, version) in [("a", 1), ("b", 1), ("c", 1), ("a", 2)] {
            store.upsert(doc("s", id, version)).expect("write");
        }
        // Refusals: an older revision, a duplicate.
        assert_eq!(
            store.upsert(doc("s", "a", 1)).unwrap().skip_reason(),
            Some(SkipReason::Older)
        );
        assert_eq!(
            store.upsert(doc("s", "b", 1)).unwrap().skip_reason(),
            Some(SkipReason::Duplicate)
        );
        // Two listings of `s`: the second omits `c` (tombstoned) and `unseen`.
        store
            .retain("s", ["a", "b", "c"], Version::number(3))
            .expect("retain");
        store
            .retain("s", ["a", "b"], Version::number(4))
            .expect("retain");
        store
            .retain("t", Vec::<String>::new(), Version::number(1))
            .expect("empty listing");
        assert_eq!(
            store.upsert(doc("s", "unseen", 2)).unwrap().skip_reason(),
            Some(SkipReason::Tombstoned)
        );
        store.delete("s", "b", Version::number(9)).expect("delete");
    }
    let expected = history(&Store::open(&original, Options::default()).expect("open"));
    assert_eq!(expected.2.len(), 3);
    assert_eq!(expected.1.len(), 3);

    copy(original.to_str().unwrap(), &url);
    let server = Store::open(&url, Options::default()).expect("open the copy");
    assert_eq!(history(&server), expected, "file → PostgreSQL");
    pg::assert_store_verified(&server);
    // The listing moved as a listing: an id it omitted, never written, is still refused.
    assert_eq!(
        server.upsert(doc("s", "unseen2", 4)).unwrap().skip_reason(),
        Some(SkipReason::Tombstoned)
    );
    drop(server);

    // And back, from the state before that last refusal was added: compare with the
    // server's own history now.
    let server_history = history(&Store::open_read_only(&url).expect("open"));
    let back = dir.path().join("back.redb");
    copy(&url, back.to_str().unwrap());
    let store = Store::open(&back, Options::default()).expect("open");
    assert_eq!(history(&store), server_history, "PostgreSQL → file");
    assert!(store.verify().expect("verify").is_ok());
}
