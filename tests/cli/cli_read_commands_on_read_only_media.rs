//! `ratchet search`, `stats`, `export` and `verify` open the store read-only: they work on
//! a `chmod 444` file in a `chmod 555` directory and on a read-only mount, and after every
//! one of them the file's bytes and modification time, and the directory's files, are
//! unchanged (before, every open rewrote the header, and `verify` turned an empty file into
//! a 72 KiB store). A missing, empty or older-schema file gets an error saying what to do,
//! and stays as it was; `ingest` on a read-only file says it cannot write and names the
//! commands that can read it.
//!
//! Root bypasses file permissions, so as root the permission case runs the commands with
//! `CAP_DAC_OVERRIDE` and `CAP_DAC_READ_SEARCH` dropped (`setpriv`); the mount case needs
//! root (a private mount namespace: `unshare -m`, a read-only bind mount) and is skipped,
//! saying so, without it.

use ratchetdb::{Chunk, Document, Options, Store, Version};
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

const RATCHET: &str = env!("CARGO_BIN_EXE_ratchet");

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs `program args`, killed (and the test failed) after a minute.
fn run(program: &str, args: &[&str]) -> Run {
    let child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {program}: {e}"));
    let pid = child.id();
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(child.wait_with_output());
    });
    let output = match finished.recv_timeout(Duration::from_secs(60)) {
        Ok(output) => output.expect("wait"),
        Err(_) => {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            panic!("{program} {args:?} did not finish within a minute");
        }
    };
    Run {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .map(|s| {
            s.lines()
                .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"))
        })
        .unwrap_or(false)
}

fn have(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Every file in `dir` with its bytes and modification time.
fn fingerprint(dir: &Path) -> BTreeMap<String, (Vec<u8>, SystemTime)> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                (
                    std::fs::read(e.path()).unwrap(),
                    e.metadata().unwrap().modified().unwrap(),
                ),
            )
        })
        .collect()
}

fn make_store(path: &Path) {
    let store = Store::open(path, Options::default().dimension(3)).unwrap();
    for i in 0..20u64 {
        let doc = Document::new("s", format!("d{i}"), Version::number(1))
            .with_chunk(Chunk::new(format!("chunk {i} a"), vec![1.0, i as f32, 2.0]))
            .with_chunk(Chunk::new(format!("chunk {i} b"), vec![2.0, 1.0, i as f32]));
        store.upsert(doc).unwrap();
    }
    store.delete("s", "d3", Version::number(2)).unwrap();
}

/// Runs every read command through `wrap` (a program and its leading arguments, or none)
/// on `db`, which lives in `dir`, checking each succeeds and leaves `dir` unchanged.
fn read_commands_leave_everything(wrap: &[&str], dir: &Path, db: &str, case: &str) {
    let commands: [&[&str]; 6] = [
        &["stats", "--db", db],
        &["stats", "--db", db, "--json"],
        &["export", "--db", db],
        &["verify", "--db", db],
        &["search", "--db", db, "--vector", "[1,2,3]", "-k", "3"],
        &[
            "search", "--db", db, "--vector", "[1,2,3]", "-k", "3", "--exact",
        ],
    ];
    for command in commands {
        let before = fingerprint(dir);
        let mut args: Vec<&str> = wrap.iter().skip(1).copied().collect();
        if !wrap.is_empty() {
            args.push(RATCHET);
        }
        args.extend_from_slice(command);
        let program = wrap.first().copied().unwrap_or(RATCHET);
        let run = run(program, &args);
        assert_eq!(
            run.code,
            Some(0),
            "{case}: ratchet {command:?}: stdout {} stderr {}",
            run.stdout,
            run.stderr
        );
        match command[0] {
            "verify" => assert!(
                run.stdout.starts_with("ok: 19 documents, 1 tombstone,"),
                "{case}: {}",
                run.stdout
            ),
            "export" => assert_eq!(run.stdout.lines().count(), 20, "{case}: {}", run.stdout),
            "search" => assert!(run.stdout.contains("3 hits"), "{case}: {}", run.stdout),
            _ => assert!(run.stdout.contains("19"), "{case}: {}", run.stdout),
        }
        let after = fingerprint(dir);
        assert_eq!(
            after.keys().collect::<Vec<_>>(),
            before.keys().collect::<Vec<_>>(),
            "{case}: ratchet {command:?} changed the directory's files"
        );
        for (name, (bytes, mtime)) in &before {
            assert!(
                after[name].0 == *bytes,
                "{case}: ratchet {command:?} changed {name}'s bytes"
            );
            assert_eq!(
                after[name].1, *mtime,
                "{case}: ratchet {command:?} changed {name}'s mtime"
            );
        }
    }
}

#[test]
fn read_commands_change_nothing_on_a_writable_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.redb");
    make_store(&path);
    read_commands_leave_everything(&[], dir.path(), path.to_str().unwrap(), "writable file");
}

