//! I6 durability and I3/I4 atomicity under SIGKILL: a real process, a real file, real fsync.
//!
//! The test binary re-runs itself as a child (`--exact child_ingests_the_stream`, told by
//! `RATCHET_KILL_CHILD`) that ingests a deterministic stream of upserts (new, unchanged,
//! shrinking and growing revisions), deletes, retains and stale re-deliveries through the
//! concurrent `Writer` from three producer threads, `Durability::Immediate`, printing each
//! acknowledged operation (flushed per line). The parent SIGKILLs it after a random 0–60 ms,
//! reopens the file and checks:
//! - `verify()` is clean (completeness, generations, vectors, counters);
//! - every acknowledged operation's effect is there (the stored version is at least the
//!   acknowledged one, and at the same version the same content or tombstone), across every
//!   kill the file has been through;
//! - every document is exactly one of its delivered revisions or tombstones, never a mix;
//! - the derived ANN index agrees with the rows (I5): a search for more hits than there are
//!   live chunks returns exactly the live chunks;
//!
//! and after the last kill of a file it redelivers the whole stream (at-least-once) and checks
//! the live documents equal the reference model's. Each file goes through three kills (each
//! child redelivers the stream from the start, as a restarted pipeline would).
//!
//! `RATCHET_KILLS` sets the number of kills (default 100), `RATCHET_KILL_SEED` replays a run
//! (the seed is printed, and named in every failure).

use crate::support;

use ratchetdb::testkit::{content_of, harness_doc, store_rows, verify_clean, Model, SplitMix64};
use ratchetdb::{Op, OpOutcome, OpenError, Options, Outcome, SearchOptions, Store, Version};
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const CHILD_PATH: &str = "RATCHET_KILL_CHILD";
const CHILD_SEED: &str = "RATCHET_KILL_CHILD_SEED";
const SOURCES: [&str; 2] = ["wiki", "docs"];
const IDS: [&str; 6] = ["a", "b", "c", "d", "e", "f"];
const STREAM_OPS: usize = 40;
const KILLS_PER_FILE: u32 = 3;

/// The stream of a file: every new event carries a fresh, higher version, so the final state
/// does not depend on the order concurrent producers commit in; re-deliveries repeat an
/// earlier operation exactly.
fn stream(seed: u64) -> Vec<Op> {
    let mut rng = SplitMix64::new(seed);
    let mut ops: Vec<Op> = Vec::new();
    // The last (chunks, variant) upserted per document, to send unchanged revisions.
    let mut last: std::collections::HashMap<(usize, usize), (usize, u64)> = Default::default();
    let mut version = 1;
    while ops.len() < STREAM_OPS {
        let s = rng.below(2) as usize;
        let i = rng.below(IDS.len() as u64) as usize;
        let roll = rng.below(100);
        let op = if roll < 60 {
            let (chunks, variant) = match last.get(&(s, i)) {
                Some(&previous) if rng.one_in(5) => previous,
                _ => (1 + rng.below(4) as usize, rng.below(1000)),
            };
            last.insert((s, i), (chunks, variant));
            Op::Upsert(harness_doc(SOURCES[s], IDS[i], version, chunks, variant))
        } else if roll < 72 && !ops.is_empty() {
            // A stale re-delivery of an earlier operation.
            let earlier = rng.below(ops.len() as u64) as usize;
            ops.push(ops[earlier].clone());
            continue;
        } else if roll < 88 {
            Op::Delete {
                source: SOURCES[s].into(),
                id: IDS[i].into(),
                version: Version::number(version),
            }
        } else {
            Op::Retain {
                source: SOURCES[s].into(),
                present: IDS
                    .iter()
                    .filter(|_| !rng.one_in(3))
                    .map(|id| id.to_string())
                    .collect(),
                version: Version::number(version),
            }
        };
        version += 1;
        ops.push(op);
    }
    ops
}

