//! Readers in other processes beside a writer process, and the writer SIGKILLed.
//!
//! The test binary re-runs itself as children (told by `RATCHET_RW_ROLE`): a writer that
//! streams guarded commits (upserts that grow and shrink documents, deletes, stale
//! re-deliveries the guard refuses) as fast as it can, printing each acknowledgement with
//! the CLOCK_MONOTONIC time its commit returned; and three readers, each opened with
//! `Store::open_read_only`, that search for every live chunk, then `get` every document,
//! in a loop, printing what they saw with the time each read started, and `verify` now and
//! then. The parent checks every read against the writer's acknowledged history:
//! - a search holds each document whole, at one version (never a chunk of a superseded
//!   revision beside the live one), at a version the writer wrote as an upsert;
//! - nothing acknowledged before a read started is missing from it: a document is at
//!   least at the version of its last acknowledged write (no superseded hit);
//! - no document goes backwards between a reader's successive reads.
//!
//! Mid-stream the parent SIGKILLs the writer: the readers keep reading (the last commit)
//! and `verify` stays clean in each; a fresh read-only open is refused with
//! `NeedsRecovery` while no writer has recovered the file; a new writer process opens
//! it (recovering it), redelivers from the last acknowledgement on and finishes the
//! stream; `ratchet verify` beside it is clean; and every reader's reads after its last
//! commit show exactly the stream's final state, from an index that followed the
//! changelog (loaded, at the writer's last commit).

#![cfg(target_os = "linux")]

use ratchetdb::{Chunk, Document, Op, OpOutcome, Options, SearchOptions, Store, Version};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const ROLE: &str = "RATCHET_RW_ROLE";
const PATH: &str = "RATCHET_RW_PATH";
const FROM: &str = "RATCHET_RW_FROM";
const UNTIL: &str = "RATCHET_RW_UNTIL";
const DOCS: [&str; 8] = ["a", "b", "c", "d", "e", "f", "g", "h"];
const DIMENSION: usize = 4;
const READERS: usize = 3;

fn mono_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given, nothing else.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// What operation `i` of the stream does, before re-deliveries: document, version `i + 1`,
/// and a chunk count (0: a delete).
fn base(i: u64) -> (&'static str, u64, usize) {
    let doc = DOCS[((i * 7 + i / 3) % DOCS.len() as u64) as usize];
    let chunks = if i % 6 == 5 {
        0
    } else {
        1 + (i * 5 % 4) as usize
    };
    (doc, i + 1, chunks)
}

/// Operation `i`: every tenth re-delivers the operation five before it (stale by then, or
/// a duplicate: the guard refuses it).
fn op_spec(i: u64) -> (&'static str, u64, usize) {
    if i % 10 == 9 {
        base(i - 5)
    } else {
        base(i)
    }
}

fn op(i: u64) -> Op {
    let (doc, version, chunks) = op_spec(i);
    if chunks == 0 {
        return Op::Delete {
            source: "s".into(),
            id: doc.into(),
            version: Version::number(version),
        };
    }
    let mut d = Document::new("s", doc, Version::number(version));
    for c in 0..chunks {
        let vector = (0..DIMENSION)
            .map(|k| 1.0 + ((version * 13 + c as u64 * 5 + k as u64 * 3) % 17) as f32)
            .collect();
        d = d.with_chunk(Chunk::new(
            format!("{doc} v{version} c{c}/{chunks}"),
            vector,
        ));
    }
    Op::Upsert(d)
}

/// The writer child: operations FROM..UNTIL, one commit each, each acknowledgement printed
/// with the time its commit returned.
#[test]
fn writer_child() {
    if std::env::var(ROLE).as_deref() != Ok("writer") {
        return;
    }
    let path = std::env::var(PATH).expect("path");
    let from: u64 = std::env::var(FROM).expect("from").parse().expect("from");
    let until: u64 = std::env::var(UNTIL).expect("until").parse().expect("until");
    let store = Store::open(
        &path,
        Options::default().wait_for_lock(Duration::from_secs(10)),
    )
    .expect("writer: open");
    let mut out = std::io::stdout().lock();
    for i in from..until {
        let mut results = store.write_batch(vec![op(i)]).expect("writer: commit");
        let applied = match results.pop().expect("one outcome").expect("writer: op") {
            OpOutcome::Document(outcome) => outcome.skip_reason().is_none(),
            other => panic!("writer: {other:?}"),
        };
        writeln!(out, "ack {i} {} {}", u8::from(applied), mono_ns()).expect("stdout");
        out.flush().expect("flush");
    }
}

