//! The `text_docs` row codec on the write path, without allocating a `String` per term.
//!
//! The bytes are exactly those of [`TextDocRow`](crate::schema::TextDocRow) under the
//! store's bincode configuration (the standard one: little-endian varints), so `verify` and
//! the inverted index decode a row with `schema::decode`: the chunk count, then each chunk's
//! slot and its [`TextRow`](crate::schema::TextRow) (a *segment*):
//!
//! ```text
//! row:     varint chunk count · (varint slot · segment)*
//! segment: varint len · varint term count · (varint term bytes · term bytes · varint count)*
//! ```
//!
//! bincode's varint: a value below 251 is one byte; otherwise a marker byte (251: u16,
//! 252: u32, 253: u64) and the value little-endian.
//!
//! Encoding writes a new chunk's segment straight from the analysis's term spans
//! ([`super::analyze::Terms`]); a chunk a revision keeps has its segment copied from the
//! old row as bytes ([`segments`] finds them without decoding a term), so a revision
//! analyses only its new chunks.

use crate::error::Corruption;

const U16_MARKER: u8 = 251;
const U32_MARKER: u8 = 252;
const U64_MARKER: u8 = 253;

/// Appends `value` as a bincode varint.
pub(crate) fn put_varint(out: &mut Vec<u8>, value: u64) {
    if value < u64::from(U16_MARKER) {
        out.push(value as u8);
    } else if let Ok(v) = u16::try_from(value) {
        out.push(U16_MARKER);
        out.extend_from_slice(&v.to_le_bytes());
    } else if let Ok(v) = u32::try_from(value) {
        out.push(U32_MARKER);
        out.extend_from_slice(&v.to_le_bytes());
    } else {
        out.push(U64_MARKER);
        out.extend_from_slice(&value.to_le_bytes());
    }
}

/// Reads a bincode varint at the start of `bytes`: the value and the bytes it took.
fn get_varint(bytes: &[u8]) -> Result<(u64, usize), Corruption> {
    let short = || Corruption::new("text row", "a varint runs past the row's end");
    let (&first, rest) = bytes.split_first().ok_or_else(short)?;
    let wide = |n: usize| -> Result<u64, Corruption> {
        let raw = rest.get(..n).ok_or_else(short)?;
        let mut le = [0u8; 8];
        le[..n].copy_from_slice(raw);
        Ok(u64::from_le_bytes(le))
    };
    match first {
        U16_MARKER => Ok((wide(2)?, 3)),
        U32_MARKER => Ok((wide(4)?, 5)),
        U64_MARKER => Ok((wide(8)?, 9)),
        b if b < U16_MARKER => Ok((u64::from(b), 1)),
        b => Err(Corruption::new(
            "text row",
            format!("{b} is no varint marker"),
        )),
    }
}

/// One chunk's segment in a document's text row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Segment {
    /// The chunk's vector slot.
    pub slot: u32,
    /// Its length in terms.
    pub len: u32,
    /// Where its segment (after the slot) lies in the row's bytes.
    pub bytes: std::ops::Range<usize>,
}

/// Reads a varint at `*at` in `bytes` as a `u32` naming `what`, moving `*at` past it.
fn take_u32(bytes: &[u8], at: &mut usize, what: &str) -> Result<u32, Corruption> {
    let rest = bytes.get(*at..).unwrap_or_default();
    let (value, used) = get_varint(rest)?;
    *at += used;
    u32::try_from(value).map_err(|_| Corruption::new("text row", format!("{what} {value}")))
}

/// The segments of the document row `bytes`, in the row's order (`out` is cleared first).
/// Terms are skipped, not decoded; a row that does not parse to its end is `Corruption`.
pub(crate) fn segments(bytes: &[u8], out: &mut Vec<Segment>) -> Result<(), Corruption> {
    out.clear();
    let mut at = 0usize;
    let count = take_u32(bytes, &mut at, "a chunk count of")?;
    for _ in 0..count {
        let slot = take_u32(bytes, &mut at, "a slot of")?;
        let start = at;
        let len = take_u32(bytes, &mut at, "a chunk length of")?;
        let terms = take_u32(bytes, &mut at, "a term count of")?;
        for _ in 0..terms {
            let term_len = take_u32(bytes, &mut at, "a term of bytes:")? as usize;
            at = at
                .checked_add(term_len)
                .filter(|&end| end <= bytes.len())
                .ok_or_else(|| Corruption::new("text row", "a term runs past the row's end"))?;
            take_u32(bytes, &mut at, "a term count of")?;
        }
        out.push(Segment {
            slot,
            len,
            bytes: start..at,
        });
    }
    if at != bytes.len() {
        return Err(Corruption::new(
            "text row",
            format!("{} bytes after the last chunk", bytes.len() - at),
        ));
    }
    Ok(())
}

