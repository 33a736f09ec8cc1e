//! Turning text into index terms: Unicode word segmentation (UAX #29, `unicode-segmentation`),
//! case folding, then optionally stop words (the NLTK lists of `stop-words`) and a Snowball
//! stemmer (`rust-stemmers`) of one language.
//!
//! The same [`Analyzer`] indexes chunks and parses queries; the file records which one its
//! text index was built with (`meta["text_analyzer"]`), so a query is always analysed the way
//! the postings were.

use rust_stemmers::{Algorithm, Stemmer};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use unicode_segmentation::UnicodeSegmentation;

/// The longest term kept, in bytes: a longer "word" (a hash, a base64 run) is cut at a
/// character boundary, so no key in the postings table is unbounded.
pub(crate) const MAX_TERM_BYTES: usize = 64;

/// A language for stemming and stop words in the full-text index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TextLanguage {
    /// Arabic.
    Arabic,
    /// Danish.
    Danish,
    /// Dutch.
    Dutch,
    /// English.
    English,
    /// Finnish.
    Finnish,
    /// French.
    French,
    /// German.
    German,
    /// Greek.
    Greek,
    /// Hungarian.
    Hungarian,
    /// Italian.
    Italian,
    /// Norwegian.
    Norwegian,
    /// Portuguese.
    Portuguese,
    /// Romanian.
    Romanian,
    /// Russian.
    Russian,
    /// Spanish.
    Spanish,
    /// Swedish.
    Swedish,
    /// Tamil.
    Tamil,
}

impl TextLanguage {
    /// Every language, in the order of [`TextLanguage::as_str`]'s names.
    pub const ALL: [TextLanguage; 17] = [
        TextLanguage::Arabic,
        TextLanguage::Danish,
        TextLanguage::Dutch,
        TextLanguage::English,
        TextLanguage::Finnish,
        TextLanguage::French,
        TextLanguage::German,
        TextLanguage::Greek,
        TextLanguage::Hungarian,
        TextLanguage::Italian,
        TextLanguage::Norwegian,
        TextLanguage::Portuguese,
        TextLanguage::Romanian,
        TextLanguage::Russian,
        TextLanguage::Spanish,
        TextLanguage::Swedish,
        TextLanguage::Tamil,
    ];

    /// The lower-case English name (`english`), as on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            TextLanguage::Arabic => "arabic",
            TextLanguage::Danish => "danish",
            TextLanguage::Dutch => "dutch",
            TextLanguage::English => "english",
            TextLanguage::Finnish => "finnish",
            TextLanguage::French => "french",
            TextLanguage::German => "german",
            TextLanguage::Greek => "greek",
            TextLanguage::Hungarian => "hungarian",
            TextLanguage::Italian => "italian",
            TextLanguage::Norwegian => "norwegian",
            TextLanguage::Portuguese => "portuguese",
            TextLanguage::Romanian => "romanian",
            TextLanguage::Russian => "russian",
            TextLanguage::Spanish => "spanish",
            TextLanguage::Swedish => "swedish",
            TextLanguage::Tamil => "tamil",
        }
    }

    /// Parses [`TextLanguage::as_str`]'s names.
    pub fn parse(name: &str) -> Option<TextLanguage> {
        TextLanguage::ALL.into_iter().find(|l| l.as_str() == name)
    }

    fn algorithm(self) -> Algorithm {
        match self {
            TextLanguage::Arabic => Algorithm::Arabic,
            TextLanguage::Danish => Algorithm::Danish,
            TextLanguage::Dutch => Algorithm::Dutch,
            TextLanguage::English => Algorithm::English,
            TextLanguage::Finnish => Algorithm::Finnish,
            TextLanguage::French => Algorithm::French,
            TextLanguage::German => Algorithm::German,
            TextLanguage::Greek => Algorithm::Greek,
            TextLanguage::Hungarian => Algorithm::Hungarian,
            TextLanguage::Italian => Algorithm::Italian,
            TextLanguage::Norwegian => Algorithm::Norwegian,
            TextLanguage::Portuguese => Algorithm::Portuguese,
            TextLanguage::Romanian => Algorithm::Romanian,
            TextLanguage::Russian => Algorithm::Russian,
            TextLanguage::Spanish => Algorithm::Spanish,
            TextLanguage::Swedish => Algorithm::Swedish,
            TextLanguage::Tamil => Algorithm::Tamil,
        }
    }

    /// The ISO 639-1 code the stop-word lists are keyed by.
    fn iso(self) -> &'static str {
        match self {
            TextLanguage::Arabic => "ar",
            TextLanguage::Danish => "da",
            TextLanguage::Dutch => "nl",
            TextLanguage::English => "en",
            TextLanguage::Finnish => "fi",
            TextLanguage::French => "fr",
            TextLanguage::German => "de",
            TextLanguage::Greek => "el",
            TextLanguage::Hungarian => "hu",
            TextLanguage::Italian => "it",
            TextLanguage::Norwegian => "no",
            TextLanguage::Portuguese => "pt",
            TextLanguage::Romanian => "ro",
            TextLanguage::Russian => "ru",
            TextLanguage::Spanish => "es",
            TextLanguage::Swedish => "sv",
            TextLanguage::Tamil => "ta",
        }
    }
}