/// The reader child: search, get, sometimes verify, until the stop file appears.
#[test]
fn reader_child() {
    if std::env::var(ROLE).as_deref() != Ok("reader") {
        return;
    }
    let path = std::env::var(PATH).expect("path");
    let stop = format!("{path}.stop");
    let store = Store::open_read_only(&path).expect("reader: open");
    let query = vec![1.0; DIMENSION];
    let mut out = std::io::stdout().lock();
    let mut iteration = 0u64;
    while !Path::new(&stop).exists() {
        iteration += 1;
        let started = mono_ns();
        let hits = match store.search(&query, 1000, &SearchOptions::default()) {
            Ok(hits) => hits,
            Err(e) => {
                writeln!(out, "fail search: {e}").expect("stdout");
                continue;
            }
        };
        // Each document's hits: one version, every chunk once.
        let mut seen: BTreeMap<String, (u64, usize, Vec<usize>)> = BTreeMap::new();
        for hit in &hits {
            let mut words = hit.text.split(' ');
            let (doc, version, chunk) = (words.next(), words.next(), words.next());
            let version: u64 = version.and_then(|v| v[1..].parse().ok()).expect("version");
            let (c, n) = chunk.and_then(|c| c[1..].split_once('/')).expect("chunk");
            let (c, n): (usize, usize) = (c.parse().expect("c"), n.parse().expect("n"));
            assert_eq!(doc, Some(hit.id.as_str()));
            let entry = seen
                .entry(hit.id.clone())
                .or_insert((version, n, Vec::new()));
            if entry.0 != version || entry.1 != n || hit.version != Version::number(version) {
                writeln!(out, "fail mixed revisions of {}: {hits:?}", hit.id).expect("stdout");
            }
            entry.2.push(c);
        }
        for (doc, (_, n, chunks)) in &mut seen {
            chunks.sort_unstable();
            if *chunks != (0..*n).collect::<Vec<_>>() {
                writeln!(out, "fail incomplete {doc}: {chunks:?} of {n}").expect("stdout");
            }
        }
        let mut line = format!("read {started}");
        for doc in DOCS {
            let searched = seen
                .get(doc)
                .map_or_else(|| "-".to_string(), |(v, _, _)| v.to_string());
            let (got, deleted) = match store.get("s", doc) {
                Ok(Some(stored)) => (stored.version.value, stored.deleted),
                Ok(None) => (0, false),
                Err(e) => {
                    writeln!(out, "fail get: {e}").expect("stdout");
                    (0, false)
                }
            };
            line.push_str(&format!(
                " {doc}={searched}/{got}{}",
                if deleted { "d" } else { "l" }
            ));
        }
        writeln!(out, "{line}").expect("stdout");
        if iteration.is_multiple_of(10) {
            let verified = mono_ns();
            match store.verify() {
                Ok(report) if report.is_ok() => writeln!(out, "verify ok {verified}"),
                Ok(report) => writeln!(out, "fail verify: {:?}", report.violations),
                Err(e) => writeln!(out, "fail verify: {e}"),
            }
            .expect("stdout");
        }
        out.flush().expect("flush");
        std::thread::sleep(Duration::from_millis(1));
    }
    let info = store.index_info();
    writeln!(out, "index {} {}", info.loaded, info.applied_commit).expect("stdout");
}

/// A child process and the lines it has printed so far.
struct Spawned {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
    collector: Option<std::thread::JoinHandle<()>>,
}

fn spawn(role: &str, path: &Path, range: (u64, u64)) -> Spawned {
    // The child test's name inside the themed test binary: its module path less the crate.
    let module = module_path!()
        .split_once("::")
        .map_or("", |(_, module)| module);
    let test = format!("{module}::{role}_child");
    let mut child = Command::new(std::env::current_exe().expect("current exe"))
        .args(["--exact", &test, "--nocapture", "--test-threads=1"])
        .env(ROLE, role)
        .env(PATH, path)
        .env(FROM, range.0.to_string())
        .env(UNTIL, range.1.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn a child");
    let stdout = child.stdout.take().expect("stdout");
    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink = lines.clone();
    let collector = std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        let mut line = String::new();
        while reader.read_line(&mut line).unwrap_or(0) > 0 {
            // A line cut by a kill has no newline: nobody saw it.
            if let Some(whole) = line.strip_suffix('\n') {
                sink.lock().unwrap().push(whole.to_string());
            }
            line.clear();
        }
    });
    Spawned {
        child,
        lines,
        collector: Some(collector),
    }
}

impl Spawned {
    fn finish(mut self) -> Vec<String> {
        let status = self.child.wait().expect("wait");
        if let Some(collector) = self.collector.take() {
            collector.join().expect("collector");
        }
        assert!(status.success(), "a child failed: {status:?}");
        std::mem::take(&mut *self.lines.lock().unwrap())
    }

