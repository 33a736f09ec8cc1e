//! Distance kernels shared by the exact scan and the HNSW graph.
//!
//! Both search paths call the same two functions, so an exact hit and an ANN hit for the
//! same (query, vector) pair carry bit-identical distances.
//!
//! The loops keep `LANES` independent accumulators over `chunks_exact(LANES)`: the
//! compiler vectorises them without having to reassociate floating-point additions, so
//! the result does not depend on the instruction set. On x86_64 the same body is compiled
//! a second time with AVX2 enabled and picked at run time; it returns the same bits as
//! the baseline (SSE2) build, only faster. The exact scan's AVX2 kernel ([`scan_block`])
//! scores four rows per pass with the same per-lane operations in the same order and the
//! same final reduction, so each row keeps those bits too.
//!
//! (`anndists`' `DistDot`, the SIMD distance `hnsw_rs` shipped, was not used: it asserts
//! `dot <= 1.000002`, which f32-normalised vectors of 1536 dimensions break about once in
//! 3 000 self-comparisons, i.e. a panic on a query path.)

use super::Metric;

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

/// Dot product of the common prefix of `a` and `b` (callers pass equal lengths).
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

/// The internal distance of `metric`: lower is nearer, never negative, never NaN.
///
/// - Cosine (unit vectors): `1 - dot`, clamped at 0 (rounding can push a self-dot a
///   hair above 1). Score = `1 - distance`.
/// - L2: the *squared* Euclidean distance (same order, no square root per row).
///   Score = `sqrt(distance)`.
/// - Dot: a decreasing, non-negative map of the dot product `p` ([`dot_distance`]): `1 - p`
///   for `p <= 0`, `1 / (1 + p)` above. `hnsw_rs` needs distances `>= 0`, and the map keeps
///   the order of every pair of dot products. Score = `p` again ([`dot_from_distance`]).
///
/// NaN is mapped to +inf: `hnsw_rs` panics on a NaN distance (its heap ordering
/// unwraps `partial_cmp`) and asserts distances are `>= 0`. Inputs are validated finite,
/// so this is a second line of defence only.
#[inline]
pub(crate) fn distance(metric: Metric, a: &[f32], b: &[f32]) -> f32 {
    let d = match metric {
        Metric::Cosine => 1.0 - dot(a, b),
        Metric::L2 => l2_squared(a, b),
        Metric::Dot => dot_distance(dot(a, b)),
    };
    // Test NaN before clamping: `f32::max` would turn NaN into 0, "nearest of all".
    if d.is_nan() {
        f32::INFINITY
    } else {
        d.max(0.0)
    }
}

/// Rows scored per pass by the exact scan's kernel ([`scan_avx2`]).
const ROWS: usize = 4;

/// [`scan_block`]'s loop over `rows` (each `query.len()` floats, contiguous) without
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
/// prefetchers follow; [`ROWS`] adjacent rows per pass (four streams of one row each,
/// restarted every pass) ran at half the speed of one row at a time at 384-d
/// (docs/benchmarks.md). Each row keeps its own `LANES` accumulators, updated with the
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

/// The internal distance ([`distance`]) from `query` to each row of `rows` (row-major,
/// `query.len()` floats per row; a trailing partial row is ignored), handed to
/// `on_row(row index, distance)` once per row, in no particular order. The exact scan's
/// kernel over contiguous rows (the instruction set picked once per scan); each row's
/// distance has the same bits as [`distance`] gives it, so exact and graph searches agree
/// to the bit.
pub(crate) fn scan_block(
    metric: Metric,
    query: &[f32],
    rows: &[f32],
    mut on_row: impl FnMut(usize, f32),
) {
    let mut on_raw = |row: usize, raw: f32| {
        let d = match metric {
            Metric::Cosine => 1.0 - raw,
            Metric::L2 => raw,
            Metric::Dot => dot_distance(raw),
        };
        on_row(
            row,
            if d.is_nan() {
                f32::INFINITY
            } else {
                d.max(0.0)
            },
        );
    };
    let l2 = metric == Metric::L2;
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: both are safe code whose only precondition is AVX2 support, detected
        // just above.
        unsafe {
            if l2 {
                scan_avx2::<true>(query, rows, &mut on_raw);
            } else {
                scan_avx2::<false>(query, rows, &mut on_raw);
            }
        }
        return;
    }
    if l2 {
        scan_body::<true>(query, rows, &mut on_raw);
    } else {
        scan_body::<false>(query, rows, &mut on_raw);
    }
}

/// [`distance`]'s last step: NaN is +inf, and nothing is below 0.
#[inline(always)]
fn finish(d: f32) -> f32 {
    if d.is_nan() {
        f32::INFINITY
    } else {
        d.max(0.0)
    }
}

/// A distance function: what [`distance`] computes for one metric, with the instruction set
/// already chosen.
pub(crate) type Kernel = fn(&[f32], &[f32]) -> f32;

