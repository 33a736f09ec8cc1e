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

/// What one write transaction's text index work is done in: a chunk's [`Terms`], the
/// document row they are encoded into and a revision's removed slots, reused from chunk to chunk and (through
/// [`Analyzer::take_buffers`]) from transaction to transaction, so that a write's first
/// chunk does not grow them again from nothing (a tenth of an 8-chunk prose write's text
/// index cost, `docs/benchmarks.md`).
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
    fn is_plain(&self) -> bool {
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

/// One text's terms counted, in buffers reused from one text to the next: each distinct term
/// is copied once into an arena and found again through a hash table of its place, so
/// analysing a chunk allocates nothing once the buffers have grown. The distinct terms come
/// out in the order of their first occurrence (sorting them cost more than all the rest).
///
/// Terms of up to 8 bytes (most words of prose) are found as one integer in an
/// open-addressing table of their own ([`short_key`]): a lookup is a multiply and a compare
/// of two integers, not a string hash and a byte comparison (the analysis was the larger
/// part of an accepted write's text-index cost). Longer terms go through `hashbrown`. A term
/// always goes to the same table (by its bytes), so each is counted in one place.
pub(crate) struct Terms {
    /// Every distinct term of the text, one after the other (each the bytes of a `str`).
    arena: Vec<u8>,
    /// Each distinct term's span in `arena` and its count, in order of first occurrence.
    counts: Vec<(u32, u32, u32)>,
    /// Each distinct long term's index in `counts`, by the term's hash.
    places: hashbrown::HashTable<u32>,
    /// Short terms: a power of two long (or empty), at most half full with entries of the
    /// current generation (a quarter, after a run of ASCII words: fewer collisions); an
    /// entry of another generation is free (so a new text does not clear the table).
    short: Vec<ShortEntry>,
    /// Entries of `short` of the current generation.
    short_used: usize,
    /// The current text's generation of `short` entries (never 0, which no entry of a text
    /// has).
    generation: u32,
    /// Seeded at random, so no text can be crafted to collide.
    hasher: foldhash::fast::RandomState,
    /// The short table's hash seeds (drawn from `hasher`; the second odd).
    seeds: (u64, u64),
    /// The number of terms (repeats included).
    len: u32,
    /// An ASCII text's pieces in order, found before any is counted: a short word's key,
    /// or 0 for the next of `others`.
    keys: Vec<u64>,
    /// An ASCII text's pieces that are not short words: (start, end, alphanumeric, has an
    /// upper-case letter).
    others: Vec<(usize, usize, bool, bool)>,
}

/// An entry of [`Terms`]' short table.
#[derive(Clone, Copy, Default)]
struct ShortEntry {
    /// The term's key ([`short_key`]).
    key: u64,
    /// Its index in `counts`.
    place: u32,
    /// The text it belongs to ([`Terms`]' `generation`).
    generation: u32,
}

impl Default for Terms {
    fn default() -> Terms {
        let hasher = foldhash::fast::RandomState::default();
        let seeds = (hasher.hash_one(1u64), hasher.hash_one(2u64) | 1);
        Terms {
            seeds,
            arena: Vec::new(),
            counts: Vec::new(),
            places: hashbrown::HashTable::new(),
            short: Vec::new(),
            short_used: 0,
            generation: 1,
            hasher,
            len: 0,
            keys: Vec::new(),
            others: Vec::new(),
        }
    }
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

    fn clear(&mut self) {
        self.arena.clear();
        self.counts.clear();
        self.places.clear();
        if self.short_used > 0 {
            self.generation = self.generation.wrapping_add(1);
            if self.generation == 0 {
                // Every 2^32 texts: entries of the generation coming round again are freed.
                self.short.fill(ShortEntry::default());
                self.generation = 1;
            }
            self.short_used = 0;
        }
        self.len = 0;
    }

    /// Counts one occurrence of `term`.
    fn add(&mut self, term: &str) {
        match short_key(term.as_bytes()) {
            Some(key) => self.add_short(key, term.len()),
            None => self.add_long(term.as_bytes()),
        }
    }

    /// Whether the arena can take `n` more bytes: a chunk's text is at most
    /// `MAX_FIELD_BYTES` (far below 4 GiB); only a query of gigabytes could take the arena
    /// past u32 offsets, and a term that would is left out.
    fn arena_takes(&self, n: usize) -> bool {
        self.arena.len().saturating_add(n) <= u32::MAX as usize
    }

    /// Counts the short words `keys` (none 0) in order, as [`Terms::add_short`] does one
    /// by one: with the table grown and the arena's room checked once for the whole run,
    /// and the lengths kept in locals (a call per word stored and reloaded them). The table
    /// is grown to at most a quarter full: at half, a word of prose found another's entry
    /// first about one time in five, and that branch mispredicted.
    #[inline]
    fn add_short_run(&mut self, keys: &[u64]) {
        while (self.short_used + keys.len()) * 4 > self.short.len() {
            self.grow_short();
        }
        if !self.arena_takes(SHORT_TERM_BYTES * keys.len()) {
            for &key in keys {
                self.add_short(key, short_len(key));
            }
            return;
        }
        let generation = self.generation;
        let mask = self.short.len() - 1;
        let seeds = self.seeds;
        let Terms {
            arena,
            counts,
            short,
            short_used,
            len,
            ..
        } = self;
        // Room for every key being new, written through slices with the lengths in locals
        // (writes through a `Vec` made the compiler reload every length after each).
        let (counts_from, arena_from) = (counts.len(), arena.len());
        counts.resize(counts_from + keys.len(), (0, 0, 0));
        arena.resize(arena_from + SHORT_TERM_BYTES * keys.len(), 0);
        let (mut counts_len, mut arena_len) = (counts_from, arena_from);
        let (counts_room, arena_room) = (counts.as_mut_slice(), arena.as_mut_slice());
        for &key in keys {
            let mut at = short_slot(seeds, key) & mask;
            // The table is at most a quarter full: a free entry comes before `at` wraps round.
            while let Some(entry) = short.get_mut(at) {
                if entry.generation == generation {
                    if entry.key == key {
                        if let Some(counted) = counts_room.get_mut(entry.place as usize) {
                            counted.2 = counted.2.saturating_add(1);
                        }
                        break;
                    }
                    at = (at + 1) & mask;
                    continue;
                }
                // The key's bytes are the term's (ASCII letters and digits).
                let end = arena_len + short_len(key);
                if let (Some(bytes), Some(counted)) = (
                    arena_room.get_mut(arena_len..arena_len + SHORT_TERM_BYTES),
                    counts_room.get_mut(counts_len),
                ) {
                    bytes.copy_from_slice(&key.to_le_bytes());
                    *counted = (arena_len as u32, end as u32, 1);
                    *entry = ShortEntry {
                        key,
                        place: counts_len as u32,
                        generation,
                    };
                    counts_len += 1;
                    arena_len = end;
                }
                break;
            }
        }
        counts.truncate(counts_len);
        arena.truncate(arena_len);
        *short_used += counts_len - counts_from;
        *len = len.saturating_add(keys.len() as u32);
    }

    /// Counts one occurrence of the short term of `n` bytes whose key is `key`.
    #[inline]
    fn add_short(&mut self, key: u64, n: usize) {
        if self.short_used * 2 >= self.short.len() {
            self.grow_short();
        }
        let mask = self.short.len() - 1;
        let mut at = self.short_slot(key);
        loop {
            let entry = self.short[at];
            if entry.generation == self.generation {
                if entry.key == key {
                    let count = &mut self.counts[entry.place as usize].2;
                    *count = count.saturating_add(1);
                    break;
                }
                at = (at + 1) & mask;
                continue;
            }
            if !self.arena_takes(SHORT_TERM_BYTES) {
                return;
            }
            // The key's bytes are the term's (of a `str`, or ASCII letters and digits).
            let start = self.arena.len();
            self.arena.extend_from_slice(&key.to_le_bytes());
            self.arena.truncate(start + n);
            let place = self.counts.len() as u32;
            self.counts.push((start as u32, self.arena.len() as u32, 1));
            self.short[at] = ShortEntry {
                key,
                place,
                generation: self.generation,
            };
            self.short_used += 1;
            break;
        }
        self.len = self.len.saturating_add(1);
    }

    /// Where `key`'s probe starts in the short table (a power of two of at least 64
    /// entries). (A bare multiply-shift was slower here: linear probing over the keys of
    /// similar words clustered.)
    #[inline(always)]
    fn short_slot(&self, key: u64) -> usize {
        short_slot(self.seeds, key) & (self.short.len() - 1)
    }

    /// Doubles the short table (64 entries at first) and places the current text's keys
    /// again.
    fn grow_short(&mut self) {
        let size = (self.short.len() * 2).max(64);
        let old = std::mem::replace(&mut self.short, vec![ShortEntry::default(); size]);
        let generation = self.generation;
        let mask = size - 1;
        for entry in old.into_iter().filter(|e| e.generation == generation) {
            let mut at = self.short_slot(entry.key);
            while self.short[at].generation == generation {
                at = (at + 1) & mask;
            }
            self.short[at] = entry;
        }
    }

    /// Counts one occurrence of a term longer than [`SHORT_TERM_BYTES`] (or with a zero
    /// byte): the bytes of a `str`.
    fn add_long(&mut self, term: &[u8]) {
        let Terms {
            arena,
            counts,
            places,
            hasher,
            len,
            ..
        } = self;
        let span = |i: u32| {
            let (start, end, _) = counts[i as usize];
            arena.get(start as usize..end as usize).unwrap_or_default()
        };
        let hash = hasher.hash_one(term);
        let entry = places.entry(hash, |&i| span(i) == term, |&i| hasher.hash_one(span(i)));
        match entry {
            hashbrown::hash_table::Entry::Occupied(found) => {
                let count = &mut counts[*found.get() as usize].2;
                *count = count.saturating_add(1);
            }
            hashbrown::hash_table::Entry::Vacant(vacant) => {
                // See `arena_takes`.
                if arena.len().saturating_add(term.len()) > u32::MAX as usize {
                    return;
                }
                let start = arena.len() as u32;
                arena.extend_from_slice(term);
                let place = counts.len() as u32;
                counts.push((start, arena.len() as u32, 1));
                vacant.insert(place);
            }
        }
        *len = len.saturating_add(1);
    }

    /// About how many bytes the buffers hold.
    fn capacity_bytes(&self) -> usize {
        self.arena.capacity()
            + self.counts.capacity() * std::mem::size_of::<(u32, u32, u32)>()
            + self.places.capacity() * (std::mem::size_of::<u32>() + 1)
            + self.short.capacity() * std::mem::size_of::<ShortEntry>()
            + self.keys.capacity() * std::mem::size_of::<u64>()
            + self.others.capacity() * std::mem::size_of::<(usize, usize, bool, bool)>()
    }

    /// The number of terms of the text (its length for BM25).
    pub(crate) fn len(&self) -> u32 {
        self.len
    }

    /// The number of distinct terms.
    #[cfg(test)]
    pub(crate) fn distinct(&self) -> usize {
        self.counts.len()
    }

    /// Each distinct term with its count, in order of first occurrence.
    pub(crate) fn counts(&self) -> impl Iterator<Item = (&str, u32)> + '_ {
        self.counts.iter().map(|&(start, end, count)| {
            let term = self.arena.get(start as usize..end as usize);
            (
                term.and_then(|t| std::str::from_utf8(t).ok())
                    .unwrap_or_default(),
                count,
            )
        })
    }

    /// The distinct terms as (start, end, count) spans of the arena, in order of first
    /// occurrence, and the arena (the terms one after the other, in that order): what a row
    /// is encoded from.
    pub(crate) fn spans(&self) -> (&[u8], &[(u32, u32, u32)]) {
        (&self.arena, &self.counts)
    }
}

