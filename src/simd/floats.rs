//! The `f32` distance kernels: a dot product and a squared Euclidean distance, one row at a
//! time or (the exact scan) over a block of contiguous rows.
//!
//! The loops keep `LANES` independent accumulators over `chunks_exact(LANES)`: the
//! compiler vectorises them without having to reassociate floating-point additions, so
//! the result does not depend on the instruction set. On x86_64 the same body is compiled
//! a second time with AVX2 enabled and picked at run time; it returns the same bits as
//! the baseline (SSE2) build, only faster. The block kernel ([`scan`]) with AVX2 scores
//! four rows per pass with the same per-lane operations in the same order and the same
//! final reduction, so each row keeps those bits too.

/// Accumulator width. 16 lanes = two AVX2 or four SSE registers of independent sums.
const LANES: usize = 16;

#[inline(always)]
fn dot_body(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0f32; LANES];
    let chunks_a = a.chunks_exact(LANES);
    let chunks_b = b.chunks_exact(LANES);
    let tail = dot_tail(chunks_a.remainder(), chunks_b.remainder());
    for (x, y) in chunks_a.zip(chunks_b) {
        for i in 0..LANES {
            acc[i] += x[i] * y[i];
        }
    }
    reduce(&acc, tail)
}

/// The elements after the last whole `LANES` chunk, summed in order.
#[inline(always)]
fn dot_tail(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// [`l2_squared_body`]'s elements after the last whole `LANES` chunk, summed in order.
#[inline(always)]
fn l2_tail(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
}

/// The one-row bodies' last step: the lanes summed in lane order, then the tail. The
/// block kernels end each row with this same function, so their rows keep these bits.
#[inline(always)]
fn reduce(acc: &[f32; LANES], tail: f32) -> f32 {
    acc.iter().sum::<f32>() + tail
}

#[inline(always)]
fn l2_squared_body(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0f32; LANES];
    let chunks_a = a.chunks_exact(LANES);
    let chunks_b = b.chunks_exact(LANES);
    let tail = l2_tail(chunks_a.remainder(), chunks_b.remainder());
    for (x, y) in chunks_a.zip(chunks_b) {
        for i in 0..LANES {
            let d = x[i] - y[i];
            acc[i] += d * d;
        }
    }
    reduce(&acc, tail)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn dot_avx2(a: &[f32], b: &[f32]) -> f32 {
    dot_body(a, b)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn l2_squared_avx2(a: &[f32], b: &[f32]) -> f32 {
    l2_squared_body(a, b)
}

/// Dot product of the common prefix of `a` and `b` (callers pass equal lengths), with AVX2
/// when the CPU has it.
#[inline]
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: `dot_avx2` is safe code whose only precondition is that the CPU
        // supports AVX2, which was detected just above.
        return unsafe { dot_avx2(a, b) };
    }
    dot_body(a, b)
}

/// Squared Euclidean distance of the common prefix of `a` and `b`.
#[inline]
pub(crate) fn l2_squared(a: &[f32], b: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: as in `dot`: AVX2 support was detected just above.
        return unsafe { l2_squared_avx2(a, b) };
    }
    l2_squared_body(a, b)
}

/// Rows scored per pass by the block kernel with AVX2 ([`scan_avx2`]).
const ROWS: usize = 4;

/// [`scan`]'s loop over `rows` (each `query.len()` floats, contiguous) without
/// AVX2: the raw dot product or squared distance of each row through the one-row bodies.
#[inline(always)]
fn scan_body<const L2: bool>(query: &[f32], rows: &[f32], on_raw: &mut impl FnMut(usize, f32)) {
    let dim = query.len();
    if dim == 0 {
        return;
    }
    for (row, one) in rows.chunks_exact(dim).enumerate() {
        let raw = if L2 {
            l2_squared_body(query, one)
        } else {
            dot_body(query, one)
        };
        on_raw(row, raw);
    }
}

