//! Schema 9: chunk texts compressed with the store's one FSST symbol table.
//!
//! FSST (Boncz, Neumann and Leis, VLDB 2020) replaces common substrings of up to eight
//! bytes with one-byte codes from a table of at most 255 symbols; code 255 escapes a literal
//! byte. A text is compressed on its own, so a search hit decodes the one chunk it returns,
//! never its neighbours. The `fsst-rs` crate trains the table; compressing (the greedy
//! longest match FSST's own compressor makes) and decoding are this module's own loops:
//! `fsst-rs`'s trust their input and keep 200 KB of lookup tables per table, and ours check
//! every code against the table and the input's end, so damaged bytes are a [`Corruption`],
//! never a panic or a read out of bounds.
//!
//! ```text
//! stored text = utf-8 bytes                 (raw: never begins with 0xFF)
//!             | 0xFF · codes                 (compressed)
//! table row   = 1 (format) · n · lengths[n] · symbols[n] (8 bytes each, little-endian)
//! ```
//!
//! The table is trained once, from the first [`TRAIN_BYTES`] of text a store is given, and
//! kept under `meta["text_codec"]`; it never changes afterwards, so every compressed text in
//! the file decodes with it. A table with no symbols records that the store's first texts
//! were too short to be worth compressing (nothing is compressed then). A text is stored
//! compressed only where that is shorter; older rows, and a store without a table, keep raw
//! texts, which decode as they always did.

use crate::error::Corruption;
use std::borrow::Cow;

/// The first byte of a compressed text: a byte no UTF-8 text begins with.
const MARKER: u8 = 0xFF;
/// The code that escapes one literal byte.
const ESCAPE: u8 = 255;
/// The table row's format byte.
const FORMAT: u8 = 1;
/// How much text a table is trained from (FSST's own sample target).
pub(crate) const TRAIN_BYTES: usize = 16 * 1024;

/// A store's text symbol table: what decodes its compressed texts and compresses new ones.
pub(crate) struct TextCodec {
    symbols: [[u8; 8]; 255],
    lengths: [u8; 255],
    count: usize,
    /// The compressor's index, built on first use (a reader never needs it).
    index: std::sync::OnceLock<MatchIndex>,
}

/// The codes by their symbol's first byte, each byte's longest first: byte `b`'s are
/// entries `starts[b]..starts[b + 1]` (what the compressor's greedy match tries), each a
/// symbol's eight bytes as a little-endian word, the mask of its length, its code and its
/// length, side by side so that a match is tried with one masked compare of words.
struct MatchIndex {
    words: [u64; 255],
    masks: [u64; 255],
    codes: [u8; 255],
    lengths: [u8; 255],
    starts: [u16; 257],
}

impl std::fmt::Debug for TextCodec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TextCodec")
            .field("symbols", &self.count)
            .finish()
    }
}

impl TextCodec {
    /// Trains a table from `texts` with `fsst-rs` (which samples about [`TRAIN_BYTES`] of
    /// them); only its symbols are kept. Fewer than [`TRAIN_BYTES`] bytes in all train an
    /// empty table.
    pub(crate) fn train(texts: &[&str]) -> TextCodec {
        let total: usize = texts.iter().map(|t| t.len()).sum();
        if total < TRAIN_BYTES {
            return TextCodec::empty();
        }
        let sample: Vec<&[u8]> = texts.iter().map(|t| t.as_bytes()).collect();
        let trained = fsst::Compressor::train(&sample);
        let mut codec = TextCodec::empty();
        for (i, (symbol, &length)) in trained
            .symbol_table()
            .iter()
            .zip(trained.symbol_lengths())
            .enumerate()
            .take(255)
        {
            codec.symbols[i] = symbol.to_u64().to_le_bytes();
            codec.lengths[i] = length;
            codec.count = i + 1;
        }
        codec
    }

    /// A table of no symbols: nothing is compressed.
    fn empty() -> TextCodec {
        TextCodec {
            symbols: [[0; 8]; 255],
            lengths: [0; 255],
            count: 0,
            index: std::sync::OnceLock::new(),
        }
    }

    /// The compressor's [`MatchIndex`] of the symbols.
    fn index(&self) -> &MatchIndex {
        self.index.get_or_init(|| {
            let mut codes: Vec<u8> = (0..self.count as u8).collect();
            codes.sort_by_key(|&c| {
                let c = usize::from(c);
                (self.symbols[c][0], std::cmp::Reverse(self.lengths[c]))
            });
            let mut index = MatchIndex {
                words: [0; 255],
                masks: [0; 255],
                codes: [0; 255],
                lengths: [0; 255],
                starts: [0; 257],
            };
            for (i, &code) in codes.iter().enumerate() {
                let c = usize::from(code);
                let length = u32::from(self.lengths[c]);
                index.words[i] = u64::from_le_bytes(self.symbols[c]);
                index.masks[i] = u64::MAX.checked_shr(64 - 8 * length).unwrap_or(0);
                index.codes[i] = code;
                index.lengths[i] = self.lengths[c];
            }
            let mut at = 0;
            for byte in 0..=256usize {
                while at < codes.len()
                    && usize::from(self.symbols[usize::from(codes[at])][0]) < byte
                {
                    at += 1;
                }
                index.starts[byte] = at as u16;
            }
            index
        })
    }

