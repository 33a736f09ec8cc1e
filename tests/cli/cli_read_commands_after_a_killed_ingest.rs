//! Issue 45, item 3: after an `ingest` was killed, `ratchet verify` (and `stats`, `search`,
//! `export`) refused the file ("a read-only open cannot recover it ... open it for writing
//! once"), and the user's only way out was an ingest of nothing. Now a read command on a
//! writable file recovers it first (redb's repair, as a writer's open does) and says so on
//! stderr; `ratchet recover --db X` does it explicitly; on a file that cannot be written the
//! read commands keep a clear error (naming `ratchet recover`) and leave the file as it was.
//! The library keeps its default (`Options::recover_on_read_open(false)`: a read-only open
//! never writes) and recovers when asked.

use super::common::cli;
use ratchetdb::{OpenError, Options, Store};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

const RATCHET: &str = env!("CARGO_BIN_EXE_ratchet");
const TIMEOUT: Duration = Duration::from_secs(60);
const ACKED: usize = 12;

fn line(i: usize) -> String {
    format!(
        r#"{{"op":"upsert","source":"s","id":"d{i}","version":1,"chunks":[{{"text":"chunk {i}","vector":[1,{i},2]}}]}}"#
    )
}

/// A store whose writer, `ratchet ingest`, was killed (SIGKILL) after `ACKED` lines were
/// acknowledged, with its stdin still open (so it was holding the file when it died).
fn killed_ingest(db: &Path) {
    let mut child = Command::new(RATCHET)
        .args(["ingest", "--db", db.to_str().unwrap(), "--jsonl", "-"])
        .args(["--report", "--batch-size", "1"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn ratchet ingest");
    let mut stdin = child.stdin.take().unwrap();
    let mut report = BufReader::new(child.stdout.take().unwrap());
    for i in 0..ACKED {
        writeln!(stdin, "{}", line(i)).unwrap();
        stdin.flush().unwrap();
        let mut ack = String::new();
        report.read_line(&mut ack).unwrap();
        assert!(ack.contains("\"written\""), "{ack}");
    }
    child.kill().unwrap();
    child.wait().unwrap();
    drop(stdin);
    // The file is left for recovery: a plain read-only open is refused.
    assert!(
        matches!(
            Store::open_read_only(db),
            Err(OpenError::NeedsRecovery { .. })
        ),
        "the killed writer's file should need recovery"
    );
}

fn ratchet(args: &[&str]) -> cli::Run {
    let run = cli::run(args, |_| {}, None, TIMEOUT);
    cli::assert_no_panic(&run, args);
    run
}

#[test]
fn read_commands_recover_a_killed_ingests_file_and_say_so() {
    let dir = tempfile::tempdir().unwrap();
    let crashed = dir.path().join("crashed.redb");
    killed_ingest(&crashed);
    let commands: [&[&str]; 4] = [
        &["verify"],
        &["stats"],
        &["export"],
        &["search", "--vector", "[1,2,3]", "-k", "3"],
    ];
    for (n, command) in commands.iter().enumerate() {
        let db = dir.path().join(format!("copy{n}.redb"));
        std::fs::copy(&crashed, &db).unwrap();
        let mut args = command.to_vec();
        args.extend_from_slice(&["--db", db.to_str().unwrap()]);
        let run = ratchet(&args);
        assert_eq!(run.code, Some(0), "{command:?}: {}", run.stderr);
        assert!(
            run.stderr.contains("recovered") && run.stderr.contains("crash or kill"),
            "{command:?} should say it recovered the file: {}",
            run.stderr
        );
        match command[0] {
            "verify" => assert!(
                run.stdout
                    .starts_with(&format!("ok: {ACKED} documents, 0 tombstones,")),
                "{}",
                run.stdout
            ),
            "export" => assert_eq!(run.stdout.lines().count(), ACKED, "{}", run.stdout),
            "search" => assert!(run.stdout.contains("3 hits"), "{}", run.stdout),
            _ => assert!(run.stdout.contains(&ACKED.to_string()), "{}", run.stdout),
        }
        // Recovered once: the next read says nothing about it.
        let again = ratchet(&args);
        assert_eq!(again.code, Some(0), "{}", again.stderr);
        assert!(!again.stderr.contains("recovered"), "{}", again.stderr);
    }
}

#[test]
fn ratchet_recover_recovers_once_then_finds_nothing_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("crashed.redb");
    killed_ingest(&db);
    let path = db.to_str().unwrap();
    let run = ratchet(&["recover", "--db", path]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(run.stdout.starts_with("recovered "), "{}", run.stdout);
    let store = Store::open_read_only(&db).expect("a recovered file opens read-only");
    assert_eq!(store.documents(false).unwrap().len(), ACKED);
    drop(store);
    let run = ratchet(&["recover", "--db", path]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(run.stdout.contains("needed no recovery"), "{}", run.stdout);
}

#[test]
fn the_library_recovers_on_a_read_only_open_only_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("crashed.redb");
    killed_ingest(&db);
    let before = std::fs::read(&db).unwrap();
    let refused = Store::open_read_only_with(&db, Options::default()).err();
    let message = refused
        .as_ref()
        .map(ToString::to_string)
        .unwrap_or_default();
    assert!(
        matches!(refused, Some(OpenError::NeedsRecovery { .. })),
        "{message}"
    );
    // The library's message names library calls, not command-line flags.
    assert!(
        message.contains("Store::recover")
            && !message.contains("ratchet")
            && !message.contains("--"),
        "{message}"
    );
    assert_eq!(std::fs::read(&db).unwrap(), before, "a refused open wrote");
    let store = Store::open_read_only_with(&db, Options::default().recover_on_read_open(true))
        .expect("recovering open");
    assert!(store.recovered_at_open());
    assert_eq!(store.documents(false).unwrap().len(), ACKED);
    assert!(store.verify().unwrap().is_ok());
    drop(store);
    let clean = Store::open_read_only_with(&db, Options::default().recover_on_read_open(true))
        .expect("clean open");
    assert!(!clean.recovered_at_open());
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .map(|s| {
            s.lines()
                .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"))
        })
        .unwrap_or(false)
}

#[test]
fn on_a_file_that_cannot_be_written_the_read_commands_keep_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let store_dir = dir.path().join("store");
    std::fs::create_dir(&store_dir).unwrap();
    let db = store_dir.join("crashed.redb");
    killed_ingest(&db);
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o444)).unwrap();
    std::fs::set_permissions(&store_dir, std::fs::Permissions::from_mode(0o555)).unwrap();
    let before = std::fs::read(&db).unwrap();
    // Root bypasses permissions: drop the capabilities that let it.
    let wrap: &[&str] = if is_root() {
        &[
            "setpriv",
            "--bounding-set=-dac_override,-dac_read_search",
            "--",
            RATCHET,
        ]
    } else {
        &[RATCHET]
    };
    for command in ["verify", "stats", "export", "recover"] {
        let output = Command::new(wrap[0])
            .args(&wrap[1..])
            .args([command, "--db", db.to_str().unwrap()])
            .stdin(Stdio::null())
            .output()
            .expect("run ratchet");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{command}: {stderr}");
        assert!(
            stderr.contains("stopped without closing it")
                && stderr.contains("cannot be written here")
                && stderr.contains("ratchet recover"),
            "{command}: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    assert_eq!(std::fs::read(&db).unwrap(), before, "the file changed");
    std::fs::set_permissions(&store_dir, std::fs::Permissions::from_mode(0o755)).unwrap();
}