/// Calls `f(start, end, alnum, upper)` for each piece of the ASCII `bytes` between runs of
/// ASCII whitespace (`u8::is_ascii_whitespace`, as `str::split_ascii_whitespace`), with
/// whether the piece is only ASCII letters and digits (then one word: UAX #29's WB5,
/// WB8-WB10) and whether it has an upper-case letter. The bytes are classified 64 at a
/// time into three bit masks (whitespace, not a letter or digit, upper case) without a branch
/// per byte ([`classify64`]); the pieces' first bytes and the bytes just past their ends are
/// two masks of their own, taken lowest bit first. (A byte loop that stops at each piece's
/// end mispredicted a branch at every word of prose; finding each end from the previous one
/// made every piece wait for the last.)
#[inline(always)]
pub(crate) fn ascii_pieces_by_block(bytes: &[u8], mut f: impl FnMut(usize, usize, bool, bool)) {
    /// The bits below `bit` (at most 63).
    fn below(bit: u32) -> u64 {
        (1u64 << (bit & 63)) - 1
    }
    // A piece open at the end of the previous block: its start and what its bytes had.
    let mut open: Option<(usize, bool, bool)> = None;
    // Whether the byte before the block is whitespace (the text's start counts as one).
    let mut after_space = true;
    let mut padded = [0u8; 64];
    for (index, block) in bytes.chunks(64).enumerate() {
        let base = index * 64;
        // The last block padded with zero bytes, counted as whitespace: a piece open at the
        // text's end ends there.
        let (full, padding): (&[u8], u64) = if block.len() == 64 {
            (block, 0)
        } else {
            padded[..block.len()].copy_from_slice(block);
            padded[block.len()..].fill(0);
            (&padded, !below(block.len() as u32))
        };
        let (space, other, upper) = classify64(full);
        let space = space | padding;
        let space_before = (space << 1) | u64::from(after_space);
        after_space = space >> 63 == 1;
        let mut starts = !space & space_before;
        let mut ends = space & !space_before;
        if let Some((start, nonalnum, has_upper)) = open.take() {
            if ends == 0 {
                // The whole block is in the piece.
                open = Some((start, nonalnum || other != 0, has_upper || upper != 0));
                continue;
            }
            let end = ends.trailing_zeros();
            ends &= ends - 1;
            let range = below(end);
            f(
                start,
                base + end as usize,
                !(nonalnum || other & range != 0),
                has_upper || upper & range != 0,
            );
        }
        while starts != 0 {
            let start = starts.trailing_zeros();
            starts &= starts - 1;
            if ends == 0 {
                // The piece goes on into the next block.
                let range = !below(start);
                open = Some((
                    base + start as usize,
                    other & range != 0,
                    upper & range != 0,
                ));
                break;
            }
            let end = ends.trailing_zeros();
            ends &= ends - 1;
            let range = below(end) & !below(start);
            f(
                base + start as usize,
                base + end as usize,
                other & range == 0,
                upper & range != 0,
            );
        }
    }
    if let Some((start, nonalnum, has_upper)) = open {
        f(start, bytes.len(), !nonalnum, has_upper);
    }
}