    /// How many symbols the table holds (0: the store compresses nothing).
    #[cfg(test)]
    pub(crate) fn symbols(&self) -> usize {
        self.count
    }

    /// The table's row under `meta["text_codec"]`.
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(2 + self.count * 9);
        out.push(FORMAT);
        out.push(self.count as u8);
        out.extend_from_slice(&self.lengths[..self.count]);
        for symbol in &self.symbols[..self.count] {
            out.extend_from_slice(symbol);
        }
        out
    }

    /// Whether `bytes` is this table's row ([`TextCodec::to_bytes`]), compared in place.
    pub(crate) fn is_row(&self, bytes: &[u8]) -> bool {
        let count = self.count;
        bytes.len() == 2 + count * 9
            && bytes[..2] == [FORMAT, count as u8]
            && bytes[2..2 + count] == self.lengths[..count]
            && bytes[2 + count..]
                .chunks_exact(8)
                .zip(&self.symbols[..count])
                .all(|(row, symbol)| row == symbol)
    }

    /// The table from its row, every length checked (1 to 8 bytes, nothing stored past a
    /// symbol's length).
    pub(crate) fn from_bytes(bytes: &[u8]) -> Result<TextCodec, Corruption> {
        let bad = |detail: String| Corruption::new("text codec", detail);
        let [format, count, rest @ ..] = bytes else {
            return Err(bad(format!(
                "{} bytes, shorter than its header",
                bytes.len()
            )));
        };
        if *format != FORMAT {
            return Err(bad(format!("unknown format {format}")));
        }
        let count = usize::from(*count);
        if count > 255 || rest.len() != count * 9 {
            return Err(bad(format!(
                "{count} symbols in {} bytes (each takes 9)",
                rest.len()
            )));
        }
        let (lengths, symbols) = rest.split_at(count);
        let mut codec = TextCodec::empty();
        for (i, (&length, symbol)) in lengths.iter().zip(symbols.chunks_exact(8)).enumerate() {
            if !(1..=8).contains(&length) {
                return Err(bad(format!("symbol {i} is {length} bytes long")));
            }
            if symbol[usize::from(length)..].iter().any(|&b| b != 0) {
                return Err(bad(format!("symbol {i} has bytes past its length")));
            }
            codec.symbols[i].copy_from_slice(symbol);
            codec.lengths[i] = length;
        }
        codec.count = count;
        Ok(codec)
    }

    /// `text` as it is stored: compressed where that is shorter (the marker byte included),
    /// else its own bytes. At each position the longest symbol that matches is taken, as
    /// FSST's own compressor does; a byte no symbol starts with is escaped.
    pub(crate) fn compress<'a>(&self, text: &'a str) -> Cow<'a, [u8]> {
        self.compress_bytes(text.as_bytes())
    }

    /// [`TextCodec::compress`] of UTF-8 bytes (a text index segment's terms, end to end).
    pub(crate) fn compress_bytes<'a>(&self, bytes: &'a [u8]) -> Cow<'a, [u8]> {
        if self.count == 0 || bytes.len() < 4 {
            return Cow::Borrowed(bytes);
        }
        let index = self.index();
        let mut out = Vec::with_capacity(bytes.len());
        out.push(MARKER);
        let mut at = 0;
        while at < bytes.len() {
            if out.len() >= bytes.len() {
                return Cow::Borrowed(bytes);
            }
            // The next eight bytes as a word (zeros past the end, which no match may use).
            let left = bytes.len() - at;
            let word = match bytes.get(at..at + 8) {
                Some(eight) => u64::from_le_bytes(eight.try_into().unwrap_or_default()),
                None => {
                    let mut tail = [0u8; 8];
                    tail[..left].copy_from_slice(&bytes[at..]);
                    u64::from_le_bytes(tail)
                }
            };
            let first = (word & 0xFF) as usize;
            let (from, to) = (
                usize::from(index.starts[first]),
                usize::from(index.starts[first + 1]),
            );
            let matched = (from..to).find(|&i| {
                (word ^ index.words[i]) & index.masks[i] == 0
                    && usize::from(index.lengths[i]) <= left
            });
            match matched {
                Some(i) => {
                    out.push(index.codes[i]);
                    at += usize::from(index.lengths[i]);
                }
                None => {
                    out.push(ESCAPE);
                    out.push(word as u8);
                    at += 1;
                }
            }
        }
        if out.len() >= bytes.len() {
            return Cow::Borrowed(bytes);
        }
        Cow::Owned(out)
    }

    /// The bytes `codes` stand for. A first pass checks every code and sums the length; the
    /// second copies each symbol's eight bytes whole and steps past only its length (the
    /// buffer has eight bytes of room past the end), as FSST's own decoder does.
    fn expand(&self, codes: &[u8], what: &'static str) -> Result<Vec<u8>, Corruption> {
        let mut length = 0usize;
        let mut at = 0;
        while let Some(&code) = codes.get(at) {
            if code == ESCAPE {
                if at + 1 >= codes.len() {
                    return Err(Corruption::new(what, "a compressed text ends in an escape"));
                }
                length += 1;
                at += 2;
            } else {
                let code = usize::from(code);
                if code >= self.count {
                    return Err(Corruption::new(
                        what,
                        format!(
                            "code {code} is not in the store's table of {} symbols",
                            self.count
                        ),
                    ));
                }
                length += usize::from(self.lengths[code]);
                at += 1;
            }
        }
        let mut out = vec![0u8; length + 8];
        let (mut written, mut at) = (0, 0);
        while let Some(&code) = codes.get(at) {
            if code == ESCAPE {
                out[written] = codes[at + 1];
                written += 1;
                at += 2;
            } else {
                let code = usize::from(code);
                out[written..written + 8].copy_from_slice(&self.symbols[code]);
                written += usize::from(self.lengths[code]);
                at += 1;
            }
        }
        out.truncate(length);
        Ok(out)
    }
}

