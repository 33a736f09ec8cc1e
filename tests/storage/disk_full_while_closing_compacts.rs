//! Issue 44, "not yet tried by anyone": the disk fills up while a closing store compacts
//! its file (`Options::compact_on_close`, the default). The close has no result to report
//! (a store closes when dropped), so what must hold is: it neither panics nor hangs, the
//! file reopens, every acknowledged write is there, and `verify` is clean.
//!
//! A real file on a full disk: the test binary re-runs itself as a child
//! (`--exact child_fills_the_disk_while_closing`, told by `RATCHET_CLOSE_FULL_CHILD`) that
//! bulk-loads a store and deletes three quarters of it (so the close has free pages to
//! compact), then lowers its own `RLIMIT_FSIZE` (SIGXFSZ ignored) so that every write past
//! the chosen offset fails (`EFBIG`, as writes into unallocated space fail with `ENOSPC` on a
//! full disk; CI cannot mount a small filesystem), and drops the store. The limits go from
//! 0 (no write at all succeeds: trimming, repacking and compaction all fail) through
//! fractions of what the compacted file needs to the whole file (only growth fails), and,
//! as the control, none (the file is compacted). The parent
//! reopens each file for writing (recovering it if redb must) and checks every document.

use ratchetdb::{Chunk, Document, Op, Options, SearchOptions, Store, Version};
use std::path::Path;
use std::process::Command;

const CHILD: &str = "RATCHET_CLOSE_FULL_CHILD";
const CHILD_LIMIT: &str = "RATCHET_CLOSE_FULL_LIMIT";
const DOCS: u64 = 1200;
const DIM: usize = 16;

fn vector(seed: u64) -> Vec<f32> {
    (0..DIM as u64)
        .map(|d| 1.0 + ((seed * 31 + d * 7) % 13) as f32)
        .collect()
}

fn text(n: u64, c: u64) -> String {
    let words: Vec<String> = (0..300)
        .map(|w| format!("w{}", (n * 7 + c * 3 + w) % 997))
        .collect();
    format!("doc {n} chunk {c} {}", words.join(" "))
}

fn doc(n: u64) -> Document {
    let mut d = Document::new("s", format!("doc-{n:05}"), Version::number(1));
    for c in 0..2 {
        d = d.with_chunk(Chunk::new(text(n, c), vector(n * 2 + c)));
    }
    d
}

/// The child: loads, deletes, reports the writes acknowledged and the file's length, then
/// closes under the file size limit in `RATCHET_CLOSE_FULL_LIMIT` (bytes; "none" for none).
#[test]
fn child_fills_the_disk_while_closing() {
    let Ok(path) = std::env::var(CHILD) else {
        return;
    };
    let store = Store::open(&path, Options::default()).expect("open");
    let all: Vec<Document> = (0..DOCS).map(doc).collect();
    for batch in all.chunks(200) {
        let ops = batch.iter().cloned().map(Op::Upsert).collect();
        for outcome in store.write_batch(ops).expect("batch") {
            outcome.expect("upsert");
        }
    }
    let deletes = (0..DOCS)
        .filter(|n| n % 4 != 0)
        .map(|n| Op::Delete {
            source: "s".into(),
            id: format!("doc-{n:05}"),
            version: Version::number(2),
        })
        .collect();
    for outcome in store.write_batch(deletes).expect("deletes") {
        outcome.expect("delete");
    }
    let len = std::fs::metadata(&path).expect("file").len();
    println!("ACKNOWLEDGED {len}");
    let limit = std::env::var(CHILD_LIMIT).expect("limit");
    if let Ok(limit) = limit.parse::<u64>() {
        // SAFETY: plain libc calls on this process; SIG_IGN makes a write past the limit
        // fail with EFBIG instead of killing the process.
        unsafe {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            let rlimit = libc::rlimit {
                rlim_cur: limit as libc::rlim_t,
                rlim_max: libc::RLIM_INFINITY,
            };
            assert_eq!(libc::setrlimit(libc::RLIMIT_FSIZE, &rlimit), 0);
        }
    }
    drop(store);
    println!("CLOSED");
}

