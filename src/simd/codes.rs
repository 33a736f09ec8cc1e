//! The kernels over the 4-bit codes the graph's traversal reads (`index::quantize`),
//! compiled for the baseline and again with AVX2 (picked at run time, the same bits either
//! way).
//!
//! A code packs two dimensions a byte, in blocks of 32 dimensions (16 bytes): byte `i` of a
//! block holds dimension `i` in its low nibble and dimension `16 + i` in its high one, so
//! that both halves of a block are read as 16 contiguous lanes. The last block, of `r < 32`
//! dimensions, splits at `h = ceil(r / 2)` the same way (byte `i`: dimensions `i` and
//! `h + i`). [`code_len`] bytes in all.

/// Accumulator width, as the `f32` kernels' ([`super::floats`]).
const LANES: usize = 16;

/// Dimensions of a full block (two lanes' worth a byte).
pub(crate) const BLOCK: usize = 2 * LANES;

/// Bytes of a `dim`-dimensional code.
pub(crate) const fn code_len(dim: usize) -> usize {
    dim.div_ceil(2)
}

/// `(weights, step, codes) -> sum` (the `f32` kernels', kept for the tests and benches).
#[cfg(any(test, feature = "testkit"))]
pub(crate) type Kernel = fn(&[f32], &[f32], &[u8]) -> f32;

/// `(weights, codes) -> Σ weight·code` over integer weights: an exact integer sum, so every
/// instruction set gives the same one.
pub(crate) type IntKernel = fn(&[i16], &[u8]) -> i32;

/// The largest weight magnitude [`IntKernel`]'s sum over `dim` dimensions may be given
/// without overflowing: `15 · dim · limit` must fit an `i32` (every code at most 15), and a
/// weight must fit an `i16` (32,767 up to 4,369 dimensions; 1 at the least: beyond
/// 143 million dimensions the sum may wrap, which only misorders a beam whose points are
/// rescored exactly).
pub(crate) fn int_weight_limit(dim: usize) -> i16 {
    let fits = i32::MAX as usize / dim.max(1).saturating_mul(15);
    fits.clamp(1, i16::MAX as usize) as i16
}

/// The two values a code byte holds.
#[cfg(any(test, feature = "testkit"))]
#[inline(always)]
fn nibbles(byte: u8) -> (f32, f32) {
    (f32::from(byte & 15), f32::from(byte >> 4))
}

/// The last block's sum: its `r` dimensions `tail` (weights, with `step` for the L2 form)
/// and its `ceil(r / 2)` code bytes `bytes`; `term(weight, step, value)` one dimension's.
#[cfg(any(test, feature = "testkit"))]
#[inline(always)]
fn tail_sum(tail: &[f32], step: &[f32], bytes: &[u8], term: impl Fn(f32, f32, f32) -> f32) -> f32 {
    let half = tail.len().div_ceil(2);
    let mut sum = 0.0;
    for (i, &byte) in bytes.iter().enumerate().take(half) {
        let (lo, hi) = nibbles(byte);
        if let (Some(&w), Some(&s)) = (tail.get(i), step.get(i)) {
            sum += term(w, s, lo);
        }
        if let (Some(&w), Some(&s)) = (tail.get(half + i), step.get(half + i)) {
            sum += term(w, s, hi);
        }
    }
    sum
}

/// Σ w·code over `f32` weights (the traversal's kernel before [`weighted_int_body`]; kept
/// for the tests and the side-by-side bench).
#[cfg(any(test, feature = "testkit"))]
#[inline(always)]
fn weighted_body(w: &[f32], _step: &[f32], c: &[u8]) -> f32 {
    let mut acc = [0f32; LANES];
    let blocks = w.chunks_exact(BLOCK);
    let tail = blocks.remainder();
    let full = w.len() / BLOCK;
    for (w, c) in blocks.zip(c.chunks_exact(LANES)) {
        let (w_lo, w_hi) = w.split_at(LANES);
        for i in 0..LANES {
            let (lo, hi) = nibbles(c[i]);
            acc[i] += w_lo[i] * lo + w_hi[i] * hi;
        }
    }
    let bytes = c.get(full * LANES..).unwrap_or(&[]);
    acc.iter().sum::<f32>() + tail_sum(tail, tail, bytes, |w, _, x| w * x)
}

