//! `ratchet demo`, the README's first command: it builds its store from the corpus compiled
//! into the binary, delivers it through the adversarial schedule, and passes its own
//! verification: verify is clean, the state equals in-order delivery, and the naive
//! last-write-wins comparison shows what the guard prevented (and ratchetdb at 0/0/0).

use crate::common;

use common::cli::{self, Run};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// Long enough for a debug build on a loaded machine; a hang is what it guards against.
const TIMEOUT: Duration = Duration::from_secs(120);

fn ratchet(args: &[&str], dir: &Path) -> Run {
    let configure = |command: &mut Command| {
        command.current_dir(dir).env_remove("RATCHET_MODEL");
    };
    cli::run(args, configure, None, TIMEOUT)
}

/// The two numbers at the end of a comparison row: (naive, ratchetdb).
fn comparison(stdout: &str, row: &str) -> (u64, u64) {
    let line = stdout
        .lines()
        .find(|l| l.trim_start().starts_with(row))
        .unwrap_or_else(|| panic!("no {row:?} row in:\n{stdout}"));
    let numbers: Vec<u64> = line
        .split_whitespace()
        .rev()
        .take(2)
        .map(|n| n.parse().unwrap_or_else(|_| panic!("{line:?}")))
        .collect();
    (numbers[1], numbers[0])
}

#[test]
fn the_demo_passes_its_verification_and_shows_the_naive_comparison() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("demo.redb");
    let started = Instant::now();
    let run = ratchet(&["demo", "--db", db.to_str().unwrap()], dir.path());
    let elapsed = started.elapsed();
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    assert!(run.stderr.is_empty(), "{}", run.stderr);
    let out = &run.stdout;

    // Every corpus file is compiled in.
    let corpus_files = std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("demo/corpus"))
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name() != "README.md")
        .count();
    assert!(
        out.contains(&format!(
            "the Kettlebird handbook, {corpus_files} documents"
        )),
        "demo/corpus has {corpus_files} documents; the binary lists others:\n{out}"
    );
    // The schedule's phases ran, with real refusals in them.
    for phase in [
        "2 consumers at once",
        "dead-letter replay",
        "backfill",
        "retain",
        "late retries of deleted",
    ] {
        assert!(out.contains(phase), "no phase {phase:?}:\n{out}");
    }
    assert!(out.contains("hash-lexical-v1-384") && out.contains("lexical"));

    // Verified three ways.
    assert!(out.contains("verify: clean:"), "{out}");
    assert!(out.contains("every invariant holds"));
    assert!(
        out.contains("in-order delivery into a second store: identical final state"),
        "{out}"
    );
    assert!(out.contains("verification passed"), "{out}");

    // The naive index kept stale, orphaned and deleted data; ratchetdb none.
    assert!(out.contains("naive last-write-wins"), "{out}");
    for row in ["stale documents", "orphan chunks", "resurrected deletes"] {
        let (naive, ratchet) = comparison(out, row);
        assert!(naive > 0, "the naive index shows no {row}:\n{out}");
        assert_eq!(ratchet, 0, "ratchetdb shows {row}:\n{out}");
    }
    // And it answers stale and deleted text where ratchetdb answers current text.
    assert_eq!(out.matches("Q: ").count(), 3);
    assert!(
        out.contains("naive") && out.contains("[STALE: revision"),
        "{out}"
    );
    assert!(out.contains("[DELETED at the source"), "{out}");
    let ratchet_hits: Vec<&str> = out
        .lines()
        .filter(|l| l.trim_start().starts_with("ratchetdb "))
        .collect();
    assert!(!ratchet_hits.is_empty());
    assert!(
        ratchet_hits.iter().all(|l| l.contains("[current]")),
        "{ratchet_hits:?}"
    );
    println!("demo took {elapsed:?} (debug build)");

    // The store it leaves is a normal store: verify agrees.
    let verify = ratchet(&["verify", "--db", db.to_str().unwrap()], dir.path());
    assert_eq!(verify.code, Some(0), "{}", verify.stdout);

    // Run again: its own previous store is replaced.
    let again = ratchet(&["demo", "--db", db.to_str().unwrap()], dir.path());
    assert_eq!(again.code, Some(0), "{}\n{}", again.stdout, again.stderr);

    // Without --db it builds ratchet-demo.redb in the current folder.
    let default = ratchet(&["demo"], dir.path());
    assert_eq!(default.code, Some(0), "{}", default.stderr);
    assert!(dir.path().join("ratchet-demo.redb").is_file());
}

#[test]
fn the_demo_never_replaces_a_file_it_did_not_make() {
    let dir = tempfile::tempdir().unwrap();
    let precious = dir.path().join("precious.redb");
    std::fs::write(&precious, b"someone's data").unwrap();
    let run = ratchet(&["demo", "--db", precious.to_str().unwrap()], dir.path());
    assert_eq!(run.code, Some(1));
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("is not a ratchet demo store") && run.stderr.contains("--db"),
        "{}",
        run.stderr
    );
    assert_eq!(std::fs::read(&precious).unwrap(), b"someone's data");
}
