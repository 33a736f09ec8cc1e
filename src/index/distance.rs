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