/// The whitespace, not-alphanumeric and upper-case bytes of 64 ASCII bytes, as bit masks
/// (byte `k` to bit `k`).
#[cfg(target_arch = "x86_64")]
#[inline]
fn classify64(block: &[u8]) -> (u64, u64, u64) {
    use std::arch::x86_64::*;
    let (mut space, mut other, mut upper) = (0u64, 0u64, 0u64);
    for (k, sixteen) in block.chunks_exact(16).take(4).enumerate() {
        // SAFETY: SSE2 is part of every x86_64 target, and `sixteen` is 16 readable bytes
        // (the load has no alignment requirement).
        let (white, alnum, capital) = unsafe {
            let v = _mm_loadu_si128(sixteen.as_ptr().cast());
            let splat = |b: u8| _mm_set1_epi8(b as i8);
            // ASCII bytes are below 128, so the signed compares order them as bytes.
            let within = |v, lo: u8, hi: u8| {
                _mm_and_si128(
                    _mm_cmpgt_epi8(v, splat(lo - 1)),
                    _mm_cmplt_epi8(v, splat(hi + 1)),
                )
            };
            let folded = _mm_or_si128(v, splat(0x20));
            let letter = within(folded, b'a', b'z');
            let alnum = _mm_or_si128(letter, within(v, b'0', b'9'));
            let capital = _mm_andnot_si128(
                _mm_cmpeq_epi8(_mm_and_si128(v, splat(0x20)), splat(0x20)),
                letter,
            );
            let white = _mm_or_si128(
                _mm_cmpeq_epi8(v, splat(b' ')),
                _mm_andnot_si128(_mm_cmpeq_epi8(v, splat(0x0B)), within(v, 0x09, 0x0D)),
            );
            let bits = |m| u64::from(_mm_movemask_epi8(m) as u16);
            (bits(white), bits(alnum), bits(capital))
        };
        space |= white << (16 * k);
        other |= alnum << (16 * k);
        upper |= capital << (16 * k);
    }
    (space, !other, upper)
}

