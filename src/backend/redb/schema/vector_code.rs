//! The coded layout of a vectors row's floats (schema 8), lossless: every stored f32 decodes
//! bit for bit (negative zero, subnormals, infinities and NaN payloads included).
//!
//! An embedding's floats spend their low three bytes on mantissa, which is close to random,
//! but their top byte (sign and the exponent's seven high bits) takes few values: a
//! normalised 384-d vector's floats mostly lie within a few binades of each other. A coded
//! vector keeps the low three bytes and the sign as they are and replaces the seven
//! exponent bits by a 2-bit code: one of the row's three commonest values ([`Table`]), or
//! an escape whose value follows the row's vectors, one byte each.
//!
//! One vector's block, `block_len(dimension)` bytes: the low three bytes of each float
//! (little-endian, float after float), then the sign bits (float `i` is bit `i % 8` of byte
//! `i / 8`), then the codes (float `i` is bits `2 * (i % 4)` and up of byte `i / 4`, code 3
//! the escape). The bits after the last float of the sign and code bytes are zero.
//!
//! The coding is canonical: the table's values are distinct and below 128, an escaped value
//! is none of them, and padding bits are zero; [`check_block`] refuses anything else, so a
//! coded row that parses encodes back to its own bytes.

/// The bytes of a coded row's table (the three commonest exponent values).
pub(super) const TABLE_LEN: usize = 3;

/// The escape code.
const ESCAPE: u8 = 3;

/// A coded row's three commonest exponent values (the seven bits under a float's sign), in
/// code order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Table(pub(super) [u8; TABLE_LEN]);

/// The seven exponent bits under a float's sign.
fn high(bits: u32) -> u8 {
    ((bits >> 24) & 0x7f) as u8
}

/// The bytes one vector of `dimension` floats takes in a coded row, escapes aside (`None`
/// when that overflows).
pub(super) fn block_len(dimension: usize) -> Option<usize> {
    dimension
        .checked_mul(3)?
        .checked_add(dimension.div_ceil(8))?
        .checked_add(dimension.div_ceil(4))
}

impl Table {
    /// The table for floats whose bit patterns `bits` yields (every float of a row), and how
    /// many of them it escapes: the three commonest values, ties to the lower value.
    pub(super) fn for_floats(bits: impl Iterator<Item = u32>) -> (Table, usize) {
        let mut counts = [0usize; 128];
        let mut total = 0usize;
        for b in bits {
            counts[usize::from(high(b))] += 1;
            total += 1;
        }
        // Three passes over the 128 values, each taking the commonest one left (the first,
        // so the lowest, of equals).
        let mut table = [0u8; TABLE_LEN];
        let mut kept = 0usize;
        for at in 0..TABLE_LEN {
            let mut best: Option<usize> = None;
            for v in 0..128usize {
                let taken = table[..at].contains(&(v as u8));
                if !taken && best.is_none_or(|b| counts[v] > counts[b]) {
                    best = Some(v);
                }
            }
            let best = best.unwrap_or(0);
            table[at] = best as u8;
            kept += counts[best];
        }
        (Table(table), total - kept)
    }

    /// The table stored in `bytes` (exactly [`TABLE_LEN`] long), if it is one: distinct
    /// values below 128.
    pub(super) fn parse(bytes: &[u8]) -> Option<Table> {
        let &[a, b, c] = bytes else { return None };
        (a < 128 && b < 128 && c < 128 && a != b && a != c && b != c).then_some(Table([a, b, c]))
    }

    /// The code of exponent value `value`.
    fn code(&self, value: u8) -> u8 {
        match self.0.iter().position(|v| *v == value) {
            Some(i) => i as u8,
            None => ESCAPE,
        }
    }

    fn has(&self, value: u8) -> bool {
        self.0.contains(&value)
    }
}

/// Encodes one vector's floats (`bits`, exactly `dimension` of them) into `block`
/// ([`block_len`] bytes, zeroed), appending its escaped values to `escapes`.
pub(super) fn encode_block(
    bits: impl Iterator<Item = u32>,
    dimension: usize,
    table: &Table,
    block: &mut [u8],
    escapes: &mut Vec<u8>,
) {
    let (low, rest) = block.split_at_mut(dimension * 3);
    let (signs, codes) = rest.split_at_mut(dimension.div_ceil(8));
    for (i, b) in bits.take(dimension).enumerate() {
        let le = b.to_le_bytes();
        low[i * 3..i * 3 + 3].copy_from_slice(&le[..3]);
        signs[i / 8] |= ((b >> 31) as u8) << (i % 8);
        let value = high(b);
        let code = table.code(value);
        codes[i / 4] |= code << (2 * (i % 4));
        if code == ESCAPE {
            escapes.push(value);
        }
    }
}

