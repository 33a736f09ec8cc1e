//! Distance kernels shared by the exact scan and the HNSW graph.
//!
//! Both search paths call the same two functions, so an exact hit and an ANN hit for the
//! same (query, vector) pair carry bit-identical distances.
//!
//! The kernels themselves (the loops, their AVX2 copies picked at run time, the exact
//! scan's block kernel) are in [`crate::simd::floats`], which returns the same bits whatever
//! the instruction set; this module maps their raw sums to each metric's distance.
//!
//! (`anndists`' `DistDot`, the SIMD distance `hnsw_rs` shipped, was not used: it asserts
//! `dot <= 1.000002`, which f32-normalised vectors of 1536 dimensions break about once in
//! 3 000 self-comparisons, i.e. a panic on a query path.)

use super::Metric;

use crate::simd::floats::{self, Finish};
pub(crate) use crate::simd::floats::{dot, l2_squared, Kernel};

/// The internal distance of `metric`: lower is nearer, never negative, never NaN.
///
/// - Cosine (unit vectors): `1 - dot`, clamped at 0 (rounding can push a self-dot a
///   hair above 1). Score = `1 - distance`.
/// - L2: the *squared* Euclidean distance (same order, no square root per row).
///   Score = `sqrt(distance)`.
/// - Dot: a decreasing, non-negative map of the dot product `p` ([`dot_distance`]): `1 - p`
///   for `p <= 0`, `1 / (1 + p)` above. `hnsw_rs` needs distances `>= 0`, and the map keeps
///   the order of every pair of dot products. Score = `p` again (`options::dot_from_distance`).
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
    finish(d)
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
        on_row(row, finish(d));
    };
    floats::scan(metric == Metric::L2, query, rows, &mut on_raw);
}

/// [`distance`]'s last step, and every estimate's (the codes', the budget's PQ tables'):
/// NaN is +inf, and nothing is below 0. NaN is tested before clamping: `f32::max` would
/// turn it into 0, "nearest of all".
#[inline(always)]
pub(crate) fn finish(d: f32) -> f32 {
    if d.is_nan() {
        f32::INFINITY
    } else {
        d.max(0.0)
    }
}

/// [`distance`] for `metric` as a function picked once (the CPU feature test and the metric
/// `match` out of a traversal's inner loop); it returns the same bits as [`distance`].
pub(crate) fn kernel(metric: Metric) -> Kernel {
    struct Cosine;
    impl Finish for Cosine {
        const L2: bool = false;
        #[inline(always)]
        fn finish(raw: f32) -> f32 {
            finish(1.0 - raw)
        }
    }
    struct L2;
    impl Finish for L2 {
        const L2: bool = true;
        #[inline(always)]
        fn finish(raw: f32) -> f32 {
            finish(raw)
        }
    }
    struct Dot;
    impl Finish for Dot {
        const L2: bool = false;
        #[inline(always)]
        fn finish(raw: f32) -> f32 {
            finish(dot_distance(raw))
        }
    }
    match metric {
        Metric::Cosine => floats::kernel::<Cosine>(),
        Metric::L2 => floats::kernel::<L2>(),
        Metric::Dot => floats::kernel::<Dot>(),
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

#[cfg(test)]
mod tests {
    use super::*;

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
            let back = crate::options::dot_from_distance(dot_distance(p));
            assert!((back - p).abs() <= 1e-5 * p.abs().max(1.0), "{p} -> {back}");
        }
    }
}
