//! Every input in `fuzz/corpus/<target>/` run through the same harness function the fuzz
//! target calls (`ratchetdb::testkit::*`), so that CI exercises the fuzz targets whether or
//! not cargo-fuzz and a nightly toolchain are installed: `row_decoding` (every row decoder:
//! a value or a `Corruption`, never a panic), `open_mutated_file` (a typed error or a store
//! that reads, verifies and writes, never a panic), `ops_vs_model` (operation programs with
//! reopens, power losses and I/O faults against the reference model).
//!
//! The seed corpus is generated, not hand-edited: `cargo test --test fuzz_corpus_replay --
//! --ignored write_seed_corpus` writes `ratchetdb::testkit::seed_corpus()` into
//! `fuzz/corpus/`. Inputs that a fuzz run found interesting (or that once failed) are added
//! next to the seeds and replayed the same way.

use crate::support;

use std::path::PathBuf;

/// `fuzz/corpus`, or `$RATCHET_FUZZ_CORPUS` (a directory of `<target>/` corpora, e.g. one a
/// fuzz run grew) to replay another corpus in a debug build.
fn corpus_dir() -> PathBuf {
    match std::env::var_os("RATCHET_FUZZ_CORPUS") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("fuzz")
            .join("corpus"),
    }
}

fn replay(target: &str, run: impl Fn(&[u8]) -> Result<(), String>) -> usize {
    let dir = corpus_dir().join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.is_file())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no corpus in {}", dir.display());
    for path in &files {
        let data = std::fs::read(path).expect("read");
        match support::catch(|| run(&data)) {
            Ok(Ok(())) => {}
            Ok(Err(broken)) => panic!("{target} {}: {broken}", path.display()),
            Err(panic) => panic!("{target} {}: {panic}", path.display()),
        }
    }
    files.len()
}

#[test]
fn row_decoding_corpus() {
    let n = replay("row_decoding", |data| {
        ratchetdb::testkit::row_decoding(data).map(|_| ())
    });
    println!("row_decoding: {n} inputs");
}

#[test]
fn open_mutated_file_corpus() {
    let n = replay("open_mutated_file", |data| {
        ratchetdb::testkit::open_mutated_file(data).map(|_| ())
    });
    println!("open_mutated_file: {n} inputs");
}

#[test]
fn ops_vs_model_corpus() {
    let totals = std::sync::Mutex::new(ratchetdb::testkit::OpsReport::default());
    let n = replay("ops_vs_model", |data| {
        let report = ratchetdb::testkit::ops_vs_model(data)?;
        let mut totals = totals.lock().expect("totals");
        totals.acknowledged += report.acknowledged;
        totals.reopens += report.reopens;
        totals.faults += report.faults;
        Ok(())
    });
    let totals = totals.into_inner().expect("totals");
    println!("ops_vs_model: {n} inputs, {totals:?}");
    // The seeds reach every kind of step.
    assert!(
        totals.acknowledged > 20 && totals.reopens > n && totals.faults >= 3,
        "{totals:?}"
    );
}

#[test]
fn the_committed_corpus_holds_every_seed() {
    if std::env::var_os("RATCHET_FUZZ_CORPUS").is_some() {
        return;
    }
    for (target, name, bytes) in ratchetdb::testkit::seed_corpus() {
        let path = corpus_dir().join(target).join(format!("seed-{name}"));
        let committed = std::fs::read(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (run write_seed_corpus)", path.display()));
        assert!(
            committed == bytes,
            "{} is stale (run write_seed_corpus)",
            path.display()
        );
    }
}

#[test]
#[ignore = "writes fuzz/corpus/; run by hand after changing seed_corpus()"]
fn write_seed_corpus() {
    for (target, name, bytes) in ratchetdb::testkit::seed_corpus() {
        let dir = corpus_dir().join(target);
        std::fs::create_dir_all(&dir).expect("mkdir");
        std::fs::write(dir.join(format!("seed-{name}")), bytes).expect("write");
    }
}
