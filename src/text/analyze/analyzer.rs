//! The [`Analyzer`]: [`TextOptions`] made ready to run, turning a text into its terms (and
//! counting them into [`Terms`]).

use rust_stemmers::Stemmer;
use std::collections::{HashMap, HashSet};
use unicode_segmentation::UnicodeSegmentation;

use super::bytes::ascii_pieces_by_block;
use super::language;
use super::terms::{short_key, Terms, SHORT_RUN, SHORT_TERM_BYTES};
use super::truncate;
use crate::options::TextOptions;

/// [`TextOptions`] made ready to run: the stemmer and the stop-word set; and the buffers
/// the store's text writes analyse and encode in, kept from one write transaction to the
/// next ([`Analyzer::take_buffers`]).
pub(crate) struct Analyzer {
    options: TextOptions,
    stemmer: Option<Stemmer>,
    stop_words: HashSet<&'static str>,
    spare: parking_lot::Mutex<Option<WriteBuffers>>,
}

/// What one write transaction's text index work is done in: a chunk's [`Terms`], the
/// document row they are encoded into and a revision's removed slots, reused from chunk to chunk and (through
/// [`Analyzer::take_buffers`]) from transaction to transaction, so that a write's first
/// chunk does not grow them again from nothing (the saving is measured by
/// `benches/upsert_paths.rs`, group `text_index`; see docs/benchmarks.md).
#[derive(Debug, Default)]
pub(crate) struct WriteBuffers {
    pub(crate) terms: Terms,
    /// A document's text row being made.
    pub(crate) row: Vec<u8>,
    /// The slots a revision removes, sorted.
    pub(crate) slots: Vec<u32>,
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
            .map(|l| Stemmer::create(language::algorithm(l)));
        let stop_words = options
            .language
            .filter(|_| options.stop_words)
            .and_then(|l| stop_words::lookup(language::iso(l)))
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
        let bytes = buffers.terms.capacity_bytes()
            + buffers.row.capacity()
            + buffers.slots.capacity() * std::mem::size_of::<u32>();
        if bytes <= KEEP_BUFFERS_UP_TO {
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
        ascii_pieces_by_block(text.as_bytes(), |start, end, alnum, upper| {
            let Some(piece) = text.get(start..end) else {
                return;
            };
            if alnum {
                word_to_term(piece, true, upper);
            } else {
                crate_words(piece, &mut word_to_term);
            }
        });
    }

