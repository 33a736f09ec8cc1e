//! The `text_docs` row codec: one row per document holding each live chunk's terms, so a
//! revision rewrites one row, not one per chunk.
//!
//! ```text
//! row     = segment*                       (by slot, ascending)
//! segment = varint slot · varint len · varint payload bytes · payload
//! payload = varint n · (varint term bytes){n} · (varint count){n} · terms
//! terms   = the n terms' bytes, end to end                  (raw: never begins with 0xFF)
//!         | 0xFF · their FSST codes                          (schema 10: compressed)
//! ```
//!
//! `len` is the chunk's length in terms (BM25's document length); the terms come in the order
//! of their first occurrence in the chunk, their bytes one after the other at the end, so the
//! writer copies them in one move from the analysis's arena (a copy per term, a few bytes
//! each, cost more than the rest of the encoding). Varints are bincode's: a value below 251 is one
//! byte; otherwise a marker byte (251: u16, 252: u32, 253: u64) and the value little-endian.
//!
//! Schema 10 compresses the terms with the store's text codec (the FSST table its chunk
//! texts are compressed with, `schema/text_code.rs`), in the chunk texts' stored form, where
//! that is shorter: a writer without a table (too little text yet, or a damaged table row)
//! writes them raw, as schema 9 did. Their decoded length must be the lengths' sum.
//!
//! A segment carries its byte length, so a revision that keeps some chunks copies their
//! segments whole and un-indexing reads only the headers ([`segments`]). Decoding checks every
//! length against the row's end: damaged bytes are a [`Corruption`], never a panic.

use crate::backend::redb::schema::{decode_stored, TextCodec};
use crate::error::Corruption;
use std::borrow::Cow;

use crate::varint::{self, VarintError};

/// Appends `value` as a varint (bincode's layout: `crate::varint`).
#[inline(always)]
pub(crate) fn put_varint(out: &mut Vec<u8>, value: u64) {
    varint::put(out, value);
}

/// The bytes [`put_varint`] writes for `value`.
#[inline(always)]
fn varint_len(value: u64) -> usize {
    varint::len(value)
}

/// A reader of varints and byte runs over a row, refusing to run past its end.
struct Cursor<'a> {
    bytes: &'a [u8],
}

impl<'a> Cursor<'a> {
    fn short() -> Corruption {
        Corruption::new("text row", "a length runs past the row's end")
    }

    fn varint(&mut self) -> Result<u64, Corruption> {
        match varint::take(self.bytes) {
            Ok((value, rest)) => {
                self.bytes = rest;
                Ok(value)
            }
            Err(VarintError::Short) => Err(Self::short()),
            Err(VarintError::Marker(b)) => Err(Corruption::new(
                "text row",
                format!("{b} is no varint marker"),
            )),
        }
    }

    fn u32(&mut self, what: &str) -> Result<u32, Corruption> {
        let value = self.varint()?;
        u32::try_from(value)
            .map_err(|_| Corruption::new("text row", format!("a {what} of {value}")))
    }

    fn take(&mut self, n: u64) -> Result<&'a [u8], Corruption> {
        let n = usize::try_from(n).map_err(|_| Self::short())?;
        if n > self.bytes.len() {
            return Err(Self::short());
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Ok(head)
    }
}

/// One chunk's part of a document's text row.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Segment<'a> {
    /// The chunk's slot (its vector id is the document's internal id and this slot).
    pub slot: u32,
    /// The chunk's length in terms.
    pub len: u32,
    /// The whole segment's bytes, header included (what a revision keeping the chunk copies).
    pub raw: &'a [u8],
    /// The term count and terms.
    payload: &'a [u8],
}

impl<'a> Segment<'a> {
    /// The chunk's distinct terms with their counts, in the order they were written;
    /// compressed terms are decoded with `codec` (the store's text codec; `None` where the
    /// file has none or its row does not read, which leaves compressed terms a
    /// [`Corruption`]).
    pub(crate) fn terms(&self, codec: Option<&TextCodec>) -> Result<SegmentTerms<'a>, Corruption> {
        let mut cursor = Cursor {
            bytes: self.payload,
        };
        let count = cursor.varint()?;
        // Each term takes at least two bytes (its length and its count): a count larger than
        // that is damage, and is not allowed to size an allocation.
        if count > (self.payload.len() / 2) as u64 {
            return Err(Corruption::new(
                "text row",
                format!("{count} terms in a segment of {} bytes", self.payload.len()),
            ));
        }
        let mut entries = Vec::with_capacity(count as usize);
        let mut total = 0u64;
        for _ in 0..count {
            let length = cursor.varint()?;
            total = total.saturating_add(length);
            entries.push((length, 0u32));
        }
        for entry in &mut entries {
            entry.1 = cursor.u32("term count")?;
        }
        let text = decode_stored(cursor.bytes, codec, "text row")?;
        if text.len() as u64 != total {
            return Err(Corruption::new(
                "text row",
                format!(
                    "a segment's terms take {} bytes, not the {total} their lengths sum to",
                    text.len()
                ),
            ));
        }
        // Each term must end on a character boundary (the whole is UTF-8).
        let mut at = 0usize;
        for &(length, _) in &entries {
            at += length as usize;
            if !text.is_char_boundary(at) {
                return Err(Corruption::new("text row", "a term is not UTF-8"));
            }
        }
        Ok(SegmentTerms { text, entries })
    }
}

