//! Running the `ratchet` binary as a client does: a process with its stdin fed (or closed),
//! stdout and stderr collected, and a deadline after which it is killed and the test fails.

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What a run of the binary ended with.
pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// Runs the binary with `args`, after `configure` has set up the command (working directory,
/// environment), feeding `stdin` (or none), and killing it (and failing) after `timeout`.
/// Stdout must be UTF-8; stderr is read lossily.
pub fn run(
    args: &[&str],
    configure: impl FnOnce(&mut Command),
    stdin: Option<Vec<u8>>,
    timeout: Duration,
) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ratchet"));
    command.args(args);
    configure(&mut command);
    let mut child = command
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ratchet");
    let feeder = stdin.map(|bytes| {
        let mut pipe = child.stdin.take().expect("stdin");
        std::thread::spawn(move || {
            let _ = pipe.write_all(&bytes);
        })
    });
    let mut stdout = child.stdout.take().expect("stdout");
    let mut stderr = child.stderr.take().expect("stderr");
    let out = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = stdout.read_to_end(&mut s);
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = stderr.read_to_end(&mut s);
        s
    });
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("ratchet {args:?} did not finish within {timeout:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    if let Some(feeder) = feeder {
        feeder.join().expect("stdin feeder");
    }
    Run {
        code: status.code(),
        stdout: String::from_utf8(out.join().expect("stdout reader")).expect("utf-8 stdout"),
        stderr: String::from_utf8_lossy(&err.join().expect("stderr reader")).into_owned(),
    }
}

/// Fails the test if the run's stderr shows a panic.
pub fn assert_no_panic(run: &Run, args: &[&str]) {
    assert!(
        !run.stderr.contains("panicked"),
        "ratchet {args:?} panicked: {}",
        run.stderr
    );
}

/// `ratchet ingest --db DB DIR EXTRA...` with the hashing embedder (no `RATCHET_MODEL`),
/// given a minute; panics on a panic in the child, leaves the exit status to the caller.
pub fn ingest_folder(db: &std::path::Path, dir: &std::path::Path, extra: &[&str]) -> Run {
    let (db, dir) = (db.to_string_lossy(), dir.to_string_lossy());
    let mut args = vec!["ingest", "--db", db.as_ref(), dir.as_ref()];
    args.extend_from_slice(extra);
    ratchet_without_model(&args, Duration::from_secs(60))
}

/// `ratchet ARGS` with no `RATCHET_MODEL` (so no model is found unasked), killed and failed
/// after `timeout`; panics on a panic in the child, leaves the exit status to the caller.
pub fn ratchet_without_model(args: &[&str], timeout: Duration) -> Run {
    let out = run(
        args,
        |c| {
            c.env_remove("RATCHET_MODEL");
        },
        None,
        timeout,
    );
    assert_no_panic(&out, args);
    out
}

/// A store at `db` of the `width`-wide hashing embedder (the model the CLI records for it,
/// cosine) holding one-chunk documents `notes/d{i}` of `texts[i]`, version 1.
pub fn hashing_store(db: &std::path::Path, width: usize, texts: &[String]) -> ratchetdb::Store {
    use ratchetdb::{Chunk, Document, Embedder, HashingEmbedder, Metric, Options, Store, Version};
    let embedder = HashingEmbedder::new(width).expect("embedder");
    let store = Store::open(
        db,
        Options::default()
            .model(embedder.name())
            .dimension(width)
            .metric(Metric::Cosine),
    )
    .expect("create");
    for (d, text) in texts.iter().enumerate() {
        let vector = embedder.embed(text).expect("embed");
        store
            .upsert(
                Document::new("notes", format!("d{d}"), Version::number(1))
                    .with_chunk(Chunk::new(text.clone(), vector)),
            )
            .expect("write");
    }
    store
}

/// Adds the `width`-wide hashing embedder's space to `store` (named for it), fills it and
/// activates it, as `ratchet reembed --hashing WIDTH --activate` does.
pub fn fill_and_activate_hashing_space(store: &ratchetdb::Store, width: usize) {
    use ratchetdb::{Embedder, HashingEmbedder};
    let embedder = HashingEmbedder::new(width).expect("embedder");
    store
        .add_space(embedder.name(), embedder.name(), width)
        .expect("add");
    store
        .reembed(embedder.name(), &embedder, 8, &mut |_| {})
        .expect("reembed");
    store.activate(embedder.name()).expect("activate");
}

/// Writes `text` to `file` and sets its modification time to `secs` after the epoch (folder
/// ingest takes a file's version from it).
pub fn write_file_at(file: &std::path::Path, text: &str, secs: u64) {
    std::fs::write(file, text).expect("write");
    std::fs::File::options()
        .write(true)
        .open(file)
        .expect("open")
        .set_modified(std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(secs))
        .expect("set_modified");
}
