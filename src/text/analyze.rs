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
use std::hash::BuildHasher;
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

/// [`TextOptions`] made ready to run: the stemmer and the stop-word set; and the buffers
/// the store's text writes analyse and encode in, kept from one write transaction to the
/// next ([`Analyzer::take_buffers`]).
pub(crate) struct Analyzer {
    options: TextOptions,
    stemmer: Option<Stemmer>,
    stop_words: HashSet<&'static str>,
    spare: parking_lot::Mutex<Option<WriteBuffers>>,
}

/// What one write transaction's text index work is done in: a chunk's [`Terms`] and the
/// row they are encoded into, reused from chunk to chunk and (through
/// [`Analyzer::take_buffers`]) from transaction to transaction, so that a write's first
/// chunk does not grow them again from nothing (a tenth of an 8-chunk prose write's text
/// index cost, `docs/benchmarks.md`).
#[derive(Debug, Default)]
pub(crate) struct WriteBuffers {
    pub(crate) terms: Terms,
    pub(crate) row: Vec<u8>,
}

/// Buffers grown past this many bytes (by one very large chunk) are freed rather than kept.
const KEEP_BUFFERS_UP_TO: usize = 1 << 20;

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
            spare: parking_lot::Mutex::new(None),
        }
    }

    /// The buffers the last write transaction gave back, or new ones. Write transactions
    /// run one at a time, so there is one set to keep.
    pub(crate) fn take_buffers(&self) -> WriteBuffers {
        self.spare.lock().take().unwrap_or_default()
    }

    /// Keeps `buffers` for the next write transaction, unless one very large chunk grew
    /// them past [`KEEP_BUFFERS_UP_TO`].
    pub(crate) fn give_back(&self, buffers: WriteBuffers) {
        if buffers.terms.capacity_bytes() + buffers.row.capacity() <= KEEP_BUFFERS_UP_TO {
            *self.spare.lock() = Some(buffers);
        }
    }

    pub(crate) fn options(&self) -> &TextOptions {
        &self.options
    }

    /// Calls `f` with every term of `text`, in order (repeats included).
    ///
    /// Segmentation is `unicode-segmentation`'s `unicode_words`. An ASCII text is first cut
    /// at ASCII whitespace, which UAX #29 never joins to a word (in the crate's own ASCII
    /// rules it is neither part of a word nor between two parts of one); a piece made only
    /// of ASCII letters and digits is then one word (WB5, WB8-WB10) and is taken as it is,
    /// and every other piece goes through the crate. Most pieces of prose are plain words, so
    /// the crate's per-segment iterator runs only on the rest (a property test holds the
    /// words equal to the crate's on the whole text). Case folding takes a word without
    /// upper-case letters as it is and folds an ASCII word byte by byte, and only other
    /// words go through `char::to_lowercase` (which agrees with ASCII folding on ASCII
    /// letters).
    pub(crate) fn for_each_term(&self, text: &str, mut f: impl FnMut(&str)) {
        let mut folded = String::new();
        let mut word_to_term = |word: &str, ascii: bool, upper: bool| {
            let word: &str = if !ascii {
                folded.clear();
                for c in word.chars() {
                    folded.extend(c.to_lowercase());
                }
                &folded
            } else if upper {
                folded.clear();
                folded.push_str(word);
                folded.make_ascii_lowercase();
                &folded
            } else {
                word
            };
            if !self.stop_words.is_empty() && self.stop_words.contains(word) {
                return;
            }
            let term = match &self.stemmer {
                Some(stemmer) => stemmer.stem(word),
                None => std::borrow::Cow::Borrowed(word),
            };
            if !term.is_empty() {
                f(truncate(&term));
            }
        };
        fn crate_words(text: &str, word_to_term: &mut impl FnMut(&str, bool, bool)) {
            for word in text.unicode_words() {
                let ascii = word.is_ascii();
                let upper = ascii && word.bytes().any(|b| b.is_ascii_uppercase());
                word_to_term(word, ascii, upper);
            }
        }
        if !text.is_ascii() {
            crate_words(text, &mut word_to_term);
            return;
        }
        // The pieces between runs of ASCII whitespace (`u8::is_ascii_whitespace`, as
        // `str::split_ascii_whitespace`), each classified in the same pass over its bytes.
        let bytes = text.as_bytes();
        let mut at = 0;
        while at < bytes.len() {
            let start = at;
            let mut seen = 0u8;
            let mut all = ALNUM;
            while let Some(&b) = bytes.get(at) {
                let class = ASCII_CLASS[b as usize];
                if class & SPACE != 0 {
                    break;
                }
                seen |= class;
                all &= class;
                at += 1;
            }
            if at > start {
                // ASCII text: every byte offset is a character boundary.
                let piece = &text[start..at];
                if all & ALNUM != 0 {
                    word_to_term(piece, true, seen & UPPER != 0);
                } else {
                    crate_words(piece, &mut word_to_term);
                }
            }
            at += 1;
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
        let mut terms = Terms::default();
        terms.analyze(self, text);
        let counts = terms
            .counts()
            .map(|(term, count)| (term.to_string(), count))
            .collect();
        (counts, terms.len())
    }
}