#[test]
fn read_commands_work_on_a_read_only_file_in_a_read_only_directory() {
    let dir = tempfile::tempdir().unwrap();
    let store_dir = dir.path().join("store");
    std::fs::create_dir(&store_dir).unwrap();
    let path = store_dir.join("db.redb");
    make_store(&path);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
    std::fs::set_permissions(&store_dir, std::fs::Permissions::from_mode(0o555)).unwrap();
    let wrap: &[&str] = if is_root() {
        assert!(
            have("setpriv"),
            "running as root needs setpriv to drop CAP_DAC_OVERRIDE"
        );
        &[
            "setpriv",
            "--bounding-set=-dac_override,-dac_read_search",
            "--",
        ]
    } else {
        &[]
    };
    let db = path.to_str().unwrap();
    // The permissions hold for the commands: a writer is refused, saying how to read.
    let mut ingest: Vec<&str> = wrap.iter().skip(1).copied().collect();
    if !wrap.is_empty() {
        ingest.push(RATCHET);
    }
    ingest.extend_from_slice(&["ingest", "--db", db, "--jsonl", "/dev/null"]);
    let refused = run(wrap.first().copied().unwrap_or(RATCHET), &ingest);
    assert_eq!(refused.code, Some(1), "{}", refused.stderr);
    assert!(
        refused.stderr.contains("cannot be opened for writing")
            && refused.stderr.contains("open_read_only"),
        "{}",
        refused.stderr
    );
    read_commands_leave_everything(wrap, &store_dir, db, "chmod 444 file, 555 directory");
    std::fs::set_permissions(&store_dir, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn read_commands_work_on_a_read_only_mount() {
    if !is_root() || !have("unshare") {
        eprintln!("skipped: a read-only bind mount needs root and unshare(1)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("source");
    let mount = dir.path().join("mount");
    std::fs::create_dir(&source).unwrap();
    std::fs::create_dir(&mount).unwrap();
    make_store(&source.join("db.redb"));
    // A private mount namespace per command: the read-only bind mount exists for that
    // command alone, and goes away with it.
    let script = format!(
        "mount --make-rprivate / && mount --bind '{}' '{}' && mount -o remount,ro,bind '{}' && exec \"$@\"",
        source.display(),
        mount.display(),
        mount.display()
    );
    let probe = run(
        "unshare",
        &[
            "-m",
            "sh",
            "-c",
            &script,
            "sh",
            "sh",
            "-c",
            &format!("touch '{}/x'", mount.display()),
        ],
    );
    if probe.code == Some(0) || !probe.stderr.contains("Read-only file system") {
        eprintln!(
            "skipped: could not make a read-only bind mount here ({}{})",
            probe.stdout, probe.stderr
        );
        return;
    }
    let db = mount.join("db.redb");
    let db = db.to_str().unwrap();
    let wrap = ["unshare", "-m", "sh", "-c", script.as_str(), "sh"];
    let mut ingest: Vec<&str> = wrap[1..].to_vec();
    ingest.extend_from_slice(&[RATCHET, "ingest", "--db", db, "--jsonl", "/dev/null"]);
    let refused = run("unshare", &ingest);
    assert_eq!(refused.code, Some(1), "{}", refused.stderr);
    assert!(
        refused.stderr.contains("Read-only file system")
            && refused.stderr.contains("open_read_only"),
        "{}",
        refused.stderr
    );
    // The commands read the file through the mount; its bytes are the source's.
    read_commands_leave_everything(&wrap, &source, db, "read-only mount");
}

#[test]
fn missing_empty_and_older_files_get_an_error_saying_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.redb");
    let empty = dir.path().join("empty.redb");
    std::fs::write(&empty, b"").unwrap();
    let older = dir.path().join("older.redb");
    std::fs::copy(
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/schema2-store.redb"
        ),
        &older,
    )
    .unwrap();
    let before = fingerprint(dir.path());
    let cases = [
        (&missing, "no database at"),
        (&empty, "is an empty file, not a ratchetdb store"),
        (&older, "has schema version 2"),
    ];
    for (path, says) in cases {
        let db = path.to_str().unwrap();
        for command in [
            vec!["stats", "--db", db],
            vec!["export", "--db", db],
            vec!["verify", "--db", db],
            vec!["search", "--db", db, "--vector", "[1,2,3]"],
        ] {
            let run = run(RATCHET, &command);
            assert_eq!(run.code, Some(1), "{command:?}: {}", run.stderr);
            assert!(run.stderr.contains(says), "{command:?}: {}", run.stderr);
            assert!(
                run.stderr.contains("ratchet ingest"),
                "{command:?} does not say what to do: {}",
                run.stderr
            );
            assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
        }
    }
    assert!(!missing.exists());
    assert_eq!(
        fingerprint(dir.path()),
        before,
        "a refused read changed a file"
    );
}
