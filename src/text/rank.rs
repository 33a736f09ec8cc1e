//! Ranking policy both backends share: BM25's parameters, rank fusion of a vector and a
//! text ranking, and the bounds on a text query.

use crate::error::{InputError, ReadError};
use crate::types::Hit;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// BM25's parameters: term-frequency saturation `k1` and length normalisation `b`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Bm25 {
    /// How fast repeats of a term stop adding to the score (default 1.2; at least 0).
    pub k1: f32,
    /// How much a long chunk is penalised, from 0 (not at all) to 1 (default 0.75).
    pub b: f32,
}

impl Default for Bm25 {
    fn default() -> Bm25 {
        Bm25 { k1: 1.2, b: 0.75 }
    }
}

impl Bm25 {
    pub(crate) fn check(&self) -> Result<(), ReadError> {
        if !(self.k1.is_finite() && self.k1 >= 0.0) {
            return Err(InputError::new("bm25.k1", "must be a finite number of at least 0").into());
        }
        if !(self.b.is_finite() && (0.0..=1.0).contains(&self.b)) {
            return Err(InputError::new("bm25.b", "must be between 0 and 1").into());
        }
        Ok(())
    }

    /// The inverse document frequency of a term in `df` of `n` chunks (the BM25+ form that
    /// is never negative: `ln(1 + (n - df + 0.5) / (df + 0.5))`).
    pub fn idf(n: u64, df: u64) -> f32 {
        let (n, df) = (n as f64, df as f64);
        (1.0 + (n - df + 0.5) / (df + 0.5)).ln() as f32
    }

    /// One term's contribution for a chunk where it occurs `tf` times, of `len` terms, with
    /// chunks of `avg_len` terms on average.
    pub fn term_score(&self, idf: f32, tf: u32, len: u32, avg_len: f32) -> f32 {
        let tf = tf as f32;
        let norm = if avg_len > 0.0 {
            1.0 - self.b + self.b * len as f32 / avg_len
        } else {
            1.0
        };
        idf * tf * (self.k1 + 1.0) / (tf + self.k1 * norm)
    }
}

/// How [`Store::search_hybrid`](crate::Store::search_hybrid) merges the vector and the
/// text ranking.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Fusion {
    /// Reciprocal rank fusion: a chunk scores `sum 1 / (k + rank)` over the rankings it is
    /// in (rank from 1). Scale-free; `k` 60 is the usual choice (the default).
    Rrf {
        /// The rank offset (at least 1).
        k: u32,
    },
    /// Each ranking's scores scaled to 0..1 (best 1), then `vector_weight * vector + (1 -
    /// vector_weight) * text`; a chunk absent from a ranking scores 0 there.
    Weighted {
        /// The vector ranking's weight, from 0 to 1.
        vector_weight: f32,
    },
}

impl Default for Fusion {
    fn default() -> Fusion {
        Fusion::Rrf { k: 60 }
    }
}

impl Fusion {
    pub(crate) fn check(&self) -> Result<(), ReadError> {
        match *self {
            Fusion::Rrf { k: 0 } => Err(InputError::new("fusion.k", "must be at least 1").into()),
            Fusion::Weighted { vector_weight }
                if !(vector_weight.is_finite() && (0.0..=1.0).contains(&vector_weight)) =>
            {
                Err(InputError::new("fusion.vector_weight", "must be between 0 and 1").into())
            }
            _ => Ok(()),
        }
    }
}

/// Merges a vector ranking and a text ranking of the same snapshot into the `k` best.
/// `higher_is_closer`: the vector scores' direction (false for L2 distances).
pub(crate) fn fuse(
    vector: Vec<Hit>,
    text: Vec<Hit>,
    k: usize,
    fusion: Fusion,
    higher_is_closer: bool,
) -> Vec<Hit> {
    type Key = (String, String, u32);
    let key = |h: &Hit| -> Key { (h.source.clone(), h.id.clone(), h.position) };
    let mut fused: HashMap<Key, (f32, Hit)> = HashMap::new();
    let mut add = |hits: Vec<Hit>, weights: Vec<f32>| {
        for (hit, weight) in hits.into_iter().zip(weights) {
            match fused.get_mut(&key(&hit)) {
                Some(entry) => entry.0 += weight,
                None => {
                    fused.insert(key(&hit), (weight, hit));
                }
            }
        }
    };
    match fusion {
        Fusion::Rrf { k: offset } => {
            let rrf = |len: usize| -> Vec<f32> {
                (1..=len)
                    .map(|rank| 1.0 / (offset as f32 + rank as f32))
                    .collect()
            };
            let (vl, tl) = (vector.len(), text.len());
            add(vector, rrf(vl));
            add(text, rrf(tl));
        }
        Fusion::Weighted { vector_weight } => {
            let scaled = |hits: &[Hit], higher: bool, weight: f32| -> Vec<f32> {
                let (lo, hi) = hits.iter().fold((f32::MAX, f32::MIN), |(lo, hi), h| {
                    (lo.min(h.score), hi.max(h.score))
                });
                hits.iter()
                    .map(|h| {
                        let unit = if hi > lo {
                            (h.score - lo) / (hi - lo)
                        } else {
                            1.0
                        };
                        weight * if higher { unit } else { 1.0 - unit }
                    })
                    .collect()
            };
            let vw = scaled(&vector, higher_is_closer, vector_weight);
            let tw = scaled(&text, true, 1.0 - vector_weight);
            add(vector, vw);
            add(text, tw);
        }
    }
    let mut hits: Vec<(f32, Hit)> = fused.into_values().collect();
    hits.sort_by(|a, b| {
        b.0.total_cmp(&a.0).then_with(|| {
            (&a.1.source, &a.1.id, a.1.position).cmp(&(&b.1.source, &b.1.id, b.1.position))
        })
    });
    hits.truncate(k);
    hits.into_iter()
        .map(|(score, mut hit)| {
            hit.score = score;
            hit
        })
        .collect::<Vec<_>>()
}

/// Refuses a text query longer than a chunk's text may be (`InputError` on `query`); both
/// backends call it before analysing the query.
pub(crate) fn check_query(query: &str, limits: &crate::options::Limits) -> Result<(), ReadError> {
    let max = limits.max_chunk_text_bytes;
    if query.len() > max {
        return Err(InputError::new(
            "query",
            format!(
                "is {} bytes; a text query may be at most {max} (Limits::max_chunk_text_bytes)",
                query.len()
            ),
        )
        .into());
    }
    Ok(())
}

/// How many of each ranking hybrid search fuses for `k` hits.
pub(crate) fn fusion_depth(k: usize, max_k: usize) -> usize {
    k.saturating_mul(4).max(50).min(max_k.max(k))
}
