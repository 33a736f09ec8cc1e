//! 4-bit scalar quantisation of the graph's vectors, for its traversal only.
//!
//! A graph search is memory-bound: most of its time waits for the vectors of the points it
//! reaches, scattered over the whole array (a 384-d vector is 24 cache lines). The graph
//! therefore keeps, beside each vector, a code of half a byte per dimension: per dimension
//! `x ≈ low + step * code`, `code` in `0..=15`, with `low` and `step` fitted to the range
//! the graph's vectors span, its rarest extremes left out ([`Quantizer::fit`]). The
//! traversal compares the query, kept in `f32`, with the codes (an asymmetric distance:
//! only the stored side is rounded), reading an eighth of the bytes; the points it ends with
//! (its whole beam, `ef` of them) are then scored again with the exact kernel, and ranked by
//! that. So a search's hits carry exactly the distance the exact scan gives (the kernels'
//! bit-identity holds), and the quantisation can only change which points the beam visits,
//! which is what recall measures. Half a byte rather than a byte: the codes are the one
//! array an in-memory index holds beside its vectors and links, and a beam of `ef` reranked
//! exactly needs them only to order candidates roughly (the choice is measured in
//! docs/benchmarks.md, "Codes of half a byte").
//!
//! The codes are not persisted: they are derived from the vectors when a graph is loaded,
//! as the graph itself is derived from the vectors table. The quantiser (`low`, `step`) is
//! saved with the links (snapshot format 6, its last byte 2, [`Quantizer::to_bytes`]), so a reloaded graph
//! codes its vectors as the saved one did and answers every search identically.

use super::distance::{dot_distance, finish};
use super::Metric;
use crate::simd::codes as kernels;

/// The largest code: 4 bits.
const TOP: f32 = 15.0;

/// The share of a dimension's sampled values left outside the fitted range at each end
/// (clamped to its edge): an outlier stretching the range would otherwise leave the other
/// values a handful of the 16 codes.
const CLIP: f64 = 1.0 / 1024.0;

/// A quantiser read back with a graph is refused ([`Quantizer::represents`]) when more
/// than this share of the vectors' values fall outside its range. A graph refits its codes
/// long before (`graph::REFIT_CLAMPED_SHARE`), so a sound snapshot stays far below it.
const LOADED_CLAMPED_SHARE: f64 = 1.0 / 8.0;

/// ... or when most varying dimensions span fewer than this many of its steps (a fit spans
/// at least 15: the values between its quantiles span 15, and all of them at least that).
/// Low, so that a store whose live vectors narrowed (most deleted, one cluster kept) still
/// loads its snapshot: what this catches is a quantiser fitted to other data altogether.
const LOADED_MIN_LEVELS: f32 = 2.0;

/// Dimensions whose sampled values [`Quantizer::fit`] gathers per pass over the sample rows
/// (16 floats: one cache line of each row).
const FIT_COLUMNS: usize = 16;

/// At most this many vectors are read to fit a quantiser (evenly spaced over the slots).
const FIT_SAMPLE: usize = 16_384;

/// Per-dimension affine map between `f32` values and 4-bit codes.
#[derive(Debug, Clone)]
pub(crate) struct Quantizer {
    low: Vec<f32>,
    step: Vec<f32>,
    /// `1 / step`, for coding (derived, not persisted).
    inverse: Vec<f32>,
    /// Whether each code ends with its vector's [`NORM_BYTES`]-byte norm term, as an L2
    /// graph's codes do ([`Quantizer::for_metric`]; not persisted: the graph's metric says).
    norms: bool,
}

/// Bytes of the norm term an L2 code ends with: `Σ (step·code)²` as an `f32`,
/// little-endian, so that the L2 estimate `Σ (r - step·code)²` (with `r = q - low`) is
/// `Σ r² - 2 Σ (r·step)·code + Σ (step·code)²`: a query's part, an integer sum over the
/// query's integer weights as for cosine, and this stored part.
pub(crate) const NORM_BYTES: usize = 4;

/// Bytes of a `dim`-dimensional code, with the norm term when `norms` (an L2 graph's).
const fn code_len_for(dim: usize, norms: bool) -> usize {
    kernels::code_len(dim) + if norms { NORM_BYTES } else { 0 }
}

/// `low` and `step` for one dimension's finite sampled `values` (reordered): 15 steps
/// between their [`CLIP`] quantiles, or between their extremes when those quantiles are
/// equal (a dimension that is zero in all but a few rows keeps the scale of those), or a
/// step of 1 from the one value there is (every code then decodes to it).
fn fitted_range(values: &mut [f32]) -> (f32, f32) {
    let (mut lo, mut hi) = clipped_range(values);
    if hi - lo <= 0.0 {
        (lo, hi) = values
            .iter()
            .fold((lo, hi), |(lo, hi), &x| (lo.min(x), hi.max(x)));
    }
    let span = hi - lo;
    if span.is_finite() && span > 0.0 {
        (lo, span / TOP)
    } else {
        (if lo.is_finite() { lo } else { 0.0 }, 1.0)
    }
}

