//! Issue 44, "not yet tried by anyone": 10^6 tiny JSONL documents through
//! `ratchet ingest --jsonl -`, with the child's peak resident set (its own `ru_maxrss`, from
//! `wait4` on its pid, so the close and its compaction count too) bounded independently of
//! the number of lines. Each document is one short chunk with a 4-d vector; what a store must
//! keep per document in memory (its vector, its graph links, its text postings) is allowed,
//! anything that grows with the input beyond that (lines, reports, batches kept) is not.
//!
//! In CI: N and 2N documents (N = 40,000) in two stores; the second run's peak may exceed
//! the first's by at most a per-document budget times N, and every document is there and
//! `verify` is clean. The full size, by hand:
//! `cargo test --features minilm,postgres --test cli -- --ignored a_million_tiny_documents`
//! (set `RATCHET_TINY_DOCS` to choose another size).

use crate::support;
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Resident bytes a stored tiny document may add to the ingest's peak: a 4-d vector and its
/// graph links, its id in the document table's cache, and its text's postings (about 420
/// when this test was written; a line, report or batch kept per document would add its own
/// size on top).
const BUDGET_PER_DOCUMENT: u64 = 1024;

struct Ingested {
    peak_kib: u64,
    seconds: f64,
}

fn line(n: u64) -> String {
    let x = (n % 1009) as f32 / 1009.0;
    let y = (n % 13) as f32 / 13.0;
    format!(
        "{{\"op\":\"upsert\",\"source\":\"t\",\"id\":\"n{n}\",\"version\":1,\"chunks\":[{{\"text\":\"tiny note {}\",\"vector\":[1,{x},{y},-0.5]}}]}}\n",
        n % 100
    )
}

/// Runs `ratchet ingest --jsonl -` on `db`, feeding it `documents` lines generated on the
/// fly; returns the child's own peak RSS (from `wait4`).
#[allow(
    clippy::zombie_processes,
    reason = "the child is reaped by wait4 on its pid, which also gives its own rusage"
)]
fn ingest(db: &std::path::Path, documents: u64) -> Ingested {
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_ratchet"))
        .args([
            "ingest",
            "--db",
            db.to_str().expect("utf-8"),
            "--jsonl",
            "-",
        ])
        .env_remove("RATCHET_MODEL")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ratchet");
    let stdin = child.stdin.take().expect("stdin");
    let feeder = std::thread::spawn(move || {
        let mut out = std::io::BufWriter::with_capacity(1 << 20, stdin);
        for n in 0..documents {
            if out.write_all(line(n).as_bytes()).is_err() {
                return;
            }
        }
        let _ = out.flush();
    });
    let mut stderr = child.stderr.take().expect("stderr");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut s);
        s
    });
    let pid = child.id() as libc::pid_t;
    let deadline = Instant::now() + Duration::from_secs(1800);
    let (status, usage) = loop {
        let mut status = 0;
        // SAFETY: a zeroed rusage is a valid value of a plain C struct; wait4 writes it.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `pid` is our child, not yet reaped (Child::wait is never called on it).
        let reaped = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        assert!(reaped >= 0, "wait4: {}", std::io::Error::last_os_error());
        if reaped == pid {
            break (status, usage);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("ratchet ingest of {documents} documents did not finish");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    feeder.join().expect("feeder");
    let stderr = reader.join().expect("stderr");
    assert!(!stderr.contains("panicked"), "ratchet panicked: {stderr}");
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "ingest of {documents} failed ({status}): {stderr}"
    );
    Ingested {
        // Linux reports ru_maxrss in KiB.
        peak_kib: usage.ru_maxrss as u64,
        seconds: started.elapsed().as_secs_f64(),
    }
}

/// Every document is there, and the store verifies.
fn check(db: &std::path::Path, documents: u64) {
    let store = ratchetdb::Store::open_read_only(db).expect("open");
    let stats = store.stats().expect("stats");
    assert_eq!(stats.documents, documents);
    assert_eq!(stats.counters.written_new, documents);
    let last = format!("n{}", documents - 1);
    assert!(store.get("t", &last).expect("get").is_some());
    assert!(store.verify().expect("verify").is_ok());
}

/// Ingests `small` and `2 * small` documents and checks the peaks differ by at most the
/// per-document budget.
fn peaks_grow_only_with_the_stored_documents(small: u64) {
    let dir = tempfile::tempdir().expect("tempdir");
    let (a, b) = (dir.path().join("n.redb"), dir.path().join("2n.redb"));
    let first = ingest(&a, small);
    let second = ingest(&b, 2 * small);
    let growth = second.peak_kib.saturating_sub(first.peak_kib) * 1024;
    println!(
        "{small} tiny documents: peak {} KiB in {:.1} s; {}: peak {} KiB in {:.1} s; \
         {} bytes per extra document",
        first.peak_kib,
        first.seconds,
        2 * small,
        second.peak_kib,
        second.seconds,
        growth / small
    );
    check(&a, small);
    check(&b, 2 * small);
    assert!(
        growth <= BUDGET_PER_DOCUMENT * small,
        "the peak grew by {growth} bytes for {small} more documents ({} per document)",
        growth / small
    );
}

#[test]
fn tiny_documents_keep_the_peak_bounded() {
    peaks_grow_only_with_the_stored_documents(40_000);
}

#[test]
#[ignore = "10^6 documents: minutes; run by hand (see the module comment)"]
fn a_million_tiny_documents() {
    peaks_grow_only_with_the_stored_documents(support::env_u64("RATCHET_TINY_DOCS", 500_000));
}
