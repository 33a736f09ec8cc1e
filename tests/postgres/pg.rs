//! The shared helper: the server from `RATCHETDB_PG_URL`, a fresh schema per test, and
//! verify.
#![allow(dead_code)]

use ratchetdb::testkit;
use ratchetdb::{Options, Store};

/// The server's URL, or `None` after saying the test skipped (see [`say_skipped`]).
pub fn url(test: &str) -> Option<String> {
    match std::env::var("RATCHETDB_PG_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            say_skipped(test);
            None
        }
    }
}

/// Tells the person running the tests that the running test skipped for want of a server.
///
/// libtest has no runtime "ignored", and it captures `eprintln!` (shown only when a test
/// fails), so a skipped test used to read `... ok` and nothing else. A write to
/// `std::io::stdout()` itself (not through the print macros) is not captured: the line
/// shows whole among libtest's own, naming the test (libtest names each test's thread after
/// it). Under `cargo nextest`, which keeps
/// a passing test's output, pass `--no-capture` to see it.
pub fn say_skipped(test: &str) {
    use std::io::Write;
    let thread = std::thread::current();
    let name = thread.name().filter(|n| *n != "main").unwrap_or(test);
    let _ = writeln!(
        std::io::stdout().lock(),
        "test {name} SKIPPED: RATCHETDB_PG_URL is not set (scripts/postgres.sh start prints it)"
    );
}

/// The schema a test works in (unique per test and process, so runs never meet).
pub fn schema(test: &str) -> String {
    format!("t_{}_{}", test, std::process::id())
}

/// A fresh store in the test's own schema (dropped first), or `None` when no server is
/// configured.
pub fn fresh(test: &str, options: Options) -> Option<(Store, String)> {
    let url = url(test)?;
    let schema = schema(test);
    drop_schema(&url, &schema);
    let store = Store::open(address(&url, &schema), options).expect("open the Postgres store");
    Some((store, url))
}

/// The `Store::open` address of the store in `schema` on the server at `url`.
pub fn address(url: &str, schema: &str) -> String {
    let separator = if url.contains('?') { '&' } else { '?' };
    format!("{url}{separator}schema={schema}")
}

/// Drops `schema` and everything in it.
pub fn drop_schema(url: &str, schema: &str) {
    testkit::pg_execute(url, &format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
        .expect("drop the test's schema");
}

/// Panics with the violations unless `verify()` finds none.
pub fn assert_verified(store: &Store) {
    let report = store.verify().expect("verify");
    assert!(
        report.is_ok(),
        "verify found violations: {:?}",
        report.violations
    );
}

/// A fresh schema for the test (dropped first) and the `postgres://...?schema=...` URL
/// that opens it through `Store::open`, or `None` when no server is configured.
pub fn fresh_url(test: &str) -> Option<String> {
    let url = url(test)?;
    let schema = schema(test);
    testkit::pg_execute(&url, &format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
        .expect("drop the test's schema");
    let separator = if url.contains('?') { '&' } else { '?' };
    Some(format!("{url}{separator}schema={schema}"))
}

/// Panics with the violations unless the façade's `verify()` finds none.
pub fn assert_store_verified(store: &ratchetdb::Store) {
    let report = store.verify().expect("verify");
    assert!(
        report.is_ok(),
        "verify found violations: {:?}",
        report.violations
    );
}
