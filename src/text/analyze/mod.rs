//! Turning text into index terms: Unicode word segmentation (UAX #29, `unicode-segmentation`),
//! case folding, then optionally stop words (the NLTK lists of `stop-words`) and a Snowball
//! stemmer (`rust-stemmers`) of one language.
//!
//! The same [`Analyzer`] indexes chunks and parses queries; the file records which one its
//! text index was built with (`meta["text_analyzer"]`), so a query is always analysed the way
//! the postings were.
//!
//! - `language.rs`: what each language brings (its stemmer, its stop words).
//! - `bytes.rs`: the ASCII fast path's byte classes (whitespace, letters and digits, upper
//!   case), 64 bytes at a time.
//! - `terms.rs`: [`Terms`], a text's distinct terms counted in a hash table of
//!   their own.
//! - `analyzer.rs`: the [`Analyzer`], which turns text into terms and counts them.
//!
//! Each uses only those listed before it (and this module's [`truncate`]). The configuration
//! ([`TextOptions`](crate::TextOptions), [`TextLanguage`](crate::TextLanguage)) is the store's, in `options.rs`.

mod analyzer;
mod bytes;
mod language;
mod terms;

pub(crate) use analyzer::{Analyzer, WriteBuffers};
#[cfg(feature = "postgres")]
pub(crate) use terms::Terms;

/// The longest term kept, in bytes: a longer "word" (a hash, a base64 run) is cut at a
/// character boundary, so no key in the postings table is unbounded.
pub(crate) const MAX_TERM_BYTES: usize = 64;

/// `term` cut to at most [`MAX_TERM_BYTES`] at a character boundary.
fn truncate(term: &str) -> &str {
    if term.len() <= MAX_TERM_BYTES {
        return term;
    }
    let mut end = MAX_TERM_BYTES;
    while !term.is_char_boundary(end) {
        end -= 1;
    }
    &term[..end]
}