/// [`scan_body`] with AVX2, [`ROWS`] rows per pass: each chunk of `LANES` query floats is
/// loaded once and used for every row of the pass (the one-row body loads it again for
/// each row). The rows are split into [`ROWS`] equal segments and a pass takes the next
/// row of each, so memory is read as [`ROWS`] long sequential streams, which the hardware
/// prefetchers follow, rather than [`ROWS`] adjacent rows per pass (four short streams
/// restarted every pass; the comparison is recorded in docs/history/benchmarks-vector-index.md).
/// Each row keeps its own `LANES` accumulators, updated with the
/// one-row bodies' operations in the same order (`acc + q * x`, or
/// `acc + (q - x) * (q - x)`, one rounding each, lane by lane, chunk by chunk), and ends
/// with the same [`reduce`] and tail; IEEE arithmetic is the same in any register width,
/// so each row's result has the bits of [`dot_body`] / [`l2_squared_body`]. The rows after
/// the last whole segment go through the one-row bodies.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn scan_avx2<const L2: bool>(query: &[f32], rows: &[f32], on_raw: &mut impl FnMut(usize, f32)) {
    use std::arch::x86_64::{
        __m256, _mm256_add_ps, _mm256_loadu_ps, _mm256_mul_ps, _mm256_setzero_ps, _mm256_storeu_ps,
        _mm256_sub_ps,
    };
    const HALF: usize = LANES / 2; // floats per 256-bit register
    let dim = query.len();
    if dim == 0 {
        return;
    }
    let whole = dim - dim % LANES;
    let (query_whole, query_tail) = query.split_at(whole);
    // ROWS segments of `segment` rows each; pass `i` scores row `i` of every segment.
    let segment = rows.len() / dim / ROWS;
    for i in 0..segment {
        let starts: [usize; ROWS] = std::array::from_fn(|r| (r * segment + i) * dim);
        // acc[r][h]: lanes h * HALF .. (h + 1) * HALF of the pass's row r.
        let mut acc: [[__m256; 2]; ROWS] = [[_mm256_setzero_ps(); 2]; ROWS];
        for (c, q) in query_whole.chunks_exact(LANES).enumerate() {
            let off = c * LANES;
            // SAFETY: `q` is LANES floats, so `q[0..HALF]` and `q[HALF..LANES]` are in
            // bounds. Unaligned loads (`loadu`) need no alignment.
            let (q0, q1) = unsafe {
                (
                    _mm256_loadu_ps(q.as_ptr()),
                    _mm256_loadu_ps(q.as_ptr().add(HALF)),
                )
            };
            for (acc, &start) in acc.iter_mut().zip(&starts) {
                // SAFETY: `start = (r * segment + i) * dim` with `r < ROWS`, `i < segment`,
                // so `start + dim <= ROWS * segment * dim <= rows.len()`; and
                // `off + LANES <= whole <= dim`: the LANES floats at `start + off` are
                // inside `rows`.
                let (x0, x1) = unsafe {
                    let p = rows.as_ptr().add(start + off);
                    (_mm256_loadu_ps(p), _mm256_loadu_ps(p.add(HALF)))
                };
                if L2 {
                    let (d0, d1) = (_mm256_sub_ps(q0, x0), _mm256_sub_ps(q1, x1));
                    acc[0] = _mm256_add_ps(acc[0], _mm256_mul_ps(d0, d0));
                    acc[1] = _mm256_add_ps(acc[1], _mm256_mul_ps(d1, d1));
                } else {
                    acc[0] = _mm256_add_ps(acc[0], _mm256_mul_ps(q0, x0));
                    acc[1] = _mm256_add_ps(acc[1], _mm256_mul_ps(q1, x1));
                }
            }
        }
        for (r, (acc, &start)) in acc.iter().zip(&starts).enumerate() {
            let mut lanes = [0f32; LANES];
            // SAFETY: `lanes` holds LANES = 2 * HALF floats: both stores are in bounds.
            unsafe {
                _mm256_storeu_ps(lanes.as_mut_ptr(), acc[0]);
                _mm256_storeu_ps(lanes.as_mut_ptr().add(HALF), acc[1]);
            }
            let row_tail = rows.get(start + whole..start + dim).unwrap_or_default();
            let tail = if L2 {
                l2_tail(query_tail, row_tail)
            } else {
                dot_tail(query_tail, row_tail)
            };
            on_raw(r * segment + i, reduce(&lanes, tail));
        }
    }
    let done = ROWS * segment;
    let rest = rows.get(done * dim..).unwrap_or_default();
    for (r, one) in rest.chunks_exact(dim).enumerate() {
        let raw = if L2 {
            l2_squared_body(query, one)
        } else {
            dot_body(query, one)
        };
        on_raw(done + r, raw);
    }
}