/// Σ (r - step·code)², with `r = q - low` (the L2 traversal's kernel before the integer
/// one; kept for the tests and the side-by-side bench).
#[cfg(any(test, feature = "testkit"))]
#[inline(always)]
fn l2_body(r: &[f32], step: &[f32], c: &[u8]) -> f32 {
    let n = r.len().min(step.len());
    let (r, step) = (&r[..n], &step[..n]);
    let mut acc = [0f32; LANES];
    let (blocks, steps) = (r.chunks_exact(BLOCK), step.chunks_exact(BLOCK));
    let (tail, tail_step) = (blocks.remainder(), steps.remainder());
    let full = n / BLOCK;
    for ((r, s), c) in blocks.zip(steps).zip(c.chunks_exact(LANES)) {
        let (r_lo, r_hi) = r.split_at(LANES);
        let (s_lo, s_hi) = s.split_at(LANES);
        for i in 0..LANES {
            let (lo, hi) = nibbles(c[i]);
            let a = r_lo[i] - s_lo[i] * lo;
            let b = r_hi[i] - s_hi[i] * hi;
            acc[i] += a * a + b * b;
        }
    }
    let bytes = c.get(full * LANES..).unwrap_or(&[]);
    acc.iter().sum::<f32>()
        + tail_sum(tail, tail_step, bytes, |r, s, x| {
            let d = r - s * x;
            d * d
        })
}

/// Σ w·code over integer weights: the `f32` kernel's layout and its short-code rule (the
/// whole blocks both `w` and `c` hold, then the last block's dimensions `c` holds). Wrapping
/// arithmetic keeps an out-of-limit weight from panicking; within
/// [`int_weight_limit`] nothing wraps.
#[inline(always)]
fn weighted_int_body(w: &[i16], c: &[u8]) -> i32 {
    let mut acc = [0i32; LANES];
    for (w, c) in w.chunks_exact(BLOCK).zip(c.chunks_exact(LANES)) {
        for i in 0..LANES {
            let (lo, hi) = (i32::from(c[i] & 15), i32::from(c[i] >> 4));
            acc[i] = acc[i]
                .wrapping_add(i32::from(w[i]).wrapping_mul(lo))
                .wrapping_add(i32::from(w[LANES + i]).wrapping_mul(hi));
        }
    }
    acc.iter()
        .fold(weighted_int_tail(w, c), |sum, &x| sum.wrapping_add(x))
}

/// [`weighted_int_body`]'s last block (`r < 32` dimensions split at `ceil(r / 2)`).
#[inline(always)]
fn weighted_int_tail(w: &[i16], c: &[u8]) -> i32 {
    let full = w.len() / BLOCK;
    let tail = w.get(full * BLOCK..).unwrap_or(&[]);
    let bytes = c.get(full * LANES..).unwrap_or(&[]);
    let half = tail.len().div_ceil(2);
    let mut sum = 0i32;
    for (i, &byte) in bytes.iter().enumerate().take(half) {
        if let Some(&w) = tail.get(i) {
            sum = sum.wrapping_add(i32::from(w).wrapping_mul(i32::from(byte & 15)));
        }
        if let Some(&w) = tail.get(half + i) {
            sum = sum.wrapping_add(i32::from(w).wrapping_mul(i32::from(byte >> 4)));
        }
    }
    sum
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    /// [`super::weighted_int_body`] with AVX2 intrinsics: per block, the 16 code bytes
    /// split into their low and high nibbles, each widened to 16 `u16` lanes and multiplied
    /// with its 16 weights by `vpmaddwd` (adjacent products summed into 8 `i32` lanes; a
    /// product is at most 15 · 32,768 in magnitude, so no pair overflows). An integer sum,
    /// so it equals the baseline body's exactly.
    #[target_feature(enable = "avx2")]
    pub(super) fn weighted_int(w: &[i16], c: &[u8]) -> i32 {
        use super::{BLOCK, LANES};
        use std::arch::x86_64::{
            _mm256_add_epi32, _mm256_cvtepu8_epi16, _mm256_loadu_si256, _mm256_madd_epi16,
            _mm256_setzero_si256, _mm256_storeu_si256, _mm_and_si128, _mm_loadu_si128,
            _mm_set1_epi8, _mm_srli_epi16,
        };
        let blocks = (w.len() / BLOCK).min(c.len() / LANES);
        let nibble = _mm_set1_epi8(15);
        let mut acc = _mm256_setzero_si256();
        for b in 0..blocks {
            // SAFETY: `b < blocks <= c.len() / LANES`, so the 16 bytes at `b * LANES` are
            // inside `c`; `b < w.len() / BLOCK`, so the 32 weights at `b * BLOCK` are
            // inside `w`. Unaligned loads need no alignment.
            let (bytes, w_lo, w_hi) = unsafe {
                (
                    _mm_loadu_si128(c.as_ptr().add(b * LANES).cast()),
                    _mm256_loadu_si256(w.as_ptr().add(b * BLOCK).cast()),
                    _mm256_loadu_si256(w.as_ptr().add(b * BLOCK + LANES).cast()),
                )
            };
            let lo = _mm256_cvtepu8_epi16(_mm_and_si128(bytes, nibble));
            let hi = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16::<4>(bytes), nibble));
            acc = _mm256_add_epi32(acc, _mm256_madd_epi16(lo, w_lo));
            acc = _mm256_add_epi32(acc, _mm256_madd_epi16(hi, w_hi));
        }
        let mut lanes = [0i32; 8];
        // SAFETY: `lanes` holds 8 `i32`s, the 32 bytes stored.
        unsafe { _mm256_storeu_si256(lanes.as_mut_ptr().cast(), acc) };
        lanes
            .iter()
            .fold(super::weighted_int_tail(w, c), |sum, &x| {
                sum.wrapping_add(x)
            })
    }

    #[cfg(any(test, feature = "testkit"))]
    #[target_feature(enable = "avx2")]
    pub(super) fn weighted(w: &[f32], step: &[f32], c: &[u8]) -> f32 {
        super::weighted_body(w, step, c)
    }
    #[cfg(any(test, feature = "testkit"))]
    #[target_feature(enable = "avx2")]
    pub(super) fn l2(r: &[f32], step: &[f32], c: &[u8]) -> f32 {
        super::l2_body(r, step, c)
    }
}

