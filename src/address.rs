//! Reading a store's address: how messages show it (never with a password), and the
//! `schema=` parameter of a PostgreSQL URL.

use std::path::Path;

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
        return text.to_string();
    };
    let hidden = || format!("{scheme}://(an address that does not parse as a URL; not shown)");
    let Ok(mut url) = url::Url::parse(text) else {
        return hidden();
    };
    let userinfo_password = url.password().is_some();
    if userinfo_password && url.set_password(Some("***")).is_err() {
        return hidden();
    }
    let mut query_password = false;
    if let Some(query) = url.query().map(str::to_string) {
        let pairs: Vec<String> = query
            .split('&')
            .map(|pair| {
                let secret = url::form_urlencoded::parse(pair.as_bytes())
                    .next()
                    .is_some_and(|(name, _)| name.to_ascii_lowercase().contains("password"));
                match (secret, pair.split_once('=')) {
                    (true, Some((name, _))) => {
                        query_password = true;
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
    if !client_reads_the_same(text, userinfo_password || query_password) {
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
/// exactly when the parser found (and masked) one. Where the two disagree (the client takes
/// the credentials up to the first `@` anywhere), the masked URL may show what the client
/// sends as a password.
#[cfg(feature = "postgres")]
fn client_reads_the_same(text: &str, masked_a_password: bool) -> bool {
    // The address as the backend hands it to the client (without its `schema=`).
    let (address, _) = split_schema(text);
    match address.parse::<postgres::Config>() {
        Ok(config) => config.get_password().is_some() == masked_a_password,
        // Not an address the client takes: no password of it is ever sent, and the URL
        // parser's masking stands.
        Err(_) => true,
    }
}

#[cfg(not(feature = "postgres"))]
fn client_reads_the_same(_text: &str, _masked_a_password: bool) -> bool {
    true
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