/// Whether `block` is a well-formed coded vector of `dimension` floats under `table`, its
/// escaped values taken from the start of `escapes`: zero padding bits, and enough escaped
/// values, each below 128 and none of the table's. Returns how many escaped values it
/// takes.
pub(super) fn check_block(
    block: &[u8],
    dimension: usize,
    table: &Table,
    escapes: &[u8],
) -> Option<usize> {
    let n = count_escapes(block, dimension)?;
    let signs = block.get(dimension * 3..dimension * 3 + dimension.div_ceil(8))?;
    if !dimension.is_multiple_of(8) && signs.last().is_some_and(|b| b >> (dimension % 8) != 0) {
        return None;
    }
    let codes = block.get(dimension * 3 + dimension.div_ceil(8)..)?;
    if !dimension.is_multiple_of(4)
        && codes
            .last()
            .is_some_and(|b| b >> (2 * (dimension % 4)) != 0)
    {
        return None;
    }
    let taken = escapes.get(..n)?;
    taken
        .iter()
        .all(|v| *v < 128 && !table.has(*v))
        .then_some(n)
}

/// How many of `block`'s codes are escapes (`None` if it is not [`block_len`] long).
pub(super) fn count_escapes(block: &[u8], dimension: usize) -> Option<usize> {
    if Some(block.len()) != block_len(dimension) {
        return None;
    }
    let codes = &block[dimension * 3 + dimension.div_ceil(8)..];
    let mut n = 0usize;
    let mut words = codes.chunks_exact(8);
    for w in &mut words {
        let x = u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
        n += (x & (x >> 1) & 0x5555_5555_5555_5555).count_ones() as usize;
    }
    for b in words.remainder() {
        n += (b & (b >> 1) & 0x55).count_ones() as usize;
    }
    Some(n)
}

