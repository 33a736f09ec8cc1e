//! Regression (issue 44, item 3): a password given as `?password=` in a store's URL (which
//! the PostgreSQL client accepts) was printed verbatim in every open error, and the
//! redaction took the last `@` anywhere in the URL, so an `@` in the query string garbled
//! the message. Addresses are now read by a URL parser (`ratchetdb::redact_address`), and
//! every command that takes a URL (`ingest` of a folder and of JSONL, `search`, `stats`,
//! `verify`, `export`, `copy`) is run here with a password in the user information, in
//! `?password=`, and with `@` in the query: on a server that lets the connection in (its
//! summaries and messages), on a port where nothing listens, and on a store that does not
//! exist (the error paths). The password never appears on stdout or stderr.
//!
//! With the `postgres` feature and a server in `RATCHETDB_PG_URL`, all of it; without the
//! feature, the same commands' "not built with postgres" errors.

use crate::common::cli::{self, Run};
use std::time::Duration;

const SECRETS: [&str; 3] = ["Userinfo-Secret-41", "Query-Secret-42", "At-Secret-43"];

/// The three forms of a password in `base` (a `postgres://user@host:port/db` URL), each in
/// the schema `schema`.
fn with_passwords(base: &str, schema: &str) -> Vec<String> {
    let parsed = url::Url::parse(base).expect("a URL");
    let mut userinfo = parsed.clone();
    userinfo.set_password(Some(SECRETS[0])).expect("a host");
    userinfo.query_pairs_mut().append_pair("schema", schema);
    let mut plain = parsed.clone();
    plain.set_password(None).expect("a host");
    let plain = plain.to_string();
    let join = if plain.contains('?') { '&' } else { '?' };
    vec![
        userinfo.to_string(),
        format!("{plain}{join}password={}&schema={schema}", SECRETS[1]),
        format!(
            "{plain}{join}password={}@x&application_name=me@example&schema={schema}",
            SECRETS[2]
        ),
    ]
}

fn ratchet(args: &[&str], stdin: Option<&str>, dir: &std::path::Path) -> Run {
    let run = cli::run(
        args,
        |c| {
            c.env_remove("RATCHET_MODEL").current_dir(dir);
        },
        stdin.map(|s| s.as_bytes().to_vec()),
        Duration::from_secs(60),
    );
    cli::assert_no_panic(&run, args);
    run
}

/// Runs every command against `db` (with `writes`, also the ones that write to it); fails
/// if any output shows a password. Returns the runs, for the caller's checks.
fn every_command(db: &str, dir: &std::path::Path, writes: bool) -> Vec<(String, Run)> {
    let docs = dir.join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    std::fs::write(docs.join("kettle.md"), "The kettle boils water.").unwrap();
    let jsonl = r#"{"op":"upsert","source":"s","id":"a","version":1,"chunks":[{"text":"alpha","vector":[1.0,0.0]}]}"#;
    // A redb store to copy from, and a path to copy to.
    let local = dir.join("local.redb");
    if !local.exists() {
        let local = local.to_str().unwrap();
        let made = ratchet(&["ingest", "--db", local, "--jsonl", "-"], Some(jsonl), dir);
        assert_eq!(made.code, Some(0), "{}", made.stderr);
    }
    let copy = dir.join("copy.redb");
    let _ = std::fs::remove_file(&copy);
    let (docs, local, copy) = (
        docs.to_str().unwrap(),
        local.to_str().unwrap(),
        copy.to_str().unwrap(),
    );
    let mut commands: Vec<(Vec<&str>, Option<&str>)> = Vec::new();
    if writes {
        commands.push((vec!["ingest", "--db", db, "--jsonl", "-"], Some(jsonl)));
        // A store of vectors from no recorded model: the refusal names the store.
        commands.push((vec!["ingest", "--db", db, docs], None));
    }
    commands.extend([
        (vec!["search", "--db", db, "--vector", "[1,0]"], None),
        (vec!["search", "--db", db, "kettle"], None),
        (vec!["stats", "--db", db], None),
        (vec!["stats", "--db", db, "--json"], None),
        (vec!["verify", "--db", db], None),
        (vec!["export", "--db", db], None),
    ]);
    if cfg!(feature = "postgres") {
        commands.push((vec!["copy", "--from", db, "--to", copy], None));
        if writes {
            commands.push((vec!["copy", "--from", local, "--to", db], None));
        }
    }
    let mut runs = Vec::new();
    for (args, stdin) in commands {
        let run = ratchet(&args, stdin, dir);
        for secret in SECRETS {
            assert!(
                !run.stdout.contains(secret) && !run.stderr.contains(secret),
                "ratchet {args:?} printed the password:\n{}{}",
                run.stdout,
                run.stderr
            );
        }
        runs.push((args.join(" "), run));
    }
    runs
}