/// The [`CLIP`] and `1 - CLIP` quantiles of `values` (reordered); `(0, 0)` for none.
fn clipped_range(values: &mut [f32]) -> (f32, f32) {
    let n = values.len();
    if n == 0 {
        return (0.0, 0.0);
    }
    let cut = (n as f64 * CLIP) as usize;
    let (_, &mut lo, above) = values.select_nth_unstable_by(cut, f32::total_cmp);
    let upper = n - 1 - cut;
    let hi = if upper == cut {
        lo
    } else {
        // The upper quantile is among the values above the lower one.
        let at = upper - cut - 1;
        *above.select_nth_unstable_by(at, f32::total_cmp).1
    };
    (lo, hi)
}

impl Quantizer {
    /// A quantiser for the `dim`-dimensional `rows` (slot-major, `dim` floats each),
    /// fitted to at most [`FIT_SAMPLE`] of them evenly spaced: per dimension, the range
    /// from the sampled values' [`CLIP`] quantile to their `1 - CLIP` one (the extremes
    /// themselves below 1,024 rows), cut into 15 steps. Values that are not finite are
    /// left out. `None` without rows.
    pub(crate) fn fit<'a>(
        dim: usize,
        count: usize,
        row: impl Fn(usize) -> Option<&'a [f32]>,
    ) -> Option<Quantizer> {
        if dim == 0 || count == 0 {
            return None;
        }
        let stride = count.div_ceil(FIT_SAMPLE).max(1);
        let rows: Vec<&[f32]> = (0..count)
            .step_by(stride)
            .filter_map(|slot| row(slot).filter(|v| v.len() == dim))
            .collect();
        if rows.is_empty() {
            return None;
        }
        let (mut low, mut step) = (Vec::with_capacity(dim), Vec::with_capacity(dim));
        // Columns gathered a few at a time, in one pass over the rows each: a row's next
        // values share its cache line (a pass per dimension read a line per value).
        let mut columns: Vec<Vec<f32>> = (0..FIT_COLUMNS)
            .map(|_| Vec::with_capacity(rows.len()))
            .collect();
        for first in (0..dim).step_by(FIT_COLUMNS) {
            let width = FIT_COLUMNS.min(dim - first);
            for column in &mut columns {
                column.clear();
            }
            for v in &rows {
                for (column, &x) in columns.iter_mut().zip(&v[first..first + width]) {
                    if x.is_finite() {
                        column.push(x);
                    }
                }
            }
            for values in &mut columns[..width] {
                let (l, s) = fitted_range(values);
                low.push(l);
                step.push(s.max(f32::MIN_POSITIVE));
            }
        }
        Some(Quantizer::new(low, step))
    }

    fn new(low: Vec<f32>, step: Vec<f32>) -> Quantizer {
        let inverse = step.iter().map(|s| 1.0 / s).collect();
        Quantizer {
            low,
            step,
            inverse,
            norms: false,
        }
    }

    /// This quantiser coding for a graph of `metric`: an L2 graph's codes end with their
    /// norm term ([`NORM_BYTES`]), which its estimates read; cosine and dot codes do not.
    pub(crate) fn for_metric(mut self, metric: Metric) -> Quantizer {
        self.norms = metric == Metric::L2;
        self
    }

    /// Appends the quantiser as it is persisted: `low` then `step`, `f32` little-endian,
    /// `dim` of each.
    pub(crate) fn to_bytes(&self, out: &mut Vec<u8>) {
        for x in self.low.iter().chain(&self.step) {
            out.extend_from_slice(&x.to_le_bytes());
        }
    }

    /// A quantiser of `dim` dimensions read back from [`Quantizer::to_bytes`]'s bytes;
    /// `None` if they are not `8 * dim` long or hold a value no fit makes (a `low` not
    /// finite, a `step` not finite and positive).
    pub(crate) fn from_bytes(dim: usize, bytes: &[u8]) -> Option<Quantizer> {
        if dim == 0 || bytes.len() != dim.checked_mul(8)? {
            return None;
        }
        let floats: Vec<f32> = bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        let (low, step) = floats.split_at(dim);
        let sound = low.iter().all(|x| x.is_finite())
            && step
                .iter()
                .all(|s| s.is_finite() && *s >= f32::MIN_POSITIVE);
        sound.then(|| Quantizer::new(low.to_vec(), step.to_vec()))
    }

    /// Bytes of a code: half a byte per dimension ([`kernels::code_len`]), then, for an L2
    /// graph, the norm term ([`NORM_BYTES`]).
    pub(crate) fn code_len(&self) -> usize {
        code_len_for(self.low.len(), self.norms)
    }

    /// Appends `vector`'s code ([`Self::code_len`] bytes, clamped to the range); returns how
    /// many of its values were clamped (see [`Quantizer::encode_into`]).
    pub(crate) fn encode(&self, vector: &[f32], out: &mut Vec<u8>) -> usize {
        let at = out.len();
        out.resize(at + self.code_len(), 0);
        self.encode_into(vector, &mut out[at..])
    }

    /// Writes `vector`'s code into `code` (as many values as both hold; a missing value
    /// codes as 0); returns how many values lay more than half a step outside the range
    /// (clamped: their code says only "at the edge", which is what makes a stale quantiser
    /// lose recall).
    pub(crate) fn encode_into(&self, vector: &[f32], code: &mut [u8]) -> usize {
        let mut clamped = 0usize;
        // Σ (step·code)², summed in the order the values are packed.
        let (mut norm_term, norms) = (0f32, self.norms);
        let (low, step, inverse) = (&self.low, &self.step, &self.inverse);
        let packed = kernels::code_len(low.len()).min(code.len());
        let (values, norm) = code.split_at_mut(packed);
        kernels::pack(low.len(), values, |d| {
            let (Some(&x), Some(&low), Some(&step), Some(&inverse)) =
                (vector.get(d), low.get(d), step.get(d), inverse.get(d))
            else {
                return 0;
            };
            // Rounded half up: `as u8` truncates, which for the clamped, non-negative value
            // is the floor (and maps NaN to 0). No `round()`: without SSE4.1 it is a call per
            // value, and a load codes every value of every vector.
            let at = (x - low) * inverse + 0.5;
            clamped += usize::from(!(0.0..=TOP + 1.0).contains(&at));
            let value = at.clamp(0.0, TOP) as u8;
            if norms {
                let offset = step * f32::from(value);
                norm_term += offset * offset;
            }
            value
        });
        if norms {
            if let Some(norm) = norm.get_mut(..NORM_BYTES) {
                norm.copy_from_slice(&norm_term.to_le_bytes());
            }
        }
        clamped
    }

    /// Whether this quantiser can stand for the `dim`-dimensional `rows` (read as
    /// [`Quantizer::fit`] reads them, `None` rows skipped): at most
    /// [`LOADED_CLAMPED_SHARE`] of their values fall outside its range, and its steps are
    /// not so coarse that the values of most varying dimensions share a handful of codes
    /// (fewer than [`LOADED_MIN_LEVELS`] steps across the values' span). A quantiser read
    /// from a snapshot that fails this was not fitted to these vectors: the snapshot is
    /// damaged, and its graph is rebuilt.
    pub(crate) fn represents<'a>(
        &self,
        dim: usize,
        count: usize,
        row: impl Fn(usize) -> Option<&'a [f32]>,
    ) -> bool {
        if dim != self.low.len() || dim == 0 {
            return false;
        }
        let stride = count.div_ceil(FIT_SAMPLE).max(1);
        let mut min = vec![f32::INFINITY; dim];
        let mut max = vec![f32::NEG_INFINITY; dim];
        let (mut values, mut clamped) = (0usize, 0usize);
        let mut code = vec![0u8; self.code_len()];
        for slot in (0..count).step_by(stride) {
            let Some(v) = row(slot).filter(|v| v.len() == dim) else {
                continue;
            };
            values += dim;
            clamped += self.encode_into(v, &mut code);
            for ((lo, hi), &x) in min.iter_mut().zip(max.iter_mut()).zip(v) {
                *lo = lo.min(x);
                *hi = hi.max(x);
            }
        }
        if values == 0 {
            return true;
        }
        if clamped as f64 > values as f64 * LOADED_CLAMPED_SHARE {
            return false;
        }
        let (mut varying, mut coarse) = (0usize, 0usize);
        for ((lo, hi), step) in min.iter().zip(&max).zip(&self.step) {
            let span = hi - lo;
            if span.is_finite() && span > 0.0 {
                varying += 1;
                coarse += usize::from(span < step * LOADED_MIN_LEVELS);
            }
        }
        coarse * 2 <= varying
    }

    /// The query-side form of `query` for [`Query::distance`] under `metric`.
    pub(crate) fn query(&self, metric: Metric, query: &[f32]) -> Query {
        let form = match metric {
            // ||q - x||² = Σ (r - step·code)² with r = q - low
            // = Σ r² - 2 Σ (r·step)·code + Σ (step·code)², the last the code's norm term.
            Metric::L2 => {
                let r: Vec<f32> = query
                    .iter()
                    .zip(&self.low)
                    .map(|(q, low)| q - low)
                    .collect();
                let (weights, scale) = integer_weights(&r, &self.step);
                Form::L2 {
                    weights,
                    scale,
                    r_squared: r.iter().map(|x| x * x).sum(),
                    packed: kernels::code_len(self.low.len()),
                    kernel: kernels::weighted_int(),
                }
            }
            // q·x = Σ q·low + Σ (q·step)·code, the second sum over integer weights.
            Metric::Cosine | Metric::Dot => {
                let (weights, scale) = integer_weights(query, &self.step);
                Form::Weighted {
                    weights,
                    scale,
                    base: query.iter().zip(&self.low).map(|(q, low)| q * low).sum(),
                    kernel: kernels::weighted_int(),
                }
            }
        };
        Query { metric, form }
    }
}

