//! `ratchetdb.Store`: the store, its writer (group commit), reads and searches.
//!
//! Every call into the store releases the GIL (`Python::detach`): the arguments are
//! converted to Rust values first, the store runs with the GIL released, and the result is
//! converted back. Upserts, deletes and retains go through one `ratchetdb::Writer` per store,
//! so writes from many Python threads are committed together (group commit).

use crate::convert::{self, json, sequence, strings, text, vector_rows, version, RowsArg, Ticket};
use crate::embed::{embed_released, PyEmbedder};
use crate::errors::{from_open, from_read, from_write, input, mismatch, ClosedError};
use crate::fork;
use crate::types::{document_to_py, hits_to_py, Hit, Outcome, RetainOutcome, VerifyReport};
use numpy::PyReadonlyArray1;
use parking_lot::RwLock;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use ratchetdb::{
    Chunk, Document, Durability, Filter, Metric, Op, OpOutcome, Options, SearchOptions, Version,
    WriteError, Writer,
};
use std::sync::Arc;
use std::time::Duration;

struct Open {
    store: ratchetdb::Store,
    writer: Option<Writer>,
}

/// An open ratchetdb store (one file). `Store(path, *, dimension=None, metric=None,
/// durability="immediate", read_only=False, embedder=None)` opens the file, creating it when
/// missing (`metric=None`: what the store recorded, cosine for a new one). A context manager;
/// `close()` closes it.
///
/// `embedder` (a `HashingEmbedder` or `MiniLM`): texts written without vectors are embedded
/// with it, and `search_query` embeds its question. The store records the embedder's model
/// and dimension; a store that recorded another model or dimension, or holds vectors of an
/// unrecorded model, refuses it (`MismatchError`).
///
/// A store belongs to the process that opened it: in a child made by `os.fork()` (as
/// `multiprocessing`'s "fork" start method does) every call raises `ForkedError`; open a
/// Store of your own in the child.
#[pyclass(module = "ratchetdb._ratchetdb", name = "Store", frozen)]
pub(crate) struct PyStore {
    open: RwLock<Option<Open>>,
    path: String,
    /// The process that opened the store, and the forks counted then (`fork::Origin`).
    origin: fork::Origin,
    /// The embedder given at open (the Python object, and the Rust embedder it wraps).
    embedder: Option<(Py<PyEmbedder>, Arc<dyn ratchetdb::Embedder>)>,
}

impl Drop for PyStore {
    /// In a forked child the store's file, locks and threads belong to the parent: it is
    /// forgotten, never closed (closing would write to the parent's file or wait for a
    /// writer thread the child does not have).
    ///
    /// Otherwise it is closed as `close()` closes it, with the GIL released: closing commits,
    /// syncs, saves the graph and may compact the file, and a store that is only collected
    /// (a LangChain vector store rarely sees `close()`) held every Python thread meanwhile (a
    /// review's finding).
    fn drop(&mut self) {
        let Some(open) = self.open.get_mut().take() else {
            return;
        };
        if self.origin.forked_strict() {
            std::mem::forget(open);
            return;
        }
        Python::attach(|py| {
            py.detach(move || {
                if let Some(writer) = &open.writer {
                    writer.shutdown();
                }
                drop(open);
            })
        });
    }
}

impl PyStore {
    fn store(&self) -> PyResult<ratchetdb::Store> {
        self.origin.check(&self.path)?;
        match &*self.open.read() {
            Some(open) => Ok(open.store.clone()),
            None => Err(ClosedError::new_err(format!(
                "the store {} is closed",
                self.path
            ))),
        }
    }

    fn writer(&self) -> PyResult<Writer> {
        self.origin.check_strict(&self.path)?;
        match &*self.open.read() {
            Some(Open {
                writer: Some(writer),
                ..
            }) => Ok(writer.clone()),
            Some(Open { store, .. }) => Err(from_write(WriteError::ReadOnly {
                path: store.path().to_path_buf(),
            })),
            None => Err(ClosedError::new_err(format!(
                "the store {} is closed",
                self.path
            ))),
        }
    }