/// [`distance`] for `metric` as a function picked once (the CPU feature test and the metric
/// `match` out of a traversal's inner loop); it returns the same bits as [`distance`].
pub(crate) fn kernel(metric: Metric) -> Kernel {
    fn cosine(a: &[f32], b: &[f32]) -> f32 {
        finish(1.0 - dot_body(a, b))
    }
    fn l2(a: &[f32], b: &[f32]) -> f32 {
        finish(l2_squared_body(a, b))
    }
    fn dot_metric(a: &[f32], b: &[f32]) -> f32 {
        finish(dot_distance(dot_body(a, b)))
    }
    #[cfg(target_arch = "x86_64")]
    mod avx2 {
        use super::{dot_body, dot_distance, finish, l2_squared_body};
        #[target_feature(enable = "avx2")]
        pub(super) fn cosine(a: &[f32], b: &[f32]) -> f32 {
            finish(1.0 - dot_body(a, b))
        }
        #[target_feature(enable = "avx2")]
        pub(super) fn l2(a: &[f32], b: &[f32]) -> f32 {
            finish(l2_squared_body(a, b))
        }
        #[target_feature(enable = "avx2")]
        pub(super) fn dot_metric(a: &[f32], b: &[f32]) -> f32 {
            finish(dot_distance(dot_body(a, b)))
        }
    }
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY (each closure): the AVX2 bodies' only precondition is AVX2 support,
        // detected just above; these pointers are only handed out after that test.
        return match metric {
            Metric::Cosine => |a, b| unsafe { avx2::cosine(a, b) },
            Metric::L2 => |a, b| unsafe { avx2::l2(a, b) },
            Metric::Dot => |a, b| unsafe { avx2::dot_metric(a, b) },
        };
    }
    match metric {
        Metric::Cosine => cosine,
        Metric::L2 => l2,
        Metric::Dot => dot_metric,
    }
}

/// The internal distance of a dot product `p`: decreasing in `p`, positive, and `1` at 0.
#[inline]
pub(crate) fn dot_distance(p: f32) -> f32 {
    if p <= 0.0 {
        1.0 - p
    } else {
        1.0 / (1.0 + p)
    }
}

/// The dot product an internal distance of [`dot_distance`] stands for.
pub(crate) fn dot_from_distance(d: f32) -> f32 {
    if d >= 1.0 {
        1.0 - d
    } else if d > 0.0 {
        1.0 / d - 1.0
    } else {
        f32::INFINITY
    }
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

    #[test]
    fn scan_block_gives_each_row_the_bits_of_distance() {
        // Dimensions below, at and around the kernel's LANES (16) and the scan's ROWS (4)
        // rows per pass; values of both signs and mixed magnitudes, so every rounding
        // of a reordered sum would show.
        for dim in [1usize, 7, 15, 16, 17, 33, 37, 50, 64, 100, 384, 385] {
            for rows in 0..14usize {
                let data: Vec<f32> = (0..rows * dim)
                    .map(|i| ((i * 31 % 97) as f32 * 0.013).sin() * (1 + i % 5) as f32)
                    .collect();
                let query: Vec<f32> = (0..dim).map(|i| (i as f32 * 0.7).cos()).collect();
                for metric in [Metric::Cosine, Metric::L2, Metric::Dot] {
                    let mut seen = Vec::new();
                    scan_block(metric, &query, &data, |row, d| {
                        seen.push((row, d.to_bits()))
                    });
                    // Every row once, in any order.
                    seen.sort_unstable();
                    let want: Vec<(usize, u32)> = data
                        .chunks_exact(dim)
                        .enumerate()
                        .map(|(row, v)| (row, distance(metric, &query, v).to_bits()))
                        .collect();
                    assert_eq!(seen, want, "dim {dim}, {rows} rows, {metric:?}");
                }
            }
        }
        // NaN is +inf here too; a trailing partial row is ignored.
        let mut seen = Vec::new();
        scan_block(Metric::Cosine, &[f32::NAN], &[1.0, 2.0], |r, d| {
            seen.push((r, d))
        });
        seen.sort_unstable_by_key(|&(r, _)| r);
        assert_eq!(seen, vec![(0, f32::INFINITY), (1, f32::INFINITY)]);
        seen.clear();
        scan_block(Metric::L2, &[1.0, 2.0], &[1.0, 2.0, 3.0], |r, d| {
            seen.push((r, d))
        });
        assert_eq!(seen, vec![(0, 0.0)]);
    }

    #[test]
    fn kernel_gives_the_bits_of_distance() {
        for n in [0usize, 1, 15, 16, 50, 384] {
            let a: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin()).collect();
            let b: Vec<f32> = (0..n).map(|i| (i as f32 * 0.11).cos()).collect();
            for metric in [Metric::Cosine, Metric::L2, Metric::Dot] {
                let f = kernel(metric);
                assert_eq!(f(&a, &b).to_bits(), distance(metric, &a, &b).to_bits());
            }
        }
        assert_eq!(kernel(Metric::Cosine)(&[f32::NAN], &[1.0]), f32::INFINITY);
    }

    #[test]
    fn distance_is_never_negative_nor_nan() {
        let a = [1.0f32, 0.0];
        assert_eq!(distance(Metric::Cosine, &a, &a), 0.0);
        let big = [f32::MAX, -f32::MAX];
        let d = distance(Metric::L2, &big, &[-f32::MAX, f32::MAX]);
        assert_eq!(d, f32::INFINITY);
        assert_eq!(distance(Metric::Cosine, &[f32::NAN], &[1.0]), f32::INFINITY);
    }

    #[test]
    fn dot_distance_keeps_the_order_of_dot_products() {
        let products = [-1e30f32, -5.0, -1.0, -1e-6, 0.0, 1e-6, 0.5, 1.0, 7.0, 1e30];
        for pair in products.windows(2) {
            // A larger product is nearer: a smaller distance.
            assert!(dot_distance(pair[1]) < dot_distance(pair[0]), "{pair:?}");
        }
        for p in products {
            assert!(dot_distance(p) >= 0.0);
            let back = dot_from_distance(dot_distance(p));
            assert!((back - p).abs() <= 1e-5 * p.abs().max(1.0), "{p} -> {back}");
        }
    }
}