/// The child: ingest the stream through the concurrent writer, print each acknowledgement.
#[test]
fn child_ingests_the_stream() {
    let (Ok(path), Ok(seed)) = (std::env::var(CHILD_PATH), std::env::var(CHILD_SEED)) else {
        return; // Not a child: nothing to do in the normal test run.
    };
    let seed: u64 = seed.parse().expect("seed");
    let ops = stream(seed);
    let store = Store::open(&path, Options::default()).expect("child: open");
    let writer = store.writer();
    let next = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..3 {
            scope.spawn(|| loop {
                let index = next.fetch_add(1, Ordering::SeqCst);
                let Some(op) = ops.get(index) else { break };
                let outcome = writer
                    .submit(op.clone())
                    .and_then(|pending| pending.wait())
                    .expect("child: write");
                let tag = match outcome {
                    OpOutcome::Document(Outcome::Skipped { .. }) => "skipped",
                    OpOutcome::Retain(r) if r.skipped.is_some() => "skipped",
                    _ => "applied",
                };
                let mut out = std::io::stdout().lock();
                writeln!(out, "ack {index} {tag}").expect("stdout");
                out.flush().expect("flush");
            });
        }
    });
    writer.shutdown();
}

/// An acknowledged operation: its index in the stream, and whether it was applied.
type Ack = (usize, bool);

