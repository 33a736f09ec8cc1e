//! Masking the passwords a message quotes from the command line: clap's usage errors
//! echo what was typed, and a store's URL or a connection string typed in the wrong place
//! would be printed whole.

/// `text` (a message clap rendered from the command line) with every password it may
/// quote masked: each URL (`scheme://...`, wherever it starts in a word) as
/// [`ratchetdb::redact_address`] shows it, and the value of each `password = value` (any
/// case, a quoted value whole) as `***`. A store's URL given where clap wanted none
/// (`ratchet stats URL`, without `--db`) was echoed whole in clap's "unexpected argument"
/// error.
pub fn mask_secrets(text: &str) -> String {
    mask_passwords(&mask_urls(text))
}

/// [`mask_secrets`]' URLs: from the scheme's first character before each `://` to the next
/// whitespace or quote.
fn mask_urls(text: &str) -> String {
    let is_scheme = |c: char| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.');
    let ends = |c: char| c.is_whitespace() || matches!(c, '\'' | '"' | '`');
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let run = rest[..at]
            .char_indices()
            .rev()
            .take_while(|(_, c)| is_scheme(*c))
            .last()
            .map_or(at, |(i, _)| i);
        // A scheme starts with a letter (`1postgres://` is `postgres://` after a `1`).
        let start = rest[run..at]
            .find(|c: char| c.is_ascii_alphabetic())
            .map_or(at, |i| run + i);
        let end = rest[at..].find(ends).map_or(rest.len(), |i| at + i);
        out.push_str(&rest[..start]);
        if start == at {
            // No scheme before it: not a URL.
            out.push_str(&rest[at..end]);
        } else {
            out.push_str(&ratchetdb::redact_address(&rest[start..end]));
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// [`mask_secrets`]' `password = value` pairs.
fn mask_passwords(text: &str) -> String {
    const NAME: &str = "password";
    let lower = text.to_ascii_lowercase();
    let mut out = String::with_capacity(text.len());
    let mut done = 0;
    let mut from = 0;
    while let Some(found) = lower[from..].find(NAME) {
        let name_end = from + found + NAME.len();
        let after = &text[name_end..];
        let spaced = after.len() - after.trim_start().len();
        let Some(value) = after.trim_start().strip_prefix('=') else {
            from = name_end;
            continue;
        };
        let value_at = name_end + spaced + 1 + (value.len() - value.trim_start().len());
        let value = &text[value_at..];
        let mut escaped = false;
        let len = match value
            .chars()
            .next()
            .filter(|c| matches!(c, '\'' | '"' | '`'))
        {
            // A quoted value, to its closing quote (a backslash escapes the next character).
            Some(quote) => value[1..]
                .char_indices()
                .find(|&(_, c)| {
                    let closes = c == quote && !escaped;
                    escaped = c == '\\' && !escaped;
                    closes
                })
                .map_or(value.len(), |(i, _)| i + 2),
            // A bare value, to the next space or quote (a backslash escapes the next
            // character: `a\ b` is one value).
            None => value
                .char_indices()
                .find(|&(_, c)| {
                    let ends = !escaped && (c.is_whitespace() || matches!(c, '\'' | '"' | '`'));
                    escaped = c == '\\' && !escaped;
                    ends
                })
                .map_or(value.len(), |(i, _)| i),
        };
        out.push_str(&text[done..value_at]);
        out.push_str("***");
        done = value_at + len;
        from = done.max(name_end);
    }
    out.push_str(&text[done..]);
    out
}
