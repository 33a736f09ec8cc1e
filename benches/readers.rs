//! Readers in other processes beside a writer process: what each costs the other, and how
//! soon a reader sees a commit. A harness of its own (processes, not criterion's loop): the
//! bench binary re-runs itself as children (told by `RB_ROLE`), on one store of 1,024
//! documents of 8 chunks (384-d vectors, about 1 KB of text each; 8,192 vectors, below the
//! ANN graph's threshold, so searches scan the index's vectors exactly: every process would
//! otherwise rebuild a graph the ingest phases keep outdating, which on this 2-core VM took
//! 90 s per process and would have measured that instead).
//!
//! Each round measures, one after the other, for `RB_SECONDS` (default 3) each:
//! - `search, writer idle`: one reader process's searches per second (k = 10, a new
//!   snapshot each, brought up to date with the writer's changelog first), while a writer
//!   process has the file open and writes nothing;
//! - `ingest, no readers`: the writer's rate, 32 documents per durable commit (revisions of
//!   the same 1,024 documents, so the live set stays the same size), with no reader open;
//! - `ingest + search`: both at once: the writer's rate beside one searching reader, and
//!   that reader's searches per second while the writer ingests at full speed;
//! - `ingest, exclusive`: the writer's rate with `Options::allow_readers(false)` (redb's
//!   `ExclusiveWriter`: 1-phase commits, no reader can open the file), for what letting
//!   readers in (`SingleWriter`: 2-phase commits) costs a writer alone.
//!
//! Then commit → visibility: a writer process commits a new revision of one probe document
//! every 5–25 ms (80 of them), and two reader processes poll, one with `get`, one with a
//! search whose top hit is the probe; each notes the CLOCK_MONOTONIC time it first sees a
//! revision, against the time the writer's commit returned (negative: seen before the
//! writer's `commit` had returned, i.e. between the header write and the end of its fsync).
//!
//! Medians over `RB_ROUNDS` rounds (default 5), ratios of the medians from the same run.

use ratchetdb::{Chunk, Document, Op, Options, SearchOptions, Store, Version};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

mod common;

const ROLE: &str = "RB_ROLE";
const DB: &str = "RB_DB";
const SECONDS: &str = "RB_SECONDS";
const BASE: &str = "RB_VERSION_BASE";
const EXCLUSIVE: &str = "RB_EXCLUSIVE";
const INITIAL_DOCS: u64 = 1024;
const CYCLE_DOCS: u64 = 1024;
const BATCH: u64 = 32;
const PROBES: u64 = 80;

fn mono_ns() -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given, nothing else.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Waits for the parent's `go` line on stdin (after this child printed `ready`).
fn ready_then_wait() {
    println!("ready");
    std::io::stdout().flush().expect("stdout");
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).expect("stdin");
}

fn probe_vector() -> Vec<f32> {
    (0..common::DIMENSION)
        .map(|d| if d % 7 == 0 { 1.0 } else { 0.0 })
        .collect()
}

