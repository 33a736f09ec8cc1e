//! A lexical feature-hashing embedder that needs no model files.
//!
//! Useful for: tests, bare machines, exact-term and near-duplicate search.
//! Not useful for: meaning. "car" and "automobile" share nothing here; use the MiniLM
//! embedder for semantic search.
//!
//! The recipe (version 1, pinned by the name `hash-lexical-v1-<dim>`; changing any step
//! below needs a new version in the name, because stored vectors would no longer match):
//!
//! 1. Lowercase the text (Unicode `char::to_lowercase`) and split it into word tokens: maximal
//!    runs of Unicode alphanumeric characters.
//! 2. Features: each token (`w:` prefix, weight 1.0), each adjacent token pair (`b:`, weight
//!    0.7), and the character trigrams of each token padded with `#` at both ends (`c:`,
//!    weight 0.3), so "embedding" and "embeddings" overlap.
//! 3. Each feature is hashed with 64-bit FNV-1a over its UTF-8 bytes followed by the
//!    SplitMix64 finaliser. The bucket is `hash % dim`; the top bit chooses the sign, which
//!    keeps collisions from biasing dot products.
//! 4. Sublinear term frequency: a feature seen `tf` times contributes `weight * sqrt(tf)`.
//!    (`sqrt`, unlike `ln`, is correctly rounded everywhere, so results are bit-identical
//!    across platforms.) Features are summed in sorted hash order, so the float additions
//!    happen in one fixed order.
//! 5. L2-normalise. A text with no word tokens (empty, whitespace, punctuation only) gets the
//!    fixed unit vector with 1.0 in bucket 0 and zeros elsewhere, because the store rejects
//!    zero vectors for cosine similarity.

use super::{normalize_in_place, EmbedError, Embedder};

/// The dimension of [`HashingEmbedder::default`], matching all-MiniLM-L6-v2.
pub(super) const DEFAULT_HASHING_DIMENSION: usize = 384;

/// Batches at least this large are split across threads.
const PARALLEL_BATCH_MIN: usize = 64;

const UNIGRAM_WEIGHT: f64 = 1.0;
const BIGRAM_WEIGHT: f64 = 0.7;
const TRIGRAM_WEIGHT: f64 = 0.3;

/// A deterministic lexical embedder: feature hashing of words, word pairs and character
/// trigrams into a fixed number of signed buckets. See the module documentation for the
/// exact recipe and for what it cannot do (it knows nothing of meaning).
#[derive(Debug, Clone)]
pub struct HashingEmbedder {
    dimension: usize,
    name: String,
}

impl HashingEmbedder {
    /// Creates an embedder with `dimension` buckets. Fails if `dimension` is 0 or above 8,192
    /// (the default [`Limits::max_dimension`](crate::Limits::max_dimension)): every vector
    /// it makes holds `dimension` floats, and one of 2^32 buckets took 16 GiB.
    pub fn new(dimension: usize) -> Result<Self, EmbedError> {
        if dimension == 0 || dimension > crate::options::DEFAULT_MAX_DIMENSION {
            return Err(EmbedError::InvalidDimension { dimension });
        }
        Ok(Self {
            dimension,
            name: format!("hash-lexical-v1-{dimension}"),
        })
    }

    fn embed_one(&self, text: &str) -> Vec<f32> {
        let mut features = Vec::new();
        collect_features(text, &mut features);
        let mut vector = vec![0.0_f32; self.dimension];
        if features.is_empty() {
            vector[0] = 1.0;
            return vector;
        }
        features.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
        let mut accumulated = vec![0.0_f64; self.dimension];
        let mut index = 0;
        while index < features.len() {
            let (hash, weight) = features[index];
            let mut count = 0_u32;
            while index < features.len() && features[index] == (hash, weight) {
                count += 1;
                index += 1;
            }
            let bucket = (hash % self.dimension as u64) as usize;
            let sign = if hash >> 63 == 1 { -1.0 } else { 1.0 };
            accumulated[bucket] += sign * weight * f64::from(count).sqrt();
        }
        for (out, value) in vector.iter_mut().zip(&accumulated) {
            *out = *value as f32;
        }
        if !normalize_in_place(&mut vector) {
            // Every feature cancelled out through sign collisions: vanishingly rare, but the
            // invariant is a unit vector, so fall back like an empty text.
            vector.iter_mut().for_each(|x| *x = 0.0);
            vector[0] = 1.0;
        }
        vector
    }
}