/// The `f32` Σ w·code kernel for this CPU.
#[cfg(any(test, feature = "testkit"))]
pub(crate) fn weighted() -> Kernel {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: the AVX2 body's only precondition is AVX2 support, detected above.
        return |w, s, c| unsafe { avx2::weighted(w, s, c) };
    }
    weighted_body
}

/// The integer Σ w·code kernel for this CPU.
pub(crate) fn weighted_int() -> IntKernel {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: the AVX2 body's only precondition is AVX2 support, detected above.
        return |w, c| unsafe { avx2::weighted_int(w, c) };
    }
    weighted_int_body
}

/// The `f32` Σ (r - step·code)² kernel for this CPU.
#[cfg(any(test, feature = "testkit"))]
pub(crate) fn l2() -> Kernel {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: as for `weighted_int`.
        return |r, s, c| unsafe { avx2::l2(r, s, c) };
    }
    l2_body
}

/// Writes the code of `dim` values into `code` ([`code_len`]`(dim)` bytes, or as many as it
/// holds), in the layout the kernels read (see the module docs); `value(d)` is dimension
/// `d`'s 4-bit value (only its low nibble is kept).
#[inline]
pub(crate) fn pack(dim: usize, code: &mut [u8], mut value: impl FnMut(usize) -> u8) {
    let mut start = 0;
    while start < dim {
        let r = (dim - start).min(BLOCK);
        let half = r.div_ceil(2);
        let end = (start / 2 + half).min(code.len());
        let Some(bytes) = code.get_mut(start / 2..end) else {
            return;
        };
        for (i, byte) in bytes.iter_mut().enumerate() {
            let lo = value(start + i) & 15;
            let hi = if half + i < r {
                value(start + half + i) & 15
            } else {
                0
            };
            *byte = lo | (hi << 4);
        }
        start += r;
    }
}

#[cfg(test)]
mod tests {
    use super::{
        code_len, int_weight_limit, l2, l2_body, pack, weighted, weighted_body, weighted_int,
        weighted_int_body,
    };

    /// Seeded 4-bit values for a `dim`-dimensional code.
    fn values(dim: usize, seed: u32) -> Vec<u8> {
        (0..dim as u32)
            .map(|d| ((d.wrapping_mul(2654435761).wrapping_add(seed) >> 7) % 16) as u8)
            .collect()
    }

    #[test]
    fn kernels_match_the_unpacked_sums_for_every_length() {
        for dim in 0..100 {
            let v = values(dim, 17);
            let mut code = vec![0u8; code_len(dim)];
            pack(dim, &mut code, |d| v[d]);
            let w: Vec<f32> = (0..dim).map(|i| (i as f32 * 0.37).sin()).collect();
            let s: Vec<f32> = (0..dim)
                .map(|i| 0.01 + (i as f32 * 0.11).cos().abs())
                .collect();
            let want_weighted: f64 = w.iter().zip(&v).map(|(w, &x)| *w as f64 * x as f64).sum();
            let want_l2: f64 = w
                .iter()
                .zip(&s)
                .zip(&v)
                .map(|((r, s), &x)| (*r as f64 - *s as f64 * x as f64).powi(2))
                .sum();
            let got = weighted()(&w, &s, &code);
            assert!(
                (got as f64 - want_weighted).abs() < 1e-3,
                "dim {dim}: {got} {want_weighted}"
            );
            let got = l2()(&w, &s, &code);
            assert!(
                (got as f64 - want_l2).abs() < 1e-2 * want_l2.max(1.0),
                "dim {dim}"
            );
            // The dispatched and the baseline bodies agree to the bit.
            assert_eq!(
                weighted()(&w, &s, &code).to_bits(),
                weighted_body(&w, &s, &code).to_bits()
            );
            assert_eq!(
                l2()(&w, &s, &code).to_bits(),
                l2_body(&w, &s, &code).to_bits()
            );
        }
    }