/// One text's terms counted, in buffers reused from one text to the next: each distinct term
/// is copied once into an arena and found again through a hash table of its place, so
/// analysing a chunk allocates nothing once the buffers have grown. The distinct terms come
/// out in the order of their first occurrence (sorting them cost more than all the rest).
#[derive(Default)]
pub(crate) struct Terms {
    /// Every distinct term of the text, one after the other.
    arena: String,
    /// Each distinct term's span in `arena` and its count, in order of first occurrence.
    counts: Vec<(u32, u32, u32)>,
    /// Each distinct term's index in `counts`, by the term's hash.
    places: hashbrown::HashTable<u32>,
    /// Seeded at random, so no text can be crafted to collide.
    hasher: foldhash::fast::RandomState,
    /// The number of terms (repeats included).
    len: u32,
}

impl std::fmt::Debug for Terms {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Terms")
            .field("distinct", &self.counts.len())
            .field("len", &self.len)
            .finish()
    }
}

impl Terms {
    /// Analyses `text` with `analyzer`, replacing the previous text's terms.
    pub(crate) fn analyze(&mut self, analyzer: &Analyzer, text: &str) {
        let Terms {
            arena,
            counts,
            places,
            hasher,
            len,
        } = self;
        arena.clear();
        counts.clear();
        places.clear();
        *len = 0;
        analyzer.for_each_term(text, |term| {
            let hash = hasher.hash_one(term);
            let found = places
                .find(hash, |&i| {
                    let (start, end, _) = counts[i as usize];
                    &arena[start as usize..end as usize] == term
                })
                .copied();
            match found {
                Some(i) => {
                    let count = &mut counts[i as usize].2;
                    *count = count.saturating_add(1);
                }
                None => {
                    // A chunk's text is at most `MAX_FIELD_BYTES` (far below 4 GiB); a term
                    // that would take the arena past u32 offsets (only a query of gigabytes
                    // could) is left out.
                    if arena.len().saturating_add(term.len()) > u32::MAX as usize {
                        return;
                    }
                    let start = arena.len() as u32;
                    arena.push_str(term);
                    let place = counts.len() as u32;
                    counts.push((start, arena.len() as u32, 1));
                    places.insert_unique(hash, place, |&i| {
                        let (start, end, _) = counts[i as usize];
                        hasher.hash_one(&arena[start as usize..end as usize])
                    });
                }
            }
            *len = len.saturating_add(1);
        });
    }

    /// About how many bytes the buffers hold.
    fn capacity_bytes(&self) -> usize {
        self.arena.capacity()
            + self.counts.capacity() * std::mem::size_of::<(u32, u32, u32)>()
            + self.places.capacity() * (std::mem::size_of::<u32>() + 1)
    }

    /// The number of terms of the text (its length for BM25).
    pub(crate) fn len(&self) -> u32 {
        self.len
    }

    /// The number of distinct terms.
    pub(crate) fn distinct(&self) -> usize {
        self.counts.len()
    }

    /// Each distinct term with its count, in order of first occurrence.
    pub(crate) fn counts(&self) -> impl Iterator<Item = (&str, u32)> + '_ {
        self.counts
            .iter()
            .map(|&(start, end, count)| (&self.arena[start as usize..end as usize], count))
    }
}

/// [`ASCII_CLASS`] bits: ASCII whitespace (`u8::is_ascii_whitespace`).
const SPACE: u8 = 1;
/// [`ASCII_CLASS`] bits: an ASCII letter or digit.
const ALNUM: u8 = 2;
/// [`ASCII_CLASS`] bits: an ASCII upper-case letter.
const UPPER: u8 = 4;

