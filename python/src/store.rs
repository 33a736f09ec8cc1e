//! `ratchetdb.Store`: the store, its writer (group commit), reads and searches.
//!
//! Every call into the store releases the GIL (`Python::detach`): the arguments are
//! converted to Rust values first, the store runs with the GIL released, and the result is
//! converted back. Upserts, deletes and retains go through one `ratchetdb::Writer` per store,
//! so writes from many Python threads are committed together (group commit).

use crate::convert::{self, json, sequence, strings, vector_rows, version, Ticket};
use crate::errors::{from_open, from_read, from_write, input, ClosedError};
use crate::types::{document_to_py, hits_to_py, Hit, Outcome, RetainOutcome, VerifyReport};
use numpy::PyReadonlyArray1;
use parking_lot::RwLock;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use ratchetdb::{
    Chunk, Document, Durability, Filter, Metric, Op, OpOutcome, Options, SearchOptions, Version,
    WriteError, Writer,
};
use std::time::Duration;

struct Open {
    store: ratchetdb::Store,
    writer: Option<Writer>,
}

/// An open ratchetdb store (one file). `Store(path, *, dimension=None, metric=None,
/// durability="immediate", read_only=False)` opens the file, creating it when missing
/// (`metric=None`: what the store recorded, cosine for a new one). A context manager;
/// `close()` closes it.
#[pyclass(module = "ratchetdb._ratchetdb", name = "Store", frozen)]
pub(crate) struct PyStore {
    open: RwLock<Option<Open>>,
    path: String,
}

impl PyStore {
    fn store(&self) -> PyResult<ratchetdb::Store> {
        match &*self.open.read() {
            Some(open) => Ok(open.store.clone()),
            None => Err(ClosedError::new_err(format!(
                "the store {} is closed",
                self.path
            ))),
        }
    }