/// Decodes a block checked by [`check_block`] into `out` (`dimension` floats long; the
/// caller checks). A block it would refuse decodes to some floats without panicking; one too
/// short to hold its parts, or an `out` of another length, leaves `out` as it was and returns
/// `false`.
///
/// Two passes: every float with its exponent from the table (an escape's left zero), eight
/// at a time, without a branch; then the escapes, found from the codes, patched in order.
#[inline]
pub(super) fn decode_block(
    block: &[u8],
    dimension: usize,
    table: &Table,
    escapes: &[u8],
    out: &mut [f32],
) -> bool {
    if block_len(dimension).is_none() || out.len() != dimension {
        return false;
    }
    let signs_at = dimension * 3;
    let codes_at = signs_at + dimension.div_ceil(8);
    let (Some(low), Some(signs), Some(codes)) = (
        block.get(..signs_at),
        block.get(signs_at..codes_at),
        block.get(codes_at..codes_at + dimension.div_ceil(4)),
    ) else {
        return false;
    };
    let lut: [u32; 4] = [
        u32::from(table.0[0] & 0x7f) << 24,
        u32::from(table.0[1] & 0x7f) << 24,
        u32::from(table.0[2] & 0x7f) << 24,
        0,
    ];
    let float = |l: &[u8], sign: u32, code: u32| {
        let low = u32::from(l[0]) | (u32::from(l[1]) << 8) | (u32::from(l[2]) << 16);
        f32::from_bits(low | (sign << 31) | lut[(code & 3) as usize])
    };
    // Eight floats at a time: a sign byte and two code bytes.
    let groups = dimension / 8;
    for (((o, l), s), c) in out
        .chunks_exact_mut(8)
        .zip(low.chunks_exact(24))
        .zip(signs)
        .zip(codes.chunks_exact(2))
    {
        let (s, c) = (u32::from(*s), u32::from(u16::from_le_bytes([c[0], c[1]])));
        for (k, (o, l)) in o.iter_mut().zip(l.chunks_exact(3)).enumerate() {
            *o = float(l, (s >> k) & 1, c >> (2 * k));
        }
    }
    for i in groups * 8..dimension {
        if let (Some(o), Some(l), Some(s), Some(c)) = (
            out.get_mut(i),
            low.get(i * 3..i * 3 + 3),
            signs.get(i / 8),
            codes.get(i / 4),
        ) {
            *o = float(
                l,
                u32::from(*s >> (i % 8)) & 1,
                u32::from(*c >> (2 * (i % 4))),
            );
        }
    }
    // The escapes, in float order.
    let mut escaped = escapes.iter();
    for (j, b) in codes.iter().enumerate() {
        let mut mask = b & (b >> 1) & 0x55;
        while mask != 0 {
            let i = j * 4 + mask.trailing_zeros() as usize / 2;
            mask &= mask - 1;
            let value = escaped.next().copied().unwrap_or(0);
            if let Some(o) = out.get_mut(i) {
                *o = f32::from_bits(o.to_bits() | (u32::from(value & 0x7f) << 24));
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn code(bits: &[u32]) -> (Table, Vec<u8>, Vec<u8>) {
        let (table, escaped) = Table::for_floats(bits.iter().copied());
        let mut block = vec![0u8; block_len(bits.len()).unwrap_or(0)];
        let mut escapes = Vec::new();
        encode_block(
            bits.iter().copied(),
            bits.len(),
            &table,
            &mut block,
            &mut escapes,
        );
        assert_eq!(escapes.len(), escaped);
        (table, block, escapes)
    }

    fn decode(block: &[u8], dimension: usize, table: &Table, escapes: &[u8]) -> Vec<u32> {
        let mut out = vec![0.0f32; dimension];
        // A malformed block decodes to some floats or none (`false`), never a panic.
        decode_block(block, dimension, table, escapes, &mut out);
        out.iter().map(|x| x.to_bits()).collect()
    }

    #[test]
    fn special_floats_decode_bit_for_bit() {
        let bits: Vec<u32> = [
            0.0f32,
            -0.0,
            f32::MIN_POSITIVE / 3.0,
            -f32::MIN_POSITIVE / 7.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::MAX,
            f32::MIN,
            1.0,
            -0.25,
        ]
        .iter()
        .map(|x| x.to_bits())
        .chain([0x7fc0_0001, 0xffa0_beef, 0x7f80_0001])
        .collect();
        let (table, block, escapes) = code(&bits);
        assert_eq!(
            check_block(&block, bits.len(), &table, &escapes),
            Some(escapes.len())
        );
        assert_eq!(decode(&block, bits.len(), &table, &escapes), bits);
    }

    #[test]
    fn the_commonest_values_take_the_codes() {
        let bits: Vec<u32> = (0..100u32)
            .map(|i| (0.04f32 + i as f32 * 1e-4).to_bits())
            .chain([1.0f32.to_bits(), 4.0f32.to_bits()])
            .collect();
        let (table, _, escapes) = code(&bits);
        assert_eq!(table.0[0], high(0.04f32.to_bits()));
        assert_eq!(escapes.len(), 0, "{table:?}");
        // A 384-d block: 3 bytes a float, a sign bit and a 2-bit code.
        assert_eq!(block_len(384), Some(1152 + 48 + 96));
        assert_eq!(block_len(usize::MAX), None);
    }

    #[test]
    fn malformed_blocks_are_refused_not_panics() {
        // Thirteen floats, each two binades from the last: ten escapes.
        let bits: Vec<u32> = (0..13i32)
            .map(|i| (1.3f32 * 2f32.powi(2 * i - 12)).to_bits() ^ ((i as u32 & 1) << 31))
            .collect();
        let (table, block, escapes) = code(&bits);
        assert!(!escapes.is_empty());
        let n = bits.len();
        assert!(check_block(&block, n, &table, &escapes).is_some());
        // Too few escapes; an escape that is a table value or above 127; a block of
        // another length; padding bits set.
        assert!(check_block(&block, n, &table, &escapes[1..]).is_none());
        let mut bad = escapes.clone();
        bad[0] = table.0[1];
        assert!(check_block(&block, n, &table, &bad).is_none());
        bad[0] = 200;
        assert!(check_block(&block, n, &table, &bad).is_none());
        assert!(check_block(&block[1..], n, &table, &escapes).is_none());
        let mut padded = block.clone();
        if let Some(last) = padded.last_mut() {
            *last |= 0x80;
        }
        assert!(check_block(&padded, n, &table, &escapes).is_none());
        let mut signs = block.clone();
        signs[n * 3 + 1] |= 0x80;
        assert!(check_block(&signs, n, &table, &escapes).is_none());
        // Tables with repeated or large values.
        assert!(Table::parse(&[1, 1, 2]).is_none());
        assert!(Table::parse(&[1, 2, 128]).is_none());
        assert!(Table::parse(&[1, 2]).is_none());
        assert_eq!(Table::parse(&[1, 2, 3]), Some(Table([1, 2, 3])));
        // Decoding anything never panics.
        for len in 0..40usize {
            let junk: Vec<u8> = (0..len).map(|i| (i * 91 + 7) as u8).collect();
            let _ = decode(&junk, 9, &table, &junk);
            let _ = count_escapes(&junk, 9);
        }
    }

    proptest! {
        #[test]
        fn any_bit_patterns_round_trip(bits in proptest::collection::vec(any::<u32>(), 1..70)) {
            let (table, block, escapes) = code(&bits);
            prop_assert_eq!(check_block(&block, bits.len(), &table, &escapes), Some(escapes.len()));
            prop_assert_eq!(decode(&block, bits.len(), &table, &escapes), bits);
        }

        #[test]
        fn arbitrary_blocks_check_or_refuse_without_panicking(
            block in proptest::collection::vec(any::<u8>(), 0..60),
            escapes in proptest::collection::vec(any::<u8>(), 0..20),
            dimension in 1usize..16,
        ) {
            let table = Table([60, 61, 59]);
            if let Some(n) = check_block(&block, dimension, &table, &escapes) {
                // A block that checks re-encodes to itself.
                let out = decode(&block, dimension, &table, &escapes[..n]);
                let mut again = vec![0u8; block.len()];
                let mut escaped = Vec::new();
                encode_block(out.into_iter(), dimension, &table, &mut again, &mut escaped);
                prop_assert_eq!(again, block);
                prop_assert_eq!(&escaped[..], &escapes[..n]);
            }
        }
    }
}