    fn kill(mut self) -> Vec<String> {
        self.child.kill().expect("SIGKILL");
        let _ = self.child.wait();
        if let Some(collector) = self.collector.take() {
            collector.join().expect("collector");
        }
        std::mem::take(&mut *self.lines.lock().unwrap())
    }

    fn acks(&self) -> usize {
        self.lines.lock().unwrap().len()
    }
}

/// An acknowledged operation: its index, whether the guard applied it, and when.
struct Ack {
    index: u64,
    applied: bool,
    at: u64,
}

/// What follows `tag` in a child's line. The test harness prints `test NAME ... ` before
/// the child's first line, without a newline, so the tag may not start the line.
fn tagged<'a>(line: &'a str, tag: &str) -> Option<&'a str> {
    line.find(tag).map(|at| &line[at + tag.len()..])
}

fn parse_acks(lines: &[String]) -> Vec<Ack> {
    lines
        .iter()
        .filter_map(|l| tagged(l, "ack "))
        .map(|l| {
            let parts: Vec<&str> = l.split(' ').collect();
            Ack {
                index: parts[0].parse().unwrap(),
                applied: parts[1] == "1",
                at: parts[2].parse().unwrap(),
            }
        })
        .collect()
}

/// One reader's read: when it started, and per document (search version or none, get
/// version, get says deleted).
struct Read {
    at: u64,
    docs: Vec<(Option<u64>, u64, bool)>,
}

fn parse_read(line: &str) -> Read {
    let mut parts = line.split(' ');
    let at = parts.next().unwrap().parse().unwrap();
    let docs = parts
        .map(|part| {
            let (_, state) = part.split_once('=').unwrap();
            let (searched, got) = state.split_once('/').unwrap();
            let deleted = got.ends_with('d');
            let got: u64 = got[..got.len() - 1].parse().unwrap();
            (searched.parse().ok(), got, deleted)
        })
        .collect();
    Read { at, docs }
}

fn ratchet_verify(path: &Path) -> (Option<i32>, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_ratchet"))
        .args(["verify", "--db", path.to_str().unwrap()])
        .output()
        .expect("ratchet verify");
    (
        output.status.code(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ),
    )
}

