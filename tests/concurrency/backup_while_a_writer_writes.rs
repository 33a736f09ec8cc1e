//! Issue 45, item 2: there was no hot backup. `Store::backup(path)` (and `ratchet backup
//! --db X OUT`) copies one read snapshot into a new file while a writer keeps writing: the
//! copy opens, verifies clean, and holds exactly the source's state at the commit it reports
//! (here: the first m writes of the writer thread, for the m whose commit the backup names,
//! equal to a store that received just those writes); the CLI's copy is checked the same
//! way. A path that exists is refused with a typed error naming it, and left as it was.

use ratchetdb::{BackupError, Chunk, Document, Options, Store, StoredDocument, Version};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The writes made before the backup starts; the writer goes on until the backup is done
/// (and then `AFTER` more), at most `MAX_WRITES` in all.
const WRITES: usize = 40;
const AFTER: usize = 20;
const MAX_WRITES: usize = 20_000;

fn write(i: usize) -> Document {
    // Every fifth write revises an earlier document, so the copy has revisions too.
    let (id, version) = if i % 5 == 4 { (i - 4, 2) } else { (i, 1) };
    Document::new("s", format!("d{id}"), Version::number(version))
        .with_meta(serde_json::json!({"i": i}))
        .with_chunk(Chunk::new(
            format!("text {i}"),
            vec![1.0, i as f32, 2.0 + version as f32],
        ))
}

fn documents(store: &Store) -> Vec<StoredDocument> {
    store.documents(true).unwrap()
}

/// Backs `store` up (through `backup`) while a thread writes documents one commit each,
/// then checks the copy against the commit it names.
fn backup_while_writing(dir: &Path, name: &str, backup: impl FnOnce(&Store, &Path) -> u64) {
    let db = dir.join(format!("{name}-source.redb"));
    let store = Store::open(&db, Options::default().dimension(3)).unwrap();
    let done = Arc::new(AtomicUsize::new(0));
    let backed_up = Arc::new(AtomicUsize::new(usize::MAX));
    // The commit each write landed at, read right after it (one writer thread).
    let commits = Arc::new(Mutex::new(Vec::new()));
    let writer = {
        let (store, done, commits) = (store.clone(), done.clone(), commits.clone());
        let backed_up = backed_up.clone();
        std::thread::spawn(move || {
            for i in 0..MAX_WRITES {
                if i >= backed_up.load(Ordering::SeqCst).saturating_add(AFTER) {
                    break;
                }
                store.upsert(write(i)).unwrap();
                let commit = store.snapshot().unwrap().commit().unwrap();
                commits.lock().unwrap().push(commit);
                done.store(i + 1, Ordering::SeqCst);
            }
        })
    };
    while done.load(Ordering::SeqCst) < WRITES {
        std::thread::sleep(Duration::from_millis(1));
    }
    let out = dir.join(format!("{name}-backup.redb"));
    let commit = backup(&store, &out);
    let at_backup = done.load(Ordering::SeqCst);
    backed_up.store(at_backup, Ordering::SeqCst);
    writer.join().unwrap();
    let written = done.load(Ordering::SeqCst);
    assert!(
        at_backup < written,
        "{name}: the writer stopped before the backup did; the test saw no concurrency"
    );
    let commits = commits.lock().unwrap().clone();
    let m = commits.iter().filter(|&&c| c <= commit).count();
    assert!(m >= WRITES, "{name}: commit {commit}, {commits:?}");
    assert_eq!(
        commits[m - 1],
        commit,
        "{name}: the backup's commit is no write's"
    );

    let copy = Store::open_read_only(&out).expect("the backup opens");
    let report = copy.verify().unwrap();
    assert!(report.is_ok(), "{name}: {:?}", report.violations);
    assert_eq!(copy.snapshot().unwrap().commit().unwrap(), commit);
    // The source's state at that commit: a store that received exactly its first m writes.
    let reference = Store::open(
        dir.join(format!("{name}-reference.redb")),
        Options::default().dimension(3),
    )
    .unwrap();
    for i in 0..m {
        reference.upsert(write(i)).unwrap();
    }
    assert_eq!(documents(&copy), documents(&reference), "{name}");
    assert_eq!(copy.listings().unwrap(), reference.listings().unwrap());
    assert_eq!(
        copy.stats().unwrap().counters,
        reference.stats().unwrap().counters,
        "{name}"
    );
    // And it is a store of its own: writable, searchable.
    drop(copy);
    let copy = Store::open(&out, Options::default().must_exist()).unwrap();
    copy.upsert(write(MAX_WRITES)).unwrap();
    assert!(copy.verify().unwrap().is_ok());
}

#[test]
fn a_backup_taken_while_a_writer_writes_is_the_store_at_one_commit() {
    let dir = tempfile::tempdir().unwrap();
    backup_while_writing(dir.path(), "library", |store, out| {
        let backup = store.backup(out).unwrap();
        assert_eq!(backup.path, out);
        assert!(backup.tables >= 10 && backup.rows > 0, "{backup:?}");
        backup.commit
    });
}

#[test]
fn ratchet_backup_beside_a_writer_process_reports_its_commit() {
    let dir = tempfile::tempdir().unwrap();
    backup_while_writing(dir.path(), "cli", |store, out| {
        let args = [
            "backup",
            "--db",
            store.path().to_str().unwrap(),
            out.to_str().unwrap(),
        ];
        let run = super::common::cli::run(&args, |_| {}, None, Duration::from_secs(60));
        assert_eq!(run.code, Some(0), "{}", run.stderr);
        let commit = run
            .stdout
            .split(" at commit ")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no commit in {:?}", run.stdout));
        commit
    });
}

#[test]
fn a_backup_never_overwrites_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("s.redb"), Options::default().dimension(3)).unwrap();
    store.upsert(write(0)).unwrap();
    let out = dir.path().join("taken");
    std::fs::write(&out, b"someone's file").unwrap();
    match store.backup(&out) {
        Err(error @ BackupError::AlreadyExists { .. }) => {
            assert!(error.to_string().contains(out.to_str().unwrap()), "{error}")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(std::fs::read(&out).unwrap(), b"someone's file");
    let args = [
        "backup",
        "--db",
        store.path().to_str().unwrap(),
        out.to_str().unwrap(),
    ];
    let run = super::common::cli::run(&args, |_| {}, None, Duration::from_secs(60));
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(run.stderr.contains("already exists"), "{}", run.stderr);
    assert_eq!(std::fs::read(&out).unwrap(), b"someone's file");
    // Nothing but the store and the refused path in the directory.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
}