/// The short words counted by one [`Terms::add_short_run`] at most (the table is grown for
/// a whole run as if each were new).
const SHORT_RUN: usize = 1024;

/// A short key's hash (the folded multiply of `foldhash`, with `seeds`).
#[inline(always)]
fn short_slot(seeds: (u64, u64), key: u64) -> usize {
    let full = u128::from(key ^ seeds.0) * u128::from(seeds.1);
    (full as u64 ^ (full >> 64) as u64) as usize
}

/// The length of the short term whose key is `key` (not 0): its highest byte is the
/// term's last, as no term of a key has a zero byte.
#[inline(always)]
fn short_len(key: u64) -> usize {
    SHORT_TERM_BYTES - key.leading_zeros() as usize / 8
}

/// The terms of at most [`SHORT_TERM_BYTES`] bytes, none of them zero, as one integer: the
/// bytes little-endian, zero above them (so terms of different lengths differ too, and no
/// term is 0).
const SHORT_TERM_BYTES: usize = 8;

#[inline]
fn short_key(term: &[u8]) -> Option<u64> {
    if term.len() > SHORT_TERM_BYTES || term.contains(&0) {
        return None;
    }
    let mut le = [0u8; SHORT_TERM_BYTES];
    le[..term.len()].copy_from_slice(term);
    Some(u64::from_le_bytes(le))
}

