//! The ASCII fast path's byte classes: a text's pieces between whitespace, found 64 bytes at a
//! time from three bit masks (whitespace, not a letter or digit, upper case), classified with
//! SSE2 on x86_64 ([`crate::simd::ascii`]) and with SWAR (eight bytes in a `u64`) elsewhere.

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

#[cfg(target_arch = "x86_64")]
use crate::simd::ascii::classify64;
#[cfg(not(target_arch = "x86_64"))]
use swar::classify64;

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

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
}
