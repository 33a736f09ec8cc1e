//! Regression (review of the password redaction): `Store::open` took a libpq connection
//! string (`host=... password=...`) or a URL of another scheme (`mysql://...`,
//! `POSTGRES://...` in upper case) for a file path, created a file (or failed on its
//! directories) named after it, and quoted it, password and all, in its errors; and
//! `redact_address` showed a URL whose password the PostgreSQL client reads elsewhere than
//! the URL parser (after the first `@` anywhere) as long as both found *a* password.

use ratchetdb::{redact_address, OpenError, Options, Store};

const SECRET: &str = "Hidden-Secret-9";

#[test]
fn a_connection_string_or_another_scheme_is_refused_without_quoting_it() {
    // As a user gives them: relative, so an accepted one would land beside the test.
    let refused = [
        format!("host=127.0.0.1 port=1 user=app password={SECRET} dbname=rag"),
        format!("user = app password = {SECRET}"),
        format!("mysql://app:{SECRET}@127.0.0.1:1/rag"),
        format!("file://app:{SECRET}@localhost/store.redb"),
    ];
    for address in &refused {
        let path = std::path::Path::new(address);
        for opened in [
            Store::open(path, Options::default()).map(drop),
            Store::open_read_only(path).map(drop),
            Store::create(path, Options::default()).map(drop),
            Store::recover(path).map(drop),
        ] {
            match opened {
                Err(OpenError::Input(input)) => {
                    assert_eq!(input.field, "path", "{address}");
                    assert!(!input.to_string().contains(SECRET), "{input}");
                }
                other => panic!("{address}: expected an input error, got {other:?}"),
            }
        }
        assert!(!redact_address(address).contains(SECRET), "{address}");
        assert!(!path.exists(), "{address}: nothing created");
    }
}

#[test]
fn an_upper_case_postgres_scheme_names_a_server_not_a_file() {
    let address = format!("POSTGRES://app:{SECRET}@127.0.0.1:1/rag");
    let opened = Store::open(&address, Options::default().must_exist()).map(drop);
    let error = opened.expect_err("nothing listens on port 1");
    assert!(!error.to_string().contains(SECRET), "{error}");
    assert!(
        !matches!(error, OpenError::Input(_)),
        "a PostgreSQL URL in any case is an address: {error}"
    );
    assert!(redact_address(&address).contains("***"));
    assert!(
        !std::path::Path::new("POSTGRES:").exists(),
        "no directory made"
    );
}

#[test]
fn a_password_the_client_reads_elsewhere_than_the_url_parser_is_never_shown() {
    // The URL parser masks `password=pw`; the client takes everything up to the first `@`
    // as credentials, so its password is what follows `svc:`.
    let address = format!("postgres://h/db?password=pw&application_name=svc:{SECRET}@eu");
    assert!(!redact_address(&address).contains(SECRET));
    // The URL parser reads the host `app` and port `2024`; the client the password
    // `2024/SECRET`.
    let address = format!("postgres://app:2024/{SECRET}@db/rag");
    assert!(!redact_address(&address).contains(SECRET));
    // An ordinary URL is still shown, its password masked.
    let shown = redact_address(format!("postgres://app:{SECRET}@db:5432/rag?schema=s"));
    assert_eq!(shown, "postgres://app:***@db:5432/rag?schema=s");
}
