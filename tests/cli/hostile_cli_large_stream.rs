//! `ratchet ingest --jsonl -` under hostile streams, watched from /proc: memory stays bounded.
//!
//! - A large stream (100 MB of JSONL, generated on the fly into the child's stdin: 2,000
//!   documents rewritten 50 times each with rising versions, plus stale retries) is ingested
//!   with the peak resident set (VmHWM) far below the input size.
//! - One enormous line (160 MB with no newline, past the default 64 MiB `--max-line-bytes`)
//!   is rejected, naming the line and the limit, holding at most the limit of it in memory
//!   (peak well below the line's size), and the good lines around it are applied.
//! - A line with NUL bytes and one of invalid UTF-8 are rejected alone (complementing
//!   tests/cli_jsonl_contract.rs, which covers field errors, nesting and `--max-line-bytes`).
//!
//! `RATCHET_STREAM_MB` raises the size of the large stream (e.g. 200).

use crate::support;

use std::io::{Read, Write};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Peak resident set of a running process, in MiB (None once it has exited).
fn peak_rss_mib(child: &Child) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024)
}

struct Run {
    code: Option<i32>,
    stderr: String,
    peak_mib: u64,
    seconds: f64,
}

/// Runs `ratchet ingest` on `db`, streaming `feed`'s output into its stdin, sampling VmHWM.
fn ingest(db: &std::path::Path, feed: impl FnOnce(&mut dyn Write) + Send + 'static) -> Run {
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_ratchet"))
        .args([
            "ingest",
            "--db",
            db.to_str().expect("utf-8 path"),
            "--jsonl",
            "-",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ratchet");
    let mut stdin = child.stdin.take().expect("stdin");
    let feeder = std::thread::spawn(move || {
        let mut out = std::io::BufWriter::with_capacity(1 << 20, &mut stdin);
        feed(&mut out);
        let _ = out.flush();
    });
    let mut stderr = child.stderr.take().expect("stderr");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let mut peak = 0;
    let deadline = Instant::now() + Duration::from_secs(300);
    let status = loop {
        if let Some(mib) = peak_rss_mib(&child) {
            peak = peak.max(mib);
        }
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("ratchet ingest did not finish in 300 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    feeder.join().expect("feeder");
    let stderr = reader.join().expect("stderr");
    assert!(!stderr.contains("panicked"), "ratchet panicked: {stderr}");
    Run {
        code: status.code(),
        stderr,
        peak_mib: peak,
        seconds: started.elapsed().as_secs_f64(),
    }
}

fn line(id: usize, version: u64, pad: &str) -> String {
    let x = (id % 97) as f32 / 97.0;
    format!(
        r#"{{"op":"upsert","source":"s","id":"d{id}","version":{version},"chunks":[{{"text":"doc {id} v{version} {pad}","vector":[1,{x},0.5,0.25,-1,2,{x},3]}}]}}"#
    )
}

#[test]
fn a_large_stream_is_ingested_in_bounded_memory() {
    let megabytes = support::env_u64("RATCHET_STREAM_MB", 100);
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("stream.redb");
    let pad = "p".repeat(900);
    let target = megabytes << 20;
    let run = ingest(&db, move |out| {
        let (mut written, mut n) = (0u64, 0usize);
        while written < target {
            let id = n % 2000;
            let version = (n / 2000) as u64 + 1;
            // Every 10th line is a stale retry of the previous round: refused, not applied.
            let version = if n % 10 == 9 {
                version.saturating_sub(1).max(1)
            } else {
                version
            };
            let mut l = line(id, version, &pad);
            l.push('\n');
            if out.write_all(l.as_bytes()).is_err() {
                return;
            }
            written += l.len() as u64;
            n += 1;
        }
    });
    println!(
        "streamed {megabytes} MB of JSONL: exit {:?}, peak RSS {} MiB, {:.1} s",
        run.code, run.peak_mib, run.seconds
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(run.peak_mib > 0, "VmHWM was never read");
    let store = ratchetdb::Store::open(&db, ratchetdb::Options::default()).expect("open");
    assert_eq!(store.stats().expect("stats").documents, 2000);
    let d0 = store.get("s", "d0").expect("get").expect("d0");
    assert!(d0.version.value > 1, "rewritten: {:?}", d0.version);
    assert!(store.verify().expect("verify").is_ok());
    assert!(
        run.peak_mib < 300,
        "peak RSS {} MiB while streaming {megabytes} MB",
        run.peak_mib
    );
}

#[test]
fn an_enormous_line_is_rejected_without_being_held() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("huge-line.redb");
    let run = ingest(&db, |out| {
        let _ = out.write_all(format!("{}\n", line(1, 1, "first")).as_bytes());
        // 160 MB of one JSON string, no newline until the end.
        let _ = out.write_all(
            br#"{"op":"upsert","source":"s","id":"huge","version":1,"chunks":[{"text":""#,
        );
        let block = vec![b'a'; 1 << 20];
        for _ in 0..160 {
            if out.write_all(&block).is_err() {
                return;
            }
        }
        let _ = out.write_all(b"\",\"vector\":[1,0,0,0,0,0,0,1]}]}\n");
        let _ = out.write_all(
            b"{\"op\":\"upsert\",\"source\":\"s\",\"id\":\"nul\0\",\"version\":1,\"chunks\":[]}\n",
        );
        let _ = out.write_all(
            b"{\"op\":\"delete\",\"source\":\"s\xc3\x28\",\"id\":\"x\",\"version\":1}\n",
        );
        let _ = out.write_all(format!("{}\n", line(2, 1, "last")).as_bytes());
    });
    println!(
        "one 160 MB line: exit {:?}, peak RSS {} MiB, {:.1} s",
        run.code, run.peak_mib, run.seconds
    );
    assert_eq!(run.code, Some(3), "some lines rejected: {}", run.stderr);
    assert!(
        run.stderr.contains("line 2"),
        "names the huge line: {}",
        run.stderr
    );
    assert!(run.stderr.contains("--max-line-bytes"), "{}", run.stderr);
    assert!(
        run.stderr.contains("line 3"),
        "names the NUL line: {}",
        run.stderr
    );
    assert!(
        run.stderr.contains("line 4"),
        "names the bad UTF-8 line: {}",
        run.stderr
    );
    assert!(
        run.peak_mib < 120,
        "the huge line was held: peak RSS {} MiB",
        run.peak_mib
    );
    let store = ratchetdb::Store::open(&db, ratchetdb::Options::default()).expect("open");
    assert!(store.get("s", "d1").expect("get").is_some());
    assert!(
        store.get("s", "d2").expect("get").is_some(),
        "lines after it applied"
    );
    assert!(store.get("s", "huge").expect("get").is_none());
    assert!(store.verify().expect("verify").is_ok());
}
