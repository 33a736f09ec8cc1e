//! The `text_chunks` row codec on the write path, without allocating a `String` per term.
//!
//! The bytes are exactly those of [`TextRow`](crate::schema::TextRow) under the store's
//! bincode configuration (the standard one: little-endian varints), so files written before
//! this codec existed read the same and `verify` and the inverted index may still decode a
//! row with `schema::decode`:
//!
//! ```text
//! varint len · varint term count · (varint term bytes · term bytes · varint count)*
//! ```
//!
//! bincode's varint: a value below 251 is one byte; otherwise a marker byte (251: u16,
//! 252: u32, 253: u64) and the value little-endian.
//!
//! Encoding writes straight from the analysis's term spans ([`super::analyze::Terms`]);
//! un-indexing a chunk reads only the leading `len` ([`row_len`]).

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

/// The chunk length (in terms) a text row starts with; the rest of the row is not read.
pub(crate) fn row_len(bytes: &[u8]) -> Result<u32, Corruption> {
    let (len, _) = get_varint(bytes)?;
    u32::try_from(len)
        .map_err(|_| Corruption::new("text row", format!("a chunk length of {len} terms")))
}

/// The row of a chunk of `len` terms whose distinct terms and counts `terms` yields, sorted
/// by term, written into `out` (cleared first).
pub(crate) fn encode_row<'a>(
    out: &mut Vec<u8>,
    len: u32,
    distinct: usize,
    terms: impl Iterator<Item = (&'a str, u32)>,
) {
    out.clear();
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
    use crate::schema::{self, TextRow};
    use proptest::prelude::*;

    fn encode(row: &TextRow) -> Vec<u8> {
        let mut out = Vec::new();
        encode_row(
            &mut out,
            row.len,
            row.terms.len(),
            row.terms.iter().map(|(t, c)| (t.as_str(), *c)),
        );
        out
    }

    proptest! {
        /// The hand-written bytes are bincode's, for every size class of every varint.
        #[test]
        fn rows_are_byte_identical_to_bincode(
            len in prop_oneof![0u32..300, 60_000u32..70_000, any::<u32>()],
            terms in proptest::collection::vec(
                ("[a-zé0-9_.']{0,70}", prop_oneof![1u32..300, any::<u32>()]),
                0..300,
            ),
        ) {
            let row = TextRow { len, terms };
            let ours = encode(&row);
            prop_assert_eq!(&ours, &schema::encode(&row));
            prop_assert_eq!(row_len(&ours).ok(), Some(len));
            prop_assert_eq!(schema::decode::<TextRow>("text row", &ours).ok(), Some(row));
        }
    }

    #[test]
    fn a_truncated_or_bad_length_is_corruption_not_a_panic() {
        assert!(row_len(&[]).is_err());
        assert!(row_len(&[U32_MARKER, 1, 2]).is_err());
        assert!(row_len(&[254]).is_err());
        let mut huge = vec![U64_MARKER];
        huge.extend_from_slice(&u64::MAX.to_le_bytes());
        assert!(row_len(&huge).is_err());
    }
}