fn child(role: &str) {
    let db = PathBuf::from(std::env::var(DB).expect("db"));
    let seconds = Duration::from_secs(env_u64(SECONDS, 3));
    let base = env_u64(BASE, 0);
    match role {
        "search" => {
            let store = Store::open_read_only(&db).expect("reader: open");
            assert!(store.wait_for_index(Duration::from_secs(600)), "index load");
            let queries: Vec<Vec<f32>> = (0..64).map(|q| common::vector(9_000_000 + q)).collect();
            ready_then_wait();
            let started = Instant::now();
            let mut n = 0usize;
            while started.elapsed() < seconds {
                let hits = store
                    .search(&queries[n % queries.len()], 10, &SearchOptions::default())
                    .expect("search");
                assert_eq!(hits.len(), 10);
                n += 1;
            }
            println!("searches {} {}", n, started.elapsed().as_secs_f64());
        }
        "ingest" | "idle" => {
            let options = Options::default().allow_readers(std::env::var(EXCLUSIVE).is_err());
            let store = Store::open(&db, options).expect("writer: open");
            // Its index loaded first, so that loading is not counted in either measure.
            assert!(store.wait_for_index(Duration::from_secs(600)), "index load");
            ready_then_wait();
            let started = Instant::now();
            let mut written = 0u64;
            if role == "idle" {
                std::thread::sleep(seconds);
            } else {
                while started.elapsed() < seconds {
                    let ops = (written..written + BATCH)
                        .map(|i| Op::Upsert(common::document(i % CYCLE_DOCS, base + i)))
                        .collect();
                    for result in store.write_batch(ops).expect("commit") {
                        result.expect("write");
                    }
                    written += BATCH;
                }
            }
            println!("docs {} {}", written, started.elapsed().as_secs_f64());
        }
        "probe" => {
            let store = Store::open(&db, Options::default()).expect("probe writer: open");
            assert!(store.wait_for_index(Duration::from_secs(600)), "index load");
            ready_then_wait();
            let mut seed = base;
            for p in 1..=PROBES {
                std::thread::sleep(Duration::from_millis(5 + common::splitmix(&mut seed) % 21));
                let doc = Document::new("probe", "p", Version::number(base + p))
                    .with_chunk(Chunk::new(format!("probe {p}"), probe_vector()));
                store.upsert(doc).expect("probe");
                println!("commit {} {}", base + p, mono_ns());
            }
        }
        "watch-get" | "watch-search" => {
            let store = Store::open_read_only(&db).expect("watcher: open");
            assert!(store.wait_for_index(Duration::from_secs(600)), "index load");
            let query = probe_vector();
            ready_then_wait();
            let mut last = 0u64;
            let deadline = Instant::now() + Duration::from_secs(60);
            while last < base + PROBES && Instant::now() < deadline {
                let version = if role == "watch-get" {
                    store
                        .get("probe", "p")
                        .expect("get")
                        .map_or(0, |d| d.version.value)
                } else {
                    store
                        .search(&query, 1, &SearchOptions::default())
                        .expect("search")
                        .first()
                        .filter(|hit| hit.source == "probe")
                        .map_or(0, |hit| hit.version.value)
                };
                if version > last {
                    let at = mono_ns();
                    println!("seen {version} {at}");
                    last = version;
                }
            }
        }
        other => panic!("unknown role {other}"),
    }
}

/// A child process, its stdin (for `go`) and the lines it printed.
struct Proc {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<std::process::ChildStdout>,
}

fn spawn(role: &str, db: &Path, envs: &[(&str, String)]) -> Proc {
    let mut command = Command::new(std::env::current_exe().expect("current exe"));
    command
        .env(ROLE, role)
        .env(DB, db)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    for (k, v) in envs {
        command.env(k, v);
    }
    let mut child = command.spawn().expect("spawn");
    let stdin = child.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    stdout.read_line(&mut line).expect("ready");
    assert_eq!(line.trim(), "ready", "{role} did not start");
    Proc {
        child,
        stdin,
        stdout,
    }
}

impl Proc {
    fn go(&mut self) {
        writeln!(self.stdin, "go").expect("go");
    }

    /// Every line it prints until it exits.
    fn finish(mut self) -> Vec<String> {
        let lines: Vec<String> = self.stdout.lines().map(|l| l.expect("line")).collect();
        assert!(self.child.wait().expect("wait").success(), "a child failed");
        lines
    }
}