#[cfg(any(test, feature = "testkit"))]
impl Quantizer {
    /// The cosine estimate of the traversal before the integer kernel: `q·step` kept as
    /// `f32` weights and summed by the `f32` code kernel (`benches/search_kernels.rs`
    /// measures the two side by side; a test holds them together).
    pub(crate) fn cosine_estimate_f32(&self, query: &[f32]) -> impl Fn(&[u8]) -> f32 + '_ {
        let weights: Vec<f32> = query.iter().zip(&self.step).map(|(q, s)| q * s).collect();
        let base: f32 = query.iter().zip(&self.low).map(|(q, low)| q * low).sum();
        let kernel = kernels::weighted();
        move |codes| finish(1.0 - (base + kernel(&weights, &self.step, codes)))
    }

    /// The L2 estimate of the traversal before the integer kernel: `Σ (r - step·code)²`
    /// over `f32` values by the `f32` code kernel, from a code's values alone (its norm term
    /// unread).
    pub(crate) fn l2_estimate_f32(&self, query: &[f32]) -> impl Fn(&[u8]) -> f32 + '_ {
        let r: Vec<f32> = query
            .iter()
            .zip(&self.low)
            .map(|(q, low)| q - low)
            .collect();
        let kernel = kernels::l2();
        move |codes| finish(kernel(&r, &self.step, codes))
    }
}