impl Segment<'_> {
    /// Whether the segment keeps its terms compressed (schema 10).
    #[cfg(any(test, feature = "testkit"))]
    pub(crate) fn terms_compressed(&self) -> Result<bool, Corruption> {
        let mut cursor = Cursor {
            bytes: self.payload,
        };
        let count = cursor.varint()?;
        for _ in 0..count.saturating_mul(2) {
            cursor.varint()?;
        }
        Ok(cursor.bytes.first() == Some(&0xFF))
    }
}

/// A segment's terms, decoded ([`Segment::terms`]).
pub(crate) struct SegmentTerms<'a> {
    /// The terms end to end: borrowed from the row when stored raw.
    text: Cow<'a, str>,
    /// Each term's length in bytes and its count, in order.
    entries: Vec<(u64, u32)>,
}

impl SegmentTerms<'_> {
    /// Each term with its count, in the order they were written.
    pub(crate) fn list(&self) -> Vec<(&str, u32)> {
        let mut at = 0usize;
        self.entries
            .iter()
            .map(|&(length, count)| {
                let start = at;
                at += length as usize;
                // Lengths sum to the text's length and end on character boundaries
                // (checked when decoded).
                (self.text.get(start..at).unwrap_or_default(), count)
            })
            .collect()
    }
}

/// The segments of a document's text row, in order (their terms are not decoded). Slots
/// must ascend strictly.
pub(crate) fn segments(row: &[u8]) -> Result<Vec<Segment<'_>>, Corruption> {
    let mut cursor = Cursor { bytes: row };
    let mut out = Vec::new();
    while !cursor.bytes.is_empty() {
        let start = cursor.bytes;
        let slot = cursor.u32("slot")?;
        let len = cursor.u32("chunk length")?;
        let payload_len = cursor.varint()?;
        let payload = cursor.take(payload_len)?;
        let used = start.len() - cursor.bytes.len();
        if out.last().is_some_and(|s: &Segment<'_>| s.slot >= slot) {
            return Err(Corruption::new(
                "text row",
                format!("slot {slot} follows a slot at least as large"),
            ));
        }
        out.push(Segment {
            slot,
            len,
            raw: &start[..used],
            payload,
        });
    }
    Ok(out)
}

/// Appends the segment of the chunk at `slot`, of `len` terms, whose distinct terms are the
/// `spans` of `arena` (start, end, count), in that order; the terms are compressed with
/// `codec` where that is shorter. When the spans are the arena's bytes one after the other
/// from its start (as `analyze::Terms` makes them), the terms' bytes are taken in one piece.
pub(crate) fn put_segment(
    out: &mut Vec<u8>,
    slot: u32,
    len: u32,
    arena: &[u8],
    spans: &[(u32, u32, u32)],
    codec: Option<&TextCodec>,
) {
    if put_small_segment(out, slot, len, arena, spans, codec) {
        return;
    }
    let term = |&(start, end, _): &(u32, u32, u32)| {
        arena.get(start as usize..end as usize).unwrap_or_default()
    };
    let mut bytes = 0usize;
    let mut header = varint_len(spans.len() as u64);
    let mut contiguous = true;
    for span in spans {
        let n = term(span).len();
        contiguous &= span.0 as usize == bytes && n == (span.1 - span.0) as usize;
        bytes += n;
        header += varint_len(n as u64) + varint_len(u64::from(span.2));
    }
    let joined: Cow<'_, [u8]> = match arena.get(..bytes).filter(|_| contiguous) {
        Some(all) => Cow::Borrowed(all),
        None => Cow::Owned(spans.iter().flat_map(&term).copied().collect()),
    };
    let stored = stored_terms(&joined, codec);
    put_varint(out, u64::from(slot));
    put_varint(out, u64::from(len));
    put_varint(out, (header + stored.len()) as u64);
    put_varint(out, spans.len() as u64);
    for span in spans {
        put_varint(out, term(span).len() as u64);
    }
    for span in spans {
        put_varint(out, u64::from(span.2));
    }
    out.extend_from_slice(&stored);
}