/// How chunk text and queries become terms for the full-text index. The default: Unicode
/// words, lower-cased, no stemming, no stop words (language-neutral).
///
/// Fixed per store: the file records the analysis its text index was built with. Opening a
/// store for writing with other [`TextOptions`] rebuilds the text index in one transaction.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TextOptions {
    /// The language of the stemmer and of the stop words (`None`: neither).
    pub language: Option<TextLanguage>,
    /// Reduce words to their stems (`running` and `runs` both index as `run`). Only with a
    /// language.
    pub stemming: bool,
    /// Leave out the language's stop words (`the`, `of`, ...). Only with a language.
    pub stop_words: bool,
}

impl TextOptions {
    /// Stemming and stop words of `language`.
    pub fn language(language: TextLanguage) -> TextOptions {
        TextOptions {
            language: Some(language),
            stemming: true,
            stop_words: true,
        }
    }

    /// Turns stemming on or off.
    pub fn stemming(mut self, on: bool) -> TextOptions {
        self.stemming = on;
        self
    }

    /// Turns stop-word removal on or off.
    pub fn stop_words(mut self, on: bool) -> TextOptions {
        self.stop_words = on;
        self
    }
}

/// [`TextOptions`] made ready to run: the stemmer and the stop-word set.
pub(crate) struct Analyzer {
    options: TextOptions,
    stemmer: Option<Stemmer>,
    stop_words: HashSet<&'static str>,
}

impl std::fmt::Debug for Analyzer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Analyzer")
            .field("options", &self.options)
            .finish()
    }
}

impl Analyzer {
    pub(crate) fn new(options: &TextOptions) -> Analyzer {
        let stemmer = options
            .language
            .filter(|_| options.stemming)
            .map(|l| Stemmer::create(l.algorithm()));
        let stop_words = options
            .language
            .filter(|_| options.stop_words)
            .and_then(|l| stop_words::lookup(l.iso()))
            .map(|words| words.iter().copied().collect())
            .unwrap_or_default();
        Analyzer {
            options: options.clone(),
            stemmer,
            stop_words,
        }
    }

    pub(crate) fn options(&self) -> &TextOptions {
        &self.options
    }

    /// Calls `f` with every term of `text`, in order (repeats included).
    pub(crate) fn for_each_term(&self, text: &str, mut f: impl FnMut(&str)) {
        let mut folded = String::new();
        for word in text.unicode_words() {
            folded.clear();
            for c in word.chars() {
                folded.extend(c.to_lowercase());
            }
            if self.stop_words.contains(folded.as_str()) {
                continue;
            }
            let term = match &self.stemmer {
                Some(stemmer) => stemmer.stem(&folded),
                None => std::borrow::Cow::Borrowed(folded.as_str()),
            };
            if term.is_empty() {
                continue;
            }
            f(truncate(&term));
        }
    }

    /// The terms of `text`, in order (repeats included).
    #[cfg(test)]
    pub(crate) fn terms(&self, text: &str) -> Vec<String> {
        let mut terms = Vec::new();
        self.for_each_term(text, |t| terms.push(t.to_string()));
        terms
    }

    /// Each distinct term of `text` with its count, and the number of terms (the chunk's
    /// length for BM25).
    pub(crate) fn term_counts(&self, text: &str) -> (HashMap<String, u32>, u32) {
        let mut counts: HashMap<String, u32> = HashMap::new();
        let mut len = 0u32;
        self.for_each_term(text, |t| {
            len = len.saturating_add(1);
            match counts.get_mut(t) {
                Some(c) => *c = c.saturating_add(1),
                None => {
                    counts.insert(t.to_string(), 1);
                }
            }
        });
        (counts, len)
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn neutral_analysis_splits_unicode_words_and_folds_case() {
        let a = Analyzer::new(&TextOptions::default());
        assert_eq!(
            a.terms("Straße, CAFÉ and E-404: naïve émigrés."),
            ["straße", "café", "and", "e", "404", "naïve", "émigrés"]
        );
    }

    #[test]
    fn english_stems_and_drops_stop_words() {
        let a = Analyzer::new(&TextOptions::language(TextLanguage::English));
        assert_eq!(a.terms("The runners were running"), ["runner", "run"]);
    }

    #[test]
    fn every_language_has_stop_words_and_a_stemmer() {
        for language in TextLanguage::ALL {
            assert!(
                stop_words::lookup(language.iso()).is_some(),
                "{language:?} has no stop-word list"
            );
            assert_eq!(TextLanguage::parse(language.as_str()), Some(language));
        }
    }

    #[test]
    fn long_terms_are_cut_at_a_character_boundary() {
        let a = Analyzer::new(&TextOptions::default());
        let word = "é".repeat(100);
        let terms = a.terms(&word);
        assert_eq!(terms.len(), 1);
        assert!(terms[0].len() <= MAX_TERM_BYTES);
        assert!(terms[0].chars().all(|c| c == 'é'));
    }
}