/// The weights `q·step` as integers and the scale that takes them back
/// (`q·step ≈ scale · integer`), computed in two passes over `query` and `step` without a
/// `Vec` of the `f32` weights (this runs once per search): the largest finite magnitude
/// maps to [`kernels::int_weight_limit`], so each weight is rounded by at most `scale / 2`
/// (plus the division's own rounding; a relative 1/65,534 of the largest up to 4,369
/// dimensions). All zero (and a scale of 0) when no weight is finite and non-zero; a
/// weight that is not finite (a validated query's never is) maps to the limit of its sign,
/// NaN to 0.
fn integer_weights(query: &[f32], step: &[f32]) -> (Vec<i16>, f32) {
    let weights = || query.iter().zip(step).map(|(q, s)| q * s);
    let largest = weights()
        .filter(|w| w.is_finite())
        .fold(0f32, |m, w| m.max(w.abs()));
    let dims = query.len().min(step.len());
    if largest == 0.0 {
        return (vec![0; dims], 0.0);
    }
    let limit = f32::from(kernels::int_weight_limit(dims));
    let scale = largest / limit;
    let integers = weights()
        .map(|w| {
            // Rounded to the nearest integer (ties to even) by adding and subtracting
            // 1.5 · 2^23, exact for magnitudes below 2^22 (these are at most `limit`):
            // `f32::round` is a libm call on the baseline instruction set, and it kept the
            // loop from vectorising (the loop and `roundf` held 3.5 % of a profile's
            // samples at MiniLM-11k, `ef` 24). `as` saturates and maps NaN to 0.
            const NEAREST: f32 = 12_582_912.0;
            (((w / scale).clamp(-limit, limit) + NEAREST) - NEAREST) as i16
        })
        .collect();
    (integers, scale)
}

/// How a [`Query`] scores a code under its metric.
enum Form {
    /// L2: `r·step` (with `r = q - low`) as integers with their scale, `Σ r²`, the bytes of
    /// a code's values (its norm term follows them), the integer kernel.
    L2 {
        weights: Vec<i16>,
        scale: f32,
        r_squared: f32,
        packed: usize,
        kernel: kernels::IntKernel,
    },
    /// Cosine and Dot: `q·step` as integers with their scale, `Σ q·low`, the integer kernel.
    Weighted {
        weights: Vec<i16>,
        scale: f32,
        base: f32,
        kernel: kernels::IntKernel,
    },
}

/// A query prepared against a [`Quantizer`]: estimates the internal distance (as
/// [`super::distance::distance`] defines it for the metric) of a coded vector.
pub(crate) struct Query {
    metric: Metric,
    form: Form,
}

impl Query {
    /// The estimated distance of the vector coded `codes`: lower is nearer, never
    /// negative, never NaN.
    #[inline]
    pub(crate) fn distance(&self, codes: &[u8]) -> f32 {
        let d = match &self.form {
            Form::L2 {
                weights,
                scale,
                r_squared,
                packed,
                kernel,
            } => {
                let (values, norm) = codes.split_at((*packed).min(codes.len()));
                debug_assert!(
                    norm.len() >= NORM_BYTES,
                    "an L2 code without its norm term: a quantiser not made for L2"
                );
                let norm = match norm.get(..NORM_BYTES) {
                    Some(&[a, b, c, d]) => f32::from_le_bytes([a, b, c, d]),
                    // A code without its norm term (a quantiser not made for L2): the
                    // estimate is off by it, never unsafe.
                    _ => 0.0,
                };
                r_squared - 2.0 * scale * kernel(weights, values) as f32 + norm
            }
            Form::Weighted {
                weights,
                scale,
                base,
                kernel,
            } => {
                let dot = base + kernel(weights, codes) as f32 * scale;
                // Built for Cosine and Dot only.
                if self.metric == Metric::Dot {
                    dot_distance(dot)
                } else {
                    1.0 - dot
                }
            }
        };
        finish(d)
    }