/// Runs the child on `path` with `limit`, returns (its output, the file's length when it
/// acknowledged its writes).
fn run_child(path: &Path, limit: &str) -> (String, u64) {
    let output = Command::new(std::env::current_exe().expect("current exe"))
        .args([
            "--exact",
            "disk_full_while_closing_compacts::child_fills_the_disk_while_closing",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, path)
        .env(CHILD_LIMIT, limit)
        .output()
        .expect("run the child");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(
        output.status.success(),
        "limit {limit}: the child failed ({:?}): {stdout}{stderr}",
        output.status
    );
    assert!(
        stdout.contains("CLOSED"),
        "limit {limit}: the close did not end: {stdout}{stderr}"
    );
    // libtest may have printed the test's name on the same line.
    let len = stdout
        .split("ACKNOWLEDGED ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("limit {limit}: no acknowledgement: {stdout}"));
    (format!("{stdout}{stderr}"), len)
}

/// Every acknowledged write is in the store at `path`, searches find live documents only,
/// and `verify` is clean.
fn assert_every_write(path: &Path, limit: &str) {
    let store = Store::open(path, Options::default().compact_on_close(false))
        .unwrap_or_else(|e| panic!("limit {limit}: the file does not reopen: {e}"));
    for n in 0..DOCS {
        let id = format!("doc-{n:05}");
        let got = store.get("s", &id).expect("get");
        if n.is_multiple_of(4) {
            let got = got.unwrap_or_else(|| panic!("limit {limit}: {id} lost"));
            assert_eq!(got.version, Version::number(1), "limit {limit}: {id}");
            assert_eq!(got.chunks.len(), 2, "limit {limit}: {id}");
            assert_eq!(got.chunks[1].text, text(n, 1), "limit {limit}: {id}");
        } else {
            let got = got.unwrap_or_else(|| panic!("limit {limit}: {id}'s tombstone lost"));
            assert!(
                got.deleted && got.version == Version::number(2),
                "limit {limit}: {id} deleted, reads {got:?}"
            );
        }
    }
    let report = store.verify().expect("verify");
    assert!(report.is_ok(), "limit {limit}: {:?}", report.violations);
    assert_eq!(report.documents, DOCS / 4, "limit {limit}");
    let hits = store
        .search_text("doc 8 chunk 0", 3, &SearchOptions::default())
        .expect("text search");
    assert_eq!(hits[0].id, "doc-00008", "limit {limit}");
    let hits = store
        .search(&vector(3 * 2), 5, &SearchOptions::default().exact(true))
        .expect("search");
    assert!(
        hits.iter().all(|h| h.id["doc-".len()..]
            .parse::<u64>()
            .is_ok_and(|n| n.is_multiple_of(4))),
        "limit {limit}: a deleted document found: {hits:?}"
    );
    // And the reopened store takes writes.
    store
        .upsert(doc(DOCS).with_meta(serde_json::json!({"after": limit})))
        .expect("a write after the reopen");
}

#[test]
fn disk_full_while_closing_compacts() {
    let dir = tempfile::tempdir().expect("tempdir");
    // The control: no limit, the close compacts.
    let control = dir.path().join("control.redb");
    let (_, open_len) = run_child(&control, "none");
    let compacted = std::fs::metadata(&control).expect("file").len();
    println!("no limit: {open_len} bytes while open, {compacted} after close");
    assert!(
        compacted < open_len,
        "the scenario does not compact: {open_len} -> {compacted}"
    );
    assert_every_write(&control, "none");
    // Limits from none of the file to all of it, most of them inside what the compacted
    // file needs (the control's length), where the compaction's own writes land.
    let limits = [
        0,
        compacted / 4,
        compacted / 2,
        compacted * 3 / 4,
        compacted,
        open_len / 2,
        open_len,
    ];
    for (run, limit) in limits.into_iter().enumerate() {
        let path = dir.path().join(format!("full-{run}.redb"));
        let (output, len) = run_child(&path, &limit.to_string());
        assert_eq!(len, open_len, "the load is deterministic");
        let closed = std::fs::metadata(&path).expect("file").len();
        println!(
            "writes fail past {limit} bytes: {closed} bytes after close{}",
            if output.contains("panicked") {
                " (a contained panic in the close)"
            } else {
                ""
            }
        );
        if limit == 0 {
            assert_eq!(closed, open_len, "no write succeeded, yet the file changed");
        }
        assert_every_write(&path, &limit.to_string());
    }
}