/// The portable classification of ASCII bytes: SWAR, eight bytes in a `u64` at a time
/// (x86_64 uses SSE2's sixteen; its tests hold the two equal).
#[cfg(any(not(target_arch = "x86_64"), test))]
mod swar {
    /// Each byte's lowest bit.
    const LO: u64 = 0x0101_0101_0101_0101;
    /// Each byte's highest bit.
    pub(super) const HI: u64 = 0x8080_8080_8080_8080;

    /// The bytes of eight ASCII bytes (`word`, little-endian) that are whitespace
    /// (`u8::is_ascii_whitespace`), not a letter or digit, and upper-case letters: each as the
    /// highest bit of its byte.
    #[derive(Debug, PartialEq)]
    pub(super) struct Classes8 {
        pub(super) space: u64,
        pub(super) other: u64,
        pub(super) upper: u64,
    }

    /// The bytes of `word` (each below 128) at least `c` (1..=128): adding `128 - c` to a byte
    /// sets its highest bit exactly then, and never carries into the next byte.
    #[inline]
    pub(super) fn at_least(word: u64, c: u8) -> u64 {
        word.wrapping_add(LO * u64::from(128 - c)) & HI
    }

    /// The bytes of `word` in `lo..hi`.
    #[inline]
    pub(super) fn between(word: u64, lo: u8, hi: u8) -> u64 {
        at_least(word, lo) & !at_least(word, hi)
    }

    /// [`Classes8`] of `word`, eight bytes each below 128.
    #[inline]
    pub(super) fn classify8(word: u64) -> Classes8 {
        // Letters: OR 0x20 maps `A`..`Z` onto `a`..`z` and no other ASCII byte into that range.
        let letter = between(word | (LO * 0x20), b'a', b'z' + 1);
        // A letter without bit 5 (moved up to bit 7) is upper case.
        let upper = letter & !(word << 2) & HI;
        let alnum = letter | between(word, b'0', b'9' + 1);
        // Whitespace: TAB, LF, FF, CR (0x09..0x0E but not VT 0x0B) and the space. Without any
        // byte below 0x20 (most words of text), it is just the bytes equal to 0x20.
        let below_space = !at_least(word, 0x20) & HI;
        let space = if below_space == 0 {
            !at_least(word, 0x21) & HI
        } else {
            (between(word, 0x09, 0x0E) & !between(word, 0x0B, 0x0C)) | between(word, 0x20, 0x21)
        };
        Classes8 {
            space,
            other: !alnum & HI,
            upper,
        }
    }

    /// The highest bits of `bytes`' eight bytes packed into the low eight bits (byte `k` to bit
    /// `k`): a multiply gathers them (a unit test checks all 256 patterns).
    #[inline]
    pub(super) fn movemask(bytes: u64) -> u64 {
        ((bytes >> 7).wrapping_mul(0x0102_0408_1020_4080)) >> 56
    }

    /// The whitespace, not-alphanumeric and upper-case bytes of 64 ASCII bytes, as bit
    /// masks (byte `k` to bit `k`).
    #[inline]
    pub(super) fn classify64(block: &[u8]) -> (u64, u64, u64) {
        let (mut space, mut other, mut upper) = (0u64, 0u64, 0u64);
        for (k, eight) in block.chunks_exact(8).take(8).enumerate() {
            let word = u64::from_le_bytes(eight.try_into().unwrap_or_default());
            let classes = classify8(word);
            space |= movemask(classes.space) << (8 * k);
            other |= movemask(classes.other) << (8 * k);
            upper |= movemask(classes.upper) << (8 * k);
        }
        (space, other, upper)
    }
}

