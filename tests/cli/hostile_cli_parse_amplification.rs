//! Regression (issue 18, defect 5): memory amplification below the line limit. A 64 MiB line
//! under the default limit cost ~16 times its size before it was refused: 1.07 GiB for a
//! `meta` of 22M `{}`, 967 MiB for a `retain` with 16.7M ids, 1.74 GiB for three such lines.
//! The limits are now enforced while parsing (metadata size and depth as the store counts
//! them, counts, and a memory budget of 4 × the line's length + 1 MiB), so the peak resident
//! set stays within a small multiple of the line limit: the line itself (at most the limit),
//! plus at most 4 × its length + 1 MiB parsed, plus the allocator's slack. Three such lines
//! (and a good line after them, which is applied) peaked at 294 MiB here; the test allows
//! 6 × 64 MiB.

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const LINE_LIMIT: u64 = 64 << 20;

/// Peak resident set of a running process, in MiB (None once it has exited).
fn peak_rss_mib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024)
}

/// A line of `prefix`, `count` times `item` joined by commas, and `suffix`.
fn write_line(out: &mut dyn Write, prefix: &str, item: &str, count: usize, suffix: &str) {
    out.write_all(prefix.as_bytes()).unwrap();
    let block: String = std::iter::repeat_n(format!("{item},"), 4096).collect();
    let mut left = count;
    while left > 1 {
        let n = (left - 1).min(4096);
        out.write_all(&block.as_bytes()[..n * (item.len() + 1)])
            .unwrap();
        left -= n;
    }
    out.write_all(item.as_bytes()).unwrap();
    out.write_all(suffix.as_bytes()).unwrap();
    out.write_all(b"\n").unwrap();
}

#[test]
fn lines_that_amplify_are_refused_in_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store.redb");
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_ratchet"))
        .args([
            "ingest",
            "--db",
            db.to_str().unwrap(),
            "--jsonl",
            "-",
            "--report",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ratchet");
    let mut stdin = child.stdin.take().unwrap();
    let feeder = std::thread::spawn(move || {
        let mut out = std::io::BufWriter::with_capacity(1 << 20, &mut stdin);
        // 22M empty objects: 66 MB.
        write_line(
            &mut out,
            r#"{"op":"upsert","source":"s","id":"objects","version":1,"chunks":[],"meta":["#,
            "{}",
            22_000_000,
            "]}",
        );
        // 16.7M one-letter ids: 66.8 MB.
        write_line(
            &mut out,
            r#"{"op":"retain","source":"s","version":1,"ids":["#,
            r#""a""#,
            16_700_000,
            "]}",
        );
        // 33M zeros in a chunk's metadata: 66 MB.
        write_line(
            &mut out,
            r#"{"op":"upsert","source":"s","id":"zeros","version":1,"chunks":[{"text":"t","vector":[1,0],"meta":{"k":["#,
            "0",
            33_000_000,
            "]}}]}",
        );
        out.write_all(br#"{"op":"upsert","source":"s","id":"good","version":1,"chunks":[{"text":"fine","vector":[1,0]}]}"#)
            .unwrap();
        out.write_all(b"\n").unwrap();
        out.flush().unwrap();
    });
    let mut stdout = child.stdout.take().unwrap();
    let out_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let mut stderr = child.stderr.take().unwrap();
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let mut peak = 0;
    let status = loop {
        if let Some(mib) = peak_rss_mib(child.id()) {
            peak = peak.max(mib);
        }
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "ratchet did not finish"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    feeder.join().unwrap();
    let report = out_reader.join().unwrap();
    let stderr = err_reader.join().unwrap();
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(status.code(), Some(3), "{stderr}");
    let lines: Vec<serde_json::Value> = report
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 4, "{report}");
    assert_eq!(lines[0]["field"], "meta", "{}", lines[0]);
    assert!(lines[0]["error"]
        .as_str()
        .unwrap()
        .contains("the limit is 65536"));
    assert_eq!(lines[1]["line"], 2);
    assert!(
        lines[1]["error"]
            .as_str()
            .unwrap()
            .contains("bytes of memory once parsed"),
        "{}",
        lines[1]
    );
    assert_eq!(lines[2]["field"], "chunks[0].meta", "{}", lines[2]);
    assert_eq!(lines[3]["outcome"], "written", "{}", lines[3]);
    eprintln!(
        "three ~64 MiB amplifying lines refused in {:.1}s, peak RSS {peak} MiB",
        started.elapsed().as_secs_f64()
    );
    assert!(peak > 0, "VmHWM was never read");
    let bound = 6 * LINE_LIMIT / (1 << 20);
    assert!(peak < bound, "peak RSS {peak} MiB, bound {bound} MiB");
}