/// The terms' bytes as a segment stores them: compressed with `codec` where that is shorter.
fn stored_terms<'a>(joined: &'a [u8], codec: Option<&TextCodec>) -> Cow<'a, [u8]> {
    match codec {
        Some(codec) => codec.compress_bytes(joined),
        None => Cow::Borrowed(joined),
    }
}

/// [`put_segment`] for the usual segment: the spans the arena's bytes one after the other
/// from its start, every length and count one byte. The spans are checked first, then the
/// terms compressed (which gives the payload's size), then the three parts filled in place;
/// `false` (with `out` as it was) for any other segment.
fn put_small_segment(
    out: &mut Vec<u8>,
    slot: u32,
    len: u32,
    arena: &[u8],
    spans: &[(u32, u32, u32)],
    codec: Option<&TextCodec>,
) -> bool {
    let (mut next, mut wide) = (0u32, 0u32);
    for &(start, end, n) in spans {
        if start != next || end < start {
            return false;
        }
        next = end;
        wide = wide.max(end - start).max(n);
    }
    let Some(whole) = arena.get(..next as usize) else {
        return false;
    };
    if wide >= u32::from(varint::U16_MARKER) {
        return false;
    }
    let stored = stored_terms(whole, codec);
    put_varint(out, u64::from(slot));
    put_varint(out, u64::from(len));
    put_varint(
        out,
        (varint_len(spans.len() as u64) + 2 * spans.len() + stored.len()) as u64,
    );
    put_varint(out, spans.len() as u64);
    let base = out.len();
    out.resize(base + 2 * spans.len(), 0);
    let (lengths, counts) = out[base..].split_at_mut(spans.len());
    for ((length, count), &(start, end, n)) in lengths.iter_mut().zip(counts.iter_mut()).zip(spans)
    {
        *length = (end - start) as u8;
        *count = n as u8;
    }
    out.extend_from_slice(&stored);
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::sync::OnceLock;

    type Chunk = (u32, Vec<(String, u32)>);

    /// A table trained on words like the ones the strategies below draw, so that some
    /// segments compress and some do not.
    fn codec() -> &'static TextCodec {
        static CODEC: OnceLock<TextCodec> = OnceLock::new();
        CODEC.get_or_init(|| {
            let words = [
                "gear", "pawl", "ratchet", "spring", "tooth", "wheel", "école",
            ];
            let mut state = 1u64;
            let texts: Vec<String> = (0..2_000)
                .map(|_| {
                    (0..4)
                        .map(|_| {
                            state = state
                                .wrapping_mul(6_364_136_223_846_793_005)
                                .wrapping_add(1_442_695_040_888_963_407);
                            words[(state >> 33) as usize % words.len()]
                        })
                        .collect::<String>()
                })
                .collect();
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            let codec = TextCodec::train(&refs);
            assert!(codec.symbols() > 0);
            codec
        })
    }

    fn encode(chunks: &[Chunk], codec: Option<&TextCodec>) -> Vec<u8> {
        let mut out = Vec::new();
        for (index, (len, terms)) in chunks.iter().enumerate() {
            let slot = out.len() as u32; // any ascending slots
                                         // Odd rows: the spans one after the other from the arena's start (one piece).
            let mut arena = Vec::new();
            let mut spans = Vec::new();
            for (term, count) in terms {
                let start = arena.len() as u32;
                arena.extend_from_slice(term.as_bytes());
                spans.push((start, arena.len() as u32, *count));
            }
            if index % 2 == 0 {
                // Other bytes after the terms, and the spans not from the arena's start:
                // the path that gathers them term by term.
                arena.extend_from_slice(&[0xAA; 16]);
                arena.rotate_right(3);
                for span in &mut spans {
                    span.0 += 3;
                    span.1 += 3;
                }
            }
            put_segment(&mut out, slot, *len, &arena, &spans, codec);
        }
        out
    }

    fn chunks_strategy() -> impl Strategy<Value = Vec<Chunk>> {
        proptest::collection::vec(
            (
                prop_oneof![0u32..300, 60_000u32..70_000, any::<u32>()],
                proptest::collection::vec(
                    (
                        prop_oneof![
                            "[a-zé0-9_.']{0,70}",
                            "(gear|pawl|ratchet|spring|tooth|wheel|école){1,4}"
                        ],
                        prop_oneof![1u32..300, any::<u32>()],
                    ),
                    0..120,
                ),
            ),
            0..6,
        )
    }

    proptest! {
        /// Every segment decodes to what was written, for every size class of every varint,
        /// with and without a table, and a segment's raw bytes are exactly what re-encoding
        /// it gives.
        #[test]
        fn segments_round_trip(chunks in chunks_strategy(), compressed in any::<bool>()) {
            let codec = compressed.then(codec);
            let row = encode(&chunks, codec);
            let decoded = segments(&row).expect("segments");
            prop_assert_eq!(decoded.len(), chunks.len());
            let mut rebuilt = Vec::new();
            for (segment, (len, terms)) in decoded.iter().zip(&chunks) {
                prop_assert_eq!(segment.len, *len);
                let back = segment.terms(codec).expect("terms");
                let expected: Vec<(&str, u32)> =
                    terms.iter().map(|(t, c)| (t.as_str(), *c)).collect();
                prop_assert_eq!(back.list(), expected);
                rebuilt.extend_from_slice(segment.raw);
            }
            prop_assert_eq!(rebuilt, row);
        }

        /// Any bytes decode to segments and terms or to a `Corruption`, never a panic, with
        /// a table or without.
        #[test]
        fn damaged_rows_are_corruption_not_a_panic(
            bytes in proptest::collection::vec(any::<u8>(), 0..200),
        ) {
            if let Ok(decoded) = segments(&bytes) {
                for segment in decoded {
                    if let Ok(terms) = segment.terms(None) {
                        let _ = terms.list();
                    }
                    if let Ok(terms) = segment.terms(Some(codec())) {
                        let _ = terms.list();
                    }
                }
            }
        }

        /// A compressed segment damaged anywhere: a `Corruption` or other terms, never a
        /// panic.
        #[test]
        fn damaged_compressed_rows_are_corruption_not_a_panic(
            chunks in chunks_strategy(),
            at in any::<usize>(),
            byte in any::<u8>(),
        ) {
            let mut row = encode(&chunks, Some(codec()));
            if !row.is_empty() {
                let at = at % row.len();
                row[at] = byte;
            }
            if let Ok(decoded) = segments(&row) {
                for segment in decoded {
                    if let Ok(terms) = segment.terms(Some(codec())) {
                        let _ = terms.list();
                    }
                }
            }
        }
    }

    #[test]
    fn terms_compress_with_a_table_and_need_it_to_read() {
        let terms = vec![
            ("ratchet".to_string(), 2),
            ("pawl".to_string(), 1),
            ("gearwheel".to_string(), 3),
        ];
        let raw = encode(&[(6, terms.clone())], None);
        let compressed = encode(&[(6, terms.clone())], Some(codec()));
        assert!(
            compressed.len() < raw.len(),
            "{compressed:?} against {raw:?}"
        );
        let segment = segments(&compressed).unwrap()[0];
        let expected: Vec<(&str, u32)> = terms.iter().map(|(t, c)| (t.as_str(), *c)).collect();
        assert_eq!(segment.terms(Some(codec())).unwrap().list(), expected);
        // Without the table: corruption, named.
        let missing = segment.terms(None).err().expect("a table is needed");
        assert_eq!(missing.what, "text row");
        // A raw segment reads with a table or without.
        let segment = segments(&raw).unwrap()[0];
        assert_eq!(segment.terms(None).unwrap().list(), expected);
        assert_eq!(segment.terms(Some(codec())).unwrap().list(), expected);
    }

    #[test]
    fn truncated_rows_and_bad_markers_are_corruption() {
        for codec in [None, Some(codec())] {
            let row = encode(
                &[(3, vec![("gear".to_string(), 2), ("pawl".to_string(), 1)])],
                codec,
            );
            for cut in 1..row.len() {
                let decoded = segments(&row[..cut]);
                assert!(
                    decoded.is_err()
                        || decoded.is_ok_and(|s| s.iter().any(|s| s.terms(codec).is_err())),
                    "cut at {cut}"
                );
            }
        }
        assert!(segments(&[254]).is_err());
        let mut huge = vec![0, 0, 253]; // the 8-byte varint marker
        huge.extend_from_slice(&u64::MAX.to_le_bytes());
        assert!(segments(&huge).is_err());
        // Slots out of order.
        let mut two = Vec::new();
        put_segment(&mut two, 5, 1, b"a", &[(0, 1, 1)], None);
        put_segment(&mut two, 5, 1, b"b", &[(0, 1, 1)], None);
        assert!(segments(&two).is_err());
        // A term that splits a character: the lengths 1 and 1 over "é" (two bytes).
        let mut split = Vec::new();
        put_segment(
            &mut split,
            1,
            2,
            "é".as_bytes(),
            &[(0, 1, 1), (1, 2, 1)],
            None,
        );
        let segment = segments(&split).unwrap()[0];
        assert!(segment.terms(None).is_err());
    }
}