#[cfg(not(target_arch = "x86_64"))]
use swar::classify64;

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
    fn the_byte_classes_are_the_ascii_predicates() {
        // Every ASCII byte in every lane, the other lanes holding other bytes.
        for b in 0..128u8 {
            for lane in 0..8 {
                let mut bytes = [(b + 37) % 128; 8];
                bytes[lane] = b;
                let classes = swar::classify8(u64::from_le_bytes(bytes));
                let bit = |mask: u64| mask & (0x80 << (8 * lane)) != 0;
                assert_eq!(bit(classes.space), b.is_ascii_whitespace(), "{b} in {lane}");
                assert_eq!(
                    bit(classes.other),
                    !b.is_ascii_alphanumeric(),
                    "{b} in {lane}"
                );
                assert_eq!(bit(classes.upper), b.is_ascii_uppercase(), "{b} in {lane}");
                for mask in [classes.space, classes.other, classes.upper] {
                    assert_eq!(mask & !swar::HI, 0, "only the highest bits");
                }
            }
        }
    }

    #[test]
    fn pieces_at_the_ends_of_blocks() {
        // A bug while writing the block scanner: the zero padding of a short last block was
        // counted as "not a letter or digit", so "A" was not a plain word.
        let pieces = |text: &str| {
            let mut out = Vec::new();
            ascii_pieces_by_block(text.as_bytes(), |start, end, alnum, upper| {
                out.push((start, end, alnum, upper))
            });
            out
        };
        assert_eq!(pieces("A"), [(0, 1, true, true)]);
        assert_eq!(pieces(""), []);
        assert_eq!(pieces(" \t\n"), []);
        // A word across the first block's end, and one ending exactly at it.
        let across = format!("{} Abc-def", "x".repeat(60));
        assert_eq!(
            pieces(&across),
            [(0, 60, true, false), (61, 68, false, true)]
        );
        let exact = "y".repeat(64);
        assert_eq!(pieces(&exact), [(0, 64, true, false)]);
        let long = "z".repeat(200);
        assert_eq!(pieces(&long), [(0, 200, true, false)]);
    }

    #[test]
    fn movemask_packs_every_pattern() {
        for pattern in 0..=255u64 {
            let bytes: u64 = (0..8)
                .filter(|k| pattern >> k & 1 == 1)
                .map(|k| 0x80u64 << (8 * k))
                .sum();
            assert_eq!(swar::movemask(bytes), pattern);
        }
    }

    #[test]
    fn the_block_classes_are_the_ascii_predicates() {
        // Every ASCII byte at every place of a 64-byte block, the other places holding
        // another byte: the classification in use (SSE2 on x86_64) and the portable one.
        for b in 0..128u8 {
            for place in 0..64 {
                let mut block = [(b + 37) % 128; 64];
                block[place] = b;
                let mask = |class: fn(&u8) -> bool| {
                    (block.iter().enumerate())
                        .fold(0u64, |mask, (k, c)| mask | u64::from(class(c)) << k)
                };
                let wanted = (
                    mask(u8::is_ascii_whitespace),
                    mask(|c| !c.is_ascii_alphanumeric()),
                    mask(u8::is_ascii_uppercase),
                );
                assert_eq!(classify64(&block), wanted, "{b} at {place}");
                assert_eq!(swar::classify64(&block), wanted, "{b} at {place}");
            }
        }
    }

    proptest! {
        /// The pieces found a block at a time are those of a byte-by-byte split at ASCII
        /// whitespace, with the same classes, across block boundaries and in a last block
        /// of any length.
        #[test]
        fn pieces_by_block_equal_a_byte_split(text in "[a-zA-Z0-9 \t\n\x0b\x0c\r.,'_-]{0,300}") {
            let mut ours = Vec::new();
            ascii_pieces_by_block(text.as_bytes(), |start, end, alnum, upper| {
                ours.push((start, end, alnum, upper));
            });
            let mut expected = Vec::new();
            let bytes = text.as_bytes();
            let mut at = 0;
            while at < bytes.len() {
                if bytes[at].is_ascii_whitespace() {
                    at += 1;
                    continue;
                }
                let start = at;
                while at < bytes.len() && !bytes[at].is_ascii_whitespace() {
                    at += 1;
                }
                let piece = &bytes[start..at];
                expected.push((
                    start,
                    at,
                    piece.iter().all(u8::is_ascii_alphanumeric),
                    piece.iter().any(u8::is_ascii_uppercase),
                ));
            }
            prop_assert_eq!(ours, expected);
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
        terms.generation = u32::MAX;
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
            assert_ne!(terms.generation, 0);
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
