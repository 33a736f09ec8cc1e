//! SIGKILL through the real command line (issue 18): the kill tests before drove the
//! library's `Writer`; this one kills `ratchet ingest --jsonl --report` and folder
//! `ratchet ingest --sync` at random moments, scaled to the measured length of an
//! uninterrupted run, and after every kill checks that
//! - `verify` is clean (the store opens after the crash, every invariant holds);
//! - every line `--report` printed (acknowledged) is durable: the document is stored at that
//!   line's version or a newer one;
//! - no document holds a mix of revisions (every chunk carries its revision's marker, and the
//!   document has exactly that revision's chunks);
//! - redelivering the whole input converges on the uninterrupted run's export.
//!
//! Kills per run: `RATCHET_CLI_KILLS` (default 100, split 60 JSONL / 40 folder); only kills
//! that landed while the process was still running count. `RATCHET_KILL_SEED` fixes the
//! random schedule (the seed is printed).

use ratchetdb::{Options, Store, StoredDocument};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

/// A small deterministic generator (xorshift), seeded per run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A fraction in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn ratchet() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ratchet"));
    command.env_remove("RATCHET_MODEL");
    command
}

/// Runs `command` to completion, failing on anything but exit 0.
fn run_to_completion(mut command: Command) -> Duration {
    let started = Instant::now();
    let out = command
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .expect("run ratchet");
    assert!(
        out.status.success(),
        "{:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    started.elapsed()
}

/// Starts `command`, kills it (SIGKILL) after `delay`, and returns its stdout up to the kill
/// and whether the kill landed while it ran.
fn kill_after(mut command: Command, delay: Duration) -> (Vec<u8>, bool) {
    let mut child: Child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn ratchet");
    let mut stdout = child.stdout.take().expect("stdout");
    let reader = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = stdout.read_to_end(&mut bytes);
        bytes
    });
    let deadline = Instant::now() + delay;
    let mut landed = true;
    while Instant::now() < deadline {
        if child.try_wait().expect("wait").is_some() {
            landed = false;
            break;
        }
        std::thread::sleep(Duration::from_millis(1).min(deadline - Instant::now()));
    }
    if landed {
        landed = child.try_wait().expect("wait").is_none();
        let _ = child.kill();
    }
    let status = child.wait().expect("wait");
    if !landed {
        assert!(status.success(), "an uninterrupted run failed: {status:?}");
    }
    (reader.join().expect("stdout reader"), landed)
}

/// A document as compared across runs: everything but the generation stamp (which counts
/// commits, so it depends on how the writes were batched).
fn comparable(document: &StoredDocument) -> String {
    let chunks: Vec<_> = document
        .chunks
        .iter()
        .map(|c| (c.position, c.text.clone(), c.meta.clone(), c.vector.clone()))
        .collect();
    format!(
        "{}/{} {:?} deleted={} {} {} {:?}",
        document.source,
        document.id,
        document.version,
        document.deleted,
        document.content_hash,
        document.meta,
        chunks
    )
}

/// The store's export (vectors included), comparable.
fn export(db: &Path) -> Vec<String> {
    let store = Store::open(db, Options::default().must_exist()).expect("open");
    let snapshot = store.snapshot().expect("snapshot");
    snapshot
        .documents(true)
        .expect("documents")
        .map(|d| comparable(&d.expect("document")))
        .collect()
}

/// Every document after a kill: the store opens, verifies clean, and each live document is
/// one revision whole (`marker` extracts a chunk's revision from its text).
fn check_after_kill(
    db: &Path,
    marker: impl Fn(&str) -> Option<u64>,
) -> BTreeMap<(String, String), StoredDocument> {
    let store = Store::open(db, Options::default().must_exist()).expect("open after a kill");
    let report = store.verify().expect("verify");
    assert!(
        report.is_ok(),
        "verify after a kill: {:?}",
        report.violations
    );
    let mut documents = BTreeMap::new();
    for document in store.snapshot().unwrap().documents(false).unwrap() {
        let document = document.expect("document");
        if !document.deleted {
            let revisions: Vec<Option<u64>> =
                document.chunks.iter().map(|c| marker(&c.text)).collect();
            assert!(
                !revisions.is_empty()
                    && revisions.iter().all(|r| r.is_some() && *r == revisions[0]),
                "{}/{} holds a mix of revisions: {revisions:?}",
                document.source,
                document.id
            );
        }
        documents.insert((document.source.clone(), document.id.clone()), document);
    }
    documents
}

/// The median of three uninterrupted runs: what the kill moments are scaled to.
fn median_length(mut run: impl FnMut(usize) -> Duration) -> Duration {
    let mut lengths: Vec<Duration> = (0..3).map(&mut run).collect();
    lengths.sort();
    lengths[1]
}