/// Runs a child on `path` and kills it after `delay`. The acknowledgements it printed, and
/// whether the kill interrupted it (rather than finding it done).
fn run_child(path: &Path, seed: u64, delay: Duration) -> (Vec<Ack>, bool) {
    // The child test's name inside this themed binary: its module path less the crate.
    let child_test = format!(
        "{}::child_ingests_the_stream",
        module_path!()
            .split_once("::")
            .map_or("", |(_, module)| module)
    );
    let mut child = Command::new(std::env::current_exe().expect("current exe"))
        .args([
            "--exact",
            child_test.as_str(),
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_PATH, path)
        .env(CHILD_SEED, seed.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the child");
    let stdout = child.stdout.take().expect("stdout");
    let reader = std::thread::spawn(move || {
        let mut acks = Vec::new();
        let mut reader = BufReader::new(stdout);
        let mut line = String::new();
        while reader.read_line(&mut line).unwrap_or(0) > 0 {
            // A line cut by the kill has no newline: not an acknowledgement anyone saw.
            if let Some(rest) = line.strip_suffix('\n').and_then(|l| l.strip_prefix("ack ")) {
                let mut parts = rest.split(' ');
                let index = parts
                    .next()
                    .and_then(|i| i.parse().ok())
                    .expect("ack index");
                acks.push((index, parts.next() == Some("applied")));
            }
            line.clear();
        }
        acks
    });
    std::thread::sleep(delay);
    let interrupted = child.try_wait().expect("try_wait").is_none();
    child.kill().expect("SIGKILL"); // SIGKILL on Unix.
    let status = child.wait().expect("wait");
    let acks = reader.join().expect("reader");
    if !interrupted {
        assert!(status.success(), "the child failed on its own: {status:?}");
    }
    (acks, interrupted)
}

/// Opens the file a killed child had open. The kernel may release a SIGKILLed process's file
/// locks a moment after `wait` returns (observed here: `Locked` with no lock left in
/// /proc/locks by the time of the report), so a `Locked` is retried for up to two seconds.
fn open_after_kill(path: &Path, options: Options) -> Result<Store, OpenError> {
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        match Store::open(path, options.clone()) {
            Err(OpenError::Locked { .. }) if Instant::now() < deadline => {
                LOCKED_RETRIES.fetch_add(1, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(5));
            }
            other => return other,
        }
    }
}

static LOCKED_RETRIES: AtomicUsize = AtomicUsize::new(0);

/// For a failure report: the POSIX/OFD locks on `path` and the processes holding them.
fn lock_holders(path: &Path) -> String {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::metadata(path) else {
        return "no file".into();
    };
    let inode = format!(":{}", meta.ino());
    let locks = std::fs::read_to_string("/proc/locks").unwrap_or_default();
    let mut out = format!("locks on inode {}:\n", meta.ino());
    for line in locks.lines().filter(|l| l.contains(&inode)) {
        let pid = line.split_whitespace().nth(4).unwrap_or("?");
        let cmd = std::fs::read_to_string(format!("/proc/{pid}/cmdline"))
            .unwrap_or_default()
            .replace('\0', " ");
        out.push_str(&format!(
            "  {line}  [{cmd}] (we are {})\n",
            std::process::id()
        ));
    }
    out
}

fn check_after_kill(store: &Store, ops: &[Op], acked: &BTreeSet<Ack>, context: &str) {
    verify_clean(store).unwrap_or_else(|e| panic!("{context}: {e}"));
    let rows = store_rows(store).unwrap_or_else(|e| panic!("{context}: {e}"));
    let row = |source: &str, id: &str| rows.get(&(source.to_string(), id.to_string()));
    // Every acknowledged effect is there.
    for &(index, applied) in acked {
        let op = &ops[index];
        match op {
            Op::Upsert(doc) => {
                let stored = row(&doc.source, &doc.id);
                if applied {
                    let stored = stored.unwrap_or_else(|| {
                        panic!("{context}: acknowledged op {index} {op:?} is missing")
                    });
                    let chunks: Vec<_> = doc
                        .chunks
                        .iter()
                        .map(|c| (c.text.clone(), c.meta.clone()))
                        .collect();
                    assert!(
                        stored.version > doc.version.value
                            || (stored.version == doc.version.value
                                && !stored.deleted
                                && stored.content == content_of(&doc.meta, &chunks)),
                        "{context}: acknowledged op {index} (upsert {}/{} v{}) lost: stored {stored:?}",
                        doc.source,
                        doc.id,
                        doc.version.value
                    );
                } else if let Some(stored) = stored {
                    assert!(stored.version >= doc.version.value, "{context}: op {index}");
                }
            }
            Op::Delete {
                source,
                id,
                version,
            } => {
                let stored = row(source, id);
                if applied {
                    let stored = stored.unwrap_or_else(|| {
                        panic!("{context}: acknowledged delete {index} is missing")
                    });
                    assert!(
                        stored.version > version.value
                            || (stored.version == version.value && stored.deleted),
                        "{context}: acknowledged delete {index} lost: stored {stored:?}"
                    );
                } else if let Some(stored) = stored {
                    assert!(stored.version >= version.value, "{context}: op {index}");
                }
            }
            Op::Retain {
                source,
                present,
                version,
            } => {
                if applied {
                    for ((s, id), stored) in &rows {
                        if s == source && !present.contains(id) {
                            assert!(
                                stored.version > version.value
                                    || (stored.version == version.value && stored.deleted),
                                "{context}: acknowledged retain {index} lost for {s}/{id}: {stored:?}"
                            );
                        }
                    }
                }
            }
            _ => unreachable!(),
        }
    }
    // I5: what a search can return is exactly the live chunks (k above their number).
    let snapshot = store.snapshot().expect("snapshot");
    let mut live_chunks = BTreeSet::new();
    for doc in snapshot.documents(false).expect("documents") {
        let doc = doc.expect("document");
        for chunk in &doc.chunks {
            live_chunks.insert((
                doc.source.clone(),
                doc.id.clone(),
                chunk.position,
                chunk.text.clone(),
            ));
        }
    }
    assert!(
        store.wait_for_index(Duration::from_secs(30)),
        "{context}: index load"
    );
    if let Some(dimension) = store.dimension() {
        let hits = store
            .search(
                &vec![1.0; dimension],
                live_chunks.len() + 5,
                &SearchOptions::default(),
            )
            .unwrap_or_else(|e| panic!("{context}: search: {e}"));
        let found: BTreeSet<_> = hits
            .into_iter()
            .map(|h| (h.source, h.id, h.position, h.text))
            .collect();
        assert_eq!(
            found, live_chunks,
            "{context}: the index disagrees with the rows (I5)"
        );
    }
    // Every document is exactly one delivered revision or tombstone.
    for ((source, id), stored) in &rows {
        let delivered = ops.iter().any(|op| match op {
            Op::Upsert(doc) => {
                let chunks: Vec<_> = doc
                    .chunks
                    .iter()
                    .map(|c| (c.text.clone(), c.meta.clone()))
                    .collect();
                !stored.deleted
                    && doc.source == *source
                    && doc.id == *id
                    && doc.version.value == stored.version
                    && content_of(&doc.meta, &chunks) == stored.content
            }
            Op::Delete {
                source: s,
                id: i,
                version,
            } => stored.deleted && s == source && i == id && version.value == stored.version,
            Op::Retain {
                source: s,
                present,
                version,
            } => {
                stored.deleted
                    && s == source
                    && !present.contains(id)
                    && version.value == stored.version
            }
            _ => false,
        });
        assert!(
            delivered,
            "{context}: {source}/{id} holds {stored:?}, which no delivery carried (a mix?)"
        );
    }
}

#[test]
fn sigkilled_writer_loses_nothing_acknowledged() {
    if std::env::var(CHILD_PATH).is_ok() {
        return;
    }
    let seed = support::seed("RATCHET_KILL_SEED");
    let kills_wanted = support::env_u64("RATCHET_KILLS", 100);
    eprintln!("process kill: RATCHET_KILL_SEED={seed} RATCHET_KILLS={kills_wanted}");
    let mut rng = SplitMix64::new(seed);
    let dir = tempfile::tempdir().expect("tempdir");
    let started = Instant::now();
    let (mut kills, mut cycles, mut files, mut acked_total, mut during_create) = (0, 0, 0, 0, 0);
    let mut attempts = 0;
    while kills < kills_wanted {
        attempts += 1;
        assert!(
            attempts < kills_wanted * 10,
            "the child keeps finishing before the kill"
        );
        files += 1;
        let file_seed = rng.next_u64();
        let context = |cycle: u32| {
            format!(
                "RATCHET_KILL_SEED={seed}, file {files} (stream seed {file_seed}), kill {cycle}"
            )
        };
        let ops = stream(file_seed);
        let path = dir.path().join(format!("kill-{files}.redb"));
        let mut acked: BTreeSet<Ack> = BTreeSet::new();
        for cycle in 0..KILLS_PER_FILE {
            let delay = Duration::from_millis(rng.below(61));
            let (acks, interrupted) = run_child(&path, file_seed, delay);
            cycles += 1;
            kills += u64::from(interrupted);
            acked_total += acks.len();
            acked.extend(acks);
            let store = match open_after_kill(&path, Options::default().must_exist()) {
                Ok(store) => store,
                // Killed before the file existed.
                Err(OpenError::NotFound { .. }) if acked.is_empty() => continue,
                // Killed while redb created the file, before it wrote its magic number (last,
                // on purpose): nothing was ever stored; the leftover is refused, not reused.
                Err(e @ OpenError::NotAStore { .. }) if acked.is_empty() => {
                    assert!(e.to_string().contains("creation was interrupted"), "{e}");
                    std::fs::remove_file(&path).expect("remove the leftover");
                    during_create += 1;
                    continue;
                }
                Err(e) => panic!(
                    "{}: reopening after SIGKILL failed: {e}\n{}",
                    context(cycle),
                    lock_holders(&path)
                ),
            };
            check_after_kill(&store, &ops, &acked, &context(cycle));
        }
        // At-least-once: the whole stream again, in order, then the model's state.
        let store = match open_after_kill(&path, Options::default()) {
            Ok(store) => store,
            Err(e) => panic!(
                "{}: reopening failed: {e}\n{}",
                context(KILLS_PER_FILE),
                lock_holders(&path)
            ),
        };
        let mut model = Model::new();
        for op in &ops {
            model.apply(op).expect("model");
        }
        for chunk in ops.chunks(16) {
            for result in store.write_batch(chunk.to_vec()).expect("redelivery") {
                result.expect("redelivered op");
            }
        }
        verify_clean(&store).unwrap_or_else(|e| panic!("{}: {e}", context(KILLS_PER_FILE)));
        let rows = store_rows(&store).expect("rows");
        let live: std::collections::BTreeMap<_, _> = rows
            .iter()
            .filter(|(_, r)| !r.deleted)
            .map(|(k, r)| (k.clone(), (r.version, r.content.clone())))
            .collect();
        assert_eq!(
            live,
            model.live(),
            "{}: after redelivering the stream the live documents differ from the model",
            context(KILLS_PER_FILE)
        );
    }
    println!(
        "process kill: seed {seed}: {kills} SIGKILLs of a running child ({cycles} children, \
         {files} files, {during_create} killed while creating the file), {acked_total} \
         acknowledgements checked, {} reopens retried on a lock not yet released, in {:.1} s",
        LOCKED_RETRIES.load(Ordering::Relaxed),
        started.elapsed().as_secs_f64()
    );
}