    /// How far rounding the weights to integers can move the estimate (in exact
    /// arithmetic): per dimension half the scale, plus the `f32` division's rounding of
    /// `w / scale` (at most `limit · ε` units), times the largest code; twice that for L2,
    /// whose estimate holds the sum `Σ w·code` twice.
    #[cfg(test)]
    fn rounding_bound(&self) -> f64 {
        let (weights, scale, times) = match &self.form {
            // The cross term is counted twice.
            Form::L2 { weights, scale, .. } => (weights, scale, 2.0),
            Form::Weighted { weights, scale, .. } => (weights, scale, 1.0),
        };
        let limit = f64::from(kernels::int_weight_limit(weights.len()));
        let per_unit = 0.5 + limit * f64::from(f32::EPSILON);
        times * 15.0 * per_unit * f64::from(*scale) * weights.len() as f64
    }

    /// The integer weights, their scale and the base (L2: `Σ r²`), for the tests' exact
    /// sums.
    #[cfg(test)]
    fn integer_form(&self) -> (&[i16], f32, f32) {
        match &self.form {
            Form::L2 {
                weights,
                scale,
                r_squared,
                ..
            } => (weights, *scale, *r_squared),
            Form::Weighted {
                weights,
                scale,
                base,
                ..
            } => (weights, *scale, *base),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{kernels, Metric, Quantizer};
    use crate::index::distance::distance;

    fn rows(n: usize, dim: usize) -> Vec<f32> {
        let mut state = 0x1234_5678_u64;
        (0..n * dim)
            .map(|_| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((state >> 40) as f32 / (1u64 << 24) as f32) - 0.5
            })
            .collect()
    }

    /// Each estimate is within what half a step per value allows: a coded value is at most
    /// `step / 2` from its value when it lies inside the range (every value does here: below
    /// 1,024 rows the range is the extremes).
    #[test]
    fn estimates_stay_within_half_a_step_per_value_for_every_metric() {
        for dim in [50, 64, 384] {
            let data = rows(500, dim);
            let q = Quantizer::fit(dim, 500, |s| data.get(s * dim..(s + 1) * dim)).expect("rows");
            for metric in [Metric::Cosine, Metric::Dot, Metric::L2] {
                let q = q.clone().for_metric(metric);
                let query = &data[7 * dim..8 * dim];
                let prepared = q.query(metric, query);
                for slot in 0..500 {
                    let v = &data[slot * dim..(slot + 1) * dim];
                    let mut code = Vec::new();
                    assert_eq!(q.encode(v, &mut code), 0, "nothing clamped");
                    let norm = if metric == Metric::L2 { 4 } else { 0 };
                    assert_eq!(code.len(), dim.div_ceil(2) + norm);
                    let exact = distance(metric, query, v);
                    let estimate = prepared.distance(&code);
                    // Cosine and Dot: 1-Lipschitz in the dot product, which moves by at most
                    // Σ |q| · step / 2. L2: (a + e)² - a² = 2ae + e².
                    let bound: f32 = query
                        .iter()
                        .zip(v)
                        .zip(&q.step)
                        .map(|((&qv, &x), &step)| {
                            let e = step / 2.0;
                            match metric {
                                Metric::L2 => 2.0 * (qv - x).abs() * e + e * e,
                                _ => qv.abs() * e,
                            }
                        })
                        .sum();
                    let bound = bound + prepared.rounding_bound() as f32;
                    assert!(
                        (exact - estimate).abs() <= bound * 1.001 + 1e-5,
                        "{metric:?} dim {dim} slot {slot}: exact {exact}, estimate {estimate}, \
                         bound {bound}"
                    );
                }
            }
        }
    }

    /// The integer weights move the sum `Σ w·code` by no more than their rounding allows
    /// (both sums in `f64`, so only the rounding is measured), and the estimate the kernel
    /// gives is the `f32` weights' estimate (the traversal's before) within that bound plus
    /// the `f32` sums' own rounding, at every dimension count the codes' layout treats
    /// differently.
    #[test]
    fn integer_weights_estimate_as_the_f32_weights_did() {
        for dim in [1, 31, 50, 64, 384, 1000] {
            let data = rows(300, dim);
            let q = Quantizer::fit(dim, 300, |s| data.get(s * dim..(s + 1) * dim)).expect("rows");
            let query = &data[11 * dim..12 * dim];
            let prepared = q.query(Metric::Cosine, query);
            let before = q.cosine_estimate_f32(query);
            let bound = prepared.rounding_bound();
            let (integers, scale, base) = prepared.integer_form();
            let weights: Vec<f64> = query
                .iter()
                .zip(&q.step)
                .map(|(&x, &s)| f64::from(x * s))
                .collect();
            // Each weight is rounded to the nearest unit (a floor or a truncation fails here).
            let unit = f64::from(scale);
            let limit = f64::from(kernels::int_weight_limit(dim));
            for (w, &i) in weights.iter().zip(integers) {
                let off = (w - f64::from(i) * unit).abs();
                assert!(
                    off <= unit * (0.5 + limit * f64::from(f32::EPSILON)),
                    "dim {dim}: {w} coded {i} at scale {unit}"
                );
            }
            // On this data (uniform values) the rounding is under a hundredth of what the
            // codes' half steps allow; a query whose largest weight is far above its mean
            // one would see a larger share.
            let codes_bound: f64 = weights.iter().map(|w| w.abs() / 2.0).sum();
            assert!(
                bound > 0.0 && bound < codes_bound / 100.0,
                "dim {dim}: bound {bound}, the codes' {codes_bound}"
            );
            // The f32 sums' rounding: sequential sums of at most dim / 16 + 18 terms each,
            // every term at most base's or 15 |w| in magnitude.
            let magnitude =
                f64::from(base.abs()) + 15.0 * weights.iter().map(|w| w.abs()).sum::<f64>();
            let f32_slack = (dim / 16 + 18) as f64 * f64::from(f32::EPSILON) * magnitude;
            for slot in 0..300 {
                let mut code = Vec::new();
                q.encode(&data[slot * dim..(slot + 1) * dim], &mut code);
                let values: Vec<f64> = (0..dim)
                    .map(|d| {
                        let block = d / 32 * 32;
                        let r = (dim - block).min(32);
                        let half = r.div_ceil(2);
                        let (i, high) = if d - block < half {
                            (d - block, false)
                        } else {
                            (d - block - half, true)
                        };
                        let byte = code[block / 2 + i];
                        f64::from(if high { byte >> 4 } else { byte & 15 })
                    })
                    .collect();
                let exact: f64 = weights.iter().zip(&values).map(|(w, c)| w * c).sum();
                let rounded: f64 = integers
                    .iter()
                    .zip(&values)
                    .map(|(&w, c)| f64::from(w) * f64::from(scale) * c)
                    .sum();
                assert!(
                    (exact - rounded).abs() <= bound,
                    "dim {dim} slot {slot}: {rounded} against {exact} (bound {bound})"
                );
                let (now, then) = (prepared.distance(&code), before(&code));
                assert!(
                    f64::from((now - then).abs()) <= bound + f32_slack,
                    "dim {dim} slot {slot}: {now} against {then} (bound {bound} + {f32_slack})"
                );
            }
        }
    }

    /// The L2 estimate through the integer weights and the code's norm term is the `f32`
    /// kernel's `Σ (r - step·code)²` (the L2 traversal's before) within the weights'
    /// rounding, counted twice for the cross term, plus the `f32` sums' own rounding, at
    /// every dimension count the codes' layout treats differently; and an L2 code ends
    /// with its norm term, which a cosine code lacks.
    #[test]
    fn the_l2_estimate_from_integer_weights_and_norm_terms_is_the_f32_one() {
        for dim in [1, 31, 50, 64, 384, 1000] {
            let data = rows(300, dim);
            let fitted = Quantizer::fit(dim, 300, |s| data.get(s * dim..(s + 1) * dim))
                .expect("rows")
                .for_metric(Metric::Cosine);
            let q = fitted.clone().for_metric(Metric::L2);
            assert_eq!(q.code_len(), fitted.code_len() + super::NORM_BYTES);
            let query = &data[13 * dim..14 * dim];
            let prepared = q.query(Metric::L2, query);
            let before = q.l2_estimate_f32(query);
            let bound = prepared.rounding_bound();
            // Each weight `(q - low)·step` is rounded to the nearest unit (a floor fails here).
            let (integers, scale, _) = prepared.integer_form();
            let (unit, limit) = (f64::from(scale), f64::from(kernels::int_weight_limit(dim)));
            let steps = q.low.iter().zip(&q.step);
            for ((&x, (&low, &step)), &i) in query.iter().zip(steps).zip(integers) {
                let w = f64::from((x - low) * step);
                let off = (w - f64::from(i) * unit).abs();
                assert!(
                    off <= unit * (0.5 + limit * f64::from(f32::EPSILON)),
                    "dim {dim}: {w} coded {i} at scale {unit}"
                );
            }
            // The f32 arithmetic's rounding: a sequential f32 sum of n terms errs by at most
            // n·ε times the sum of their magnitudes. Σ r² and the norm term sum `dim` terms
            // each, the f32 kernel's lanes and tail at most dim / 32 + 32, and a handful of
            // operations join the parts; every part is at most Σ r², 2 · 15 Σ |r·step| or
            // Σ (15 step)².
            let r: Vec<f64> = query
                .iter()
                .zip(&q.low)
                .map(|(&x, &low)| f64::from(x - low))
                .collect();
            let magnitude = r.iter().map(|r| r * r).sum::<f64>()
                + 30.0
                    * r.iter()
                        .zip(&q.step)
                        .map(|(r, &s)| (r * f64::from(s)).abs())
                        .sum::<f64>()
                + q.step
                    .iter()
                    .map(|&s| (15.0 * f64::from(s)).powi(2))
                    .sum::<f64>();
            let terms = (2 * dim + dim / 32 + 40) as f64;
            let f32_slack = terms * f64::from(f32::EPSILON) * magnitude;
            for slot in 0..300 {
                let v = &data[slot * dim..(slot + 1) * dim];
                let (mut code, mut plain) = (Vec::new(), Vec::new());
                q.encode(v, &mut code);
                fitted.encode(v, &mut plain);
                let (values, norm) = code.split_at(plain.len());
                assert_eq!(
                    values, plain,
                    "dim {dim}: the same values, then the norm term"
                );
                let norm = f32::from_le_bytes(norm.try_into().expect("4 bytes"));
                assert!(
                    norm.is_finite() && norm >= 0.0,
                    "dim {dim}: norm term {norm}"
                );
                let (now, then) = (prepared.distance(&code), before(&code));
                assert!(
                    f64::from((now - then).abs()) <= bound + f32_slack,
                    "dim {dim} slot {slot}: {now} against {then} (bound {bound} + {f32_slack})"
                );
            }
        }
    }

    /// Dimensions whose ranges differ 900-fold, and a query far outside them: the integer
    /// weights share one scale, set by the largest `|r·step|`, so the small dimensions'
    /// weights are a few units each (a reviewer's concern: the L2 estimate then ranks codes
    /// differently from the `f32` one). It stays within the rounding bound, and ranks the
    /// nearest codes as the `f32` estimate does.
    #[test]
    fn mixed_scale_dimensions_and_a_far_query_rank_l2_codes_as_the_f32_estimate_does() {
        let (n, dim) = (2000, 96);
        let mut data = rows(n, dim);
        for (i, x) in data.iter_mut().enumerate() {
            *x *= [1.0, 30.0, 900.0][i % dim % 3];
        }
        let q = Quantizer::fit(dim, n, |s| data.get(s * dim..(s + 1) * dim))
            .expect("rows")
            .for_metric(Metric::L2);
        for (far, seed) in [(1.0f32, 7usize), (4.0, 11), (40.0, 1234)] {
            let query: Vec<f32> = data[seed * dim..(seed + 1) * dim]
                .iter()
                .map(|x| x * far)
                .collect();
            let prepared = q.query(Metric::L2, &query);
            let before = q.l2_estimate_f32(&query);
            let codes: Vec<Vec<u8>> = (0..n)
                .map(|s| {
                    let mut code = Vec::new();
                    q.encode(&data[s * dim..(s + 1) * dim], &mut code);
                    code
                })
                .collect();
            let now: Vec<f32> = codes.iter().map(|c| prepared.distance(c)).collect();
            let then: Vec<f32> = codes.iter().map(|c| before(c)).collect();
            let worst = now
                .iter()
                .zip(&then)
                .map(|(a, b)| f64::from((a - b).abs()))
                .fold(0.0, f64::max);
            let rank = |d: &[f32]| {
                let mut order: Vec<usize> = (0..n).collect();
                order.sort_by(|&a, &b| d[a].total_cmp(&d[b]).then(a.cmp(&b)));
                order.truncate(10);
                order
            };
            let (a, b) = (rank(&now), rank(&then));
            let kept = a.iter().filter(|s| b.contains(s)).count();
            // The f32 sums' own rounding: 2·dim terms, none above the largest estimate.
            let largest = then.iter().copied().fold(0.0f32, f32::max);
            let f32_slack = (2 * dim) as f64 * f64::from(f32::EPSILON) * f64::from(largest);
            assert!(
                worst <= prepared.rounding_bound() + f32_slack,
                "query x{far}: estimates {worst} apart (bound {} + {f32_slack})",
                prepared.rounding_bound()
            );
            assert_eq!(
                kept, 10,
                "query x{far}: the nearest 10 codes by each estimate"
            );
        }
    }

    #[test]
    fn a_query_of_zeros_estimates_from_the_base_alone() {
        let dim = 40;
        let data = rows(50, dim);
        let q = Quantizer::fit(dim, 50, |s| data.get(s * dim..(s + 1) * dim)).expect("rows");
        let zeros = vec![0.0f32; dim];
        let prepared = q.query(Metric::Cosine, &zeros);
        assert_eq!(prepared.rounding_bound(), 0.0);
        let mut code = Vec::new();
        q.encode(&data[..dim], &mut code);
        assert_eq!(prepared.distance(&code), 1.0);
    }

    #[test]
    fn outliers_leave_the_other_values_the_whole_range() {
        // 4,096 values spread over [0, 1), four at 1,000 and four at -1,000: the range is
        // fitted to the spread ones, and the outliers are clamped to its edges.
        let mut data: Vec<f32> = (0..4096).map(|i| i as f32 / 4096.0).collect();
        data[..4].copy_from_slice(&[1000.0; 4]);
        data[4..8].copy_from_slice(&[-1000.0; 4]);
        let q = Quantizer::fit(1, data.len(), |s| data.get(s..s + 1)).expect("rows");
        assert!(q.low[0] >= 0.0, "low {}", q.low[0]);
        assert!(q.step[0] < 1.0 / 14.0, "step {}", q.step[0]);
        let code = |x: f32| {
            let mut code = Vec::new();
            q.encode(&[x], &mut code);
            code[0]
        };
        let codes: std::collections::BTreeSet<u8> = data.iter().map(|&x| code(x)).collect();
        assert_eq!(codes.len(), 16, "every code in use: {codes:?}");
        assert_eq!((code(-1000.0), code(1000.0)), (0, 15));
    }

    /// A dimension that is zero in all but a few rows: its quantiles are both 0, and the
    /// range falls back to its extremes (a step of 1 lost the values' scale, and a loaded
    /// quantiser of such vectors was refused as not fitted to them).
    #[test]
    fn a_dimension_zero_in_almost_every_row_keeps_the_scale_of_the_rest() {
        let dim = 4;
        let n = 4096;
        let mut data = vec![0.0f32; n * dim];
        for slot in 0..n {
            // Every dimension is zero but in three rows.
            if slot % 1500 == 7 {
                for d in 0..dim {
                    data[slot * dim + d] = 0.25 + 0.1 * d as f32 + 0.0001 * slot as f32;
                }
            }
        }
        let rows = |s: usize| data.get(s * dim..(s + 1) * dim);
        let q = Quantizer::fit(dim, n, rows).expect("rows");
        for d in 0..dim {
            assert!(q.step[d] < 0.1, "dimension {d}: step {}", q.step[d]);
        }
        let mut zero = Vec::new();
        q.encode(&[0.0; 4], &mut zero);
        let mut some = Vec::new();
        q.encode(&data[7 * dim..8 * dim], &mut some);
        assert_ne!(zero, some, "the rare values code apart from zero");
        assert!(
            q.represents(dim, n, rows),
            "the fit stands for its own rows"
        );
    }

    #[test]
    fn values_outside_the_fitted_range_are_clamped_not_wrapped() {
        let data = [0.0f32, 1.0, 0.5, 0.25];
        let q = Quantizer::fit(1, 4, |s| data.get(s..s + 1)).expect("rows");
        let mut lo = Vec::new();
        q.encode(&[-10.0], &mut lo);
        let mut hi = Vec::new();
        q.encode(&[10.0], &mut hi);
        let mut nan = Vec::new();
        q.encode(&[f32::NAN], &mut nan);
        assert_eq!((lo[0], hi[0], nan[0]), (0, 15, 0));
    }

    #[test]
    fn a_quantiser_reads_back_from_its_bytes_and_damaged_bytes_are_refused() {
        let dim = 5;
        let data = rows(40, dim);
        let q = Quantizer::fit(dim, 40, |s| data.get(s * dim..(s + 1) * dim)).expect("rows");
        let mut bytes = Vec::new();
        q.to_bytes(&mut bytes);
        assert_eq!(bytes.len(), 8 * dim);
        let back = Quantizer::from_bytes(dim, &bytes).expect("sound bytes");
        assert_eq!((&back.low, &back.step), (&q.low, &q.step));
        assert!(Quantizer::from_bytes(dim, &bytes[1..]).is_none(), "short");
        assert!(
            Quantizer::from_bytes(dim + 1, &bytes).is_none(),
            "another dimension"
        );
        for bad in [f32::NAN, f32::INFINITY, 0.0, -1.0] {
            let mut damaged = bytes.clone();
            damaged[4 * dim..4 * dim + 4].copy_from_slice(&bad.to_le_bytes());
            assert!(Quantizer::from_bytes(dim, &damaged).is_none(), "step {bad}");
        }
        let mut damaged = bytes.clone();
        damaged[..4].copy_from_slice(&f32::NAN.to_le_bytes());
        assert!(Quantizer::from_bytes(dim, &damaged).is_none(), "low NaN");
    }

    #[test]
    fn a_constant_dimension_and_no_rows_are_handled() {
        let data = [3.0f32, 3.0, 3.0];
        let q = Quantizer::fit(1, 3, |s| data.get(s..s + 1))
            .expect("rows")
            .for_metric(Metric::L2);
        let mut code = Vec::new();
        q.encode(&[3.0], &mut code);
        let d = q.query(Metric::L2, &[3.0]).distance(&code);
        assert_eq!(d, 0.0);
        assert!(Quantizer::fit(4, 0, |_| None).is_none());
        assert!(Quantizer::fit(4, 3, |_| None).is_none());
    }
}