    /// The search `search` runs, and how long the Rust `Store::search` call took.
    fn search_timed(
        &self,
        py: Python<'_>,
        vector: &Bound<'_, PyAny>,
        k: &Bound<'_, PyAny>,
        options: &SearchOptions,
    ) -> PyResult<(Vec<Py<Hit>>, std::time::Duration)> {
        let k = convert::count(k, "k")?;
        let store = self.store()?;
        let timed = |query: &[f32]| {
            let started = std::time::Instant::now();
            let hits = store.search(query, k, options);
            (hits, started.elapsed())
        };
        let (hits, inner) = match vector.extract::<PyReadonlyArray1<'_, f32>>() {
            Ok(array) => match array.as_slice() {
                // float32 and contiguous: read in place, no copy.
                Ok(query) => py.detach(|| timed(query)),
                Err(_) => {
                    let query = array.as_array().to_vec();
                    py.detach(|| timed(&query))
                }
            },
            Err(_) => {
                let query = convert::vector(vector, "vector")?;
                py.detach(|| timed(&query))
            }
        };
        let hits = hits_to_py(py, hits.map_err(from_read)?)?;
        Ok((hits, inner))
    }

    fn search_options(
        r#where: Option<&Bound<'_, PyAny>>,
        sources: Option<&Bound<'_, PyAny>>,
        exact: Option<&Bound<'_, PyAny>>,
        ef: Option<&Bound<'_, PyAny>>,
        rerank: Option<&Bound<'_, PyAny>>,
        group_by_document: Option<&Bound<'_, PyAny>>,
        space: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<SearchOptions> {
        let exact = match exact {
            Some(exact) => convert::flag(exact, "exact")?,
            None => false,
        };
        let per_document = match group_by_document {
            Some(flag) => convert::flag(flag, "group_by_document")?,
            None => false,
        };
        let mut options = SearchOptions::default()
            .exact(exact)
            .per_document(per_document);
        if let Some(ef) = convert::count_opt(ef, "ef")? {
            options = options.ef(ef);
        }
        if let Some(rerank) = convert::count_opt(rerank, "rerank")? {
            options = options.rerank(rerank);
        }
        if let Some(sources) = sources.filter(|s| !s.is_none()) {
            if sources.is_instance_of::<pyo3::types::PyString>() {
                options = options.source(text(sources, "sources")?);
            } else {
                for source in strings(sources, "sources")? {
                    options = options.source(source);
                }
            }
        }
        if let Some(filter) = r#where {
            if !filter.is_none() {
                let value = json(filter, "where")?;
                let filter = Filter::parse(&value).map_err(crate::errors::from_input)?;
                options = options.filter(filter);
            }
        }
        if let Some(space) = space.filter(|s| !s.is_none()) {
            options = options.space(text(space, "space")?);
        }
        Ok(options)
    }

    /// The embedder to embed with where the caller gave no vectors; without one, an
    /// `InputError` naming `field` (what the caller should have given).
    fn embedder_for(
        &self,
        py: Python<'_>,
        store: &ratchetdb::Store,
        field: &str,
        instead: &str,
    ) -> PyResult<Arc<dyn ratchetdb::Embedder>> {
        let Some((_, embedder)) = &self.embedder else {
            return Err(input(
                field,
                format!(
                    "is missing and this Store has no embedder: {instead}, or open the Store \
                     with embedder=ratchetdb.HashingEmbedder(...) or ratchetdb.MiniLM()"
                ),
            ));
        };
        // A read-only store learns what its writer records after it opened.
        check_recorded(py, store, embedder.as_ref(), &self.path)?;
        Ok(Arc::clone(embedder))
    }

    /// The query vector of `question` for the space `options` searches, embedded with the
    /// GIL released. The space (the named one, else the active one) is pinned in `options`,
    /// so an activation meanwhile does not change the space the question was embedded for;
    /// an embedder of another model or dimension than the space's is a `MismatchError`
    /// naming `space`.
    fn embed_question(
        &self,
        py: Python<'_>,
        store: &ratchetdb::Store,
        question: String,
        options: &mut SearchOptions,
        field: &str,
        instead: &str,
    ) -> PyResult<Vec<f32>> {
        let embedder = self.space_embedder(py, store, options, field, instead)?;
        embed_released(py, &embedder, &[question])?
            .pop()
            .ok_or_else(|| crate::errors::EmbedError::new_err("the embedder returned no vector"))
    }

    /// The Store's embedder, checked against the space `options` searches (pinned there):
    /// the default space's recorded model, or another space's model and dimension.
    fn space_embedder(
        &self,
        py: Python<'_>,
        store: &ratchetdb::Store,
        options: &mut SearchOptions,
        field: &str,
        instead: &str,
    ) -> PyResult<Arc<dyn ratchetdb::Embedder>> {
        let Some((_, embedder)) = &self.embedder else {
            return self.embedder_for(py, store, field, instead);
        };
        // A store without spaces (PostgreSQL) has only its default one. Read with the GIL
        // released: a snapshot waits for a commit recording the dimension or model.
        let Ok(spaces) = py.detach(|| store.spaces()) else {
            return self.embedder_for(py, store, field, instead);
        };
        let wanted = options.space.clone();
        let space = spaces.into_iter().find(|s| match &wanted {
            Some(name) => s.name == *name,
            None => s.active,
        });
        let Some(space) = space else {
            // An unknown space: the search names it.
            return Ok(Arc::clone(embedder));
        };
        options.space = Some(space.name.clone());
        let matches = if space.name == ratchetdb::DEFAULT_SPACE {
            match check_recorded(py, store, embedder.as_ref(), &self.path) {
                Ok(()) => true,
                // The embedder of another space: said so, naming `space`.
                Err(_) if extra_space_of(py, store, embedder.as_ref()).is_some() => false,
                Err(refused) => return Err(refused),
            }
        } else {
            space.model == embedder.name() && space.dimension == Some(embedder.dimension())
        };
        if !matches {
            let dimension = space
                .dimension
                .map_or_else(|| "?".to_string(), |d| d.to_string());
            return Err(mismatch(
                "space",
                format!(
                    "the vector space {:?} of {} holds vectors of {} ({dimension} dimensions),                      but the Store's embedder is {} ({} dimensions): search it with                      search(vector, space=...), or open the Store with that model's embedder",
                    space.name,
                    self.path,
                    space.model,
                    embedder.name(),
                    embedder.dimension()
                ),
                format!("stored {}, requested {}", space.model, embedder.name()),
            ));
        }
        Ok(Arc::clone(embedder))
    }

    /// Whether the Store's embedder makes the default space's vectors (it may be another
    /// space's: see `Store(embedder=...)`).
    fn embeds_default(&self, py: Python<'_>, store: &ratchetdb::Store) -> bool {
        self.embedder
            .as_ref()
            .is_some_and(|(_, e)| check_recorded(py, store, e.as_ref(), &self.path).is_ok())
    }

    /// Embeds, for every vector space besides the default one whose model and dimension are
    /// the Store's embedder's, the chunks of `docs` given without a vector in it whose text
    /// the stored revision does not hold (those reuse the stored one's vector), in one
    /// batch with the GIL released.
    fn embed_spaces(
        &self,
        py: Python<'_>,
        store: &ratchetdb::Store,
        docs: &mut [Document],
    ) -> PyResult<()> {
        let Some((_, embedder)) = &self.embedder else {
            return Ok(());
        };
        let Ok(spaces) = py.detach(|| store.spaces()) else {
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
        if names.is_empty() || docs.is_empty() {
            return Ok(());
        }
        // Per document, the positions that lack a vector in some of these spaces and whose
        // text the stored revision does not hold; a document the plan cannot judge (bad
        // input the write will name) is embedded whole.
        let wanted: Vec<Vec<usize>> = py.detach(|| {
            docs.iter()
                .map(|doc| {
                    let new: Vec<usize> = match store.plan(doc) {
                        Ok(plan) => plan.to_embed,
                        Err(_) => (0..doc.chunks.len()).collect(),
                    };
                    new.into_iter()
                        .filter(|&p| {
                            doc.chunks
                                .get(p)
                                .is_some_and(|c| names.iter().any(|n| !c.spaces.contains_key(n)))
                        })
                        .collect()
                })
                .collect()
        });
        let texts: Vec<String> = docs
            .iter()
            .zip(&wanted)
            .flat_map(|(doc, at)| at.iter().filter_map(|&p| doc.chunks.get(p)))
            .map(|c| c.text.clone())
            .collect();
        if texts.is_empty() {
            return Ok(());
        }
        let mut vectors = embed_released(py, embedder, &texts)?.into_iter();
        for (doc, at) in docs.iter_mut().zip(&wanted) {
            for &p in at {
                let (Some(chunk), Some(vector)) = (doc.chunks.get_mut(p), vectors.next()) else {
                    continue;
                };
                for name in &names {
                    chunk
                        .spaces
                        .entry(name.clone())
                        .or_insert_with(|| vector.clone());
                }
            }
        }
        Ok(())
    }

    /// Fills in the vectors of `docs[i]` for each `i` in `which` (documents given without
    /// vectors): the chunks `Store::plan` says need embedding are embedded (with the GIL
    /// released, in one batch), the others are left for the store to reuse the stored
    /// revision's vector of the same text. Returns the documents that left chunks to reuse,
    /// as they were then: if the stored revision changes before the write (`MissingVector`),
    /// `embed_rest` embeds the rest and the write is retried.
    fn embed_missing(
        &self,
        py: Python<'_>,
        store: &ratchetdb::Store,
        docs: &mut [Document],
        which: &[usize],
        field: &str,
    ) -> PyResult<Vec<(usize, Document)>> {
        if which.is_empty() {
            return Ok(Vec::new());
        }
        let embedder = self.embedder_for(py, store, field, "pass one vector per text")?;
        // Positions to embed per listed document; a document the plan cannot judge (bad
        // input the write will name) is embedded whole.
        let positions: Vec<Vec<usize>> = py.detach(|| {
            which
                .iter()
                .map(|&i| match store.plan(&docs[i]) {
                    Ok(plan) => plan.to_embed,
                    Err(_) => (0..docs[i].chunks.len()).collect(),
                })
                .collect()
        });
        let texts: Vec<String> = which
            .iter()
            .zip(&positions)
            .flat_map(|(&i, at)| at.iter().map(move |&p| (i, p)))
            .filter_map(|(i, p)| docs[i].chunks.get(p).map(|c| c.text.clone()))
            .collect();
        let mut vectors = embed_released(py, &embedder, &texts)?.into_iter();
        let mut retry = Vec::new();
        for (&i, at) in which.iter().zip(&positions) {
            for &p in at {
                if let Some(chunk) = docs[i].chunks.get_mut(p) {
                    chunk.vector = vectors.next();
                }
            }
            if docs[i].chunks.iter().any(|c| c.vector.is_none()) {
                retry.push((i, docs[i].clone()));
            }
        }
        Ok(retry)
    }

    /// `doc` with every chunk that lacks a vector embedded (the retry after a
    /// `MissingVector`: the stored vectors it meant to reuse are gone).
    fn embed_rest(&self, py: Python<'_>, mut doc: Document) -> PyResult<Document> {
        let Some((_, embedder)) = &self.embedder else {
            return Ok(doc);
        };
        let at: Vec<usize> = (0..doc.chunks.len())
            .filter(|&p| doc.chunks[p].vector.is_none())
            .collect();
        let texts: Vec<String> = at.iter().map(|&p| doc.chunks[p].text.clone()).collect();
        for (p, vector) in at.into_iter().zip(embed_released(py, embedder, &texts)?) {
            doc.chunks[p].vector = Some(vector);
        }
        Ok(doc)
    }

    /// Writes `ops` in one batch; the upserts listed in `retry` (documents that left chunks
    /// to reuse) that the store refuses for a missing vector are embedded whole and written
    /// again in a second batch.
    fn write_ops(
        &self,
        py: Python<'_>,
        store: &ratchetdb::Store,
        ops: Vec<Op>,
        retry: Vec<(usize, Document)>,
    ) -> PyResult<Vec<Result<OpOutcome, WriteError>>> {
        let mut results = py.detach(|| store.write_batch(ops)).map_err(from_write)?;
        let mut again = Vec::new();
        let mut docs = Vec::new();
        for (i, doc) in retry {
            if matches!(results.get(i), Some(Err(WriteError::MissingVector { .. }))) {
                again.push(i);
                docs.push(Op::Upsert(self.embed_rest(py, doc)?));
            }
        }
        if !docs.is_empty() {
            let second = py.detach(|| store.write_batch(docs)).map_err(from_write)?;
            for (i, result) in again.into_iter().zip(second) {
                results[i] = result;
            }
        }
        Ok(results)
    }
}

/// The model and dimension `store` recorded, read with the GIL released: the dimension's
/// lock is held by a commit that records them (a first write, a promotion) across its
/// fsync, and another Python thread keeps running meanwhile.
fn recorded(py: Python<'_>, store: &ratchetdb::Store) -> (Option<String>, Option<usize>) {
    py.detach(|| (store.model().map(str::to_string), store.dimension()))
}

