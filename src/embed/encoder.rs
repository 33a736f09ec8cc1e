//! The BERT encoder of all-MiniLM-L6-v2 on the CPU, in f32: embeddings, 6 transformer
//! layers, mean pooling.
//!
//! The texts of one call are packed without padding: every linear layer runs as one matrix
//! product over all real tokens of all texts (rows `[T, hidden]`, `T` the sum of the texts'
//! token counts), and attention runs per text over its own tokens only. So no work is spent
//! on padding, and a text's vector does not depend on which texts share its call. Bias adds
//! are folded into the products (the output starts as the bias), and the element-wise steps
//! (GELU, residual + layer norm, softmax) run in parallel over rows on rayon's pool, as the
//! products do (`gemm`). The activations live in a few buffers reused by every layer.

use crate::simd::matmul::{matmul, MatRef};
use rayon::prelude::*;

/// One linear layer: `y = x · w_t + bias`, `w_t` stored `[inputs, outputs]`, row-major.
struct Linear {
    w_t: Vec<f32>,
    bias: Vec<f32>,
    inputs: usize,
    outputs: usize,
}

/// Layer normalisation's gain and shift.
struct Norm {
    gain: Vec<f32>,
    shift: Vec<f32>,
}

struct Layer {
    /// Query, key and value in one product: outputs `[q | k | v]`.
    qkv: Linear,
    attention_out: Linear,
    attention_norm: Norm,
    intermediate: Linear,
    output: Linear,
    output_norm: Norm,
}

/// The model's shape, from config.json.
#[derive(Clone, Copy, Debug)]
pub(super) struct Shape {
    pub(super) vocab: usize,
    pub(super) hidden: usize,
    pub(super) heads: usize,
    pub(super) intermediate: usize,
    pub(super) layers: usize,
    pub(super) max_positions: usize,
    pub(super) type_vocab: usize,
    pub(super) eps: f32,
}

/// Where the weights come from: a tensor by name, as f32 values with their shape.
pub(super) trait Weights {
    /// The tensor `name`, which must have exactly `shape`.
    fn get(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, String>;
}

/// A loaded encoder.
pub(super) struct Encoder {
    shape: Shape,
    word: Vec<f32>,
    position: Vec<f32>,
    /// Token type 0's embedding (every token of a single-segment input).
    token_type: Vec<f32>,
    embedding_norm: Norm,
    layers: Vec<Layer>,
}

fn transpose(w: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let mut out = vec![0.0; w.len()];
    for r in 0..rows {
        for c in 0..cols {
            out[c * rows + r] = w[r * cols + c];
        }
    }
    out
}

impl Encoder {
    /// Loads BERT's weights (names as in Hugging Face's `BertModel`, with or without the
    /// `bert.` prefix is the caller's business).
    pub(super) fn load(shape: Shape, weights: &dyn Weights) -> Result<Self, String> {
        let h = shape.hidden;
        if shape.heads == 0 || !h.is_multiple_of(shape.heads) {
            return Err(format!(
                "hidden_size {h} is not a multiple of num_attention_heads {}",
                shape.heads
            ));
        }
        let linear = |name: &str, inputs: usize, outputs: usize| -> Result<Linear, String> {
            let w = weights.get(&format!("{name}.weight"), &[outputs, inputs])?;
            Ok(Linear {
                w_t: transpose(&w, outputs, inputs),
                bias: weights.get(&format!("{name}.bias"), &[outputs])?,
                inputs,
                outputs,
            })
        };
        let norm = |name: &str| -> Result<Norm, String> {
            Ok(Norm {
                gain: weights.get(&format!("{name}.weight"), &[h])?,
                shift: weights.get(&format!("{name}.bias"), &[h])?,
            })
        };
        let mut layers = Vec::with_capacity(shape.layers);
        for i in 0..shape.layers {
            let p = format!("encoder.layer.{i}");
            let q = linear(&format!("{p}.attention.self.query"), h, h)?;
            let k = linear(&format!("{p}.attention.self.key"), h, h)?;
            let v = linear(&format!("{p}.attention.self.value"), h, h)?;
            // [q | k | v] side by side: row r of w_t is input r's weights to every output.
            let mut w_t = Vec::with_capacity(h * 3 * h);
            for r in 0..h {
                for part in [&q, &k, &v] {
                    w_t.extend_from_slice(&part.w_t[r * h..(r + 1) * h]);
                }
            }
            let bias = [q.bias, k.bias, v.bias].concat();
            layers.push(Layer {
                qkv: Linear {
                    w_t,
                    bias,
                    inputs: h,
                    outputs: 3 * h,
                },
                attention_out: linear(&format!("{p}.attention.output.dense"), h, h)?,
                attention_norm: norm(&format!("{p}.attention.output.LayerNorm"))?,
                intermediate: linear(&format!("{p}.intermediate.dense"), h, shape.intermediate)?,
                output: linear(&format!("{p}.output.dense"), shape.intermediate, h)?,
                output_norm: norm(&format!("{p}.output.LayerNorm"))?,
            });
        }
        let token_types = weights.get(
            "embeddings.token_type_embeddings.weight",
            &[shape.type_vocab, h],
        )?;
        Ok(Self {
            shape,
            word: weights.get("embeddings.word_embeddings.weight", &[shape.vocab, h])?,
            position: weights.get(
                "embeddings.position_embeddings.weight",
                &[shape.max_positions, h],
            )?,
            token_type: token_types[..h].to_vec(),
            embedding_norm: norm("embeddings.LayerNorm")?,
            layers,
        })
    }