/// The raw dot product (`l2 == false`) or squared Euclidean distance (`l2 == true`) of
/// `query` and each row of `rows` (row-major, `query.len()` floats per row; a trailing
/// partial row is ignored), handed to `on_raw(row index, raw)` once per row, in no
/// particular order. The instruction set is picked once per call; each row's result has
/// the bits of [`dot`] / [`l2_squared`].
#[inline]
pub(crate) fn scan(l2: bool, query: &[f32], rows: &[f32], on_raw: &mut impl FnMut(usize, f32)) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: both are safe code whose only precondition is AVX2 support, detected
        // just above.
        unsafe {
            if l2 {
                scan_avx2::<true>(query, rows, on_raw);
            } else {
                scan_avx2::<false>(query, rows, on_raw);
            }
        }
        return;
    }
    if l2 {
        scan_body::<true>(query, rows, on_raw);
    } else {
        scan_body::<false>(query, rows, on_raw);
    }
}

/// A metric's last step from the raw sum to its distance, for [`kernel`].
pub(crate) trait Finish {
    /// Whether the raw sum is the squared Euclidean distance (else the dot product).
    const L2: bool;
    /// The distance of the raw sum `raw`.
    fn finish(raw: f32) -> f32;
}

/// A distance function: `F`'s distance of two vectors, with the instruction set already
/// chosen.
pub(crate) type Kernel = fn(&[f32], &[f32]) -> f32;

/// `F::finish` of the raw sum of `a` and `b` ([`dot`] or [`l2_squared`]), as a function picked
/// once (the CPU feature test out of a traversal's inner loop); it returns the bits of
/// `F::finish(dot(a, b))` or `F::finish(l2_squared(a, b))`.
pub(crate) fn kernel<F: Finish>() -> Kernel {
    #[inline(always)]
    fn body<F: Finish>(a: &[f32], b: &[f32]) -> f32 {
        F::finish(if F::L2 {
            l2_squared_body(a, b)
        } else {
            dot_body(a, b)
        })
    }
    fn portable<F: Finish>(a: &[f32], b: &[f32]) -> f32 {
        body::<F>(a, b)
    }
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn avx2<F: Finish>(a: &[f32], b: &[f32]) -> f32 {
        body::<F>(a, b)
    }
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: the AVX2 body's only precondition is AVX2 support, detected just above;
        // this pointer is only handed out after that test.
        return |a, b| unsafe { avx2::<F>(a, b) };
    }
    portable::<F>
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive_dot(a: &[f32], b: &[f32]) -> f64 {
        a.iter().zip(b).map(|(x, y)| *x as f64 * *y as f64).sum()
    }

    fn naive_l2(a: &[f32], b: &[f32]) -> f64 {
        a.iter()
            .zip(b)
            .map(|(x, y)| (*x as f64 - *y as f64).powi(2))
            .sum()
    }

    #[test]
    fn kernels_match_naive_for_every_tail_length() {
        for n in 0..70 {
            let a: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin()).collect();
            let b: Vec<f32> = (0..n).map(|i| (i as f32 * 0.11).cos()).collect();
            assert!(
                (dot(&a, &b) as f64 - naive_dot(&a, &b)).abs() < 1e-4,
                "n={n}"
            );
            assert!((l2_squared(&a, &b) as f64 - naive_l2(&a, &b)).abs() < 1e-4);
            // The dispatched and the baseline bodies agree to the bit.
            assert_eq!(dot(&a, &b).to_bits(), dot_body(&a, &b).to_bits());
            assert_eq!(
                l2_squared(&a, &b).to_bits(),
                l2_squared_body(&a, &b).to_bits()
            );
        }
    }
}
