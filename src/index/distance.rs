//! Distance kernels shared by the exact scan and the HNSW graph.
//!
//! Both search paths call the same two functions, so an exact hit and an ANN hit for the
//! same (query, vector) pair carry bit-identical distances.
//!
//! The loops keep `LANES` independent accumulators over `chunks_exact(LANES)`: the
//! compiler vectorises them without having to reassociate floating-point additions, so
//! the result does not depend on the instruction set. On x86_64 the same body is compiled
//! a second time with AVX2 enabled and picked at run time; it returns the same bits as
//! the baseline (SSE2) build, only faster.
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
    let tail: f32 = chunks_a
        .remainder()
        .iter()
        .zip(chunks_b.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in chunks_a.zip(chunks_b) {
        for i in 0..LANES {
            acc[i] += x[i] * y[i];
        }
    }
    acc.iter().sum::<f32>() + tail
}

#[inline(always)]
fn l2_squared_body(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0f32; LANES];
    let chunks_a = a.chunks_exact(LANES);
    let chunks_b = b.chunks_exact(LANES);
    let tail: f32 = chunks_a
        .remainder()
        .iter()
        .zip(chunks_b.remainder())
        .map(|(x, y)| (x - y) * (x - y))
        .sum();
    for (x, y) in chunks_a.zip(chunks_b) {
        for i in 0..LANES {
            let d = x[i] - y[i];
            acc[i] += d * d;
        }
    }
    acc.iter().sum::<f32>() + tail
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

/// [`scan_block`]'s loop over `rows` (each `query.len()` floats, contiguous): the raw dot
/// product or squared distance of each row, through the one-row bodies, so each row's
/// result has the same bits as [`dot`] / [`l2_squared`] give it. The instruction set is
/// chosen once per scan, not per row. (Two and four rows per pass sharing the query's
/// loads, each row summed in the same order, were measured slower here than one row at a
/// time: 2.6x and 1.9x at 384-d in `benches/search_kernels.rs`; see docs/benchmarks.md.)
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

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn scan_dot_avx2(query: &[f32], rows: &[f32], on_raw: &mut impl FnMut(usize, f32)) {
    scan_body::<false>(query, rows, on_raw)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn scan_l2_avx2(query: &[f32], rows: &[f32], on_raw: &mut impl FnMut(usize, f32)) {
    scan_body::<true>(query, rows, on_raw)
}

/// The internal distance ([`distance`]) from `query` to each row of `rows` (row-major,
/// `query.len()` floats per row; a trailing partial row is ignored), handed to
/// `on_row(row index, distance)` in row order. The exact scan's kernel over contiguous
/// rows (the instruction set picked once per scan); each row's distance has the same bits
/// as [`distance`] gives it, so exact and graph searches agree to the bit.
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
                scan_l2_avx2(query, rows, &mut on_raw);
            } else {
                scan_dot_avx2(query, rows, &mut on_raw);
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
        for dim in [1usize, 7, 16, 37, 50, 384] {
            for rows in 0..11usize {
                let data: Vec<f32> = (0..rows * dim)
                    .map(|i| ((i * 31 % 97) as f32 * 0.013).sin())
                    .collect();
                let query: Vec<f32> = (0..dim).map(|i| (i as f32 * 0.7).cos()).collect();
                for metric in [Metric::Cosine, Metric::L2, Metric::Dot] {
                    let mut seen = Vec::new();
                    scan_block(metric, &query, &data, |row, d| {
                        seen.push((row, d.to_bits()))
                    });
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
