//! `ratchet copy` moves a store from a redb file to PostgreSQL and back (and `ratchet verify`
//! and `stats` read the PostgreSQL end by its URL): every document
//! (live and tombstone) keeps its version, content hash, metadata and chunk texts, the
//! copy runs `verify` on both ends and says `ok`, and the file copied back exports the
//! same documents as the original. The PostgreSQL end is a database of its own, created
//! and dropped by the test.

use crate::pg;
use ratchetdb::testkit;
use ratchetdb::{Chunk, Document, Options, Store, StoredDocument, Version};
use serde_json::json;
use std::process::Command;

fn export(store: &Store) -> Vec<StoredDocument> {
    let snapshot = store.snapshot().expect("snapshot");
    snapshot
        .documents(false)
        .expect("documents")
        .map(|d| {
            let mut d = d.expect("document");
            d.generation = 0;
            for chunk in &mut d.chunks {
                chunk.generation = 0;
                chunk.vector_id = 0;
            }
            d
        })
        .collect()
}

fn copy(from: &str, to: &str) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_ratchet"))
        .args(["copy", "--from", from, "--to", to])
        .output()
        .expect("run ratchet copy");
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    assert!(
        output.status.success(),
        "ratchet copy failed: {stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("ok: "), "{stdout}");
    stdout
}

#[test]
fn cli_copy_round_trip() {
    let Some(url) = pg::url("cli_copy") else {
        return;
    };
    let database = pg::schema("cli_copy");
    testkit::pg_execute(&url, &format!("DROP DATABASE IF EXISTS {database}")).expect("drop");
    testkit::pg_execute(&url, &format!("CREATE DATABASE {database}")).expect("create");
    let (base, _) = url.rsplit_once('/').expect("a database in the URL");
    let target = format!("{base}/{database}");

    let dir = tempfile::tempdir().expect("tempdir");
    let original = dir.path().join("original.redb");
    {
        let store = Store::open(&original, Options::default()).expect("open");
        for doc in 0..30u64 {
            let mut d = Document::new(
                format!("s{}", doc % 3),
                format!("doc{doc}"),
                Version::number(doc + 1),
            )
            .with_meta(json!({"n": doc, "tags": ["a", "b"]}));
            for position in 0..(doc % 4) {
                d = d.with_chunk(
                    Chunk::new(
                        format!("doc{doc} chunk{position}"),
                        vec![1.0, doc as f32, position as f32],
                    )
                    .with_meta(json!({"p": position})),
                );
            }
            store.upsert(d).expect("write");
        }
        for doc in [3u64, 7, 11] {
            store
                .delete(
                    &format!("s{}", doc % 3),
                    &format!("doc{doc}"),
                    Version::number(100),
                )
                .expect("delete");
        }
        store
            .delete("s9", "never-written", Version::timestamp_micros(5))
            .expect("tombstone");
    }
    let before = export(&Store::open(&original, Options::default()).expect("open"));
    copy(original.to_str().expect("utf-8 path"), &target);
    // `verify` and `stats` take the URL as `--db`.
    for command in ["verify", "stats"] {
        let output = Command::new(env!("CARGO_BIN_EXE_ratchet"))
            .args([command, "--db", &target])
            .output()
            .expect("run ratchet");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "ratchet {command}: {stdout}");
        if command == "verify" {
            assert!(
                stdout.starts_with("ok: 27 documents, 4 tombstones"),
                "{stdout}"
            );
        }
    }
    let back = dir.path().join("back.redb");
    copy(&target, back.to_str().expect("utf-8 path"));
    let after = export(&Store::open(&back, Options::default()).expect("open"));
    assert_eq!(after, before);
    testkit::pg_execute(&url, &format!("DROP DATABASE {database} WITH (FORCE)")).expect("drop");
}