#[test]
// Without the `postgres` feature the server part below is compiled out, and the early
// `return` becomes the last statement.
#[allow(clippy::needless_return)]
fn no_command_prints_the_password_of_a_store_url() {
    let dir = tempfile::tempdir().unwrap();
    let base = std::env::var("RATCHETDB_PG_URL")
        .ok()
        .filter(|u| !u.is_empty());
    if !cfg!(feature = "postgres") || base.is_none() {
        // Without the backend (or a server): every command refuses the URL, and says so
        // without the password.
        for db in with_passwords("postgres://ratchet@127.0.0.1:1/db", "s") {
            for (command, run) in every_command(&db, dir.path(), true) {
                assert_ne!(run.code, Some(0), "{command}: {}", run.stdout);
            }
        }
        if base.is_none() {
            eprintln!("skipped the server part: RATCHETDB_PG_URL is not set");
        }
        return;
    }
    #[cfg(feature = "postgres")]
    {
        let base = base.unwrap_or_default();
        let schema = format!("t_redact_{}", std::process::id());
        let missing = format!("t_redact_missing_{}", std::process::id());
        for name in [&schema, &missing] {
            ratchetdb::testkit::pg_execute(&base, &format!("DROP SCHEMA IF EXISTS {name} CASCADE"))
                .expect("drop the test's schema");
        }
        // A server that lets the connection in (it ignores a password it does not ask for):
        // the commands work, and their summaries name the store without the password.
        for db in with_passwords(&base, &schema) {
            let runs = every_command(&db, dir.path(), true);
            let ingest = &runs[0].1;
            assert_eq!(ingest.code, Some(0), "{}{}", ingest.stdout, ingest.stderr);
            let (_, folder) = runs
                .iter()
                .find(|(c, _)| c.starts_with("ingest") && !c.contains("--jsonl"))
                .expect("the folder ingest");
            // It refuses a store of unrecorded vectors, naming the store.
            assert!(folder.stderr.contains("127.0.0.1"), "{}", folder.stderr);
            let (_, copy) = runs
                .iter()
                .find(|(c, _)| c.starts_with("copy --from postgres"))
                .expect("the copy");
            assert_eq!(copy.code, Some(0), "{}{}", copy.stdout, copy.stderr);
            assert!(copy.stdout.contains("127.0.0.1"), "{}", copy.stdout);
            ratchetdb::testkit::pg_execute(&base, &format!("DROP SCHEMA {schema} CASCADE"))
                .expect("drop the test's schema");
        }
        // Nothing listens on port 1; the store in `missing` does not exist.
        let mut unreachable = url::Url::parse(&base).expect("a URL");
        unreachable.set_port(Some(1)).expect("a port");
        let error_paths = with_passwords(unreachable.as_str(), &schema)
            .into_iter()
            .map(|db| (db, true))
            .chain(
                with_passwords(&base, &missing)
                    .into_iter()
                    .map(|db| (db, false)),
            );
        for (db, writes) in error_paths {
            for (command, run) in every_command(&db, dir.path(), writes) {
                assert_ne!(run.code, Some(0), "{command}: {}", run.stdout);
                // The message is whole: it names the server.
                assert!(
                    run.stderr.contains("127.0.0.1"),
                    "{command}: {}",
                    run.stderr
                );
            }
            let _ = ratchetdb::testkit::pg_execute(
                &base,
                &format!("DROP SCHEMA IF EXISTS {missing} CASCADE"),
            );
        }
    }
}