#[test]
fn readers_follow_a_streaming_writer_through_its_sigkill_and_the_next_writer() {
    if std::env::var(ROLE).is_ok() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.redb");
    drop(Store::open(&path, Options::default().dimension(DIMENSION)).unwrap());
    let readers: Vec<Spawned> = (0..READERS)
        .map(|_| spawn("reader", &path, (0, 0)))
        .collect();

    // The first writer streams until it is killed.
    let first = spawn("writer", &path, (0, 1_000_000));
    let deadline = Instant::now() + Duration::from_secs(60);
    while first.acks() < 300 {
        assert!(Instant::now() < deadline, "the first writer is too slow");
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(200));
    let first_lines = first.kill();
    let killed_at = mono_ns();
    let first_acks = parse_acks(&first_lines);
    let resume = first_acks.last().map_or(0, |a| a.index + 1);

    // No writer: the readers go on; a fresh read-only open (which does not recover unless
    // asked; `ratchet verify` would) is refused, saying why.
    std::thread::sleep(Duration::from_millis(700));
    let said = match ratchetdb::Store::open_read_only(&path) {
        Err(error @ ratchetdb::OpenError::NeedsRecovery { .. }) => error.to_string(),
        other => panic!("a fresh read-only open after the kill: {:?}", other.err()),
    };
    assert!(said.contains("stopped without closing it"), "{said}");
    let second_started = mono_ns();

    // The next writer recovers the file, redelivers from the last acknowledgement (the
    // commit in flight at the kill may have landed: then it is refused as a duplicate).
    let until = resume + 400;
    let second = spawn("writer", &path, (resume, until));
    while second.acks() < 50 {
        assert!(
            Instant::now() < deadline + Duration::from_secs(60),
            "the second writer is too slow"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let (code, said) = ratchet_verify(&path);
    assert_eq!(
        code,
        Some(0),
        "ratchet verify beside the new writer: {said}"
    );
    let second_acks = parse_acks(&second.finish());
    assert_eq!(second_acks.len() as u64, until - resume);
    let final_ack = second_acks.last().unwrap().at;
    std::thread::sleep(Duration::from_millis(300));
    std::fs::write(format!("{}.stop", path.display()), b"").unwrap();
    let reader_lines: Vec<Vec<String>> = readers.into_iter().map(Spawned::finish).collect();

    // The acknowledged history: per document, (time, version) of every applied write.
    let mut history: BTreeMap<&str, Vec<(u64, u64)>> = BTreeMap::new();
    for ack in first_acks.iter().chain(&second_acks) {
        if ack.applied {
            let (doc, version, _) = op_spec(ack.index);
            history.entry(doc).or_default().push((ack.at, version));
        }
    }
    for writes in history.values_mut() {
        writes.sort_unstable();
    }
    let last_acknowledged = |doc: &str, before: u64| -> Option<u64> {
        history
            .get(doc)?
            .iter()
            .filter(|(at, _)| *at < before)
            .map(|(_, version)| *version)
            .max()
    };
    // The final state: the last write of every document in the stream up to `until`.
    let mut final_state: BTreeMap<&str, (u64, usize)> = BTreeMap::new();
    for i in 0..until {
        let (doc, version, chunks) = op_spec(i);
        if final_state.get(doc).is_none_or(|(v, _)| *v < version) {
            final_state.insert(doc, (version, chunks));
        }
    }

    let mut total_reads = 0;
    for (r, lines) in reader_lines.iter().enumerate() {
        let failures: Vec<&String> = lines.iter().filter(|l| l.contains("fail ")).collect();
        assert!(failures.is_empty(), "reader {r}: {failures:?}");
        let reads: Vec<Read> = lines
            .iter()
            .filter(|l| !l.starts_with("fail"))
            .filter_map(|l| tagged(l, "read "))
            .map(parse_read)
            .collect();
        total_reads += reads.len();
        let mut previous: Vec<(Option<u64>, u64)> = vec![(None, 0); DOCS.len()];
        for read in &reads {
            for (k, &(searched, got, deleted)) in read.docs.iter().enumerate() {
                let doc = DOCS[k];
                let context = format!("reader {r}, read at {}, document {doc}", read.at);
                if let Some(version) = searched {
                    // A version the writer wrote as this document's upsert.
                    let (written, v, chunks) = base(version - 1);
                    assert!(
                        written == doc && v == version && chunks > 0,
                        "{context}: v{version} was never written"
                    );
                    assert!(
                        got >= version,
                        "{context}: get v{got} after search v{version}"
                    );
                }
                // Nothing acknowledged before the read is missing from it.
                if let Some(acknowledged) = last_acknowledged(doc, read.at) {
                    match searched {
                        Some(version) => assert!(
                            version >= acknowledged,
                            "{context}: search returned v{version}, superseded by acknowledged v{acknowledged}"
                        ),
                        // Absent: deleted at or after the acknowledged write.
                        None => assert!(
                            got > acknowledged || (got == acknowledged && deleted),
                            "{context}: absent, but v{acknowledged} was acknowledged (get: v{got})"
                        ),
                    }
                }
                // Never backwards between successive reads.
                let (before_searched, before_got) = previous[k];
                if let (Some(before), Some(now)) = (before_searched, searched) {
                    assert!(
                        now >= before,
                        "{context}: search went back from v{before} to v{now}"
                    );
                }
                if let (Some(before), None) = (before_searched, searched) {
                    assert!(
                        got > before,
                        "{context}: v{before} vanished without a newer delete"
                    );
                }
                assert!(
                    got >= before_got,
                    "{context}: get went back from v{before_got} to v{got}"
                );
                previous[k] = (searched, got);
            }
        }
        // It kept reading, and verifying clean, while no writer had the file.
        assert!(
            reads
                .iter()
                .any(|read| read.at > killed_at && read.at < second_started),
            "reader {r} did not read while no writer had the file"
        );
        let verified_between = lines
            .iter()
            .filter_map(|l| tagged(l, "verify ok "))
            .filter_map(|t| t.parse::<u64>().ok())
            .any(|t| t > killed_at && t < second_started);
        assert!(
            verified_between,
            "reader {r} did not verify clean after the kill"
        );
        // It followed the next writer to the end of the stream.
        let last = reads.last().expect("reads");
        assert!(
            last.at > final_ack,
            "reader {r} stopped before the last commit"
        );
        for (k, &(searched, got, deleted)) in last.docs.iter().enumerate() {
            let doc = DOCS[k];
            let (version, chunks) = final_state[doc];
            assert_eq!(got, version, "reader {r}: {doc} at the end");
            assert_eq!(deleted, chunks == 0, "reader {r}: {doc} at the end");
            assert_eq!(
                searched,
                (chunks > 0).then_some(version),
                "reader {r}: {doc} at the end"
            );
        }
        let index = lines
            .iter()
            .rev()
            .find_map(|l| tagged(l, "index "))
            .expect("index line");
        assert!(
            index.starts_with("true "),
            "reader {r}: the index never loaded: {index}"
        );
    }
    // The final check of the file: a fresh read-only open, no writer.
    let (code, said) = ratchet_verify(&path);
    assert_eq!(code, Some(0), "{said}");
    eprintln!(
        "{} acknowledged before the kill, {} after; {total_reads} reads by {READERS} readers",
        first_acks.len(),
        second_acks.len()
    );
}