    #[test]
    fn the_integer_kernel_is_the_exact_unpacked_sum_for_every_length() {
        for dim in 0..100 {
            let v = values(dim, 29);
            let mut code = vec![0u8; code_len(dim)];
            pack(dim, &mut code, |d| v[d]);
            let limit = i32::from(int_weight_limit(dim));
            let w: Vec<i16> = (0..dim as i32)
                .map(|i| ((i * 7919 % (2 * limit + 1)) - limit) as i16)
                .collect();
            let want: i64 = w
                .iter()
                .zip(&v)
                .map(|(&w, &x)| i64::from(w) * i64::from(x))
                .sum();
            assert_eq!(i64::from(weighted_int()(&w, &code)), want, "dim {dim}");
            assert_eq!(
                weighted_int_body(&w, &code),
                weighted_int()(&w, &code),
                "dim {dim}"
            );
        }
    }

    /// The weight limit keeps the largest possible sum (every code 15, every weight at the
    /// limit, of either sign) inside an `i32`, at the store's largest dimensions too.
    #[test]
    fn weights_within_the_limit_never_overflow_the_sum() {
        for dim in [1, 384, 4369, 4370, 8192, 65_536] {
            let limit = int_weight_limit(dim);
            assert!(limit > 0, "dim {dim}");
            let code = vec![0xFFu8; code_len(dim)];
            for sign in [1i16, -1] {
                let w = vec![sign * limit; dim];
                let want = i64::from(sign) * i64::from(limit) * 15 * dim as i64;
                assert!(want.abs() <= i64::from(i32::MAX), "dim {dim}");
                assert_eq!(i64::from(weighted_int()(&w, &code)), want, "dim {dim}");
                assert_eq!(i64::from(weighted_int_body(&w, &code)), want, "dim {dim}");
            }
        }
        assert_eq!(int_weight_limit(384), i16::MAX);
    }

    #[test]
    fn a_code_holds_dimensions_i_and_16_plus_i_in_byte_i_of_a_block() {
        // 40 dimensions: a full block of 32, then a block of 8 split at 4.
        let v: Vec<u8> = (0..40).map(|d| (d % 16) as u8).collect();
        let mut code = vec![0u8; code_len(40)];
        pack(40, &mut code, |d| v[d]);
        assert_eq!(code.len(), 20);
        for i in 0..16 {
            assert_eq!(code[i], v[i] | (v[16 + i] << 4), "byte {i}");
        }
        for i in 0..4 {
            assert_eq!(code[16 + i], v[32 + i] | (v[36 + i] << 4), "tail byte {i}");
        }
        // An odd tail: 35 dimensions end with a block of 3, split at 2.
        let mut odd = vec![0u8; code_len(35)];
        pack(35, &mut odd, |d| v[d]);
        assert_eq!(&odd[16..], &[v[32] | (v[34] << 4), v[33]]);
    }

    #[test]
    fn a_short_code_gives_a_short_sum_not_a_panic() {
        let w = vec![1.0f32; 70];
        assert_eq!(weighted()(&w, &w, &[]), 0.0);
        let wi = vec![1i16; 70];
        assert_eq!(weighted_int()(&wi, &[]), 0);
        assert_eq!(
            weighted_int()(&wi, &[0x21; 3]),
            weighted_int_body(&wi, &[0x21; 3])
        );
        // Three bytes hold no whole block of the 70 weights: nothing is summed, as in `weighted`.
        assert_eq!(weighted_int()(&wi, &[0x21; 3]), 0);
        assert_eq!(l2()(&w, &w, &[]), 0.0);
        assert!(weighted()(&w, &w, &[0x21; 3]).is_finite());
        assert!(l2()(&w, &w[..5], &[0x21; 40]).is_finite());
        let mut short = [0u8; 2];
        pack(70, &mut short, |_| 3);
        assert_eq!(short, [0x33, 0x33]);
    }
}
