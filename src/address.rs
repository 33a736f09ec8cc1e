//! Reading a store's address: how messages show it (never with a password), and the
//! `schema=` parameter of a PostgreSQL URL.

use std::path::Path;

use crate::error::InputError;

/// A store's address as messages show it: a URL (`postgres://...`, or any `scheme://`)
/// with every password masked as `***`, the one in the user information
/// (`user:PASSWORD@host`) and every query parameter whose name contains `password`
/// (`?password=...`, which the PostgreSQL client accepts); a path is shown as it is.
///
/// The URL is read by a URL parser, never by searching for `@`, so an `@` in the query keeps
/// the message whole. An address the parser cannot read, or (with the `postgres` feature)
/// one the PostgreSQL client reads differently, is shown as its scheme alone: a password
/// is never printed. Every message of the library and of the `ratchet` command line that
/// names a store goes through this function.
pub fn redact_address(address: impl AsRef<Path>) -> String {
    let address = address.as_ref();
    let Some(text) = address.to_str() else {
        return address.display().to_string();
    };
    let Some(scheme) = url_scheme(text) else {
        if looks_like_conninfo(text) {
            return CONNINFO_SHOWN.to_string();
        }
        return text.to_string();
    };
    let hidden = || format!("{scheme}://(an address that does not parse as a URL; not shown)");
    let Ok(mut url) = url::Url::parse(text) else {
        return hidden();
    };
    // The values masked, decoded as the PostgreSQL client decodes them, to compare with the
    // password the client would read.
    let mut masked: Vec<Vec<u8>> = Vec::new();
    if let Some(password) = url.password() {
        masked.push(percent_encoding::percent_decode_str(password).collect());
        if url.set_password(Some("***")).is_err() {
            return hidden();
        }
    }
    if let Some(query) = url.query().map(str::to_string) {
        let pairs: Vec<String> = query
            .split('&')
            .map(|pair| {
                let secret = url::form_urlencoded::parse(pair.as_bytes())
                    .next()
                    .is_some_and(|(name, _)| name.to_ascii_lowercase().contains("password"));
                match (secret, pair.split_once('=')) {
                    (true, Some((name, value))) => {
                        masked.push(percent_encoding::percent_decode_str(value).collect());
                        format!("{name}=***")
                    }
                    _ => pair.to_string(),
                }
            })
            .collect();
        url.set_query(Some(&pairs.join("&")));
    }
    // A fragment is no part of a PostgreSQL address: the client reads `#...` as part of the
    // value before it (a password's tail, perhaps).
    if url.fragment().is_some() {
        url.set_fragment(Some("***"));
    }
    if !client_reads_the_same(text, &masked) {
        return hidden();
    }
    url.to_string()
}

/// The scheme of `text` if it starts as a URL does (`scheme://`).
fn url_scheme(text: &str) -> Option<&str> {
    let (scheme, _) = text.split_once("://")?;
    let mut chars = scheme.chars();
    let starts = chars.next().is_some_and(|c| c.is_ascii_alphabetic());
    (starts && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
        .then_some(scheme)
}

/// Whether the PostgreSQL client reads `text` as the URL parser did: it finds a password
/// exactly when the parser found (and masked) one, and the one it finds is among those
/// masked. Where the two disagree (the client takes the credentials up to the first `@`
/// anywhere, so `postgres://app:2024/pw@db/rag` holds the password `2024/pw` for it and
/// none for the URL parser), the masked URL may show what the client sends as a password.
fn client_reads_the_same(text: &str, masked: &[Vec<u8>]) -> bool {
    match client_password(text) {
        // Not an address the client takes: no password of it is ever sent, and the URL
        // parser's masking stands.
        None => true,
        Some(Some(password)) => masked.contains(&password),
        Some(None) => masked.is_empty(),
    }
}

/// The password the PostgreSQL client reads from `text` (`None` inside: none), or `None` if
/// the client does not take `text` as an address.
#[cfg(feature = "postgres")]
fn client_password(text: &str) -> Option<Option<Vec<u8>>> {
    // The address as the backend hands it to the client (without its `schema=`).
    let (address, _) = split_schema(text);
    let config = address.parse::<postgres::Config>().ok()?;
    Some(config.get_password().map(<[u8]>::to_vec))
}

/// [`client_password`] in a build without the client: its URL reading, as
/// `tokio-postgres` 0.7 does it (credentials up to the first `@` anywhere, the password
/// after their first `:`; a `password` parameter after the first `?` past them replaces it),
/// so that a build without the `postgres` feature masks as one with it does.
#[cfg(not(feature = "postgres"))]
fn client_password(text: &str) -> Option<Option<Vec<u8>>> {
    let rest = text
        .strip_prefix("postgres://")
        .or_else(|| text.strip_prefix("postgresql://"))?;
    let mut password = None;
    let rest = match rest.split_once('@') {
        Some((credentials, rest)) => {
            if let Some((_, secret)) = credentials.split_once(':') {
                password = Some(percent_encoding::percent_decode_str(secret).collect());
            }
            rest
        }
        None => rest,
    };
    if let Some((_, query)) = rest.split_once('?') {
        for (name, value) in query.split('&').filter_map(|pair| pair.split_once('=')) {
            if name == "password" {
                password = Some(percent_encoding::percent_decode_str(value).collect());
            }
        }
    }
    Some(password)
}

/// How [`redact_address`] shows a libpq connection string of `key=value` pairs.
const CONNINFO_SHOWN: &str = "(a key=value connection string; not shown)";

/// The keywords of a libpq connection string (`host=db user=app password=...`) that tell one
/// from a file name.
const CONNINFO_KEYS: [&str; 12] = [
    "host",
    "hostaddr",
    "port",
    "dbname",
    "user",
    "password",
    "passfile",
    "sslmode",
    "options",
    "application_name",
    "connect_timeout",
    "target_session_attrs",
];

/// Whether `text` reads as a libpq connection string: whitespace-separated `key=value`
/// pairs (spaces around `=` allowed), every key one of [`CONNINFO_KEYS`].
fn looks_like_conninfo(text: &str) -> bool {
    // `host = db` is `host=db`: spaces beside `=` dropped first.
    let mut joined = String::with_capacity(text.len());
    let mut chars = text.trim().chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_whitespace() {
            while chars.peek().is_some_and(|c| c.is_whitespace()) {
                chars.next();
            }
            if chars.peek() == Some(&'=') || joined.ends_with('=') {
                continue;
            }
        }
        joined.push(c);
    }
    let mut pairs = joined.split_whitespace().peekable();
    pairs.peek().is_some()
        && pairs.all(|pair| {
            pair.split_once('=')
                .is_some_and(|(key, _)| CONNINFO_KEYS.contains(&key))
        })
}

