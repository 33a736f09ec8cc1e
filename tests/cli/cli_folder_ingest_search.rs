//! `ratchet ingest DIR` and `ratchet search` as a person uses them: index a folder, search
//! it, edit a file (a newer modification time, set explicitly), index again and find only
//! the new text, delete a file and `--sync` it away; an unchanged folder embeds nothing.
//! And every error a person meets says, in one line, what to do: a missing folder, an
//! unreadable file (skipped and counted, the run goes on), a store built with another
//! embedder or dimension, a locked database.

use crate::common;

use common::cli::{self, Run};
use ratchetdb::{Options, Store};
use serde_json::Value;
use std::fs::File;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, SystemTime};

/// Long enough for a debug build on a loaded machine; a hang is what it guards against.
const TIMEOUT: Duration = Duration::from_secs(60);

/// Runs the binary with `args` (and `RATCHET_MODEL` unset unless given in `env`).
fn ratchet_with_env(args: &[&str], env: &[(&str, &str)]) -> Run {
    let configure = |command: &mut Command| {
        command.env_remove("RATCHET_MODEL");
        for (key, value) in env {
            command.env(key, value);
        }
    };
    let run = cli::run(args, configure, None, TIMEOUT);
    cli::assert_no_panic(&run, args);
    run
}

fn ratchet(args: &[&str]) -> Run {
    ratchet_with_env(args, &[])
}

fn path(p: &Path) -> &str {
    p.to_str().expect("UTF-8 temp path")
}

/// Writes `text` to `file` with the modification time `modified`.
fn write_file(file: &Path, text: &str, modified: SystemTime) {
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(file, text).unwrap();
    File::options()
        .write(true)
        .open(file)
        .unwrap()
        .set_modified(modified)
        .unwrap();
}

/// A summary row's number: `  chunks embedded     3`.
fn summary_value(stdout: &str, row: &str) -> u64 {
    let line = stdout
        .lines()
        .find(|l| l.trim_start().starts_with(row))
        .unwrap_or_else(|| panic!("no {row:?} row in:\n{stdout}"));
    line.trim_start()[row.len()..]
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no number in {line:?}"))
}

