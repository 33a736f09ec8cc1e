//! Regression (issue 18, defect 7): command-line messages a person hits.
//! - `--model /nonexistent` was ignored silently on a hashing store and reported as "lacks
//!   config.json" on a MiniLM store: a missing model folder is named as such, and `--model`
//!   on a hashing store is an error saying it does not apply;
//! - an empty folder ingested with exit 0 and no warning;
//! - the missing-database error advised `Store::create` (library advice in the CLI);
//! - "1 files", "1 documents", "1 violations";
//! - `ingest` needed `--model` on every run even into a MiniLM store: it now follows the
//!   store's recorded embedder (an existing hashing store ignores `RATCHET_MODEL`, a MiniLM
//!   store finds its model as `search` does).
//!
//! (`--ef 0` and `-k 0` belong to `search`'s own tests.)

use crate::common;

use common::cli::{self, Run};
use std::path::Path;
use std::time::Duration;

fn ratchet(args: &[&str], env: &[(&str, &str)]) -> Run {
    let run = cli::run(
        args,
        |c| {
            c.env_remove("RATCHET_MODEL");
            for (key, value) in env {
                c.env(key, value);
            }
        },
        None,
        Duration::from_secs(60),
    );
    cli::assert_no_panic(&run, args);
    run
}

fn write_file(file: &Path, text: &str, secs: u64) {
    cli::write_file_at(file, text, secs);
}

#[test]
fn messages_say_what_is_wrong_and_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    write_file(
        &docs.join("a.md"),
        "cats purr when they are content",
        1_700_000_000,
    );
    let db = dir.path().join("store.redb");
    let db_arg = db.to_str().unwrap();
    let docs_arg = docs.to_str().unwrap();

    // A missing model folder for a new store is named as missing.
    let run = ratchet(
        &[
            "ingest",
            "--db",
            db_arg,
            docs_arg,
            "--model",
            "/nonexistent",
        ],
        &[],
    );
    assert_eq!(run.code, Some(1));
    assert!(
        run.stderr.contains("no model folder at /nonexistent"),
        "{}",
        run.stderr
    );
    assert!(!db.exists(), "a failed run left a store behind");

    let run = ratchet(&["ingest", "--db", db_arg, docs_arg], &[]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    // A hashing store: --model does not apply, for ingest and search alike.
    for args in [
        vec![
            "ingest",
            "--db",
            db_arg,
            docs_arg,
            "--model",
            "/nonexistent",
        ],
        vec!["search", "--db", db_arg, "cats", "--model", "/nonexistent"],
    ] {
        let run = ratchet(&args, &[]);
        assert_eq!(run.code, Some(1), "{args:?}: {}", run.stdout);
        assert!(
            run.stderr.contains("built-in hashing embedder") && run.stderr.contains("drop --model"),
            "{args:?}: {}",
            run.stderr
        );
    }
    // RATCHET_MODEL is the default for new stores: an existing store keeps its embedder.
    let run = ratchet(
        &["ingest", "--db", db_arg, docs_arg],
        &[("RATCHET_MODEL", "/nonexistent")],
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);

    // One of each: singular.
    write_file(&docs.join("a.md"), "restored from a backup", 1_600_000_000);
    let run = ratchet(&["ingest", "--db", db_arg, docs_arg], &[]);
    assert!(
        run.stdout.contains("note: 1 file is older"),
        "{}",
        run.stdout
    );
    let run = ratchet(&["verify", "--db", db_arg], &[]);
    assert!(
        run.stdout
            .contains("ok: 1 document, 0 tombstones, 1 chunk, 1 vector;"),
        "{}",
        run.stdout
    );

    // An empty folder: a warning.
    let empty = dir.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    std::fs::write(empty.join("image.png"), [0u8; 4]).unwrap();
    let run = ratchet(&["ingest", "--db", db_arg, empty.to_str().unwrap()], &[]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("warning: no Markdown, text or HTML files"),
        "{}",
        run.stderr
    );

    // A missing database: advice in the command line's words.
    let missing = dir.path().join("missing.redb");
    for command in ["verify", "export", "stats"] {
        let run = ratchet(&[command, "--db", missing.to_str().unwrap()], &[]);
        assert_eq!(run.code, Some(1));
        assert!(
            run.stderr.contains("ratchet ingest --db"),
            "{command}: {}",
            run.stderr
        );
        assert!(!run.stderr.contains("Store::"), "{command}: {}", run.stderr);
    }
}

/// A MiniLM store needs `--model` only once: later runs find the model as `search` does.
#[cfg(feature = "minilm")]
#[test]
fn ingest_follows_a_minilm_store_without_model() {
    let Some(model) = ratchetdb::locate_model(None) else {
        eprintln!(
            "skipped: no installed all-MiniLM-L6-v2 model ({})",
            ratchetdb::MODEL_INSTALL_HINT
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    write_file(
        &docs.join("a.md"),
        "cats purr when they are content",
        1_700_000_000,
    );
    let db = dir.path().join("store.redb");
    let (db_arg, docs_arg) = (db.to_str().unwrap(), docs.to_str().unwrap());
    let run = ratchet(
        &[
            "ingest",
            "--db",
            db_arg,
            docs_arg,
            "--model",
            model.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    write_file(
        &docs.join("b.md"),
        "dogs bark at the mail carrier",
        1_700_000_001,
    );
    let run = ratchet(&["ingest", "--db", db_arg, docs_arg], &[]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(run.stdout.contains("all-MiniLM-L6-v2"), "{}", run.stdout);
    let run = ratchet(
        &[
            "ingest",
            "--db",
            db_arg,
            docs_arg,
            "--model",
            "/nonexistent",
        ],
        &[],
    );
    assert!(
        run.stderr.contains("no model folder at /nonexistent"),
        "{}",
        run.stderr
    );
}