    fn writer(&self) -> PyResult<Writer> {
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
        k: i64,
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
        exact: bool,
        ef: Option<i64>,
    ) -> PyResult<SearchOptions> {
        let mut options = SearchOptions::default().exact(exact);
        if let Some(ef) = ef {
            options = options.ef(convert::count(ef, "ef")?);
        }
        if let Some(sources) = sources {
            if let Ok(one) = sources.extract::<String>() {
                options = options.source(one);
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
        Ok(options)
    }
}

/// A document from the arguments `upsert` and `plan` take.
pub(crate) fn document(
    source: String,
    id: String,
    version: Version,
    texts: &Bound<'_, PyAny>,
    vectors: Option<&Bound<'_, PyAny>>,
    metas: Option<&Bound<'_, PyAny>>,
    meta: Option<&Bound<'_, PyAny>>,
) -> PyResult<Document> {
    let texts = strings(texts, "texts")?;
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
    for ((text, vector), meta) in texts.into_iter().zip(vectors).zip(metas) {
        let chunk = match vector {
            Some(vector) => Chunk::new(text, vector),
            None => Chunk::without_vector(text),
        };
        doc = doc.with_chunk(chunk.with_meta(meta));
    }
    Ok(doc)
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
/// `"retain"`) and the arguments of the method of that name.
fn batch_op(value: &Bound<'_, PyAny>, field: &str) -> PyResult<(Op, Version)> {
    let dict = value
        .cast::<PyDict>()
        .map_err(|_| input(field, "must be a dict with an \"op\" key"))?;
    let kind: String = item(dict, "op", field)?
        .extract()
        .map_err(|_| input(format!("{field}.op"), "must be a str"))?;
    let source: String = item(dict, "source", field)?
        .extract()
        .map_err(|_| input(format!("{field}.source"), "must be a str"))?;
    let version = version(&item(dict, "version", field)?, &format!("{field}.version"))?;
    let op = match kind.as_str() {
        "upsert" => {
            let id: String = item(dict, "id", field)?
                .extract()
                .map_err(|_| input(format!("{field}.id"), "must be a str"))?;
            let doc = document(
                source,
                id,
                version,
                &item(dict, "texts", field)?,
                dict.get_item("vectors")?.as_ref(),
                dict.get_item("metas")?.as_ref(),
                dict.get_item("meta")?.as_ref(),
            )
            .map_err(|e| prefix(value.py(), e, field))?;
            Op::Upsert(doc)
        }
        "delete" => Op::Delete {
            source,
            id: item(dict, "id", field)?
                .extract()
                .map_err(|_| input(format!("{field}.id"), "must be a str"))?,
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
    Ok((op, version))
}

/// An input error of one batch operation, its field prefixed with the operation's.
fn prefix(py: Python<'_>, error: PyErr, field: &str) -> PyErr {
    if error.is_instance_of::<crate::errors::InputError>(py) {
        let value = error.value(py);
        if let Ok(inner) = value.getattr("field").and_then(|f| f.extract::<String>()) {
            let problem = value
                .getattr("problem")
                .and_then(|p| p.extract::<String>())
                .unwrap_or_default();
            return input(format!("{field}.{inner}"), problem);
        }
    }
    error
}

#[pymethods]
impl PyStore {
    #[new]
    #[pyo3(signature = (path, *, dimension=None, metric=None, durability="immediate", read_only=false))]
    fn new(
        py: Python<'_>,
        path: std::path::PathBuf,
        dimension: Option<i64>,
        metric: Option<&str>,
        durability: &str,
        read_only: bool,
    ) -> PyResult<PyStore> {
        let mut options = Options::default();
        if let Some(dimension) = dimension {
            options = options.dimension(convert::count(dimension, "dimension")?);
        }
        if let Some(name) = metric {
            let metric = Metric::parse(name).ok_or_else(|| {
                input(
                    "metric",
                    format!("is {name:?}; expected \"cosine\", \"dot\" or \"l2\""),
                )
            })?;
            options = options.metric(metric);
        }
        options = options.durability(match durability {
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
        let store = py
            .detach(|| {
                if read_only {
                    ratchetdb::Store::open_read_only(&path)
                } else {
                    ratchetdb::Store::open(&path, options)
                }
            })
            .map_err(from_open)?;
        let writer = (!read_only).then(|| store.writer());
        Ok(PyStore {
            open: RwLock::new(Some(Open { store, writer })),
            path: display,
        })
    }

    /// Commits what the writer holds and closes the file (idempotent).
    fn close(&self, py: Python<'_>) {
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
    fn dimension(&self) -> PyResult<Option<usize>> {
        Ok(self.store()?.dimension())
    }

    /// The metric: `"cosine"`, `"dot"` or `"l2"`.
    #[getter]
    fn metric(&self) -> PyResult<&'static str> {
        Ok(self.store()?.metric().as_str())
    }

    /// Writes a revision of document `(source, id)`, guarded: refused (`status="skipped"`)
    /// unless `version` is newer than the stored one. `texts` are the chunks, `vectors` one
    /// row per text (a 2-D array; a row may be `None` in a list to reuse the stored vector of
    /// identical text), `metas` one metadata dict per chunk, `meta` the document's.
    #[pyo3(signature = (source, id, version, texts, vectors, *, metas=None, meta=None))]
    #[allow(clippy::too_many_arguments)]
    fn upsert(
        &self,
        py: Python<'_>,
        source: String,
        id: String,
        version: &Bound<'_, PyAny>,
        texts: &Bound<'_, PyAny>,
        vectors: &Bound<'_, PyAny>,
        metas: Option<&Bound<'_, PyAny>>,
        meta: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Outcome> {
        let version = convert::version(version, "version")?;
        let doc = document(source, id, version, texts, Some(vectors), metas, meta)?;
        let writer = self.writer()?;
        let outcome = py.detach(|| writer.upsert(doc)).map_err(from_write)?;
        Outcome::new(py, outcome, version)
    }

    /// Deletes document `(source, id)` at `version`: a tombstone that refuses every later
    /// write not newer than it (also for a document not seen yet).
    fn delete(
        &self,
        py: Python<'_>,
        source: String,
        id: String,
        version: &Bound<'_, PyAny>,
    ) -> PyResult<Outcome> {
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
        source: String,
        ids: &Bound<'_, PyAny>,
        version: &Bound<'_, PyAny>,
    ) -> PyResult<RetainOutcome> {
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

    /// Applies many operations in one transaction. `ops` are dicts: `{"op": "upsert",
    /// "source", "id", "version", "texts", "vectors", "metas"?, "meta"?}`, `{"op": "delete",
    /// "source", "id", "version"}`, `{"op": "retain", "source", "ids", "version"}`. Returns
    /// one result per operation, in order: an `Outcome`, a `RetainOutcome`, or the exception
    /// (not raised) of an operation refused for its input, which changed nothing. A storage
    /// failure raises: nothing of the batch is acknowledged.
    fn write_batch(&self, py: Python<'_>, ops: &Bound<'_, PyAny>) -> PyResult<Vec<Py<PyAny>>> {
        let items = sequence(ops, "ops")?;
        let mut converted = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            converted.push(batch_op(item, &format!("ops[{i}]"))?);
        }
        let versions: Vec<Version> = converted.iter().map(|(_, v)| *v).collect();
        let ops: Vec<Op> = converted.into_iter().map(|(op, _)| op).collect();
        let store = self.store()?;
        let results = py.detach(|| store.write_batch(ops)).map_err(from_write)?;
        results
            .into_iter()
            .zip(versions)
            .map(|(result, version)| match result {
                Ok(outcome) => op_outcome(py, outcome, version),
                Err(error) => Ok(from_write(error).into_value(py).into_any()),
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
    /// sources; `exact`: scan every vector instead of the graph; `ef`: graph search width.
    #[pyo3(signature = (vector, k=10, *, r#where=None, sources=None, exact=false, ef=None))]
    #[allow(clippy::too_many_arguments)]
    fn search(
        &self,
        py: Python<'_>,
        vector: &Bound<'_, PyAny>,
        k: i64,
        r#where: Option<&Bound<'_, PyAny>>,
        sources: Option<&Bound<'_, PyAny>>,
        exact: bool,
        ef: Option<i64>,
    ) -> PyResult<Vec<Py<Hit>>> {
        let options = PyStore::search_options(r#where, sources, exact, ef)?;
        Ok(self.search_timed(py, vector, k, &options)?.0)
    }

    /// `search(vector, k)` that also returns the nanoseconds spent inside the Rust
    /// `Store::search` call, for `benches/peers/python_overhead.py`: the binding's own cost
    /// is the call's wall time less that, measured on the same call.
    #[pyo3(signature = (vector, k=10))]
    fn _search_timed(
        &self,
        py: Python<'_>,
        vector: &Bound<'_, PyAny>,
        k: i64,
    ) -> PyResult<(Vec<Py<Hit>>, u64)> {
        let options = PyStore::search_options(None, None, false, None)?;
        let (hits, inner) = self.search_timed(py, vector, k, &options)?;
        Ok((hits, u64::try_from(inner.as_nanos()).unwrap_or(u64::MAX)))
    }

    /// The `k` chunks that best match `query` by BM25 over their words, best first (a hit's
    /// score is its BM25 score). `where` and `sources` as for `search`; `k1` and `b` set
    /// BM25's parameters (defaults 1.2 and 0.75). Raises `RatchetError` if the store keeps no
    /// text index.
    #[pyo3(signature = (query, k=10, *, r#where=None, sources=None, k1=None, b=None))]
    #[allow(clippy::too_many_arguments)]
    fn search_text(
        &self,
        py: Python<'_>,
        query: String,
        k: i64,
        r#where: Option<&Bound<'_, PyAny>>,
        sources: Option<&Bound<'_, PyAny>>,
        k1: Option<f32>,
        b: Option<f32>,
    ) -> PyResult<Vec<Py<Hit>>> {
        let k = convert::count(k, "k")?;
        let options = with_bm25(
            PyStore::search_options(r#where, sources, false, None)?,
            k1,
            b,
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
    #[pyo3(signature = (text, vector, k=10, *, r#where=None, sources=None, ef=None, rrf_k=None, vector_weight=None))]
    #[allow(clippy::too_many_arguments)]
    fn search_hybrid(
        &self,
        py: Python<'_>,
        text: String,
        vector: &Bound<'_, PyAny>,
        k: i64,
        r#where: Option<&Bound<'_, PyAny>>,
        sources: Option<&Bound<'_, PyAny>>,
        ef: Option<i64>,
        rrf_k: Option<i64>,
        vector_weight: Option<f32>,
    ) -> PyResult<Vec<Py<Hit>>> {
        let k = convert::count(k, "k")?;
        let mut options = PyStore::search_options(r#where, sources, false, ef)?;
        options = match (rrf_k, vector_weight) {
            (Some(_), Some(_)) => {
                return Err(input(
                    "vector_weight",
                    "cannot be given with rrf_k: pick one fusion",
                ))
            }
            (Some(rrf_k), None) => options.fusion(ratchetdb::Fusion::Rrf {
                k: u32::try_from(rrf_k)
                    .map_err(|_| input("rrf_k", "must be between 1 and 4294967295"))?,
            }),
            (None, Some(vector_weight)) => {
                options.fusion(ratchetdb::Fusion::Weighted { vector_weight })
            }
            (None, None) => options,
        };
        let query = convert::vector(vector, "vector")?;
        let store = self.store()?;
        let hits = py
            .detach(|| store.search_hybrid(&text, &query, k, &options))
            .map_err(from_read)?;
        hits_to_py(py, hits)
    }

    /// `search` for every row of `matrix` (a 2-D array), spread over the cores; one list of
    /// hits per row.
    #[pyo3(signature = (matrix, k=10, *, r#where=None, sources=None, exact=false, ef=None))]
    #[allow(clippy::too_many_arguments)]
    fn search_many(
        &self,
        py: Python<'_>,
        matrix: &Bound<'_, PyAny>,
        k: i64,
        r#where: Option<&Bound<'_, PyAny>>,
        sources: Option<&Bound<'_, PyAny>>,
        exact: bool,
        ef: Option<i64>,
    ) -> PyResult<Vec<Vec<Py<Hit>>>> {
        let k = convert::count(k, "k")?;
        let options = PyStore::search_options(r#where, sources, exact, ef)?;
        let rows = sequence(matrix, "matrix")?.len();
        let queries: Vec<Vec<f32>> = vector_rows(matrix, rows, "matrix")?
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
    #[pyo3(signature = (source, id, *, vectors=false))]
    fn get(
        &self,
        py: Python<'_>,
        source: String,
        id: String,
        vectors: bool,
    ) -> PyResult<Option<Py<PyAny>>> {
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

    /// Checks every invariant the rows can show; the report has `.ok` and `.violations`.
    fn verify(&self, py: Python<'_>) -> PyResult<VerifyReport> {
        let store = self.store()?;
        let report = py.detach(|| store.verify()).map_err(from_read)?;
        VerifyReport::new(py, report)
    }

    /// Every document (tombstones included, `deleted=True`), sorted by `(source, id)`, from
    /// one snapshot, as an iterator of dicts (see `get`). The snapshot's documents are read
    /// when `export` is called (with the GIL released) and converted to dicts one at a time.
    #[pyo3(signature = (*, vectors=false))]
    fn export(&self, py: Python<'_>, vectors: bool) -> PyResult<Export> {
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
        source: String,
        id: String,
        version: &Bound<'_, PyAny>,
        texts: &Bound<'_, PyAny>,
        metas: Option<&Bound<'_, PyAny>>,
        meta: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let version = convert::version(version, "version")?;
        let doc = document(source, id, version, texts, None, metas, meta)?;
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
    #[pyo3(signature = (timeout=60.0))]
    fn wait_for_index(&self, py: Python<'_>, timeout: f64) -> PyResult<bool> {
        let store = self.store()?;
        let timeout = Duration::try_from_secs_f64(timeout)
            .map_err(|_| input("timeout", "must be a non-negative number of seconds"))?;
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