    /// The hidden size (the pooled vectors' dimension).
    pub(super) fn hidden(&self) -> usize {
        self.shape.hidden
    }

    /// Mean-pooled last hidden states, one per text (not normalised). `texts` are token ids,
    /// each non-empty and at most `max_positions` long, each id below the
    /// vocabulary size (checked: an error names the first that is not).
    pub(super) fn forward(&self, texts: &[&[u32]]) -> Result<Vec<Vec<f32>>, String> {
        let s = self.shape;
        let h = s.hidden;
        for (i, ids) in texts.iter().enumerate() {
            if ids.is_empty() || ids.len() > s.max_positions {
                return Err(format!(
                    "text {i} has {} tokens (1 to {} allowed)",
                    ids.len(),
                    s.max_positions
                ));
            }
            if let Some(id) = ids.iter().find(|&&id| id as usize >= s.vocab) {
                return Err(format!("text {i} has token id {id}, beyond the vocabulary"));
            }
        }
        let starts: Vec<usize> = texts
            .iter()
            .scan(0, |at, ids| {
                let start = *at;
                *at += ids.len();
                Some(start)
            })
            .collect();
        let tokens: usize = texts.iter().map(|ids| ids.len()).sum();
        if tokens == 0 {
            return Ok(Vec::new());
        }

        // Embeddings: word + position + token type 0, then layer norm.
        let mut x = vec![0.0f32; tokens * h];
        let rows: Vec<(usize, u32)> = texts
            .iter()
            .flat_map(|ids| ids.iter().enumerate().map(|(p, &id)| (p, id)))
            .collect();
        x.par_chunks_mut(h)
            .zip(rows.par_iter())
            .for_each(|(row, &(position, id))| {
                let word = &self.word[id as usize * h..][..h];
                let pos = &self.position[position * h..][..h];
                for (((out, w), p), t) in row.iter_mut().zip(word).zip(pos).zip(&self.token_type) {
                    *out = w + p + t;
                }
                normalize_row(row, &self.embedding_norm, s.eps);
            });

        let mut qkv = vec![0.0f32; tokens * 3 * h];
        let mut context = vec![0.0f32; tokens * h];
        let mut projected = vec![0.0f32; tokens * h];
        let mut inner = vec![0.0f32; tokens * s.intermediate];
        for layer in &self.layers {
            linear(&x, &layer.qkv, &mut qkv);
            self.attention(texts, &starts, &qkv, &mut context);
            linear(&context, &layer.attention_out, &mut projected);
            add_and_normalize(&mut x, &projected, &layer.attention_norm, h, s.eps);
            linear(&x, &layer.intermediate, &mut inner);
            inner.par_chunks_mut(4096).for_each(|part| {
                for v in part {
                    *v = gelu(*v);
                }
            });
            linear(&inner, &layer.output, &mut projected);
            add_and_normalize(&mut x, &projected, &layer.output_norm, h, s.eps);
        }

        Ok(texts
            .iter()
            .zip(&starts)
            .map(|(ids, &start)| {
                let mut mean = vec![0.0f32; h];
                for row in x[start * h..(start + ids.len()) * h].chunks_exact(h) {
                    for (m, v) in mean.iter_mut().zip(row) {
                        *m += v;
                    }
                }
                let n = ids.len() as f32;
                mean.iter_mut().for_each(|m| *m /= n);
                mean
            })
            .collect())
    }