/// `docs N SECONDS` or `searches N SECONDS` → per second.
fn rate(lines: &[String]) -> f64 {
    let parts: Vec<&str> = lines.last().expect("result").split(' ').collect();
    parts[1].parse::<f64>().expect("n") / parts[2].parse::<f64>().expect("seconds")
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(|a, b| a.total_cmp(b));
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

fn percentile(values: &mut [f64], p: f64) -> f64 {
    values.sort_by(|a, b| a.total_cmp(b));
    values[((values.len() - 1) as f64 * p).round() as usize]
}

/// Latencies (ms) from each commit to the watcher first seeing it, or a later revision.
fn latencies(commits: &[String], seen: &[String]) -> Vec<f64> {
    let parse = |lines: &[String], tag: &str| -> Vec<(u64, i64)> {
        lines
            .iter()
            .filter_map(|l| l.strip_prefix(tag))
            .map(|l| {
                let (v, t) = l.split_once(' ').expect("pair");
                (v.parse().expect("version"), t.parse().expect("time"))
            })
            .collect()
    };
    let seen = parse(seen, "seen ");
    parse(commits, "commit ")
        .into_iter()
        .filter_map(|(version, committed)| {
            seen.iter()
                .find(|(v, _)| *v >= version)
                .map(|(_, at)| (at - committed) as f64 / 1e6)
        })
        .collect()
}

fn main() {
    if let Ok(role) = std::env::var(ROLE) {
        child(&role);
        return;
    }
    // `cargo bench` passes `--bench`; a filter that names nothing here skips the run.
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    if filter.as_deref().is_some_and(|f| !"readers".contains(f)) {
        return;
    }
    let rounds = env_u64("RB_ROUNDS", 5) as usize;
    let seconds = env_u64(SECONDS, 3);
    let dir = tempfile::tempdir_in(std::env::var("RB_DIR").unwrap_or_else(|_| ".".into()))
        .expect("tempdir");
    let db = dir.path().join("readers.redb");
    {
        let setup = Instant::now();
        let store = Store::open(&db, Options::default()).expect("open");
        for start in (0..INITIAL_DOCS).step_by(128) {
            let ops = (start..start + 128)
                .map(|i| Op::Upsert(common::document(i, 1)))
                .collect();
            for result in store.write_batch(ops).expect("commit") {
                result.expect("write");
            }
        }
        assert!(store.wait_for_index(Duration::from_secs(600)), "index");
        println!(
            "setup: {INITIAL_DOCS} documents written in {:.1} s",
            setup.elapsed().as_secs_f64()
        );
    }
    let mut version_base = 1_000u64;
    let mut next_base = || {
        version_base += 100_000_000;
        version_base.to_string()
    };
    let secs = seconds.to_string();
    let (mut qps_idle, mut qps_busy, mut alone, mut beside, mut exclusive) =
        (vec![], vec![], vec![], vec![], vec![]);
    for round in 0..rounds {
        // Search beside an idle writer.
        let mut writer = spawn("idle", &db, &[(SECONDS, secs.clone())]);
        let mut reader = spawn("search", &db, &[(SECONDS, secs.clone())]);
        writer.go();
        reader.go();
        qps_idle.push(rate(&reader.finish()));
        writer.finish();
        // Ingest alone.
        let mut writer = spawn(
            "ingest",
            &db,
            &[(SECONDS, secs.clone()), (BASE, next_base())],
        );
        writer.go();
        alone.push(rate(&writer.finish()));
        // Both at once.
        let mut writer = spawn(
            "ingest",
            &db,
            &[(SECONDS, secs.clone()), (BASE, next_base())],
        );
        let mut reader = spawn("search", &db, &[(SECONDS, secs.clone())]);
        writer.go();
        reader.go();
        qps_busy.push(rate(&reader.finish()));
        beside.push(rate(&writer.finish()));
        // Ingest alone, exclusive.
        let mut writer = spawn(
            "ingest",
            &db,
            &[
                (SECONDS, secs.clone()),
                (BASE, next_base()),
                (EXCLUSIVE, "1".into()),
            ],
        );
        writer.go();
        exclusive.push(rate(&writer.finish()));
        println!(
            "round {round}: search/s idle {:.0} busy {:.0}; docs/s alone {:.0} beside a reader {:.0} exclusive {:.0}",
            qps_idle[round], qps_busy[round], alone[round], beside[round], exclusive[round]
        );
    }
    let base = next_base();
    let mut probe = spawn("probe", &db, &[(BASE, base.clone())]);
    let mut get = spawn("watch-get", &db, &[(BASE, base.clone())]);
    let mut search = spawn("watch-search", &db, &[(BASE, base)]);
    get.go();
    search.go();
    probe.go();
    let commits = probe.finish();
    let mut get_ms = latencies(&commits, &get.finish());
    let mut search_ms = latencies(&commits, &search.finish());

    let (qi, qb) = (median(&mut qps_idle), median(&mut qps_busy));
    let (a, b, e) = (
        median(&mut alone),
        median(&mut beside),
        median(&mut exclusive),
    );
    println!();
    println!("medians of {rounds} rounds of {seconds} s:");
    println!("| measure | median | ratio |");
    println!("|---|---:|---:|");
    println!("| reader searches/s, writer idle | {qi:.0} | 1 |");
    println!(
        "| reader searches/s, writer ingesting | {qb:.0} | {:.2} |",
        qb / qi
    );
    println!("| writer docs/s, no reader (SingleWriter) | {a:.0} | 1 |");
    println!(
        "| writer docs/s, one reader searching | {b:.0} | {:.2} |",
        b / a
    );
    println!(
        "| writer docs/s, exclusive (no readers possible) | {e:.0} | {:.2} |",
        e / a
    );
    println!();
    println!(
        "commit -> visible in another process ({} and {} of {PROBES} probes seen):",
        get_ms.len(),
        search_ms.len()
    );
    println!("| reader | median ms | p90 ms | max ms |");
    println!("|---|---:|---:|---:|");
    for (name, values) in [("get", &mut get_ms), ("search (top hit)", &mut search_ms)] {
        if values.is_empty() {
            println!("| {name} | - | - | - |");
            continue;
        }
        let max = values.iter().copied().fold(f64::MIN, f64::max);
        println!(
            "| {name} | {:.2} | {:.2} | {max:.2} |",
            median(values),
            percentile(values, 0.9)
        );
    }
}