    /// Whether terms are the folded words themselves: no stemmer and no stop words.
    pub(super) fn is_plain(&self) -> bool {
        self.stemmer.is_none() && self.stop_words.is_empty()
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

impl Terms {
    /// Analyses `text` with `analyzer`, replacing the previous text's terms.
    pub(crate) fn analyze(&mut self, analyzer: &Analyzer, text: &str) {
        self.clear();
        self.count_terms(analyzer, text);
    }

    fn count_terms(&mut self, analyzer: &Analyzer, text: &str) {
        if !(analyzer.is_plain() && text.is_ascii()) {
            analyzer.for_each_term(text, |term| self.add(term));
            return;
        }
        // Plain analysis of ASCII text: `for_each_term`'s pieces, found a block of bytes at
        // a time ([`ascii_pieces_by_block`]), a short word's key loaded and folded straight
        // from its bytes (OR 0x20 lower-cases an ASCII letter and leaves a digit as it is).
        // The pieces are all found first, then counted in order: each loop is tight, and
        // the counting keeps its lengths in registers (one call per piece from the scanner
        // stored and reloaded them at every word).
        const FOLD: u64 = 0x2020_2020_2020_2020;
        let bytes = text.as_bytes();
        let mut keys = std::mem::take(&mut self.keys);
        let mut others = std::mem::take(&mut self.others);
        keys.clear();
        others.clear();
        ascii_pieces_by_block(
            bytes,
            #[inline(always)]
            |start, end, alnum, upper| {
                let n = end - start;
                if alnum && n <= SHORT_TERM_BYTES {
                    // Eight bytes from the piece's start when the text has them (the bytes past
                    // the piece masked off), else the piece copied; an alphanumeric piece has no
                    // zero byte.
                    let key = match bytes.get(start..start + SHORT_TERM_BYTES) {
                        Some(eight) => {
                            let mut le = [0u8; SHORT_TERM_BYTES];
                            le.copy_from_slice(eight);
                            u64::from_le_bytes(le) & (u64::MAX >> (8 * (SHORT_TERM_BYTES - n)))
                        }
                        None => bytes.get(start..end).and_then(short_key).unwrap_or(0),
                    };
                    let key = if upper {
                        key | (FOLD >> (8 * (SHORT_TERM_BYTES - n)))
                    } else {
                        key
                    };
                    if key != 0 {
                        keys.push(key);
                    }
                    return;
                }
                keys.push(0);
                others.push((start, end, alnum, upper));
            },
        );
        let mut folded = String::new();
        let mut others_in_order = others.iter();
        // Runs of short words, each followed by one other piece (but the last).
        for run in keys.split(|&key| key == 0) {
            for part in run.chunks(SHORT_RUN) {
                self.add_short_run(part);
            }
            let Some(&(start, end, alnum, upper)) = others_in_order.next() else {
                break;
            };
            let Some(piece) = text.get(start..end) else {
                continue;
            };
            if !alnum {
                analyzer.for_each_term(piece, |term| self.add(term));
            } else if upper {
                folded.clear();
                folded.push_str(piece);
                folded.make_ascii_lowercase();
                self.add_long(truncate(&folded).as_bytes());
            } else {
                self.add_long(truncate(piece).as_bytes());
            }
        }
        self.keys = keys;
        self.others = others;
    }
}

#[cfg(test)]
mod tests {
    use super::super::MAX_TERM_BYTES;
    use super::*;
    use crate::options::TextLanguage;
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
                // Many short words and repeats (the short-term table, its growth, folding of
                // every length up to 8 bytes and past it), some longer than 64 bytes.
                "(([a-cA-C0-9]{1,9}|[xX]{60,70})[ \t\n]{1,2}){0,300}",
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
            terms.analyze(&analyzer, "Previous TEXT previous a b c a1");
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
    fn the_short_table_starts_afresh_for_each_text_even_when_its_generation_wraps() {
        let a = Analyzer::new(&TextOptions::default());
        let mut terms = Terms::default();
        terms.analyze(&a, "alpha beta alpha");
        terms.set_generation(u32::MAX);
        for text in ["gamma alpha", "beta beta", "delta"] {
            terms.analyze(&a, text);
            let mut counts: Vec<(String, u32)> =
                terms.counts().map(|(t, c)| (t.to_string(), c)).collect();
            counts.sort();
            let mut expected: Vec<(String, u32)> = Vec::new();
            for word in text.split(' ') {
                match expected.iter_mut().find(|(t, _)| t == word) {
                    Some(entry) => entry.1 += 1,
                    None => expected.push((word.to_string(), 1)),
                }
            }
            expected.sort();
            assert_eq!(counts, expected, "{text}");
            assert_ne!(terms.generation(), 0);
        }
    }

    #[test]
    fn a_long_ascii_text_is_counted_in_runs_as_word_by_word() {
        // More short words than one run takes (the table grown between runs), with long
        // words, capitals and punctuated pieces between them: the same terms, counts and
        // order of first occurrence as the word-by-word path.
        let a = Analyzer::new(&TextOptions::default());
        let text: String = (0..6000)
            .map(|i| match i % 7 {
                0 => format!("Longword{i}xyz "),
                1 => format!("it's{} ", i % 13),
                2 => format!("W{} ", i % 50),
                _ => format!("w{} ", (i * 7919) % 3001),
            })
            // A run of 3,000 short words: three runs' worth.
            .chain((0..3000).map(|i| format!("v{} ", i % 1500)))
            .collect();
        let mut terms = Terms::default();
        terms.analyze(&a, &text);
        let mut expected: Vec<(String, u32)> = Vec::new();
        let mut places: HashMap<String, usize> = HashMap::new();
        let mut len = 0;
        a.for_each_term(&text, |term| {
            len += 1;
            match places.get(term) {
                Some(&place) => expected[place].1 += 1,
                None => {
                    places.insert(term.to_string(), expected.len());
                    expected.push((term.to_string(), 1));
                }
            }
        });
        let ours: Vec<(String, u32)> = terms.counts().map(|(t, c)| (t.to_string(), c)).collect();
        assert!(
            expected.len() > SHORT_RUN,
            "{} distinct terms",
            expected.len()
        );
        assert_eq!(ours, expected);
        assert_eq!(terms.len(), len);
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
    fn long_terms_are_cut_at_a_character_boundary() {
        let a = Analyzer::new(&TextOptions::default());
        let word = "é".repeat(100);
        let terms = a.terms(&word);
        assert_eq!(terms.len(), 1);
        assert!(terms[0].len() <= MAX_TERM_BYTES);
        assert!(terms[0].chars().all(|c| c == 'é'));
    }
}