    /// Self-attention of every text over its own tokens; writes each text's rows of
    /// `context` (`[T, hidden]`, heads side by side).
    fn attention(&self, texts: &[&[u32]], starts: &[usize], qkv: &[f32], context: &mut [f32]) {
        let h = self.shape.hidden;
        let heads = self.shape.heads;
        let head = h / heads;
        let scale = 1.0 / (head as f32).sqrt();
        // Each text's rows of `context`, as disjoint slices.
        let mut parts: Vec<(&mut [f32], usize, usize)> = Vec::with_capacity(texts.len());
        let mut rest = context;
        for (ids, &start) in texts.iter().zip(starts) {
            let (part, tail) = rest.split_at_mut(ids.len() * h);
            parts.push((part, start, ids.len()));
            rest = tail;
        }
        parts.into_par_iter().for_each(|(out, start, n)| {
            let rows = &qkv[start * 3 * h..(start + n) * 3 * h];
            let mut scores = vec![0.0f32; n * n];
            for hd in 0..heads {
                let q = &rows[hd * head..];
                let k = &rows[h + hd * head..];
                let v = &rows[2 * h + hd * head..];
                // scores = scale · q kᵀ  ([n, head] · [head, n])
                matmul(
                    MatRef {
                        data: q,
                        rows: n,
                        cols: head,
                        row_stride: 3 * h,
                        col_stride: 1,
                    },
                    MatRef {
                        data: k,
                        rows: head,
                        cols: n,
                        row_stride: 1,
                        col_stride: 3 * h,
                    },
                    &mut scores,
                    n,
                    1,
                    scale,
                    false,
                    false,
                );
                for row in scores.chunks_exact_mut(n) {
                    softmax(row);
                }
                // context[:, head] = scores · v  ([n, n] · [n, head])
                let out_head = &mut out[hd * head..];
                matmul(
                    MatRef {
                        data: &scores,
                        rows: n,
                        cols: n,
                        row_stride: n,
                        col_stride: 1,
                    },
                    MatRef {
                        data: v,
                        rows: n,
                        cols: head,
                        row_stride: 3 * h,
                        col_stride: 1,
                    },
                    out_head,
                    h,
                    1,
                    1.0,
                    false,
                    false,
                );
            }
        });
    }
}

/// GELU, erf form: `x/2 · (1 + erf(x/√2))`.
fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2))
}

/// erf to within 1e-6 absolute in f32 (Abramowitz and Stegun 7.1.26, 1.5e-7 in
/// real arithmetic): one `exp` and a few multiply-adds, where `libm::erff`'s branches made
/// GELU an eighth of the encoder's time. Beyond |x| = 4, erf is ±1 in f32.
fn erf(x: f32) -> f32 {
    const P: f32 = 0.327_591_1;
    const A: [f32; 5] = [
        0.254_829_6,
        -0.284_496_74,
        1.421_413_7,
        -1.453_152_1,
        1.061_405_4,
    ];
    let a = x.abs().min(4.0);
    let t = 1.0 / (1.0 + P * a);
    let poly = t * (A[0] + t * (A[1] + t * (A[2] + t * (A[3] + t * A[4]))));
    let y = 1.0 - poly * (-a * a).exp();
    y.copysign(x)
}

fn softmax(row: &mut [f32]) {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0f32;
    for v in row.iter_mut() {
        *v = (*v - max).exp();
        sum += *v;
    }
    let inv = 1.0 / sum;
    row.iter_mut().for_each(|v| *v *= inv);
}

/// Layer norm of one row, in place.
fn normalize_row(row: &mut [f32], norm: &Norm, eps: f32) {
    let n = row.len() as f32;
    let mean = row.iter().sum::<f32>() / n;
    let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / n;
    let inv = 1.0 / (var + eps).sqrt();
    for ((v, g), b) in row.iter_mut().zip(&norm.gain).zip(&norm.shift) {
        *v = (*v - mean) * inv * g + b;
    }
}

/// `x = layer_norm(x + y)`, row by row in parallel.
fn add_and_normalize(x: &mut [f32], y: &[f32], norm: &Norm, hidden: usize, eps: f32) {
    x.par_chunks_mut(hidden)
        .zip(y.par_chunks(hidden))
        .for_each(|(row, add)| {
            row.iter_mut().zip(add).for_each(|(v, a)| *v += a);
            normalize_row(row, norm, eps);
        });
}

/// `out = x · w_t + bias` for every row of `x` (`[rows, inputs]`), on every thread.
fn linear(x: &[f32], layer: &Linear, out: &mut [f32]) {
    let rows = x.len() / layer.inputs;
    let out = &mut out[..rows * layer.outputs];
    out.par_chunks_mut(layer.outputs)
        .for_each(|row| row.copy_from_slice(&layer.bias));
    matmul(
        MatRef {
            data: x,
            rows,
            cols: layer.inputs,
            row_stride: layer.inputs,
            col_stride: 1,
        },
        MatRef {
            data: &layer.w_t,
            rows: layer.inputs,
            cols: layer.outputs,
            row_stride: layer.outputs,
            col_stride: 1,
        },
        out,
        layer.outputs,
        1,
        1.0,
        true,
        true,
    );
}

#[cfg(test)]
mod tests {
    use super::erf;

    #[test]
    fn erf_agrees_with_libm() {
        let mut worst = 0.0f32;
        for i in -80_000..=80_000 {
            let x = i as f32 * 1e-4;
            worst = worst.max((erf(x) - libm::erff(x)).abs());
        }
        assert!(worst < 1e-6, "max |erf - libm::erff| = {worst}");
        assert_eq!(erf(100.0), 1.0);
        assert_eq!(erf(-100.0), -1.0);
        assert!(erf(0.0).abs() < 1e-6);
    }
}
