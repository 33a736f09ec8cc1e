//! Workload generators shared by the benches: RAG-shaped documents (chunks of about 1 KB of
//! text and a 384-d f32 vector each), deterministic so that every run measures the same work.

#![allow(dead_code)]

use ratchetdb::{Chunk, Document, Version};

pub const DIMENSION: usize = 384;
pub const CHUNKS_PER_DOC: usize = 8;

const WORDS: &[&str] = &[
    "index",
    "ratchet",
    "version",
    "chunk",
    "vector",
    "retrieval",
    "document",
    "source",
    "pipeline",
    "commit",
    "durable",
    "replay",
    "backfill",
    "tombstone",
    "generation",
    "guard",
    "embedding",
    "query",
    "snapshot",
    "writer",
    "reader",
    "stale",
    "fresh",
    "order",
];

pub fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// About 1 KB of words.
pub fn text(seed: u64) -> String {
    let mut state = seed;
    let mut out = String::with_capacity(1100);
    while out.len() < 1000 {
        out.push_str(WORDS[(splitmix(&mut state) % WORDS.len() as u64) as usize]);
        out.push(' ');
    }
    out
}

pub fn vector(seed: u64) -> Vec<f32> {
    let mut state = seed ^ 0xABCD;
    (0..DIMENSION)
        .map(|_| (splitmix(&mut state) % 2000) as f32 / 1000.0 - 1.0)
        .collect()
}

/// Revision `version` of document `doc`: 8 chunks whose text and vectors depend on both.
pub fn document(doc: u64, version: u64) -> Document {
    let mut d = Document::new("bench", format!("doc-{doc}"), Version::number(version));
    for c in 0..CHUNKS_PER_DOC as u64 {
        let seed = doc.wrapping_mul(1_000_003) ^ version.wrapping_mul(7919) ^ c;
        d = d.with_chunk(Chunk::new(text(seed), vector(seed)));
    }
    d
}

/// Standard normal from `splitmix` (Box-Muller).
pub fn gaussian(state: &mut u64) -> f32 {
    let mut uniform = || ((splitmix(state) >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
    let (u, v) = (uniform(), uniform());
    ((-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()) as f32
}

/// Embedding-like unit vectors for the search benches: a mixture of clusters in a
/// low-rank subspace with a decaying spectrum, plus isotropic noise — not uniform random
/// vectors, on which every ANN index looks alike. The same distribution as the search
/// tests' (`tests/search_support/mod.rs`): a `RANK`-d latent around one of `CLUSTERS` centres
/// (per-axis scale `1 / (1 + i / 16)`), times a fixed Gaussian `RANK x dim` basis,
/// normalised, plus noise of norm about `NOISE`, normalised.
pub struct Structured {
    dim: usize,
    basis: Vec<f32>,
    centres: Vec<f32>,
    scales: Vec<f32>,
}

impl Structured {
    pub const RANK: usize = 64;
    pub const CLUSTERS: usize = 64;
    pub const NOISE: f32 = 0.5;
    pub const SPREAD: f32 = 1.0;

    pub fn new(seed: u64, dim: usize) -> Structured {
        let mut state = seed;
        let basis = (0..Self::RANK * dim)
            .map(|_| gaussian(&mut state))
            .collect();
        let scales: Vec<f32> = (0..Self::RANK)
            .map(|i| 1.0 / (1.0 + i as f32 / 16.0))
            .collect();
        let centres = (0..Self::CLUSTERS * Self::RANK)
            .map(|i| gaussian(&mut state) * scales[i % Self::RANK])
            .collect();
        Structured {
            dim,
            basis,
            centres,
            scales,
        }
    }

    /// One unit vector; `state` is a `splitmix` state.
    pub fn sample(&self, state: &mut u64) -> Vec<f32> {
        let cluster = (splitmix(state) % Self::CLUSTERS as u64) as usize;
        let mut v = vec![0f32; self.dim];
        for l in 0..Self::RANK {
            let z = self.centres[cluster * Self::RANK + l]
                + Self::SPREAD * self.scales[l] * gaussian(state);
            for (x, b) in v
                .iter_mut()
                .zip(&self.basis[l * self.dim..(l + 1) * self.dim])
            {
                *x += z * b;
            }
        }
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        let noise = Self::NOISE / (self.dim as f32).sqrt();
        for x in &mut v {
            *x = *x / norm + noise * gaussian(state);
        }
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        for x in &mut v {
            *x /= norm;
        }
        v
    }

    /// `n` vectors drawn from `seed`.
    pub fn vectors(&self, seed: u64, n: usize) -> Vec<Vec<f32>> {
        let mut state = seed;
        (0..n).map(|_| self.sample(&mut state)).collect()
    }
}
