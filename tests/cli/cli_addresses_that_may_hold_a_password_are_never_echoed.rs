//! Regression (review of the password redaction): addresses the URL parser could not see a
//! password in were still printed whole.
//! - A URL whose password holds a `/` (`postgres://app:2024/SECRET@host/db`): the URL parser
//!   reads no password (host `app`, port `2024`), the PostgreSQL client reads `2024/SECRET`.
//!   A build with the `postgres` feature asked the client; one without it trusted the parser
//!   and printed the address.
//! - A libpq connection string (`host=... password=...`) was taken for a file name: printed
//!   in "no database at ...", and `ingest` created a file named after it.
//! - A URL with an upper-case scheme (`POSTGRES://`), or another scheme (`mysql://`), was
//!   taken for a file path and printed in its errors.
//! - `demo --db URL` wrote its documents into the server's schema and printed the URL;
//!   a URL given without `--db` was echoed by clap's "unexpected argument" error.
//!
//! And `reembed` and `spaces drop` created a store at a mistyped path.

use crate::common::cli::{self, Run};
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(60);

fn ratchet(args: &[&str], dir: &std::path::Path, stdin: Option<&str>) -> Run {
    let run = cli::run(
        args,
        |c| {
            c.env_remove("RATCHET_MODEL").current_dir(dir);
        },
        stdin.map(|s| s.as_bytes().to_vec()),
        TIMEOUT,
    );
    cli::assert_no_panic(&run, args);
    run
}

/// Fails if `secret` shows in `run`'s output.
fn assert_hidden(run: &Run, secret: &str, args: &[&str]) {
    assert!(
        !run.stdout.contains(secret) && !run.stderr.contains(secret),
        "{args:?} printed {secret}:\nstdout: {}\nstderr: {}",
        run.stdout,
        run.stderr
    );
}

/// Every entry of `dir` but the ones named in `keep`.
fn made_in(dir: &std::path::Path, keep: &[&str]) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| !keep.contains(&name.as_str()))
        .collect()
}

const JSONL: &str = r#"{"op":"upsert","source":"s","id":"a","version":1,"chunks":[{"text":"alpha","vector":[1.0,0.0]}]}"#;

#[test]
fn addresses_a_url_parser_misreads_are_never_printed() {
    let dir = tempfile::tempdir().unwrap();
    // Nothing listens on port 1: the connection fails at once.
    let cases: [(&str, &str); 11] = [
        (
            "postgres://app:2024/Slash-Secret-1@127.0.0.1:1/rag",
            "Slash-Secret-1",
        ),
        (
            "POSTGRES://app:Upper-Secret-2@127.0.0.1:1/rag",
            "Upper-Secret-2",
        ),
        (
            "POSTGRES://app:2024/Upper-Slash-Secret@127.0.0.1:1/rag",
            "Upper-Slash-Secret",
        ),
        (
            "postgres://app:2024/Sslmode-Secret@127.0.0.1:1/rag?sslmode=verify-full",
            "Sslmode-Secret",
        ),
        (
            "mysql://app:Other-Secret-3@127.0.0.1:1/rag",
            "Other-Secret-3",
        ),
        (
            "host=127.0.0.1 port=1 user=app password=Conninfo-Secret-4 dbname=rag",
            "Conninfo-Secret-4",
        ),
        (
            "host = 127.0.0.1 password = Spaced-Secret-5",
            "Spaced-Secret-5",
        ),
        ("host=db password='Quoted Secret-11'", "Secret-11"),
        ("host=db password='Unclosed Secret-16", "Secret-16"),
        ("./PASSWORD = Odd-Secret-17", "Odd-Secret-17"),
        (
            "sslmode=disable service=x password=a\\ Escaped-Secret-12",
            "Escaped-Secret-12",
        ),
    ];
    for (address, secret) in cases {
        for args in [
            vec!["stats", "--db", address],
            vec!["search", "--db", address, "--vector", "[1.0, 0.0]"],
            vec!["verify", "--db", address],
            vec!["export", "--db", address],
            vec!["ingest", "--db", address, "--jsonl", "-"],
            vec!["reembed", "--db", address, "--hashing", "8"],
            vec!["spaces", "drop", "x", "--db", address],
            vec!["demo", "--db", address],
        ] {
            let run = ratchet(&args, dir.path(), Some(JSONL));
            assert_ne!(run.code, Some(0), "{args:?}: {}", run.stdout);
            assert_hidden(&run, secret, &args);
        }
    }
    // None of them was taken for a file (or directories) to create.
    assert_eq!(made_in(dir.path(), &[]), Vec::<String>::new());
}

#[test]
fn a_url_where_clap_wanted_none_is_not_echoed() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        vec!["stats", "postgres://app:Clap-Secret-6@127.0.0.1:1/rag"],
        vec!["stats", "--db", "x.redb", "password=Clap-Secret-7"],
        vec![
            "stats",
            "--db",
            "x.redb",
            "x,postgres://app:Clap-Secret-8@h/db",
        ],
        vec![
            "stats",
            "--db",
            "x.redb",
            "(POSTGRES://app:2024/Clap-Secret-9@h/db)",
        ],
        vec![
            "stats",
            "--db",
            "x.redb",
            "host=db PASSWORD = 'Clap-Secret-10 and more'",
        ],
        vec!["stats", "--db", "x.redb", "password=\"Clap-Secret-13\""],
        vec!["stats", "--db", "x.redb", "password=a\\ Clap-Secret-14"],
        vec![
            "stats",
            "--db",
            "x.redb",
            "1postgres://app:Clap-Secret-15@h/db",
        ],
    ] {
        let run = ratchet(&args, dir.path(), None);
        assert_eq!(run.code, Some(2), "{args:?}: a usage error\n{}", run.stderr);
        assert!(run.stderr.contains("unexpected argument"), "{}", run.stderr);
        assert_hidden(&run, "Clap-Secret", &args);
        assert!(
            !run.stderr.contains("and more"),
            "a quoted value whole: {}",
            run.stderr
        );
    }
    // Help still goes to stdout, whole (it quotes an example URL, which is no secret).
    let help = ratchet(&["stats", "--help"], dir.path(), None);
    assert_eq!(help.code, Some(0), "{}", help.stderr);
    assert!(help.stdout.contains("postgres://"), "{}", help.stdout);
}

#[test]
fn reembed_and_spaces_drop_refuse_a_missing_store() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        vec!["reembed", "--db", "typo.redb", "--hashing", "8"],
        vec!["spaces", "drop", "x", "--db", "typo.redb"],
    ] {
        let run = ratchet(&args, dir.path(), None);
        assert_ne!(run.code, Some(0), "{args:?}");
        assert!(
            run.stderr.contains("no database at"),
            "{args:?}: {}",
            run.stderr
        );
    }
    assert_eq!(made_in(dir.path(), &[]), Vec::<String>::new());
}