/// Refuses `embedder` for `store` if the store recorded another model or dimension, or
/// holds vectors of an unrecorded model (`MismatchError` naming `model` or `dimension`).
fn check_recorded(
    py: Python<'_>,
    store: &ratchetdb::Store,
    embedder: &dyn ratchetdb::Embedder,
    path: &str,
) -> PyResult<()> {
    let (model, dimension) = (embedder.name(), embedder.dimension());
    let (stored_model, stored_dimension) = recorded(py, store);
    match stored_model {
        Some(stored) if stored != model => {
            return Err(from_open(ratchetdb::OpenError::Mismatch {
                field: "model",
                stored,
                requested: model.to_string(),
            }))
        }
        None if stored_dimension.is_some() => {
            return Err(mismatch(
                "model",
                format!(
                    "{path} holds vectors of an unrecorded model, so {model}'s cannot be added \
                     to it; open it without embedder= and pass vectors, or use another file"
                ),
                format!("stored none, requested {model}"),
            ))
        }
        _ => {}
    }
    match stored_dimension {
        Some(stored) if stored != dimension => Err(from_open(ratchetdb::OpenError::Mismatch {
            field: "dimension",
            stored: stored.to_string(),
            requested: dimension.to_string(),
        })),
        _ => Ok(()),
    }
}

/// The first vector space besides the default one whose model and dimension are
/// `embedder`'s (`None` on a store without spaces); the spaces are read with the GIL
/// released.
fn extra_space_of(
    py: Python<'_>,
    store: &ratchetdb::Store,
    embedder: &dyn ratchetdb::Embedder,
) -> Option<String> {
    let spaces = py.detach(|| store.spaces()).ok()?;
    spaces
        .into_iter()
        // The default space first: after a promotion it is listed under the promoted
        // space's name, so it is skipped by position, not by name.
        .skip(1)
        .find(|s| s.model == embedder.name() && s.dimension == Some(embedder.dimension()))
        .map(|s| s.name)
}

/// A document from the arguments `upsert` and `plan` take.
#[allow(clippy::too_many_arguments)]
pub(crate) fn document(
    source: String,
    id: String,
    version: Version,
    texts: &Bound<'_, PyAny>,
    vectors: Option<&Bound<'_, PyAny>>,
    metas: Option<&Bound<'_, PyAny>>,
    meta: Option<&Bound<'_, PyAny>>,
    space_vectors: Option<&Bound<'_, PyAny>>,
) -> PyResult<Document> {
    let texts = strings(texts, "texts")?;
    let in_spaces = space_rows(space_vectors, texts.len())?;
    let vectors = match vectors {
        Some(v) if !v.is_none() => vector_rows(v, texts.len(), "vectors")?,
        _ => vec![None; texts.len()],
    };
    let metas = match metas {
        Some(m) if !m.is_none() => {
            let items = sequence(m, "metas")?;
            if items.len() != texts.len() {
                return Err(input(
                    "metas",
                    format!("has {} entries for {} texts", items.len(), texts.len()),
                ));
            }
            items
                .iter()
                .enumerate()
                .map(|(i, m)| json(m, &format!("metas[{i}]")))
                .collect::<PyResult<Vec<_>>>()?
        }
        _ => vec![serde_json::Value::Null; texts.len()],
    };
    let mut doc = Document::new(source, id, version);
    if let Some(meta) = meta {
        doc = doc.with_meta(json(meta, "meta")?);
    }
    for (i, ((text, vector), meta)) in texts.into_iter().zip(vectors).zip(metas).enumerate() {
        let mut chunk = match vector {
            Some(vector) => Chunk::new(text, vector),
            None => Chunk::without_vector(text),
        };
        for (space, rows) in &in_spaces {
            if let Some(Some(row)) = rows.get(i) {
                chunk.spaces.insert(space.clone(), row.clone());
            }
        }
        doc = doc.with_chunk(chunk.with_meta(meta));
    }
    Ok(doc)
}

/// One optional vector per text.
type Rows = Vec<Option<Vec<f32>>>;

/// `space_vectors`: a dict of vector space name to one row per text (a 2-D array, or a list
/// of rows, a row `None` for a chunk left without a vector in that space), as
/// `(name, rows)`; absent or `None`, none.
pub(crate) fn space_rows(
    value: Option<&Bound<'_, PyAny>>,
    texts: usize,
) -> PyResult<Vec<(String, Rows)>> {
    let Some(value) = value.filter(|v| !v.is_none()) else {
        return Ok(Vec::new());
    };
    let dict = value.cast::<PyDict>().map_err(|_| {
        input(
            "space_vectors",
            format!(
                "is of type {}; give a dict of space name to vectors ({{\"minilm\": rows}})",
                convert::type_name(value)
            ),
        )
    })?;
    let mut out = Vec::with_capacity(dict.len());
    for (key, rows) in dict.iter() {
        let name = text(&key, "space_vectors")?;
        let field = format!("space_vectors[{name:?}]");
        out.push((name, vector_rows(&rows, texts, &field)?));
    }
    Ok(out)
}

fn op_outcome(py: Python<'_>, outcome: OpOutcome, incoming: Version) -> PyResult<Py<PyAny>> {
    match outcome {
        OpOutcome::Document(outcome) => {
            Ok(Py::new(py, Outcome::new(py, outcome, incoming)?)?.into_any())
        }
        OpOutcome::Retain(outcome) => Ok(Py::new(py, RetainOutcome::from(outcome))?.into_any()),
        other => Err(crate::errors::RatchetError::new_err(format!(
            "an outcome this binding does not know: {other:?}"
        ))),
    }
}

fn item<'py>(dict: &Bound<'py, PyDict>, key: &str, field: &str) -> PyResult<Bound<'py, PyAny>> {
    dict.get_item(key)?
        .ok_or_else(|| input(field, format!("has no {key:?}")))
}

/// One operation of `write_batch`: a dict with `"op"` (`"upsert"`, `"delete"` or
/// `"retain"`) and the arguments of the method of that name; `true` for an upsert without
/// `"vectors"` (to embed).
fn batch_op(value: &Bound<'_, PyAny>, field: &str) -> PyResult<(Op, Version, bool)> {
    let dict = value
        .cast::<PyDict>()
        .map_err(|_| input(field, "must be a dict with an \"op\" key"))?;
    let kind = text(&item(dict, "op", field)?, &format!("{field}.op"))?;
    let source = text(&item(dict, "source", field)?, &format!("{field}.source"))?;
    let version = version(&item(dict, "version", field)?, &format!("{field}.version"))?;
    let mut to_embed = false;
    let op = match kind.as_str() {
        "upsert" => {
            let id = text(&item(dict, "id", field)?, &format!("{field}.id"))?;
            let vectors = dict.get_item("vectors")?;
            to_embed = vectors.as_ref().is_none_or(|v| v.is_none());
            let doc = document(
                source,
                id,
                version,
                &item(dict, "texts", field)?,
                vectors.as_ref(),
                dict.get_item("metas")?.as_ref(),
                dict.get_item("meta")?.as_ref(),
                dict.get_item("space_vectors")?.as_ref(),
            )
            .map_err(|e| prefix(value.py(), e, field))?;
            Op::Upsert(doc)
        }
        "delete" => Op::Delete {
            source,
            id: text(&item(dict, "id", field)?, &format!("{field}.id"))?,
            version,
        },
        "retain" => Op::Retain {
            source,
            present: strings(&item(dict, "ids", field)?, &format!("{field}.ids"))?,
            version,
        },
        other => {
            return Err(input(
                format!("{field}.op"),
                format!("is {other:?}; expected \"upsert\", \"delete\" or \"retain\""),
            ))
        }
    };
    Ok((op, version, to_embed))
}

/// An input error of one batch operation, its field prefixed with the operation's.
fn prefix(py: Python<'_>, error: PyErr, field: &str) -> PyErr {
    renamed(py, error, |inner| format!("{field}.{inner}"))
}

/// An input error (of any `InputError` class) with its field renamed; any other error as
/// it is.
fn renamed(py: Python<'_>, error: PyErr, rename: impl Fn(&str) -> String) -> PyErr {
    if !error.is_instance_of::<crate::errors::InputError>(py) {
        return error;
    }
    let value = error.value(py);
    let Ok(field) = value.getattr("field").and_then(|f| f.extract::<String>()) else {
        return error;
    };
    let problem = value
        .getattr("problem")
        .and_then(|p| p.extract::<String>())
        .unwrap_or_default();
    let field = rename(&field);
    match error
        .get_type(py)
        .call1((format!("invalid {field}: {problem}"),))
    {
        Ok(renamed) => {
            // Setting attributes on a fresh exception instance cannot fail short of memory
            // exhaustion; the exception is returned either way.
            let _ = renamed.setattr("field", &field);
            let _ = renamed.setattr("problem", &problem);
            PyErr::from_value(renamed)
        }
        Err(_) => error,
    }
}