fn kills_wanted() -> (usize, usize) {
    let total: usize = std::env::var("RATCHET_CLI_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100)
        .max(2);
    let jsonl = total * 3 / 5;
    (jsonl, total - jsonl)
}

fn seed() -> u64 {
    let seed = std::env::var("RATCHET_KILL_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        })
        | 1;
    eprintln!("RATCHET_KILL_SEED={seed}");
    seed
}

// ----------------------------------------------------------------------------------------
// JSONL.

const DOCS: u64 = 24;
const REVISIONS: u64 = 6;

/// The stream: every document revised REVISIONS times with rising versions, interleaved,
/// with some stale retries and deletes; each chunk says its document, revision and count.
fn jsonl_stream() -> Vec<u8> {
    let mut out = String::new();
    for version in 1..=REVISIONS {
        for doc in 0..DOCS {
            let chunks = 1 + (doc + version) % 4;
            let chunk_lines: Vec<String> = (0..chunks)
                .map(|c| {
                    let x = ((doc * 7 + version * 3 + c) % 11) as f32 / 11.0;
                    format!(
                        r#"{{"text":"d{doc} v{version} c{c}/{chunks}","vector":[1,{x},0.5,-0.25]}}"#
                    )
                })
                .collect();
            if doc % 5 == 4 && version == REVISIONS - 1 {
                out.push_str(&format!(
                    r#"{{"op":"delete","source":"s","id":"d{doc}","version":{version}}}"#
                ));
            } else {
                out.push_str(&format!(
                    r#"{{"op":"upsert","source":"s","id":"d{doc}","version":{version},"meta":{{"v":{version}}},"chunks":[{}]}}"#,
                    chunk_lines.join(",")
                ));
            }
            out.push('\n');
            if (doc + version) % 7 == 0 && version > 1 {
                // A stale retry of the previous revision.
                let stale = version - 1;
                out.push_str(&format!(
                    r#"{{"op":"upsert","source":"s","id":"d{doc}","version":{stale},"chunks":[{{"text":"d{doc} v{stale} c0/1","vector":[1,0,0,0]}}]}}"#
                ));
                out.push('\n');
            }
        }
    }
    out.into_bytes()
}

/// `ratchet ingest --jsonl FILE --report` into `db`, small batches so that commits (and
/// acknowledgements) come all through the run.
fn jsonl_command(db: &Path, input: &Path) -> Command {
    let mut command = ratchet();
    command.args([
        "ingest",
        "--db",
        db.to_str().unwrap(),
        "--jsonl",
        input.to_str().unwrap(),
        "--report",
        "--batch-size",
        "4",
    ]);
    command
}

/// The revision in a chunk text `d3 v5 c0/2`, when the text is whole (`c/n` with n chunks).
fn jsonl_marker(text: &str) -> Option<u64> {
    let mut parts = text.split(' ');
    let _doc = parts.next()?;
    parts.next()?.strip_prefix('v')?.parse().ok()
}

/// Every acknowledged line of a report is durable: its document is stored at that line's
/// version or newer.
fn check_acknowledged(
    report: &[u8],
    versions: &[(u64, u64)],
    stored: &BTreeMap<(String, String), StoredDocument>,
) -> usize {
    let text = String::from_utf8_lossy(report);
    let mut checked = 0;
    // The last line may have been cut by the kill: only whole lines count.
    for line in text.split_inclusive('\n').filter(|l| l.ends_with('\n')) {
        let value: serde_json::Value = serde_json::from_str(line).expect("report line");
        let Some(outcome) = value["outcome"].as_str() else {
            panic!("a rejected line in the report: {line}");
        };
        let number = value["line"].as_u64().expect("line number") as usize;
        let (doc, version) = versions[number - 1];
        let key = ("s".to_string(), format!("d{doc}"));
        let document = stored.get(&key).unwrap_or_else(|| {
            panic!("line {number} ({outcome}) was acknowledged but d{doc} is not stored")
        });
        assert!(
            document.version.value >= version,
            "line {number} ({outcome}, version {version}) acknowledged, but d{doc} is at {:?}",
            document.version
        );
        checked += 1;
    }
    checked
}

#[test]
fn sigkill_through_the_command_line_loses_nothing_acknowledged() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(seed());
    let (jsonl_kills, folder_kills) = kills_wanted();
    let started = Instant::now();

    // JSONL: the stream, and what each line is (document, version).
    let input = dir.path().join("stream.jsonl");
    let stream = jsonl_stream();
    File::create(&input).unwrap().write_all(&stream).unwrap();
    let versions: Vec<(u64, u64)> = String::from_utf8(stream)
        .unwrap()
        .lines()
        .map(|line| {
            let value: serde_json::Value = serde_json::from_str(line).unwrap();
            let doc = value["id"].as_str().unwrap()[1..].parse().unwrap();
            (doc, value["version"].as_u64().unwrap())
        })
        .collect();
    let reference_db = dir.path().join("reference.redb");
    run_to_completion(jsonl_command(&reference_db, &input));
    let reference = export(&reference_db);
    let length = median_length(|n| {
        let db = dir.path().join(format!("timing-{n}.redb"));
        let took = run_to_completion(jsonl_command(&db, &input));
        std::fs::remove_file(db).ok();
        took
    });
    let (mut kills, mut attempts, mut acknowledged) = (0, 0, 0);
    while kills < jsonl_kills {
        attempts += 1;
        assert!(
            attempts < jsonl_kills * 4,
            "too few kills landed: {kills} of {attempts}"
        );
        let db = dir.path().join(format!("jsonl-{attempts}.redb"));
        let delay = length.mul_f64(rng.unit() * 1.1);
        let (report, landed) = kill_after(jsonl_command(&db, &input), delay);
        if !landed {
            std::fs::remove_file(&db).ok();
            continue;
        }
        kills += 1;
        if db.exists() {
            let stored = check_after_kill(&db, jsonl_marker);
            for ((_, id), document) in stored.iter().filter(|(_, d)| !d.deleted) {
                let n = document.chunks.len();
                for chunk in &document.chunks {
                    let whole = format!("{id} v{} c{}/{n}", document.version.value, chunk.position);
                    assert_eq!(chunk.text, whole, "a chunk of another revision");
                }
            }
            acknowledged += check_acknowledged(&report, &versions, &stored);
        }
        run_to_completion(jsonl_command(&db, &input));
        assert_eq!(
            export(&db),
            reference,
            "redelivery after kill {kills} did not converge"
        );
        std::fs::remove_file(&db).ok();
    }
    eprintln!(
        "jsonl: {kills} kills ({attempts} attempts) over a {length:?} run, {acknowledged} acknowledged lines checked"
    );

    // Folders with --sync.
    let base_db = dir.path().join("base.redb");
    let before = dir.path().join("before");
    let after = dir.path().join("after");
    write_folder(&before, 0);
    write_folder(&after, 1);
    let folder = |db: &Path, root: &Path| {
        let mut command = ratchet();
        command.args([
            "ingest",
            "--db",
            db.to_str().unwrap(),
            root.to_str().unwrap(),
            "--source",
            "notes",
            "--sync",
            "--batch-size",
            "3",
        ]);
        command
    };
    run_to_completion(folder(&base_db, &before));
    let reference_db = dir.path().join("folder-reference.redb");
    std::fs::copy(&base_db, &reference_db).unwrap();
    run_to_completion(folder(&reference_db, &after));
    let reference = export(&reference_db);
    let length = median_length(|n| {
        let db = dir.path().join(format!("folder-timing-{n}.redb"));
        std::fs::copy(&base_db, &db).unwrap();
        let took = run_to_completion(folder(&db, &after));
        std::fs::remove_file(db).ok();
        took
    });
    let (mut kills, mut attempts) = (0, 0);
    while kills < folder_kills {
        attempts += 1;
        assert!(
            attempts < folder_kills * 4,
            "too few kills landed: {kills} of {attempts}"
        );
        let db = dir.path().join(format!("folder-{attempts}.redb"));
        std::fs::copy(&base_db, &db).unwrap();
        let delay = length.mul_f64(rng.unit() * 1.1);
        let (_, landed) = kill_after(folder(&db, &after), delay);
        if !landed {
            std::fs::remove_file(&db).ok();
            continue;
        }
        kills += 1;
        check_after_kill(&db, folder_marker);
        run_to_completion(folder(&db, &after));
        assert_eq!(
            export(&db),
            reference,
            "redelivery after kill {kills} did not converge"
        );
        std::fs::remove_file(&db).ok();
    }
    eprintln!(
        "folder --sync: {kills} kills ({attempts} attempts) over a {length:?} run; all in {:?}",
        started.elapsed()
    );
}

// ----------------------------------------------------------------------------------------
// Folders.

const FILES: u64 = 30;

/// A folder of `FILES` Markdown files at revision `rev`: in the second revision a third of the
/// files changed, a sixth are gone, and a few are new. Every paragraph carries its file's
/// revision, and every file a fixed modification time per revision.
fn write_folder(root: &Path, rev: u64) {
    std::fs::create_dir_all(root).unwrap();
    for file in 0..FILES + 4 {
        let exists = match rev {
            0 => file < FILES,
            _ => file % 6 != 5,
        };
        if !exists {
            continue;
        }
        let changed = rev == 1 && (file % 3 == 0 || file >= FILES);
        let revision = if changed { 1 } else { 0 };
        let paragraphs: Vec<String> = (0..3 + file % 4)
            .map(|p| {
                format!(
                    "file {file} rev{revision} paragraph {p}: {}",
                    "words about the subject ".repeat(4 + ((file + p) % 5) as usize)
                )
            })
            .collect();
        let path: PathBuf = root.join(format!("note-{file:02}.md"));
        std::fs::write(&path, paragraphs.join("\n\n")).unwrap();
        let modified =
            SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000 + revision * 1000 + file);
        File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(modified)
            .unwrap();
    }
}

/// The revision in a chunk of a note (`… rev1 paragraph …`).
fn folder_marker(text: &str) -> Option<u64> {
    let at = text.find(" rev")?;
    text[at + 4..].chars().next()?.to_digit(10).map(u64::from)
}
