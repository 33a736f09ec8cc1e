//! The file format's variable-length integers, in bincode's layout: a value below 251 in
//! one byte, else the marker 251, 252 or 253 and the value in 2, 4 or 8 little-endian bytes.
//! bincode writes them in every row it encodes; the text index's rows and the graph
//! snapshot write and read them by hand with these.

/// The first marker: every value below it is one byte.
pub(crate) const U16_MARKER: u8 = 251;
const U32_MARKER: u8 = 252;
const U64_MARKER: u8 = 253;

/// Why a varint did not read.
#[derive(Debug, PartialEq)]
pub(crate) enum VarintError {
    /// The bytes end before it does.
    Short,
    /// Its first byte is no marker (254 or 255).
    Marker(u8),
}

/// Appends `value`.
#[inline(always)]
pub(crate) fn put(out: &mut Vec<u8>, value: u64) {
    if value < u64::from(U16_MARKER) {
        out.push(value as u8);
    } else {
        put_wide(out, value);
    }
}

/// [`put`] of a value of 251 or more (rare in the rows: kept out of line).
#[inline(never)]
fn put_wide(out: &mut Vec<u8>, value: u64) {
    if let Ok(v) = u16::try_from(value) {
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

/// The bytes [`put`] writes for `value`.
#[inline(always)]
pub(crate) fn len(value: u64) -> usize {
    if value < u64::from(U16_MARKER) {
        1
    } else if value <= u64::from(u16::MAX) {
        3
    } else if value <= u64::from(u32::MAX) {
        5
    } else {
        9
    }
}

/// The varint at the start of `bytes`, and what follows it.
#[inline]
pub(crate) fn take(bytes: &[u8]) -> Result<(u64, &[u8]), VarintError> {
    let (&first, rest) = bytes.split_first().ok_or(VarintError::Short)?;
    let width = match first {
        b if b < U16_MARKER => return Ok((u64::from(b), rest)),
        U16_MARKER => 2,
        U32_MARKER => 4,
        U64_MARKER => 8,
        b => return Err(VarintError::Marker(b)),
    };
    let raw = rest.get(..width).ok_or(VarintError::Short)?;
    let mut le = [0u8; 8];
    le[..width].copy_from_slice(raw);
    Ok((u64::from_le_bytes(le), &rest[width..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every width reads back, in bincode's own layout, with the length `len` gives; cut
    /// short or with an unknown marker it does not read.
    #[test]
    fn varints_round_trip_in_bincode_s_layout() {
        let config = bincode::config::standard();
        for value in [
            0,
            1,
            250,
            251,
            65_535,
            65_536,
            u64::from(u32::MAX),
            1 << 32,
            u64::MAX,
        ] {
            let mut out = Vec::new();
            put(&mut out, value);
            assert_eq!(out.len(), len(value), "{value}");
            assert_eq!(
                out,
                bincode::encode_to_vec(value, config).unwrap(),
                "{value}"
            );
            assert_eq!(take(&out), Ok((value, &[][..])));
            assert_eq!(take(&out[..out.len() - 1]), Err(VarintError::Short));
        }
        assert_eq!(take(&[]), Err(VarintError::Short));
        assert_eq!(take(&[254, 0, 0]), Err(VarintError::Marker(254)));
    }
}