/// The arguments of `add` for item `i`, as `add` names them: the field an error of the
/// item's one-chunk document names (`id`, `chunks[0].vector[3]` as `vectors[0][3]`)
/// becomes the list's (`ids[i]`, `vectors[i][3]`); a value given once for every item
/// (`sources`, `versions`) keeps its name.
fn add_field(field: &str, i: usize, lists: (bool, bool)) -> String {
    let (sources_listed, versions_listed) = lists;
    match field {
        "source" if sources_listed => format!("sources[{i}]"),
        "source" => "sources".to_string(),
        "id" => format!("ids[{i}]"),
        "version" if versions_listed => format!("versions[{i}]"),
        "version" => "versions".to_string(),
        _ if field.starts_with("space_vectors[") => {
            // `space_vectors["minilm"][0]...`: the item's row, `[i]`.
            match field.find("][0]") {
                Some(at) => format!("{}][{i}]{}", &field[..at], &field[at + 4..]),
                None => field.to_string(),
            }
        }
        _ => {
            for list in ["texts", "vectors", "metas"] {
                if let Some(rest) = field.strip_prefix(list).and_then(|r| r.strip_prefix("[0]")) {
                    return format!("{list}[{i}]{rest}");
                }
            }
            field.to_string()
        }
    }
}

/// One value per item: a list or tuple of `n` values (`true`), or any other value, given
/// once for every item (`false`).
fn per_item<'py>(
    value: &Bound<'py, PyAny>,
    n: usize,
    field: &str,
) -> PyResult<(Vec<Bound<'py, PyAny>>, bool)> {
    if value.cast::<PyList>().is_ok() || value.cast::<pyo3::types::PyTuple>().is_ok() {
        let items = sequence(value, field)?;
        if items.len() != n {
            return Err(input(
                field,
                format!("has {} items for {n} ids", items.len()),
            ));
        }
        return Ok((items, true));
    }
    Ok((vec![value.clone(); n], false))
}

#[pymethods]
impl PyStore {
    #[new]
    #[pyo3(signature = (path, *, dimension=None, metric=None, durability=None, read_only=None, embedder=None, memory_budget=None), text_signature = "(path, *, dimension=None, metric=None, durability='immediate', read_only=False, embedder=None, memory_budget=None)")]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        path: &Bound<'_, PyAny>,
        dimension: Option<&Bound<'_, PyAny>>,
        metric: Option<&Bound<'_, PyAny>>,
        durability: Option<&Bound<'_, PyAny>>,
        read_only: Option<&Bound<'_, PyAny>>,
        embedder: Option<&Bound<'_, PyAny>>,
        memory_budget: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyStore> {
        let path: std::path::PathBuf = path.extract().map_err(|_| {
            input(
                "path",
                format!(
                    "is of type {}; give a str or os.PathLike",
                    convert::type_name(path)
                ),
            )
        })?;
        let read_only = match read_only {
            Some(flag) if !flag.is_none() => convert::flag(flag, "read_only")?,
            _ => false,
        };
        let embedder = match embedder.filter(|e| !e.is_none()) {
            Some(object) => {
                let object = object.cast::<PyEmbedder>().map_err(|_| {
                    input(
                        "embedder",
                        format!(
                            "is of type {}; give a ratchetdb.HashingEmbedder or ratchetdb.MiniLM",
                            convert::type_name(object)
                        ),
                    )
                })?;
                Some((object.clone().unbind(), object.get().embedder()))
            }
            None => None,
        };
        let mut options = Options::default();
        if let Some(bytes) = convert::count_opt(memory_budget, "memory_budget")? {
            options = options.memory_budget(bytes as u64);
        }
        if let Some(dimension) = convert::count_opt(dimension, "dimension")? {
            if let Some((_, embedder)) = &embedder {
                if dimension != embedder.dimension() {
                    return Err(input(
                        "dimension",
                        format!(
                            "is {dimension}, but the embedder's vectors have {} dimensions",
                            embedder.dimension()
                        ),
                    ));
                }
            }
            options = options.dimension(dimension);
        }
        if let Some(name) = metric.filter(|m| !m.is_none()) {
            let name = text(name, "metric")?;
            let name = name.as_str();
            let metric = Metric::parse(name).ok_or_else(|| {
                input(
                    "metric",
                    format!("is {name:?}; expected \"cosine\", \"dot\" or \"l2\""),
                )
            })?;
            options = options.metric(metric);
        }
        let durability = match durability.filter(|d| !d.is_none()) {
            Some(name) => text(name, "durability")?,
            None => "immediate".to_string(),
        };
        options = options.durability(match durability.as_str() {
            "immediate" => Durability::Immediate,
            "none" => Durability::None,
            other => {
                return Err(input(
                    "durability",
                    format!("is {other:?}; expected \"immediate\" or \"none\""),
                ))
            }
        });
        let display = path.display().to_string();
        // With an embedder, a new file records its model and dimension; an existing one is
        // opened as it is, checked, and reopened to record them if it has not yet.
        let recording = |options: Options, embedder: &dyn ratchetdb::Embedder| {
            options
                .model(embedder.name())
                .dimension(embedder.dimension())
        };
        let store = py
            .detach(|| {
                // A stat of the path: with the GIL released, as any file system call.
                let fresh = !read_only && !path.exists();
                if read_only {
                    ratchetdb::Store::open_read_only(&path)
                } else {
                    match (&embedder, fresh) {
                        (Some((_, e)), true) => {
                            ratchetdb::Store::open(&path, recording(options.clone(), e.as_ref()))
                        }
                        _ => ratchetdb::Store::open(&path, options.clone()),
                    }
                }
            })
            .map_err(from_open)?;
        let store = match &embedder {
            Some((_, e)) => {
                // An embedder of another vector space's model is accepted: it embeds that
                // space's vectors and questions (a store moving to a new model).
                let of_default = match check_recorded(py, &store, e.as_ref(), &display) {
                    Ok(()) => true,
                    Err(_) if extra_space_of(py, &store, e.as_ref()).is_some() => false,
                    Err(refused) => return Err(refused),
                };
                let (model, dimension) = recorded(py, &store);
                if read_only || !of_default || (model.is_some() && dimension.is_some()) {
                    store
                } else {
                    // Closing the first open and the reopen, both without the GIL.
                    py.detach(move || {
                        drop(store);
                        ratchetdb::Store::open(&path, recording(options, e.as_ref()))
                    })
                    .map_err(from_open)?
                }
            }
            None => store,
        };
        let writer = (!read_only).then(|| store.writer());
        Ok(PyStore {
            open: RwLock::new(Some(Open { store, writer })),
            path: display,
            origin: fork::Origin::now(),
            embedder,
        })
    }

    /// Commits what the writer holds and closes the file (idempotent).
    fn close(&self, py: Python<'_>) {
        if self.origin.forked_strict() {
            // The parent's: forgotten, never closed (see `Drop`); without waiting for a lock
            // a thread of the parent may have held when it forked.
            if let Some(mut open) = self.open.try_write() {
                if let Some(open) = open.take() {
                    std::mem::forget(open);
                }
            }
            return;
        }
        let open = self.open.write().take();
        if let Some(open) = open {
            py.detach(move || {
                if let Some(writer) = &open.writer {
                    writer.shutdown();
                }
                drop(open);
            });
        }
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        self.close(py);
        false
    }