impl Default for HashingEmbedder {
    /// A 384-dimensional embedder (`hash-lexical-v1-384`).
    fn default() -> Self {
        Self {
            dimension: DEFAULT_HASHING_DIMENSION,
            name: format!("hash-lexical-v1-{DEFAULT_HASHING_DIMENSION}"),
        }
    }
}

impl Embedder for HashingEmbedder {
    fn name(&self) -> &str {
        &self.name
    }

    fn dimension(&self) -> usize {
        self.dimension
    }

    /// Never fails. Large batches are spread over the available cores; the output is the
    /// same as embedding each text alone.
    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        if texts.len() < PARALLEL_BATCH_MIN || threads < 2 {
            return Ok(texts.iter().map(|text| self.embed_one(text)).collect());
        }
        let per_thread = texts.len().div_ceil(threads);
        let parts: Vec<Vec<Vec<f32>>> = std::thread::scope(|scope| {
            let handles: Vec<_> = texts
                .chunks(per_thread)
                .map(|part| {
                    scope.spawn(move || part.iter().map(|text| self.embed_one(text)).collect())
                })
                .collect();
            handles
                .into_iter()
                .map(|handle| match handle.join() {
                    Ok(vectors) => vectors,
                    // embed_one does not panic; if it ever did, surface the bug unchanged.
                    Err(panic) => std::panic::resume_unwind(panic),
                })
                .collect()
        });
        Ok(parts.into_iter().flatten().collect())
    }
}

/// Appends `(hash, weight)` for every feature of `text` to `features`.
fn collect_features(text: &str, features: &mut Vec<(u64, f64)>) {
    let lowered = text.to_lowercase();
    let tokens: Vec<&str> = lowered
        .split(|c: char| !c.is_alphanumeric())
        .filter(|token| !token.is_empty())
        .collect();
    let mut scratch = String::new();
    for token in &tokens {
        features.push((feature_hash("w:", &[token]), UNIGRAM_WEIGHT));

        scratch.clear();
        scratch.push('#');
        scratch.push_str(token);
        scratch.push('#');
        let boundaries: Vec<usize> = scratch
            .char_indices()
            .map(|(i, _)| i)
            .chain(std::iter::once(scratch.len()))
            .collect();
        for window in boundaries.windows(4) {
            features.push((
                feature_hash("c:", &[&scratch[window[0]..window[3]]]),
                TRIGRAM_WEIGHT,
            ));
        }
    }
    for pair in tokens.windows(2) {
        features.push((feature_hash("b:", &[pair[0], " ", pair[1]]), BIGRAM_WEIGHT));
    }
}

