//! The kernels over 8-bit codes the graph's traversal reads (`index::quantize`), compiled for
//! the baseline and again with AVX2 (picked at run time, the same bits either way).

/// Accumulator width, as the `f32` kernels' ([`super::floats`]).
const LANES: usize = 16;

/// `(weights, step, codes) -> sum`.
pub(crate) type Kernel = fn(&[f32], &[f32], &[u8]) -> f32;

/// Σ w·code.
#[inline(always)]
fn weighted_body(w: &[f32], _step: &[f32], c: &[u8]) -> f32 {
    let n = w.len().min(c.len());
    let (w, c) = (&w[..n], &c[..n]);
    let mut acc = [0f32; LANES];
    let (cw, cc) = (w.chunks_exact(LANES), c.chunks_exact(LANES));
    let tail: f32 = cw
        .remainder()
        .iter()
        .zip(cc.remainder())
        .map(|(w, &c)| w * f32::from(c))
        .sum();
    for (w, c) in cw.zip(cc) {
        for i in 0..LANES {
            acc[i] += w[i] * f32::from(c[i]);
        }
    }
    acc.iter().sum::<f32>() + tail
}

/// Σ (r - step·code)², with `r = q - low`.
#[inline(always)]
fn l2_body(r: &[f32], step: &[f32], c: &[u8]) -> f32 {
    let n = r.len().min(step.len()).min(c.len());
    let (r, step, c) = (&r[..n], &step[..n], &c[..n]);
    let mut acc = [0f32; LANES];
    let (cr, cs, cc) = (
        r.chunks_exact(LANES),
        step.chunks_exact(LANES),
        c.chunks_exact(LANES),
    );
    let tail: f32 = cr
        .remainder()
        .iter()
        .zip(cs.remainder())
        .zip(cc.remainder())
        .map(|((r, s), &c)| {
            let d = r - s * f32::from(c);
            d * d
        })
        .sum();
    for ((r, s), c) in cr.zip(cs).zip(cc) {
        for i in 0..LANES {
            let d = r[i] - s[i] * f32::from(c[i]);
            acc[i] += d * d;
        }
    }
    acc.iter().sum::<f32>() + tail
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    #[target_feature(enable = "avx2")]
    pub(super) fn weighted(w: &[f32], step: &[f32], c: &[u8]) -> f32 {
        super::weighted_body(w, step, c)
    }
    #[target_feature(enable = "avx2")]
    pub(super) fn l2(r: &[f32], step: &[f32], c: &[u8]) -> f32 {
        super::l2_body(r, step, c)
    }
}

/// The Σ w·code kernel for this CPU.
pub(crate) fn weighted() -> Kernel {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: the AVX2 body's only precondition is AVX2 support, detected above.
        return |w, s, c| unsafe { avx2::weighted(w, s, c) };
    }
    weighted_body
}

/// The Σ (r - step·code)² kernel for this CPU.
pub(crate) fn l2() -> Kernel {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: as for `weighted`.
        return |r, s, c| unsafe { avx2::l2(r, s, c) };
    }
    l2_body
}