/// Each byte's [`SPACE`], [`ALNUM`] and [`UPPER`] bits, as `u8`'s own ASCII predicates
/// give them (a unit test checks every byte).
const ASCII_CLASS: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        let byte = b as u8;
        let mut class = 0;
        if byte.is_ascii_whitespace() {
            class |= SPACE;
        }
        if byte.is_ascii_alphanumeric() {
            class |= ALNUM;
        }
        if byte.is_ascii_uppercase() {
            class |= UPPER;
        }
        table[b] = class;
        b += 1;
    }
    table
};

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
    use proptest::prelude::*;

    /// The analysis as first written: every word folded `char` by `char`, counted in a map.
    fn reference(analyzer: &Analyzer, text: &str) -> (Vec<(String, u32)>, u32) {
        let mut counts: HashMap<String, u32> = HashMap::new();
        let mut len = 0u32;
        for word in text.unicode_words() {
            let folded: String = word.chars().flat_map(char::to_lowercase).collect();
            if analyzer.stop_words.contains(folded.as_str()) {
                continue;
            }
            let term = match &analyzer.stemmer {
                Some(stemmer) => stemmer.stem(&folded).into_owned(),
                None => folded,
            };
            if term.is_empty() {
                continue;
            }
            len += 1;
            *counts.entry(truncate(&term).to_string()).or_insert(0) += 1;
        }
        let mut counts: Vec<(String, u32)> = counts.into_iter().collect();
        counts.sort_unstable();
        (counts, len)
    }

    proptest! {
        /// The ASCII paths (whitespace first, case folding) and the span-sorting count give
        /// what the crate's words of the whole text, folding each `char` and counting in a
        /// map give, for ASCII-only (half the cases), accented and mixed text, with and
        /// without stemming and stop words.
        #[test]
        fn terms_equal_the_reference_analysis(
            text in prop_oneof![
                "[a-zA-Z0-9 _.,;:'\\-ÉéßİΣσ]{0,200}",
                "[a-zA-Z0-9 _.,;:'\\-]{0,200}",
            ],
            english in any::<bool>(),
        ) {
            let options = if english {
                TextOptions::language(TextLanguage::English)
            } else {
                TextOptions::default()
            };
            let analyzer = Analyzer::new(&options);
            let mut terms = Terms::default();
            // Reused buffers: a previous text must leave nothing behind.
            terms.analyze(&analyzer, "Previous TEXT previous");
            terms.analyze(&analyzer, &text);
            let (expected, len) = reference(&analyzer, &text);
            let mut ours: Vec<(String, u32)> =
                terms.counts().map(|(t, c)| (t.to_string(), c)).collect();
            ours.sort_unstable();
            prop_assert_eq!(terms.len(), len);
            prop_assert_eq!(terms.distinct(), expected.len());
            prop_assert_eq!(ours, expected);
        }
    }

    proptest! {
        /// The words of an ASCII text cut at whitespace first are the crate's words of the
        /// whole text: on text dense in the characters UAX #29 treats apart (digits and
        /// letters around `.`, `,`, `;`, `'` and `:`, `_`, every kind of ASCII space, CR LF,
        /// quotes), and on any ASCII.
        #[test]
        fn ascii_words_cut_at_whitespace_are_the_crates_words(
            dense in "[aZ9_.,;:'\" \r\n\t\x0b\x0c-]{0,80}",
            any_ascii in "[\x00-\x7f]{0,120}",
        ) {
            let analyzer = Analyzer::new(&TextOptions::default());
            for text in [&dense, &any_ascii] {
                let ours = analyzer.terms(text);
                let crates: Vec<String> = text
                    .unicode_words()
                    .map(|w| w[..w.len().min(MAX_TERM_BYTES)].to_ascii_lowercase())
                    .collect();
                prop_assert_eq!(ours, crates);
            }
        }
    }

    #[test]
    fn the_byte_classes_are_the_ascii_predicates() {
        for b in 0..=255u8 {
            let class = ASCII_CLASS[b as usize];
            assert_eq!(class & SPACE != 0, b.is_ascii_whitespace(), "{b}");
            assert_eq!(class & ALNUM != 0, b.is_ascii_alphanumeric(), "{b}");
            assert_eq!(class & UPPER != 0, b.is_ascii_uppercase(), "{b}");
        }
    }

    #[test]
    fn write_buffers_are_kept_between_transactions_unless_grown_huge() {
        let a = Analyzer::new(&TextOptions::default());
        let mut buffers = a.take_buffers();
        buffers.terms.analyze(&a, "alpha beta gamma");
        a.give_back(buffers);
        let kept = a.take_buffers();
        assert!(kept.terms.capacity_bytes() > 0, "small buffers are kept");
        let mut huge = kept;
        let text: String = (0..200_000).map(|i| format!("w{i} ")).collect();
        huge.terms.analyze(&a, &text);
        assert!(huge.terms.capacity_bytes() > KEEP_BUFFERS_UP_TO);
        a.give_back(huge);
        assert_eq!(
            a.take_buffers().terms.capacity_bytes(),
            0,
            "huge buffers are freed"
        );
    }

    #[test]
    fn distinct_terms_come_in_order_of_first_occurrence() {
        let a = Analyzer::new(&TextOptions::default());
        let mut terms = Terms::default();
        terms.analyze(&a, "zeta Alpha zeta beta ALPHA zeta");
        let counts: Vec<(&str, u32)> = terms.counts().collect();
        assert_eq!(counts, [("zeta", 3), ("alpha", 2), ("beta", 1)]);
        assert_eq!((terms.len(), terms.distinct()), (6, 3));
    }

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