/// FNV-1a 64 over the concatenated parts, then the SplitMix64 finaliser to spread the bits.
fn feature_hash(prefix: &str, parts: &[&str]) -> u64 {
    const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut hash = OFFSET_BASIS;
    for byte in std::iter::once(prefix)
        .chain(parts.iter().copied())
        .flat_map(str::bytes)
    {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(PRIME);
    }
    hash ^= hash >> 30;
    hash = hash.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    hash ^= hash >> 27;
    hash = hash.wrapping_mul(0x94d0_49bb_1331_11eb);
    hash ^ (hash >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cosine(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    fn embed(text: &str) -> Vec<f32> {
        HashingEmbedder::default()
            .embed(text)
            .unwrap_or_else(|e| panic!("hashing embedder failed: {e}"))
    }

    #[test]
    fn name_and_dimension() {
        let embedder = HashingEmbedder::default();
        assert_eq!(embedder.name(), "hash-lexical-v1-384");
        assert_eq!(embedder.dimension(), 384);
        let small = HashingEmbedder::new(16).map_err(|e| e.to_string());
        assert_eq!(small.as_ref().map(|e| e.name()), Ok("hash-lexical-v1-16"));
        assert!(matches!(
            HashingEmbedder::new(0),
            Err(EmbedError::InvalidDimension { dimension: 0 })
        ));
        // Regression (review): any width was taken, and one of 2^32 - 1 buckets allocated
        // 16 GiB a vector.
        assert!(HashingEmbedder::new(8192).is_ok());
        for dimension in [8193, u32::MAX as usize] {
            assert!(matches!(
                HashingEmbedder::new(dimension),
                Err(EmbedError::InvalidDimension { .. })
            ));
        }
    }

    #[test]
    fn deterministic_across_calls_and_instances() {
        let text = "Ratchets only turn one way; the index never moves backwards.";
        let a = embed(text);
        let b = HashingEmbedder::new(384)
            .and_then(|e| e.embed(text))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(a, b);
    }

    /// Pins the v1 recipe. If this fails, stored vectors no longer match: bump the version
    /// in the name instead of updating the numbers.
    #[test]
    fn recipe_v1_is_pinned() {
        assert_eq!(feature_hash("w:", &["ratchet"]), PINNED_RATCHET_HASH);
        let v = embed("hello world");
        assert_eq!(v, embed("HELLO,   world!"));
        let nonzero: Vec<usize> = (0..v.len()).filter(|&i| v[i] != 0.0).collect();
        assert_eq!(nonzero, PINNED_HELLO_WORLD_BUCKETS);
        let fingerprint: f64 = v
            .iter()
            .enumerate()
            .map(|(i, &x)| (i as f64 + 1.0) * f64::from(x))
            .sum();
        assert!(
            (fingerprint - PINNED_HELLO_WORLD_FINGERPRINT).abs() < 1e-9,
            "fingerprint {fingerprint:.12}"
        );
    }

    const PINNED_RATCHET_HASH: u64 = 4_662_167_513_394_991_093;
    const PINNED_HELLO_WORLD_BUCKETS: &[usize] = &[
        13, 68, 110, 111, 160, 164, 170, 212, 262, 322, 351, 352, 367,
    ];
    const PINNED_HELLO_WORLD_FINGERPRINT: f64 = 271.942918896675;

    #[test]
    fn outputs_are_unit_length() {
        for text in [
            "a",
            "short text",
            "Ünïcödé wörds and 数字 123",
            &"long ".repeat(500),
        ] {
            let v = embed(text);
            assert_eq!(v.len(), 384);
            let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            assert!((norm - 1.0).abs() < 1e-5, "{text:?} norm {norm}");
        }
    }

    #[test]
    fn similar_texts_are_closer_than_unrelated_ones() {
        let query = embed("how do I configure the storage engine durability mode");
        let similar = embed("configuring durability modes of the storage engine");
        let unrelated = embed("the recipe needs two eggs and a cup of flour");
        let (close, far) = (cosine(&query, &similar), cosine(&query, &unrelated));
        assert!(close > far + 0.2, "similar {close} vs unrelated {far}");
    }

    #[test]
    fn text_without_words_is_the_documented_unit_vector() {
        for text in ["", "   \n\t", "?!... --- ***"] {
            let v = embed(text);
            assert_eq!(v[0], 1.0, "{text:?}");
            assert!(v[1..].iter().all(|&x| x == 0.0), "{text:?}");
        }
    }

    #[test]
    fn parallel_batch_equals_one_by_one() {
        let embedder = HashingEmbedder::default();
        let owned: Vec<String> = (0..300)
            .map(|i| format!("document number {i} about topic {}", i % 7))
            .collect();
        let texts: Vec<&str> = owned.iter().map(String::as_str).collect();
        let batch = embedder
            .embed_batch(&texts)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(batch.len(), texts.len());
        for (text, vector) in texts.iter().zip(&batch) {
            assert_eq!(vector, &embed(text));
        }
        assert!(embedder
            .embed_batch(&[])
            .is_ok_and(|vectors| vectors.is_empty()));
    }
}