/// Appends the segment of a chunk of `len` terms whose distinct terms and counts `terms`
/// yields (the [`TextRow`](crate::schema::TextRow) bytes) to `out`.
pub(crate) fn put_segment<'a>(
    out: &mut Vec<u8>,
    len: u32,
    distinct: usize,
    terms: impl Iterator<Item = (&'a str, u32)>,
) {
    put_varint(out, u64::from(len));
    put_varint(out, distinct as u64);
    let mut written = 0usize;
    for (term, count) in terms {
        put_varint(out, term.len() as u64);
        out.extend_from_slice(term.as_bytes());
        put_varint(out, u64::from(count));
        written += 1;
    }
    debug_assert_eq!(written, distinct, "a text row's term count and its terms");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{self, TextDocRow, TextRow};
    use proptest::prelude::*;

    fn segment(row: &TextRow) -> Vec<u8> {
        let mut out = Vec::new();
        put_segment(
            &mut out,
            row.len,
            row.terms.len(),
            row.terms.iter().map(|(t, c)| (t.as_str(), *c)),
        );
        out
    }

    /// The document row of `chunks` as the writer builds it: count, then slot and segment.
    fn doc_row(chunks: &[(u32, TextRow)]) -> Vec<u8> {
        let mut out = Vec::new();
        put_varint(&mut out, chunks.len() as u64);
        for (slot, row) in chunks {
            put_varint(&mut out, u64::from(*slot));
            out.extend_from_slice(&segment(row));
        }
        out
    }

    fn text_row() -> impl Strategy<Value = TextRow> {
        (
            prop_oneof![0u32..300, 60_000u32..70_000, any::<u32>()],
            proptest::collection::vec(
                ("[a-zé0-9_.']{0,70}", prop_oneof![1u32..300, any::<u32>()]),
                0..120,
            ),
        )
            .prop_map(|(len, terms)| TextRow { len, terms })
    }

    proptest! {
        /// The hand-written bytes are bincode's, for every size class of every varint, and
        /// `segments` finds every chunk's slot, length and bytes again.
        #[test]
        fn rows_are_byte_identical_to_bincode(
            chunks in proptest::collection::vec(
                (prop_oneof![0u32..300, any::<u32>()], text_row()),
                0..12,
            ),
        ) {
            let row = TextDocRow { chunks };
            let ours = doc_row(&row.chunks);
            prop_assert_eq!(&ours, &schema::encode(&row));
            prop_assert_eq!(schema::decode::<TextDocRow>("text row", &ours).ok(), Some(row.clone()));
            let mut found = Vec::new();
            segments(&ours, &mut found).expect("segments");
            prop_assert_eq!(found.len(), row.chunks.len());
            for (segment, (slot, chunk)) in found.iter().zip(&row.chunks) {
                prop_assert_eq!(segment.slot, *slot);
                prop_assert_eq!(segment.len, chunk.len);
                let expected = segment_bytes(chunk);
                prop_assert_eq!(&ours[segment.bytes.clone()], expected.as_slice());
            }
        }

        /// No prefix, and no row with bytes added, parses: each is `Corruption`, not a panic.
        #[test]
        fn a_truncated_or_extended_row_is_corruption_not_a_panic(
            chunks in proptest::collection::vec((0u32..300, text_row()), 1..4),
            cut in any::<prop::sample::Index>(),
            extra in proptest::collection::vec(any::<u8>(), 1..8),
        ) {
            let bytes = doc_row(&chunks);
            let mut found = Vec::new();
            let cut = cut.index(bytes.len());
            prop_assert!(segments(&bytes[..cut], &mut found).is_err());
            let mut longer = bytes.clone();
            longer.extend_from_slice(&extra);
            prop_assert!(segments(&longer, &mut found).is_err());
        }
    }

    fn segment_bytes(row: &TextRow) -> Vec<u8> {
        schema::encode(row)
    }

    #[test]
    fn bad_varints_are_corruption_not_a_panic() {
        let mut found = Vec::new();
        assert!(segments(&[], &mut found).is_err());
        assert!(segments(&[U32_MARKER, 1, 2], &mut found).is_err());
        assert!(segments(&[254], &mut found).is_err());
        let mut huge = vec![U64_MARKER];
        huge.extend_from_slice(&u64::MAX.to_le_bytes());
        assert!(segments(&huge, &mut found).is_err());
        // One chunk whose term claims more bytes than the row has.
        assert!(segments(&[1, 0, 1, 1, 200, b'a'], &mut found).is_err());
    }
}