    /// Whether `close()` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.open.read().is_none()
    }

    /// The file's path.
    #[getter]
    fn path(&self) -> String {
        self.path.clone()
    }

    /// The vector dimension, once fixed (`None` before the first vector).
    #[getter]
    fn dimension(&self, py: Python<'_>) -> PyResult<Option<usize>> {
        let store = self.store()?;
        // With the GIL released: a commit that fixes the dimension holds its lock across its
        // fsync (regression: this read waited on the writer with every Python thread held).
        Ok(py.detach(|| store.dimension()))
    }

    /// The metric: `"cosine"`, `"dot"` or `"l2"`.
    #[getter]
    fn metric(&self) -> PyResult<&'static str> {
        Ok(self.store()?.metric().as_str())
    }

    /// The embedding model's name the store recorded (`None` if none was recorded).
    #[getter]
    fn model(&self) -> PyResult<Option<String>> {
        Ok(self.store()?.model().map(str::to_string))
    }

    /// The embedder given at open (`None` without one).
    #[getter]
    fn embedder(&self, py: Python<'_>) -> Option<Py<PyEmbedder>> {
        self.embedder
            .as_ref()
            .map(|(object, _)| object.clone_ref(py))
    }

    /// Writes a revision of document `(source, id)`, guarded: refused (`status="skipped"`)
    /// unless `version` is newer than the stored one. `texts` are the chunks, `vectors` one
    /// row per text (a 2-D array; a row may be `None` in a list to reuse the stored vector of
    /// identical text), `metas` one metadata dict per chunk, `meta` the document's.
    ///
    /// Each call is a commit of its own, and with the default `durability="immediate"` a
    /// commit waits for the disk (fsync): a loop of `upsert` calls pays one disk flush per
    /// document (milliseconds each), however small the documents. To write many documents,
    /// use `add` (one call, one commit for all of them) or `write_batch`; calls from many
    /// threads at once are also committed together.
    ///
    /// `vectors=None` (or left out): the Store's embedder embeds the texts the stored revision
    /// holds no vector for (the others reuse theirs); without an embedder every text reuses the
    /// stored revision's vector of the same text, and a text without one is refused
    /// (`MissingVectorError`).
    ///
    /// `space_vectors`: the chunks' vectors in the store's other vector spaces, a dict of
    /// space name to one row per text (`{"minilm": rows}`). Once a space is complete (see
    /// `spaces()`) every new chunk needs a vector in it: given here, else embedded by the
    /// Store's embedder when that is the space's model, else refused (an `InputError` naming
    /// `space_vectors["minilm"][i]`).
    #[pyo3(signature = (source, id, version, texts, vectors=None, *, metas=None, meta=None, space_vectors=None))]
    #[allow(clippy::too_many_arguments)]
    fn upsert(
        &self,
        py: Python<'_>,
        source: &Bound<'_, PyAny>,
        id: &Bound<'_, PyAny>,
        version: &Bound<'_, PyAny>,
        texts: &Bound<'_, PyAny>,
        vectors: Option<&Bound<'_, PyAny>>,
        metas: Option<&Bound<'_, PyAny>>,
        meta: Option<&Bound<'_, PyAny>>,
        space_vectors: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Outcome> {
        let source = text(source, "source")?;
        let id = text(id, "id")?;
        let version = convert::version(version, "version")?;
        // Without an embedder, no vectors means: reuse the stored revision's vectors of the
        // same texts (the store refuses the write when a text has none).
        let store = self.store()?;
        let to_embed = self.embeds_default(py, &store) && vectors.is_none_or(|v| v.is_none());
        let mut doc = document(
            source,
            id,
            version,
            texts,
            vectors,
            metas,
            meta,
            space_vectors,
        )?;
        let writer = self.writer()?;
        let mut retry = Vec::new();
        if to_embed {
            py.detach(|| store.check(&doc)).map_err(from_write)?;
            retry =
                self.embed_missing(py, &store, std::slice::from_mut(&mut doc), &[0], "vectors")?;
        }
        self.embed_spaces(py, &store, std::slice::from_mut(&mut doc))?;
        let outcome = match (py.detach(|| writer.upsert(doc)), retry.pop()) {
            (Err(WriteError::MissingVector { .. }), Some((_, doc))) => {
                let doc = self.embed_rest(py, doc)?;
                py.detach(|| writer.upsert(doc))
            }
            (result, _) => result,
        }
        .map_err(from_write)?;
        Outcome::new(py, outcome, version)
    }

    /// Deletes document `(source, id)` at `version`: a tombstone that refuses every later
    /// write not newer than it (also for a document not seen yet).
    fn delete(
        &self,
        py: Python<'_>,
        source: &Bound<'_, PyAny>,
        id: &Bound<'_, PyAny>,
        version: &Bound<'_, PyAny>,
    ) -> PyResult<Outcome> {
        let source = text(source, "source")?;
        let id = text(id, "id")?;
        let version = convert::version(version, "version")?;
        let writer = self.writer()?;
        let outcome = py
            .detach(|| writer.delete(&source, &id, version))
            .map_err(from_write)?;
        Outcome::new(py, outcome, version)
    }

    /// A listing of what exists in `source` at `version`: every id it omits is deleted at
    /// `version` (newer documents are kept).
    fn retain(
        &self,
        py: Python<'_>,
        source: &Bound<'_, PyAny>,
        ids: &Bound<'_, PyAny>,
        version: &Bound<'_, PyAny>,
    ) -> PyResult<RetainOutcome> {
        let source = text(source, "source")?;
        let version = convert::version(version, "version")?;
        let present = strings(ids, "ids")?;
        let writer = self.writer()?;
        let result = py.detach(|| {
            writer
                .submit(Op::Retain {
                    source,
                    present,
                    version,
                })?
                .wait()
        });
        match result.map_err(from_write)? {
            OpOutcome::Retain(outcome) => Ok(outcome.into()),
            other => Err(crate::errors::RatchetError::new_err(format!(
                "a retain answered {other:?}"
            ))),
        }
    }

    /// Writes many one-text documents in one call and one commit, the call a loop of
    /// `upsert` is best replaced with (Chroma's `add`, with versions): item `i` is document
    /// `(sources[i], ids[i])` at version `versions[i]`, holding one chunk: `texts[i]`, with
    /// vector `vectors[i]` (a 2-D array, or a list of rows) and metadata `metas[i]` (a dict,
    /// or `None`). `sources` and `versions` may also be one value for every item.
    ///
    /// Every item is checked before anything is written: a bad one refuses the whole call
    /// with an `InputError` naming it (`vectors[3]`, `ids[7]`, `metas[2]`), and nothing is
    /// written. Then each item is guarded like an `upsert` (`"skipped"` unless newer than
    /// what is stored), and all are committed together. Returns one result per item, in
    /// order: an `Outcome`, or the exception (not raised) of an item the stored state
    /// refuses (a `VersionKindMismatchError`), which changed nothing. A storage failure
    /// raises: nothing of the call is acknowledged.
    ///
    /// `vectors=None` (or left out): the Store's embedder embeds the texts (see `upsert`).
    /// `space_vectors`: a dict of vector space name to one row per item (see `upsert`).
    #[pyo3(signature = (sources, ids, versions, texts, vectors=None, metas=None, *, space_vectors=None))]
    #[allow(clippy::too_many_arguments)]
    fn add(
        &self,
        py: Python<'_>,
        sources: &Bound<'_, PyAny>,
        ids: &Bound<'_, PyAny>,
        versions: &Bound<'_, PyAny>,
        texts: &Bound<'_, PyAny>,
        vectors: Option<&Bound<'_, PyAny>>,
        metas: Option<&Bound<'_, PyAny>>,
        space_vectors: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Vec<Py<PyAny>>> {
        let ids = strings(ids, "ids")?;
        let n = ids.len();
        let texts = strings(texts, "texts")?;
        if texts.len() != n {
            return Err(input(
                "texts",
                format!("has {} items for {n} ids", texts.len()),
            ));
        }
        let (source_items, sources_listed) = if sources.is_instance_of::<pyo3::types::PyString>() {
            (vec![sources.clone(); n], false)
        } else {
            let items = sequence(sources, "sources")?;
            if items.len() != n {
                return Err(input(
                    "sources",
                    format!("has {} items for {n} ids", items.len()),
                ));
            }
            (items, true)
        };
        let (version_items, versions_listed) = per_item(versions, n, "versions")?;
        let lists = (sources_listed, versions_listed);
        let name = |list: &str, listed: bool, i: usize| {
            if listed {
                format!("{list}[{i}]")
            } else {
                list.to_string()
            }
        };
        let store = self.store()?;
        let to_embed = self.embeds_default(py, &store) && vectors.is_none_or(|v| v.is_none());
        let vectors = match vectors.filter(|v| !v.is_none()) {
            Some(vectors) => vector_rows(vectors, n, "vectors")?,
            None => vec![None; n],
        };
        let in_spaces = space_rows(space_vectors, n)?;
        let metas = match metas.filter(|m| !m.is_none()) {
            Some(m) => {
                let items = sequence(m, "metas")?;
                if items.len() != n {
                    return Err(input(
                        "metas",
                        format!("has {} items for {n} ids", items.len()),
                    ));
                }
                items
                    .iter()
                    .enumerate()
                    .map(|(i, m)| json(m, &format!("metas[{i}]")))
                    .collect::<PyResult<Vec<_>>>()?
            }
            None => vec![serde_json::Value::Null; n],
        };
        let mut dimension = py.detach(|| store.dimension());
        let mut docs = Vec::with_capacity(n);
        let mut incoming = Vec::with_capacity(n);
        for (i, (((id, text_), vector), meta)) in ids
            .into_iter()
            .zip(texts)
            .zip(vectors)
            .zip(metas)
            .enumerate()
        {
            let source = text(&source_items[i], &name("sources", sources_listed, i))?;
            let version = version(&version_items[i], &name("versions", versions_listed, i))?;
            if let Some(vector) = &vector {
                match dimension {
                    Some(expected) if expected != vector.len() => {
                        // Named `vectors[i]`: the position is the item's.
                        return Err(from_write(WriteError::DimensionMismatch {
                            position: i,
                            expected,
                            found: vector.len(),
                        }));
                    }
                    _ => dimension = Some(vector.len()),
                }
            }
            let mut chunk = match vector {
                Some(vector) => Chunk::new(text_, vector),
                None => Chunk::without_vector(text_),
            };
            for (space, rows) in &in_spaces {
                if let Some(Some(row)) = rows.get(i) {
                    chunk.spaces.insert(space.clone(), row.clone());
                }
            }
            docs.push(Document::new(source, id, version).with_chunk(chunk.with_meta(meta)));
            incoming.push(version);
        }
        let checked = py.detach(|| {
            docs.iter()
                .enumerate()
                .try_for_each(|(i, doc)| store.check(doc).map_err(|e| (i, e)))
        });
        if let Err((i, error)) = checked {
            return Err(renamed(py, from_write(error), |f| add_field(f, i, lists)));
        }
        let retry = if to_embed {
            let all: Vec<usize> = (0..docs.len()).collect();
            self.embed_missing(py, &store, &mut docs, &all, "vectors")?
        } else {
            Vec::new()
        };
        self.embed_spaces(py, &store, &mut docs)?;
        let ops: Vec<Op> = docs.into_iter().map(Op::Upsert).collect();
        let results = self.write_ops(py, &store, ops, retry)?;
        results
            .into_iter()
            .zip(incoming)
            .enumerate()
            .map(|(i, (result, version))| match result {
                Ok(outcome) => op_outcome(py, outcome, version),
                Err(error) => Ok(renamed(py, from_write(error), |f| add_field(f, i, lists))
                    .into_value(py)
                    .into_any()),
            })
            .collect()
    }

    /// The number of live documents (tombstones not counted).
    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        let store = self.store()?;
        let stats = py.detach(|| store.stats()).map_err(from_read)?;
        Ok(usize::try_from(stats.documents).unwrap_or(usize::MAX))
    }

    /// Applies many operations in one transaction. `ops` are dicts: `{"op": "upsert",
    /// "source", "id", "version", "texts", "vectors", "metas"?, "meta"?}`, `{"op": "delete",
    /// "source", "id", "version"}`, `{"op": "retain", "source", "ids", "version"}`. Returns
    /// one result per operation, in order: an `Outcome`, a `RetainOutcome`, or the exception
    /// (not raised) of an operation refused for its input, which changed nothing (the others
    /// are applied). Every input error, raised or returned, names its operation's place:
    /// `.field` is `ops[3].vectors[0][1]`, `ops[3].version`. A storage failure raises:
    /// nothing of the batch is acknowledged. An upsert without `"vectors"`
    /// is embedded with the Store's embedder (see `upsert`); its `"space_vectors"` are as
    /// `upsert`'s.
    fn write_batch(&self, py: Python<'_>, ops: &Bound<'_, PyAny>) -> PyResult<Vec<Py<PyAny>>> {
        let items = sequence(ops, "ops")?;
        let mut converted = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            converted.push(batch_op(item, &format!("ops[{i}]"))?);
        }
        let versions: Vec<Version> = converted.iter().map(|(_, v, _)| *v).collect();
        // Without an embedder, an upsert without vectors reuses the stored ones (as before
        // embedders existed): the store refuses it when a text has none.
        let store = self.store()?;
        let embed: Vec<usize> = if self.embeds_default(py, &store) {
            (0..converted.len()).filter(|&i| converted[i].2).collect()
        } else {
            Vec::new()
        };
        let mut retry = Vec::new();
        if let Some(&first) = embed.first() {
            // The documents to embed, taken out of their ops and put back after.
            let mut docs: Vec<Document> = Vec::with_capacity(embed.len());
            for &i in &embed {
                if let Op::Upsert(doc) = &mut converted[i].0 {
                    docs.push(std::mem::replace(
                        doc,
                        Document::new("", "", Version::number(0)),
                    ));
                }
            }
            let all: Vec<usize> = (0..docs.len()).collect();
            let field = format!("ops[{first}].vectors");
            let pending = self.embed_missing(py, &store, &mut docs, &all, &field)?;
            retry = pending
                .into_iter()
                .filter_map(|(j, doc)| embed.get(j).map(|&i| (i, doc)))
                .collect();
            for (&i, doc) in embed.iter().zip(docs) {
                converted[i].0 = Op::Upsert(doc);
            }
        }
        if self.embedder.is_some() {
            let mut docs = Vec::new();
            let mut at = Vec::new();
            for (i, (op, _, _)) in converted.iter_mut().enumerate() {
                if let Op::Upsert(doc) = op {
                    docs.push(std::mem::replace(
                        doc,
                        Document::new("", "", Version::number(0)),
                    ));
                    at.push(i);
                }
            }
            self.embed_spaces(py, &store, &mut docs)?;
            for (i, doc) in at.into_iter().zip(docs) {
                converted[i].0 = Op::Upsert(doc);
            }
        }
        let ops: Vec<Op> = converted.into_iter().map(|(op, _, _)| op).collect();
        let results = self.write_ops(py, &store, ops, retry)?;
        results
            .into_iter()
            .zip(versions)
            .enumerate()
            .map(|(i, (result, version))| match result {
                Ok(outcome) => op_outcome(py, outcome, version),
                // The store answers each operation in its place, its error naming a field of
                // the operation (`chunks[0].vector`, Python's `vectors[0]`): named here as the
                // batch's (`ops[3].vectors[0]`). Regression: the operation's place was left
                // out, so a refusal named `vectors[0]` or `version` of no operation.
                Err(error) => Ok(prefix(py, from_write(error), &format!("ops[{i}]"))
                    .into_value(py)
                    .into_any()),
            })
            .collect()
    }

    /// A new ticket: a version strictly newer than every ticket this store issued before,
    /// across restarts. Take it when a job is enqueued; every retry carries it unchanged.
    fn ticket(&self, py: Python<'_>) -> PyResult<Ticket> {
        let store = self.store()?;
        let version = py.detach(|| store.ticket()).map_err(from_write)?;
        Ok(Ticket {
            value: version.value,
        })
    }

    /// The `k` nearest live chunks to `vector` (a 1-D array or sequence of floats).
    /// `where`: a metadata filter (`{"lang": "en", "year": {"$gte": 2020}}`, with `$eq $ne
    /// $gt $gte $lt $lte $in $nin $exists $contains $and $or $not`); `sources`: only these
    /// sources; `exact`: scan every vector instead of the graph; `ef`: graph search width;
    /// `rerank`: under a memory budget, how many of the graph's best candidates (ranked by
    /// their codes) are scored exactly on their vectors in the file (default 40 x max(k, 10),
    /// 10 x where the budget leaves codes of at most 4 dimensions a byte);
    /// `group_by_document`: one hit per document (its best chunk), `k` distinct documents;
    /// `space`: the vector space searched (see `spaces()`; `None`: the active one), an
    /// unknown one an `InputError` naming `space`.
    #[pyo3(signature = (vector, k=None, *, r#where=None, sources=None, exact=None, ef=None, rerank=None, group_by_document=None, space=None), text_signature = "($self, vector, k=10, *, where=None, sources=None, exact=False, ef=None, rerank=None, group_by_document=False, space=None)")]
    #[allow(clippy::too_many_arguments)]
    fn search(
        &self,
        py: Python<'_>,
        vector: &Bound<'_, PyAny>,
        k: Option<&Bound<'_, PyAny>>,
        r#where: Option<&Bound<'_, PyAny>>,
        sources: Option<&Bound<'_, PyAny>>,
        exact: Option<&Bound<'_, PyAny>>,
        ef: Option<&Bound<'_, PyAny>>,
        rerank: Option<&Bound<'_, PyAny>>,
        group_by_document: Option<&Bound<'_, PyAny>>,
        space: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Vec<Py<Hit>>> {
        let options = PyStore::search_options(
            r#where,
            sources,
            exact,
            ef,
            rerank,
            group_by_document,
            space,
        )?;
        let k = k_or_default(py, k);
        Ok(self.search_timed(py, vector, &k, &options)?.0)
    }

    /// The `k` nearest live chunks to the embedding of `query` (a question, embedded with
    /// the Store's embedder, the GIL released); the other arguments as for `search`. Without
    /// an embedder an `InputError` naming `embedder`. The embedder must be the searched
    /// space's model (`space`, else the active space), else a `MismatchError` naming `space`.
    #[pyo3(signature = (query, k=None, *, r#where=None, sources=None, exact=None, ef=None, rerank=None, group_by_document=None, space=None), text_signature = "($self, query, k=10, *, where=None, sources=None, exact=False, ef=None, rerank=None, group_by_document=False, space=None)")]
    #[allow(clippy::too_many_arguments)]
    fn search_query(
        &self,
        py: Python<'_>,
        query: &Bound<'_, PyAny>,
        k: Option<&Bound<'_, PyAny>>,
        r#where: Option<&Bound<'_, PyAny>>,
        sources: Option<&Bound<'_, PyAny>>,
        exact: Option<&Bound<'_, PyAny>>,
        ef: Option<&Bound<'_, PyAny>>,
        rerank: Option<&Bound<'_, PyAny>>,
        group_by_document: Option<&Bound<'_, PyAny>>,
        space: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Vec<Py<Hit>>> {
        let query = text(query, "query")?;
        let mut options = PyStore::search_options(
            r#where,
            sources,
            exact,
            ef,
            rerank,
            group_by_document,
            space,
        )?;
        let k = convert::count(&k_or_default(py, k), "k")?;
        let store = self.store()?;
        let vector = self.embed_question(
            py,
            &store,
            query,
            &mut options,
            "embedder",
            "search with search(vector) or search_text(query)",
        )?;
        let hits = py
            .detach(|| store.search(&vector, k, &options))
            .map_err(from_read)?;
        hits_to_py(py, hits)
    }

    /// `search(vector, k)` that also returns the nanoseconds spent inside the Rust
    /// `Store::search` call, for `benches/peers/python_overhead.py`: the binding's own cost
    /// is the call's wall time less that, measured on the same call.
    #[pyo3(signature = (vector, k=None), text_signature = "($self, vector, k=10)")]
    fn _search_timed(
        &self,
        py: Python<'_>,
        vector: &Bound<'_, PyAny>,
        k: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<(Vec<Py<Hit>>, u64)> {
        let options = PyStore::search_options(None, None, None, None, None, None, None)?;
        let k = k_or_default(py, k);
        let (hits, inner) = self.search_timed(py, vector, &k, &options)?;
        Ok((hits, u64::try_from(inner.as_nanos()).unwrap_or(u64::MAX)))
    }

    /// The `k` chunks that best match `query` by BM25 over their words, best first (a hit's
    /// score is its BM25 score). `where` and `sources` as for `search`; `k1` and `b` set
    /// BM25's parameters (defaults 1.2 and 0.75). Raises `RatchetError` if the store keeps no
    /// text index.
    #[pyo3(signature = (query, k=None, *, r#where=None, sources=None, k1=None, b=None, group_by_document=None), text_signature = "($self, query, k=10, *, where=None, sources=None, k1=None, b=None, group_by_document=False)")]
    #[allow(clippy::too_many_arguments)]
    fn search_text(
        &self,
        py: Python<'_>,
        query: &Bound<'_, PyAny>,
        k: Option<&Bound<'_, PyAny>>,
        r#where: Option<&Bound<'_, PyAny>>,
        sources: Option<&Bound<'_, PyAny>>,
        k1: Option<&Bound<'_, PyAny>>,
        b: Option<&Bound<'_, PyAny>>,
        group_by_document: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Vec<Py<Hit>>> {
        let query = text(query, "query")?;
        let k = convert::count(&k_or_default(py, k), "k")?;
        let options = with_bm25(
            PyStore::search_options(r#where, sources, None, None, None, group_by_document, None)?,
            convert::real_opt(k1, "k1")?.map(|x| x as f32),
            convert::real_opt(b, "b")?.map(|x| x as f32),
        );
        let store = self.store()?;
        let hits = py
            .detach(|| store.search_text(&query, k, &options))
            .map_err(from_read)?;
        hits_to_py(py, hits)
    }

    /// The `k` best chunks by both `vector` (nearest neighbours) and `text` (BM25), merged by
    /// reciprocal rank fusion (`rrf_k`, default 60) or, with `vector_weight` (0 to 1), by a
    /// weighted sum of the scaled scores. `where`, `sources` and `ef` as for `search`.
    /// `vector=None` (or left out): `text` embedded with the Store's embedder (without one,
    /// an `InputError` naming `vector`). `space`: the vector space of the vector half (as
    /// for `search` and `search_query`).
    #[pyo3(signature = (text, vector=None, k=None, *, r#where=None, sources=None, ef=None, rerank=None, rrf_k=None, vector_weight=None, group_by_document=None, space=None), text_signature = "($self, text, vector=None, k=10, *, where=None, sources=None, ef=None, rerank=None, rrf_k=None, vector_weight=None, group_by_document=False, space=None)")]
    #[allow(clippy::too_many_arguments)]
    fn search_hybrid(
        &self,
        py: Python<'_>,
        text: &Bound<'_, PyAny>,
        vector: Option<&Bound<'_, PyAny>>,
        k: Option<&Bound<'_, PyAny>>,
        r#where: Option<&Bound<'_, PyAny>>,
        sources: Option<&Bound<'_, PyAny>>,
        ef: Option<&Bound<'_, PyAny>>,
        rerank: Option<&Bound<'_, PyAny>>,
        rrf_k: Option<&Bound<'_, PyAny>>,
        vector_weight: Option<&Bound<'_, PyAny>>,
        group_by_document: Option<&Bound<'_, PyAny>>,
        space: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Vec<Py<Hit>>> {
        let text = convert::text(text, "text")?;
        let k = convert::count(&k_or_default(py, k), "k")?;
        let mut options =
            PyStore::search_options(r#where, sources, None, ef, rerank, group_by_document, space)?;
        let rrf_k = rrf_k.filter(|r| !r.is_none());
        let vector_weight = convert::real_opt(vector_weight, "vector_weight")?.map(|x| x as f32);
        options = match (rrf_k, vector_weight) {
            (Some(_), Some(_)) => {
                return Err(input(
                    "vector_weight",
                    "cannot be given with rrf_k: pick one fusion",
                ))
            }
            (Some(rrf_k), None) => options.fusion(ratchetdb::Fusion::Rrf {
                k: u32::try_from(convert::int_in(rrf_k, "rrf_k", 1, u64::from(u32::MAX))?)
                    .map_err(|_| input("rrf_k", "must be between 1 and 4294967295"))?,
            }),
            (None, Some(vector_weight)) => {
                options.fusion(ratchetdb::Fusion::Weighted { vector_weight })
            }
            (None, None) => options,
        };
        let store = self.store()?;
        let query = match vector.filter(|v| !v.is_none()) {
            Some(vector) => convert::vector(vector, "vector")?,
            None => self.embed_question(
                py,
                &store,
                text.clone(),
                &mut options,
                "vector",
                "pass the query's vector",
            )?,
        };
        let hits = py
            .detach(|| store.search_hybrid(&text, &query, k, &options))
            .map_err(from_read)?;
        hits_to_py(py, hits)
    }

    /// `search` for every row of `matrix` (a 2-D array, or a sequence or any iterable of
    /// vectors, a generator included: it is read once), spread over the cores; one list of
    /// hits per row (`space` as for `search`).
    #[pyo3(signature = (matrix, k=None, *, r#where=None, sources=None, exact=None, ef=None, rerank=None, group_by_document=None, space=None), text_signature = "($self, matrix, k=10, *, where=None, sources=None, exact=False, ef=None, rerank=None, group_by_document=False, space=None)")]
    #[allow(clippy::too_many_arguments)]
    fn search_many(
        &self,
        py: Python<'_>,
        matrix: &Bound<'_, PyAny>,
        k: Option<&Bound<'_, PyAny>>,
        r#where: Option<&Bound<'_, PyAny>>,
        sources: Option<&Bound<'_, PyAny>>,
        exact: Option<&Bound<'_, PyAny>>,
        ef: Option<&Bound<'_, PyAny>>,
        rerank: Option<&Bound<'_, PyAny>>,
        group_by_document: Option<&Bound<'_, PyAny>>,
        space: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Vec<Vec<Py<Hit>>>> {
        let k = convert::count(&k_or_default(py, k), "k")?;
        let options = PyStore::search_options(
            r#where,
            sources,
            exact,
            ef,
            rerank,
            group_by_document,
            space,
        )?;
        // Read once: a generator or any other one-shot iterable of rows is consumed here
        // (regression: its rows were counted by one pass and converted by a second, which
        // found it exhausted); a 2-D array is read without a Python object per row.
        let queries: Vec<Vec<f32>> = RowsArg::read(matrix, "matrix")?
            .vectors("matrix")?
            .into_iter()
            .enumerate()
            .map(|(i, row)| row.ok_or_else(|| input(format!("matrix[{i}]"), "is None")))
            .collect::<PyResult<_>>()?;
        let store = self.store()?;
        let results = py
            .detach(|| store.search_many(&queries, k, &options))
            .map_err(from_read)?;
        results
            .into_iter()
            .map(|hits| hits_to_py(py, hits))
            .collect()
    }

    /// Document `(source, id)` as stored (a dict; a deleted one has `deleted=True`), or
    /// `None`. `vectors=True` adds each chunk's vector.
    #[pyo3(signature = (source, id, *, vectors=None), text_signature = "($self, source, id, *, vectors=False)")]
    fn get(
        &self,
        py: Python<'_>,
        source: &Bound<'_, PyAny>,
        id: &Bound<'_, PyAny>,
        vectors: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Option<Py<PyAny>>> {
        let source = text(source, "source")?;
        let id = text(id, "id")?;
        let vectors = flag_or_false(vectors, "vectors")?;
        let store = self.store()?;
        let doc = py
            .detach(|| {
                let snapshot = store.snapshot()?;
                if vectors {
                    snapshot.get_with_vectors(&source, &id)
                } else {
                    snapshot.get(&source, &id)
                }
            })
            .map_err(from_read)?;
        doc.map(|doc| document_to_py(py, &doc)).transpose()
    }

    /// Counters, totals and recent refusals (a dict), plus the writer's group-commit
    /// counts under `"writer"`.
    fn stats(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let store = self.store()?;
        let stats = py.detach(|| store.stats()).map_err(from_read)?;
        let value = serde_json::to_value(&stats)
            .map_err(|e| crate::errors::RatchetError::new_err(e.to_string()))?;
        let dict = convert::json_to_py(py, &value)?;
        if let Some(Open {
            writer: Some(writer),
            ..
        }) = &*self.open.read()
        {
            let w = writer.stats();
            let writer_dict = PyDict::new(py);
            writer_dict.set_item("batches", w.batches)?;
            writer_dict.set_item("ops", w.ops)?;
            writer_dict.set_item("max_batch_ops", w.max_batch_ops)?;
            dict.bind(py).set_item("writer", writer_dict)?;
        }
        Ok(dict)
    }

    /// Every vector space, the default one first, from one snapshot: a list of dicts with
    /// `name`, `model`, `dimension`, `vectors` (live chunks with a vector in it),
    /// `live_chunks`, `complete` (a vector for every live chunk: every write must bring its
    /// vectors) and `active` (the space searches use when they name none).
    /// `UnsupportedError` on PostgreSQL (whose only space is the default).
    fn spaces(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let store = self.store()?;
        let spaces = py.detach(|| store.spaces()).map_err(from_read)?;
        let list = PyList::empty(py);
        for space in spaces {
            let dict = PyDict::new(py);
            dict.set_item("name", &space.name)?;
            dict.set_item("model", &space.model)?;
            dict.set_item("dimension", space.dimension)?;
            dict.set_item("vectors", space.vectors)?;
            dict.set_item("live_chunks", space.live_chunks)?;
            dict.set_item("complete", space.is_complete())?;
            dict.set_item("active", space.active)?;
            list.append(dict)?;
        }
        Ok(list.into_any().unbind())
    }

    /// Checks every invariant the rows can show; the report has `.ok` and `.violations`.
    fn verify(&self, py: Python<'_>) -> PyResult<VerifyReport> {
        let store = self.store()?;
        let report = py.detach(|| store.verify()).map_err(from_read)?;
        VerifyReport::new(py, report)
    }

    /// Every document (tombstones included, `deleted=True`), sorted by `(source, id)`, from
    /// one snapshot, as an iterator of dicts (see `get`). The snapshot's documents are read
    /// when `export` is called (with the GIL released) and converted to dicts one at a time.
    #[pyo3(signature = (*, vectors=None), text_signature = "($self, *, vectors=False)")]
    fn export(&self, py: Python<'_>, vectors: Option<&Bound<'_, PyAny>>) -> PyResult<Export> {
        let vectors = flag_or_false(vectors, "vectors")?;
        let store = self.store()?;
        let docs = py
            .detach(|| {
                let snapshot = store.snapshot()?;
                let docs = snapshot.documents(vectors)?.collect::<Result<Vec<_>, _>>();
                docs
            })
            .map_err(from_read)?;
        Ok(Export {
            docs: parking_lot::Mutex::new(docs.into_iter()),
        })
    }

    /// What an upsert of this revision would do now, before anything is embedded: a dict
    /// with `action` (`"write"`, `"bump_version"` or `"skip"`, with `reason`), `reusable`
    /// (positions whose text the store already has a vector for: pass `None` as their
    /// vector) and `to_embed`.
    #[pyo3(signature = (source, id, version, texts, *, metas=None, meta=None))]
    #[allow(clippy::too_many_arguments)]
    fn plan(
        &self,
        py: Python<'_>,
        source: &Bound<'_, PyAny>,
        id: &Bound<'_, PyAny>,
        version: &Bound<'_, PyAny>,
        texts: &Bound<'_, PyAny>,
        metas: Option<&Bound<'_, PyAny>>,
        meta: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let source = text(source, "source")?;
        let id = text(id, "id")?;
        let version = convert::version(version, "version")?;
        let doc = document(source, id, version, texts, None, metas, meta, None)?;
        let store = self.store()?;
        let plan = py.detach(|| store.plan(&doc)).map_err(from_read)?;
        let dict = PyDict::new(py);
        match plan.action {
            ratchetdb::PlannedAction::Write => dict.set_item("action", "write")?,
            ratchetdb::PlannedAction::BumpVersion => dict.set_item("action", "bump_version")?,
            ratchetdb::PlannedAction::Skip {
                reason,
                stored_version,
            } => {
                dict.set_item("action", "skip")?;
                dict.set_item("reason", reason.as_str())?;
                dict.set_item(
                    "stored_version",
                    convert::version_to_py(py, stored_version)?,
                )?;
            }
            other => dict.set_item("action", format!("{other:?}"))?,
        }
        dict.set_item("reusable", PyList::new(py, plan.reusable)?)?;
        dict.set_item("to_embed", PyList::new(py, plan.to_embed)?)?;
        Ok(dict.into_any().unbind())
    }

    /// Waits until the derived index covers the latest commit and is idle; `False` on
    /// timeout. Searches never need it (they answer exactly meanwhile); benchmarks do.
    #[pyo3(signature = (timeout=None), text_signature = "($self, timeout=60.0)")]
    fn wait_for_index(&self, py: Python<'_>, timeout: Option<&Bound<'_, PyAny>>) -> PyResult<bool> {
        let store = self.store()?;
        let timeout = convert::real_opt(timeout, "timeout")?.unwrap_or(60.0);
        // A wait too long for a `Duration` (`1e30`, `math.inf`) is the longest there is.
        if timeout.is_nan() || timeout < 0.0 {
            return Err(input("timeout", "must be a non-negative number of seconds"));
        }
        let timeout = Duration::try_from_secs_f64(timeout).unwrap_or(Duration::MAX);
        Ok(py.detach(|| store.wait_for_index(timeout)))
    }

    fn __repr__(&self) -> String {
        format!(
            "Store({:?}{})",
            self.path,
            if self.closed() { ", closed" } else { "" }
        )
    }
}

/// The iterator `Store.export()` returns: one dict per document.
#[pyclass(module = "ratchetdb._ratchetdb", frozen)]
pub(crate) struct Export {
    docs: parking_lot::Mutex<std::vec::IntoIter<ratchetdb::StoredDocument>>,
}

#[pymethods]
impl Export {
    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        let next = self.docs.lock().next();
        next.map(|doc| document_to_py(py, &doc)).transpose()
    }

    fn __len__(&self) -> usize {
        self.docs.lock().len()
    }
}

/// Whether metadata `meta` (a chunk's; then `doc_meta`, its document's) matches the filter
/// `where` (the language of `Store.search(where=...)`).
#[pyfunction]
#[pyo3(signature = (r#where, meta, doc_meta=None))]
pub(crate) fn matches(
    r#where: &Bound<'_, PyAny>,
    meta: &Bound<'_, PyAny>,
    doc_meta: Option<&Bound<'_, PyAny>>,
) -> PyResult<bool> {
    let filter = Filter::parse(&json(r#where, "where")?).map_err(crate::errors::from_input)?;
    let doc_meta = match doc_meta {
        Some(m) => json(m, "doc_meta")?,
        None => serde_json::Value::Null,
    };
    Ok(filter.matches(&json(meta, "meta")?, &doc_meta))
}

/// `options` with BM25's `k1` and `b` where given (the defaults elsewhere).
fn with_bm25(options: SearchOptions, k1: Option<f32>, b: Option<f32>) -> SearchOptions {
    if k1.is_none() && b.is_none() {
        return options;
    }
    let default = ratchetdb::Bm25::default();
    options.bm25(k1.unwrap_or(default.k1), b.unwrap_or(default.b))
}

/// `k` as given, or the default of 10.
fn k_or_default<'py>(py: Python<'py>, k: Option<&Bound<'py, PyAny>>) -> Bound<'py, PyAny> {
    match k {
        Some(k) if !k.is_none() => k.clone(),
        _ => 10_u32
            .into_pyobject(py)
            .map(|k| k.into_any())
            .unwrap_or_else(|e| match e {}),
    }
}

/// An optional `bool` keyword (`False` when absent or `None`).
fn flag_or_false(value: Option<&Bound<'_, PyAny>>, field: &str) -> PyResult<bool> {
    match value {
        Some(v) if !v.is_none() => convert::flag(v, field),
        _ => Ok(false),
    }
}
