//! Issue 46 (review of today's merges), item 2: `ratchet ingest --jsonl -` peeked an
//! export's first line (`store`, which gives a new store the exported store's metric) with
//! one `fill_buf()`, which returns whatever the pipe has delivered so far: a first line
//! written in pieces was missed, the new store got the default metric (cosine), and the
//! `store` line was then rejected. The whole first line is now read before the store is
//! opened: here it arrives in small writes with pauses between them, and the new store is
//! an l2 store whose export is the input.

use super::common::cli;
use ratchetdb::{Chunk, Document, Metric, Options, Store, Version};
use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(120);

fn export(db: &std::path::Path) -> String {
    let args = ["export", "--db", db.to_str().unwrap(), "--vectors"];
    let run = cli::run(&args, |_| {}, None, TIMEOUT);
    assert_eq!(run.code, Some(0), "export: {}", run.stderr);
    run.stdout
}

#[test]
fn a_store_line_written_in_pieces_gives_the_new_store_its_metric() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("source.redb");
    {
        let store =
            Store::open(&source, Options::default().dimension(3).metric(Metric::L2)).unwrap();
        for i in 0..3 {
            store
                .upsert(
                    Document::new("s", format!("d{i}"), Version::number(1))
                        .with_chunk(Chunk::new(format!("text {i}"), vec![1.0, i as f32, 2.0])),
                )
                .unwrap();
        }
    }
    let exported = export(&source);
    let (first, rest) = exported.split_at(exported.find('\n').unwrap() + 1);
    assert!(first.contains("\"store\""), "{first}");

    let db = dir.path().join("again.redb");
    let mut child = Command::new(env!("CARGO_BIN_EXE_ratchet"))
        .args(["ingest", "--db", db.to_str().unwrap(), "--jsonl", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // The first line in pieces of 8 bytes, each its own write, with a pause between them
    // so that the reader sees them one by one.
    for piece in first.as_bytes().chunks(8) {
        stdin.write_all(piece).unwrap();
        stdin.flush().unwrap();
        std::thread::sleep(Duration::from_millis(20));
    }
    stdin.write_all(rest.as_bytes()).unwrap();
    drop(stdin);
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "ingest: {stderr}");
    assert!(stderr.contains(" 0 rejected"), "{stderr}");
    assert_eq!(Store::open_read_only(&db).unwrap().metric(), Metric::L2);
    assert_eq!(export(&db), exported);
}