/// A stored chunk text read back: raw texts borrowed, compressed ones decoded with `codec`
/// (the store's table; `None` where the file has none). Bytes that are not UTF-8, or a
/// compressed text the table cannot decode, are a [`Corruption`].
pub(crate) fn decode_text<'a>(
    stored: &'a [u8],
    codec: Option<&TextCodec>,
) -> Result<Cow<'a, str>, Corruption> {
    decode_stored(stored, codec, "chunk text")
}

/// [`decode_text`] of bytes stored for `what` (a chunk text, or a text row's terms), which
/// its errors name.
pub(crate) fn decode_stored<'a>(
    stored: &'a [u8],
    codec: Option<&TextCodec>,
    what: &'static str,
) -> Result<Cow<'a, str>, Corruption> {
    match stored.split_first() {
        Some((&MARKER, codes)) => {
            let Some(codec) = codec else {
                return Err(Corruption::new(
                    what,
                    "compressed, and the file's text codec is missing or does not read \
                     (Store::verify reports it)",
                ));
            };
            String::from_utf8(codec.expand(codes, what)?)
                .map(Cow::Owned)
                .map_err(|_| Corruption::new(what, "compressed bytes that are not UTF-8"))
        }
        _ => std::str::from_utf8(stored)
            .map(Cow::Borrowed)
            .map_err(|_| Corruption::new(what, "not UTF-8")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn corpus() -> Vec<String> {
        (0..600)
            .map(|i| {
                format!(
                    "Document {i} explains how the ingestion pipeline retries a delivery and \
                     why the store refuses a stale revision number {}.",
                    i * 7
                )
            })
            .collect()
    }

    #[test]
    fn texts_round_trip_through_a_trained_table_and_its_row() {
        let texts = corpus();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let codec = TextCodec::train(&refs);
        assert!(codec.symbols() > 0);
        let read = TextCodec::from_bytes(&codec.to_bytes()).unwrap();
        assert!(codec.is_row(&codec.to_bytes()) && read.is_row(&codec.to_bytes()));
        let mut other = codec.to_bytes();
        *other.last_mut().unwrap() ^= 1;
        assert!(!codec.is_row(&other) && !codec.is_row(&[FORMAT, 0]));
        let (mut raw, mut stored) = (0, 0);
        for text in refs
            .iter()
            .copied()
            .chain(["", "é", "ab", "\u{1F600} ünïcödé"])
        {
            let bytes = read.compress(text);
            raw += text.len();
            stored += bytes.len();
            assert_eq!(decode_text(&bytes, Some(&codec)).unwrap(), text);
            assert_eq!(decode_text(&bytes, Some(&read)).unwrap(), text);
        }
        assert!(stored * 2 < raw, "{stored} of {raw} bytes");
    }

    /// The greedy parse in its plainest form: at each position the longest symbol that
    /// matches (the lowest code among equals), else an escape.
    fn reference(codec: &TextCodec, bytes: &[u8]) -> Vec<u8> {
        let mut out = vec![MARKER];
        let mut at = 0;
        while at < bytes.len() {
            let rest = &bytes[at..];
            let best = (0..codec.count)
                .filter(|&c| {
                    let n = usize::from(codec.lengths[c]);
                    rest.len() >= n && rest[..n] == codec.symbols[c][..n]
                })
                .max_by_key(|&c| (codec.lengths[c], std::cmp::Reverse(c)));
            match best {
                Some(c) => {
                    out.push(c as u8);
                    at += usize::from(codec.lengths[c]);
                }
                None => {
                    out.extend_from_slice(&[ESCAPE, rest[0]]);
                    at += 1;
                }
            }
        }
        out
    }

    proptest::proptest! {
        /// The compressor (a masked compare of words per candidate) makes the plain greedy
        /// parse's output wherever that is shorter than the text, and the text otherwise;
        /// its output decodes to the text.
        #[test]
        fn the_compressor_takes_the_longest_match_at_each_position(
            text in "(Document|ingestion|pipeline|revision|the|store| |[a-z0-9.,é]){0,60}",
        ) {
            static CODEC: std::sync::OnceLock<TextCodec> = std::sync::OnceLock::new();
            let codec = CODEC.get_or_init(|| {
                let texts = corpus();
                let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
                TextCodec::train(&refs)
            });
            let stored = codec.compress(&text);
            let plain = reference(codec, text.as_bytes());
            if text.len() >= 4 && plain.len() < text.len() {
                proptest::prop_assert_eq!(stored.as_ref(), plain.as_slice());
            } else {
                proptest::prop_assert_eq!(stored.as_ref(), text.as_bytes());
            }
            proptest::prop_assert_eq!(decode_text(&stored, Some(codec)).unwrap(), text.as_str());
        }
    }

    /// Regression (review of schema 10): the compressor loads eight bytes past the end as
    /// zeros, so a symbol ending in a zero byte must not match there. `ab\0` at the end of
    /// `...ab` would decode to one byte too many.
    #[test]
    fn a_symbol_is_never_matched_past_the_end_of_the_text() {
        let mut row = vec![FORMAT, 2, 3, 8];
        row.extend_from_slice(b"ab\0\0\0\0\0\0");
        row.extend_from_slice(b"zzzzzzzz");
        let codec = TextCodec::from_bytes(&row).unwrap();
        for text in [
            "zzzzzzzzzzzzzzzzab",
            "zzzzzzzzzzzzzzzza",
            "zzzzzzzzzzzzzzzzab\0",
        ] {
            let stored = codec.compress(text);
            assert_eq!(stored[0], MARKER, "{text:?} was not compressed");
            assert_eq!(decode_text(&stored, Some(&codec)).unwrap(), text);
        }
        // The symbol does match where the text has its zero byte.
        assert_eq!(codec.compress("zzzzzzzzzzzzzzzzab\0").len(), 4);
    }

    #[test]
    fn too_little_text_trains_an_empty_table_that_compresses_nothing() {
        let codec = TextCodec::train(&["short", "texts"]);
        assert_eq!(codec.symbols(), 0);
        assert!(matches!(codec.compress("short texts"), Cow::Borrowed(_)));
        assert_eq!(
            TextCodec::from_bytes(&codec.to_bytes()).unwrap().symbols(),
            0
        );
    }

    #[test]
    fn damaged_codes_and_tables_are_corruptions_not_panics() {
        let texts = corpus();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let codec = TextCodec::train(&refs);
        // An escape at the end, a code past the table, a compressed text without a table,
        // bytes that decode to invalid UTF-8.
        assert!(decode_text(&[MARKER, ESCAPE], Some(&codec)).is_err());
        let small = TextCodec::from_bytes(&[FORMAT, 1, 1, b'a', 0, 0, 0, 0, 0, 0, 0]).unwrap();
        assert!(decode_text(&[MARKER, 1], Some(&small)).is_err());
        assert!(decode_text(&[MARKER, 0], None).is_err());
        assert!(decode_text(&[MARKER, ESCAPE, 0xC3], Some(&small)).is_err());
        assert!(decode_text(&[0xC3], None).is_err());
        // Every prefix and one-byte change of a table row either reads or is refused.
        let row = codec.to_bytes();
        for cut in 0..row.len() {
            let _ = TextCodec::from_bytes(&row[..cut]);
        }
        for at in 0..row.len() {
            let mut bad = row.clone();
            bad[at] ^= 0x5A;
            if let Ok(read) = TextCodec::from_bytes(&bad) {
                // A table that reads compresses without a panic.
                let _ = read.compress(refs[0]);
            }
        }
        assert!(TextCodec::from_bytes(&[FORMAT, 1, 9, 0, 0, 0, 0, 0, 0, 0, 0]).is_err());
        assert!(TextCodec::from_bytes(&[FORMAT, 1, 1, b'a', 1, 0, 0, 0, 0, 0, 0]).is_err());
        assert!(TextCodec::from_bytes(&[2, 0]).is_err());
    }
}
