//! The whitespace, alphanumeric and upper-case classes of 64 ASCII bytes, with SSE2 (part of
//! every x86_64 target). The text analysis's portable SWAR classification gives the same
//! masks (its tests hold the two equal).

/// The whitespace, not-alphanumeric and upper-case bytes of 64 ASCII bytes, as bit masks
/// (byte `k` to bit `k`).
#[cfg(target_arch = "x86_64")]
#[inline]
pub(crate) fn classify64(block: &[u8]) -> (u64, u64, u64) {
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