/// Why `address` is not one a store opens, as an [`InputError`] naming `path` that never
/// quotes it (it may hold a password): a URL of a scheme other than PostgreSQL's
/// (`mysql://...`, `file://...`), which a file path would otherwise take for directories and
/// print in its errors, or a libpq connection string of `key=value` pairs, which would
/// become a file named after it, password and all. A PostgreSQL URL's scheme is read in any
/// case (`POSTGRES://`), as URL schemes are.
pub(crate) fn refused_address(address: &Path) -> Option<InputError> {
    let text = address.to_str()?;
    if let Some(scheme) = url_scheme(text) {
        // A one-letter scheme is a drive (`C://...`).
        let known = matches!(
            scheme.to_ascii_lowercase().as_str(),
            "postgres" | "postgresql"
        );
        return (!known && scheme.len() > 1).then(|| {
            InputError::new(
                "path",
                format!(
                    "a {scheme}:// address (not shown: it may hold a password) is not a store \
                     ratchetdb opens: give a file path, or a postgres:// URL"
                ),
            )
        });
    }
    looks_like_conninfo(text).then(|| {
        InputError::new(
            "path",
            "a PostgreSQL connection string of key=value pairs (not shown: it may hold a \
             password) is not an address ratchetdb reads: give a postgres:// URL \
             (postgres://USER:PASSWORD@HOST:PORT/DATABASE)",
        )
    })
}

/// `address` as a PostgreSQL URL (`postgres://` or `postgresql://`, the scheme in any case,
/// given to the client in lower case), if it is one.
pub(crate) fn postgres_url(address: &Path) -> Option<std::borrow::Cow<'_, str>> {
    let text = address.to_str()?;
    let scheme = url_scheme(text)?;
    let lower = scheme.to_ascii_lowercase();
    if lower != "postgres" && lower != "postgresql" {
        return None;
    }
    Some(if scheme == lower {
        std::borrow::Cow::Borrowed(text)
    } else {
        std::borrow::Cow::Owned(format!("{lower}{}", &text[scheme.len()..]))
    })
}

/// The URL without its `schema=` query parameter, and that parameter's value.
#[cfg(feature = "postgres")]
pub(crate) fn split_schema(url: &str) -> (String, Option<String>) {
    let Some((base, query)) = url.split_once('?') else {
        return (url.to_string(), None);
    };
    let mut schema = None;
    let kept: Vec<&str> = query
        .split('&')
        .filter(|pair| match pair.strip_prefix("schema=") {
            Some(name) => {
                schema = Some(name.to_string());
                false
            }
            None => true,
        })
        .collect();
    if kept.is_empty() {
        (base.to_string(), schema)
    } else {
        (format!("{base}?{}", kept.join("&")), schema)
    }
}