/// Every hit of `search --json`.
fn search(db: &Path, question: &str) -> Vec<Value> {
    let run = ratchet(&["search", "--db", path(db), question, "-k", "10", "--json"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    run.stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

fn texts(hits: &[Value]) -> Vec<String> {
    hits.iter()
        .map(|h| h["text"].as_str().unwrap().to_string())
        .collect()
}

/// The single `error: …` line of a failed run.
fn one_error_line(run: &Run) -> String {
    assert_eq!(
        run.code,
        Some(1),
        "stdout: {}\nstderr: {}",
        run.stdout,
        run.stderr
    );
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one line expected:\n{}", run.stderr);
    assert!(lines[0].starts_with("error: "), "{}", lines[0]);
    lines[0].to_string()
}

/// `ratchet ingest --db DB DIR` with small chunks, so that a file has several.
fn ingest(db: &Path, dir: &Path, extra: &[&str]) -> Run {
    let mut args = vec![
        "ingest",
        "--db",
        path(db),
        path(dir),
        "--chunk-size",
        "60",
        "--overlap",
        "0",
    ];
    args.extend_from_slice(extra);
    let run = ratchet(&args);
    assert!(
        run.code == Some(0),
        "ratchet {args:?}: {:?}\n{}{}",
        run.code,
        run.stdout,
        run.stderr
    );
    run
}

#[test]
fn ingest_search_edit_delete_sync() {
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("handbook");
    let db = dir.path().join("index.redb");
    let an_hour_ago = SystemTime::now() - Duration::from_secs(3600);
    let warranty = |years: &str| {
        format!(
            "# Warranty\n\nThe kettle warranty lasts {years} years from delivery.\n\nClaims go through the app."
        )
    };
    write_file(&docs.join("warranty.md"), &warranty("two"), an_hour_ago);
    write_file(
        &docs.join("returns.txt"),
        "Return a kettle within 30 days for a refund.",
        an_hour_ago,
    );
    write_file(
        &docs.join("care/descaling.md"),
        "Descale the kettle monthly with citric acid.",
        an_hour_ago,
    );
    write_file(&docs.join("photo.png"), "not text", an_hour_ago);
    write_file(&docs.join(".git/HEAD.md"), "hidden: ignored", an_hour_ago);

    // First run: three documents written, the picture skipped and counted.
    let run = ingest(&db, &docs, &[]);
    assert!(run.stdout.contains("hash-lexical-v1-384") && run.stdout.contains("lexical"));
    assert_eq!(
        summary_value(&run.stdout, "files seen"),
        4,
        "{}",
        run.stdout
    );
    assert_eq!(summary_value(&run.stdout, "written"), 3);
    assert_eq!(summary_value(&run.stdout, "skipped"), 1);
    assert!(
        run.stdout.contains("not Markdown or text 1"),
        "{}",
        run.stdout
    );
    assert_eq!(summary_value(&run.stdout, "chunks embedded"), 5);

    let hits = search(&db, "how long is the kettle warranty");
    assert_eq!(hits[0]["id"], "warranty.md", "{hits:?}");
    assert_eq!(hits[0]["source"], "handbook");
    assert!(texts(&hits)[0].contains("two years"), "{hits:?}");
    assert!(hits.iter().any(|h| h["id"] == "care/descaling.md"));
    let text = ratchet(&["search", "--db", path(&db), "kettle warranty", "-k", "1"]);
    assert_eq!(text.code, Some(0));
    assert!(text.stdout.contains("lexical"), "{}", text.stdout);
    assert!(
        text.stdout.contains("handbook/warranty.md  #"),
        "{}",
        text.stdout
    );

    // An unchanged folder: nothing embedded, nothing written.
    let run = ingest(&db, &docs, &[]);
    assert_eq!(
        summary_value(&run.stdout, "chunks embedded"),
        0,
        "{}",
        run.stdout
    );
    assert_eq!(summary_value(&run.stdout, "written"), 0);
    assert_eq!(summary_value(&run.stdout, "unchanged"), 0);
    assert_eq!(summary_value(&run.stdout, "already stored"), 3);

    // Edit one paragraph, with a newer modification time: only its chunk is embedded, the
    // others are reused, and search shows the new text, never the old.
    write_file(
        &docs.join("warranty.md"),
        &warranty("three"),
        an_hour_ago + Duration::from_secs(60),
    );
    let run = ingest(&db, &docs, &[]);
    assert_eq!(summary_value(&run.stdout, "written"), 1, "{}", run.stdout);
    assert!(run.stdout.contains("(changed 1)"), "{}", run.stdout);
    assert_eq!(summary_value(&run.stdout, "chunks embedded"), 1);
    assert_eq!(summary_value(&run.stdout, "chunks reused"), 2);
    let hits = search(&db, "how long is the kettle warranty");
    assert!(
        texts(&hits).iter().any(|t| t.contains("three years")),
        "{hits:?}"
    );
    assert!(
        !texts(&hits).iter().any(|t| t.contains("two years")),
        "the old text is still served: {hits:?}"
    );

    // Same text, newer time (`touch`): the version goes up, nothing is embedded. The chunk's
    // metadata carries the file's `mtime` (issue 19), so this is a metadata-only revision:
    // its vector is reused.
    write_file(
        &docs.join("returns.txt"),
        "Return a kettle within 30 days for a refund.",
        an_hour_ago + Duration::from_secs(120),
    );
    let run = ingest(&db, &docs, &[]);
    assert_eq!(
        summary_value(&run.stdout, "chunks embedded"),
        0,
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("(changed 1)"), "{}", run.stdout);
    assert_eq!(
        summary_value(&run.stdout, "chunks reused"),
        1,
        "{}",
        run.stdout
    );

    // Delete a file: without --sync it stays; with --sync it goes.
    std::fs::remove_file(docs.join("returns.txt")).unwrap();
    let run = ingest(&db, &docs, &[]);
    assert_eq!(summary_value(&run.stdout, "removed by --sync"), 0);
    assert!(search(&db, "return a kettle refund")
        .iter()
        .any(|h| h["id"] == "returns.txt"));
    let run = ingest(&db, &docs, &["--sync"]);
    assert_eq!(
        summary_value(&run.stdout, "removed by --sync"),
        1,
        "{}",
        run.stdout
    );
    let hits = search(&db, "return a kettle refund");
    assert!(!hits.iter().any(|h| h["id"] == "returns.txt"), "{hits:?}");
    let export = ratchet(&["export", "--db", path(&db)]);
    let returns: Value = export
        .stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|d| d["id"] == "returns.txt")
        .unwrap();
    assert_eq!(returns["deleted"], true);
    let verify = ratchet(&["verify", "--db", path(&db)]);
    assert_eq!(verify.code, Some(0), "{}", verify.stdout);

    // A file moved in after the sync with an older time than the sync run (but newer than
    // the deleted file's) is indexed: the listing deleted unseen ids only up to the newest
    // deleted document. Through the concurrent writer, too.
    write_file(
        &docs.join("care/filters.md"),
        "Replace the spout filter every six months.",
        an_hour_ago + Duration::from_secs(600),
    );
    let run = ingest(&db, &docs, &["--workers", "3"]);
    assert_eq!(summary_value(&run.stdout, "written"), 1, "{}", run.stdout);
    assert_eq!(
        summary_value(&run.stdout, "already stored"),
        2,
        "{}",
        run.stdout
    );
    assert!(search(&db, "spout filter")
        .iter()
        .any(|h| h["id"] == "care/filters.md"));

    // One older than the deleted file is refused as deleted, and the summary says to touch
    // it; touched, it is indexed.
    let old_note = docs.join("care/kettle-history.md");
    write_file(&old_note, "The first kettle shipped in 2019.", an_hour_ago);
    let run = ingest(&db, &docs, &[]);
    assert_eq!(
        summary_value(&run.stdout, "refused by the guard"),
        1,
        "{}",
        run.stdout
    );
    // One file: singular (issue 18).
    assert!(
        run.stdout.contains("tombstoned 1")
            && run.stdout.contains("note: 1 file was deleted")
            && run.stdout.contains("`touch` it"),
        "{}",
        run.stdout
    );
    write_file(
        &old_note,
        "The first kettle shipped in 2019.",
        SystemTime::now(),
    );
    let run = ingest(&db, &docs, &[]);
    assert_eq!(summary_value(&run.stdout, "written"), 1, "{}", run.stdout);

    // Other chunk sizes cut unchanged files differently: same time, other content is a
    // conflict the guard refuses, and the summary says why and what to do.
    let run = ratchet(&["ingest", "--db", path(&db), path(&docs)]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(
        run.stdout.contains("conflict") && run.stdout.contains("--chunk-size"),
        "{}",
        run.stdout
    );
    assert!(search(&db, "how long is the kettle warranty")
        .iter()
        .any(|h| h["text"] == "The kettle warranty lasts three years from delivery."));
}

#[test]
fn unreadable_files_are_skipped_and_counted_and_the_run_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("notes");
    let db = dir.path().join("index.redb");
    let earlier = SystemTime::now() - Duration::from_secs(60);
    write_file(&docs.join("good.md"), "A readable note.", earlier);
    std::fs::write(docs.join("latin1.txt"), b"caf\xe9 au lait").unwrap();
    std::os::unix::fs::symlink(dir.path().join("nowhere.md"), docs.join("dangling.md")).unwrap();

    // With --follow-links the dangling link is read, and fails (without, it is skipped as a
    // link outside the folder: cli_folder_dangling_link_is_skipped_as_outside.rs).
    let run = ratchet(&["ingest", "--db", path(&db), path(&docs), "--follow-links"]);
    assert_eq!(run.code, Some(3), "{}{}", run.stdout, run.stderr);
    assert_eq!(summary_value(&run.stdout, "written"), 1, "{}", run.stdout);
    assert!(run.stdout.contains("unreadable 1") && run.stdout.contains("not UTF-8 1"));
    let warnings: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(warnings.len(), 2, "{}", run.stderr);
    assert!(warnings
        .iter()
        .any(|w| w.starts_with("warning: cannot read")
            && w.contains("dangling.md")
            && w.contains("skipped")));
    assert!(warnings
        .iter()
        .any(|w| w.contains("latin1.txt is not UTF-8 text") && w.contains("skipped")));

    // --sync never deletes a file it could not read: it still exists.
    let run = ratchet(&[
        "ingest",
        "--db",
        path(&db),
        path(&docs),
        "--sync",
        "--follow-links",
    ]);
    assert_eq!(summary_value(&run.stdout, "removed by --sync"), 0);
}

#[test]
fn errors_say_what_to_do_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("docs");
    write_file(
        &docs.join("a.md"),
        "Some text.",
        SystemTime::now() - Duration::from_secs(60),
    );

    // A missing folder: nothing is created.
    let db = dir.path().join("index.redb");
    let missing = dir.path().join("no-such-folder");
    let run = ratchet(&["ingest", "--db", path(&db), path(&missing)]);
    let line = one_error_line(&run);
    assert!(
        line.contains("no folder at") && line.contains("no-such-folder"),
        "{line}"
    );
    assert!(!db.exists(), "a failed ingest created the database");
    let run = ratchet(&["ingest", "--db", path(&db), path(&docs.join("a.md"))]);
    assert!(one_error_line(&run).contains("is a file, not a folder"));

    // A store built with another embedder: the name says which, and what to do.
    let jsonl = dir.path().join("ops.jsonl");
    std::fs::write(
        &jsonl,
        r#"{"op":"upsert","source":"s","id":"d","version":1,"chunks":[{"text":"t","vector":[1,0,0]}]}"#,
    )
    .unwrap();
    let other = dir.path().join("other.redb");
    let run = ratchet(&[
        "ingest",
        "--db",
        path(&other),
        "--jsonl",
        path(&jsonl),
        "--model",
        "my-model",
    ]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let line = one_error_line(&ratchet(&["ingest", "--db", path(&other), path(&docs)]));
    assert!(
        line.contains("was built with the embedder my-model, not hash-lexical-v1-384")
            && line.contains("use another --db"),
        "{line}"
    );
    let line = one_error_line(&ratchet(&["search", "--db", path(&other), "question"]));
    assert!(
        line.contains("my-model") && line.contains("--vector"),
        "{line}"
    );
    let vector = ratchet(&["search", "--db", path(&other), "--vector", "[1, 0.1, 0]"]);
    assert_eq!(vector.code, Some(0), "{}", vector.stderr);
    assert!(vector.stdout.contains("s/d  #0"), "{}", vector.stdout);

    // A MiniLM store, met with the hashing embedder.
    let minilm = dir.path().join("minilm.redb");
    let run = ratchet(&[
        "ingest",
        "--db",
        path(&minilm),
        "--jsonl",
        path(&jsonl),
        "--model",
        "all-MiniLM-L6-v2",
    ]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    // Ingest follows the store's embedder (issue 18): this one says MiniLM.
    let line = one_error_line(&ratchet(&["ingest", "--db", path(&minilm), path(&docs)]));
    if cfg!(feature = "minilm") {
        // Without an installed model, where to get it; with one, that the dimensions differ.
        assert!(
            line.contains("all-MiniLM-L6-v2")
                && (line.contains("pass --model DIR (or set RATCHET_MODEL)")
                    || line.contains("holds 3-dimensional vectors")),
            "{line}"
        );
    } else {
        assert!(
            line.contains("all-MiniLM-L6-v2") && line.contains("--features minilm"),
            "{line}"
        );
    }

    // Another dimension under the same embedder name.
    let narrow = dir.path().join("narrow.redb");
    let run = ratchet(&[
        "ingest",
        "--db",
        path(&narrow),
        "--jsonl",
        path(&jsonl),
        "--model",
        "hash-lexical-v1-384",
    ]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let line = one_error_line(&ratchet(&["ingest", "--db", path(&narrow), path(&docs)]));
    assert!(
        line.contains("holds 3-dimensional vectors") && line.contains("use another --db"),
        "{line}"
    );

    // Vectors of unknown origin: no embedder's name is recorded on them.
    let anonymous = dir.path().join("anonymous.redb");
    let run = ratchet(&["ingest", "--db", path(&anonymous), "--jsonl", path(&jsonl)]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let line = one_error_line(&ratchet(&["ingest", "--db", path(&anonymous), path(&docs)]));
    assert!(line.contains("unrecorded model"), "{line}");

    // A database another process writes: a second writer is refused; search reads beside
    // it (it opens read-only, issue 22).
    let held = Store::open(&db, Options::default()).unwrap();
    let line = one_error_line(&ratchet(&["ingest", "--db", path(&db), path(&docs)]));
    assert!(line.contains("open in another process"), "ingest: {line}");
    let run = ratchet(&["search", "--db", path(&db), "--vector", "[1,2,3]"]);
    assert_eq!(run.code, Some(0), "search beside a writer: {}", run.stderr);
    assert!(run.stdout.contains("no hits"), "{}", run.stdout);
    drop(held);
    assert_eq!(
        ratchet(&["ingest", "--db", path(&db), path(&docs)]).code,
        Some(0)
    );

    // Asking for MiniLM from a build without it, for a new store.
    #[cfg(not(feature = "minilm"))]
    {
        let model = dir.path().join("model");
        std::fs::create_dir_all(&model).unwrap();
        let new_db = dir.path().join("new.redb");
        for run in [
            ratchet(&[
                "ingest",
                "--db",
                path(&new_db),
                path(&docs),
                "--model",
                path(&model),
            ]),
            ratchet_with_env(
                &["ingest", "--db", path(&new_db), path(&docs)],
                &[("RATCHET_MODEL", path(&model))],
            ),
        ] {
            let line = one_error_line(&run);
            assert!(line.contains("--features minilm"), "{line}");
        }
    }
}
