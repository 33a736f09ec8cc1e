//! Regression (issue 44, item 2): `ratchet copy --from postgres://user:PASS@…` printed the
//! password in its summary line: only `--to` was redacted. Both ends now go through the
//! library's one redaction (`ratchetdb::redact_address`).
//!
//! Needs a build with `--features postgres` and a server in `RATCHETDB_PG_URL` (the test
//! says it skipped otherwise).

#[cfg(feature = "postgres")]
#[test]
fn copy_from_a_url_with_a_password_never_prints_it() {
    use crate::common::cli;
    use std::time::Duration;

    let Some(base) = std::env::var("RATCHETDB_PG_URL")
        .ok()
        .filter(|u| !u.is_empty())
    else {
        eprintln!("skipped: RATCHETDB_PG_URL is not set (scripts/postgres.sh start prints it)");
        return;
    };
    const SECRET: &str = "Copy-From-Secret-77";
    let schema = format!("t_copy_redact_{}", std::process::id());
    ratchetdb::testkit::pg_execute(&base, &format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
        .expect("drop the test's schema");
    let mut url = url::Url::parse(&base).expect("RATCHETDB_PG_URL is a URL");
    url.set_password(Some(SECRET)).expect("a URL with a host");
    url.query_pairs_mut().append_pair("schema", &schema);
    let source = url.to_string();

    let ratchet = |args: &[&str], stdin: Option<&str>| {
        let run = cli::run(
            args,
            |_| {},
            stdin.map(|s| s.as_bytes().to_vec()),
            Duration::from_secs(60),
        );
        cli::assert_no_panic(&run, args);
        run
    };
    let jsonl = r#"{"op":"upsert","source":"s","id":"a","version":1,"chunks":[{"text":"alpha","vector":[1.0,0.0]}]}"#;
    let ingest = ratchet(&["ingest", "--db", &source, "--jsonl", "-"], Some(jsonl));
    assert_eq!(ingest.code, Some(0), "{}{}", ingest.stdout, ingest.stderr);

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("copy.redb");
    let copy = ratchet(
        &["copy", "--from", &source, "--to", file.to_str().unwrap()],
        None,
    );
    assert_eq!(copy.code, Some(0), "{}{}", copy.stdout, copy.stderr);
    assert!(copy.stdout.starts_with("ok: 1 of 1"), "{}", copy.stdout);
    assert!(
        !copy.stdout.contains(SECRET) && !copy.stderr.contains(SECRET),
        "the password is printed:\n{}{}",
        copy.stdout,
        copy.stderr
    );
    // The summary still says where from: the address, password masked.
    assert!(copy.stdout.contains(":***@"), "{}", copy.stdout);
    let _ = ratchetdb::testkit::pg_execute(&base, &format!("DROP SCHEMA {schema} CASCADE"));
}
