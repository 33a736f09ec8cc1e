//! Reading a store's address: how messages show it (never with a password), and the
//! `schema=` parameter of a PostgreSQL URL.

use std::path::Path;

use crate::error::InputError;

/// A store's address as messages show it: a URL (`postgres://...`, or any `scheme://`)
/// with every password masked as `***`, the one in the user information
/// (`user:PASSWORD@host`) and every query parameter whose name contains `password`
/// (`?password=...`, which the PostgreSQL client accepts); a libpq connection string (or
/// any text with `password =` in it) as a note that it is not shown; a path as it is.
///
/// The URL is read by a URL parser, never by searching for `@`, so an `@` in the query keeps
/// the message whole. An address the parser cannot read, or one from which the PostgreSQL
/// client would read a password other than those masked (it takes the credentials up to
/// the first `@` anywhere), is shown as its scheme alone: a password is never printed.
/// Every message of the library and of the `ratchet` command line that names a store goes
/// through this function.
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

/// Whether `scheme` is PostgreSQL's (`postgres` or `postgresql`, in any case).
fn is_postgres_scheme(scheme: &str) -> bool {
    scheme.eq_ignore_ascii_case("postgres") || scheme.eq_ignore_ascii_case("postgresql")
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
    // The address as the backend hands it to the client: the scheme in lower case (the
    // client knows no other), without its `schema=`.
    let Some(url) = postgres_url(Path::new(text)) else {
        // Not an address the client takes: no password of it is ever sent, and the URL
        // parser's masking stands.
        return true;
    };
    match client_password(&url) {
        Some(password) => masked.contains(&password),
        None => masked.is_empty(),
    }
}

/// The password the PostgreSQL client reads from the PostgreSQL URL `url`, if any: its own
/// reading; where it refuses the URL (an `sslmode` it does not know, say) the reading of
/// [`url_password`], so that such an address is masked as carefully as one it takes.
#[cfg(feature = "postgres")]
fn client_password(url: &str) -> Option<Vec<u8>> {
    let (address, _) = split_schema(url);
    match address.parse::<postgres::Config>() {
        Ok(config) => config.get_password().map(<[u8]>::to_vec),
        Err(_) => url_password(url),
    }
}

/// [`client_password`] in a build without the client: [`url_password`].
#[cfg(not(feature = "postgres"))]
fn client_password(url: &str) -> Option<Vec<u8>> {
    url_password(url)
}

/// The password of a PostgreSQL URL as `tokio-postgres` 0.7 reads it: the credentials up to
/// the first `@` anywhere, the password after their first `:`; a `password` parameter after
/// the first `?` past them replaces it.
fn url_password(url: &str) -> Option<Vec<u8>> {
    let (_, rest) = url.split_once("://")?;
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
    password
}

/// How [`redact_address`] shows a libpq connection string of `key=value` pairs.
const CONNINFO_SHOWN: &str = "(a key=value connection string; not shown)";

/// libpq's connection keywords: a string of `key=value` pairs whose first key is one of
/// these, or with a `password`, is a connection string, not a file name.
const CONNINFO_KEYS: [&str; 37] = [
    "host",
    "hostaddr",
    "port",
    "dbname",
    "user",
    "password",
    "passfile",
    "require_auth",
    "channel_binding",
    "connect_timeout",
    "client_encoding",
    "options",
    "application_name",
    "fallback_application_name",
    "keepalives",
    "keepalives_idle",
    "keepalives_interval",
    "keepalives_count",
    "tcp_user_timeout",
    "replication",
    "gssencmode",
    "sslmode",
    "sslnegotiation",
    "sslcompression",
    "sslcert",
    "sslkey",
    "sslpassword",
    "sslcertmode",
    "sslrootcert",
    "sslcrl",
    "sslcrldir",
    "sslsni",
    "requirepeer",
    "krbsrvname",
    "service",
    "target_session_attrs",
    "load_balance_hosts",
];

/// `text` read as libpq reads a connection string: `key = value` pairs separated by
/// whitespace, a value either bare (a backslash escapes the next character) or in single
/// quotes (a backslash escapes a quote or backslash); `None` if it is not one.
fn conninfo_pairs(text: &str) -> Option<Vec<(String, String)>> {
    let mut chars = text.chars().peekable();
    let mut pairs = Vec::new();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.peek().is_none() {
            return Some(pairs);
        }
        let mut key = String::new();
        while let Some(c) = chars.next_if(|c| *c != '=' && !c.is_whitespace()) {
            key.push(c);
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        chars.next_if_eq(&'=')?;
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let mut value = String::new();
        if chars.next_if_eq(&'\'').is_some() {
            loop {
                match chars.next()? {
                    '\'' => break,
                    '\\' => value.push(chars.next()?),
                    c => value.push(c),
                }
            }
        } else {
            while let Some(c) = chars.next_if(|c| !c.is_whitespace()) {
                if c == '\\' {
                    value.push(chars.next()?);
                } else {
                    value.push(c);
                }
            }
        }
        pairs.push((key, value));
    }
}

/// Whether `text` reads as a libpq connection string ([`conninfo_pairs`]) whose first key is
/// a libpq keyword, or holds `password =` anywhere (in any case: a malformed connection
/// string, an unclosed quote say, is still never shown or made a file of).
fn looks_like_conninfo(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    let assigns_password = lower
        .match_indices("password")
        .any(|(at, name)| lower[at + name.len()..].trim_start().starts_with('='));
    assigns_password
        || conninfo_pairs(text).is_some_and(|pairs| {
            pairs
                .first()
                .is_some_and(|(key, _)| CONNINFO_KEYS.contains(&key.as_str()))
        })
}

/// Why `address` is not one a store opens, as an [`InputError`] naming `path` that never
/// quotes it (it may hold a password): a URL of a scheme other than PostgreSQL's
/// (`mysql://...`, `file://...`), which a file path would otherwise take for directories and
/// print in its errors, or a libpq connection string of `key=value` pairs (or any text with
/// `password =` in it), which would become a file named after it, password and all. A PostgreSQL URL's scheme is read in any
/// case (`POSTGRES://`), as URL schemes are.
pub(crate) fn refused_address(address: &Path) -> Option<InputError> {
    let text = address.to_str()?;
    if let Some(scheme) = url_scheme(text) {
        // A one-letter scheme is a drive (`C://...`).
        return (!is_postgres_scheme(scheme) && scheme.len() > 1).then(|| {
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
    let scheme = url_scheme(text).filter(|scheme| is_postgres_scheme(scheme))?;
    let lower = scheme.to_ascii_lowercase();
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
