//! The result objects: `Outcome`, `RetainOutcome`, `Hit`, `VerifyReport`, `Plan`.

use crate::convert::{json_to_py, version_to_py};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyDict;

/// What one upsert or delete did.
///
/// `status` is `"written"`, `"unchanged"` (a newer version with identical content: only the
/// version was raised), `"deleted"` or `"skipped"`; `reason` is `None`, or for a skip
/// `"older"`, `"duplicate"`, `"conflict"` or `"tombstoned"`.
#[pyclass(module = "ratchetdb._ratchetdb", frozen, get_all)]
pub(crate) struct Outcome {
    /// `"written" | "unchanged" | "deleted" | "skipped"`.
    status: &'static str,
    /// `None | "older" | "duplicate" | "conflict" | "tombstoned"`.
    reason: Option<&'static str>,
    /// The version stored after the write (`None` when the write does not say).
    stored_version: Option<Py<PyAny>>,
    /// The version that arrived (`None` when the write does not say).
    incoming_version: Option<Py<PyAny>>,
    /// The generation stamped on the revision's chunks (`written` only).
    generation: Option<u64>,
    /// Chunks written with a new vector.
    chunks_written: u64,
    /// Chunks whose stored vector was kept (same text).
    chunks_reused: u64,
    /// Chunks removed (surplus of a shrinking revision, or all of a deleted document).
    chunks_removed: u64,
}

#[pymethods]
impl Outcome {
    /// `True` unless the write was refused.
    #[getter]
    fn applied(&self) -> bool {
        self.status != "skipped"
    }

    fn __repr__(&self) -> String {
        match self.reason {
            Some(reason) => format!("Outcome(status='{}', reason='{reason}')", self.status),
            None => format!(
                "Outcome(status='{}', chunks_written={}, chunks_reused={}, chunks_removed={})",
                self.status, self.chunks_written, self.chunks_reused, self.chunks_removed
            ),
        }
    }
}

impl Outcome {
    /// The Python form of a ratchetdb outcome; `incoming` is the version the call carried.
    pub(crate) fn new(
        py: Python<'_>,
        outcome: ratchetdb::Outcome,
        incoming: ratchetdb::Version,
    ) -> PyResult<Outcome> {
        let incoming_py = Some(version_to_py(py, incoming)?);
        let mut result = Outcome {
            status: "written",
            reason: None,
            stored_version: None,
            incoming_version: incoming_py,
            generation: None,
            chunks_written: 0,
            chunks_reused: 0,
            chunks_removed: 0,
        };
        match outcome {
            ratchetdb::Outcome::Written {
                generation,
                chunks_written,
                chunks_reused,
                chunks_removed,
            } => {
                result.stored_version = Some(version_to_py(py, incoming)?);
                result.generation = Some(generation);
                result.chunks_written = chunks_written;
                result.chunks_reused = chunks_reused;
                result.chunks_removed = chunks_removed;
            }
            ratchetdb::Outcome::Unchanged { version } => {
                result.status = "unchanged";
                result.stored_version = Some(version_to_py(py, version)?);
            }
            ratchetdb::Outcome::Deleted { chunks_removed } => {
                result.status = "deleted";
                result.stored_version = Some(version_to_py(py, incoming)?);
                result.chunks_removed = chunks_removed;
            }
            ratchetdb::Outcome::Skipped {
                reason,
                stored_version,
                incoming_version,
            } => {
                result.status = "skipped";
                result.reason = Some(reason.as_str());
                result.stored_version = Some(version_to_py(py, stored_version)?);
                result.incoming_version = Some(version_to_py(py, incoming_version)?);
            }
            other => {
                return Err(crate::errors::RatchetError::new_err(format!(
                    "an outcome this binding does not know: {other:?}"
                )))
            }
        }
        Ok(result)
    }
}

/// What a `retain` listing did.
#[pyclass(module = "ratchetdb._ratchetdb", frozen, get_all)]
pub(crate) struct RetainOutcome {
    /// `"retained"`, or `"skipped"` when the listing itself was refused.
    status: &'static str,
    /// `None`, or `"duplicate"` / `"conflict"` for a refused listing.
    reason: Option<&'static str>,
    /// Live documents the listing omitted, now deleted at its version.
    documents_removed: u64,
    /// Chunks those documents had.
    chunks_removed: u64,
    /// Omitted documents left alone because they are newer than the listing.
    newer_kept: u64,
}

#[pymethods]
impl RetainOutcome {
    fn __repr__(&self) -> String {
        format!(
            "RetainOutcome(status='{}', documents_removed={}, chunks_removed={}, newer_kept={})",
            self.status, self.documents_removed, self.chunks_removed, self.newer_kept
        )
    }
}

impl From<ratchetdb::RetainOutcome> for RetainOutcome {
    fn from(outcome: ratchetdb::RetainOutcome) -> RetainOutcome {
        RetainOutcome {
            status: if outcome.skipped.is_some() {
                "skipped"
            } else {
                "retained"
            },
            reason: outcome.skipped.map(|r| r.as_str()),
            documents_removed: outcome.documents_removed,
            chunks_removed: outcome.chunks_removed,
            newer_kept: outcome.newer_kept,
        }
    }
}

/// One search result: a live chunk of the snapshot the search read.
///
/// `meta` and `version` become Python objects when first read (and are the same object on
/// every later read): a search that only looks at texts and scores does not pay for them.
#[pyclass(module = "ratchetdb._ratchetdb", frozen)]
pub(crate) struct Hit {
    /// The document's source.
    #[pyo3(get)]
    source: String,
    /// The document id.
    #[pyo3(get)]
    id: String,
    /// The chunk's position in the document.
    #[pyo3(get)]
    position: u32,
    /// The chunk's text.
    #[pyo3(get)]
    text: String,
    /// Cosine similarity or dot product (higher is closer), or L2 distance (lower is closer).
    #[pyo3(get)]
    score: f32,
    /// The generation of the document's revision.
    #[pyo3(get)]
    generation: u64,
    stored_meta: serde_json::Value,
    meta: PyOnceLock<Py<PyAny>>,
    stored_version: ratchetdb::Version,
    version: PyOnceLock<Py<PyAny>>,
}

#[pymethods]
impl Hit {
    /// The chunk's metadata (`None` for none).
    #[getter]
    fn meta(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.meta
            .get_or_try_init(py, || json_to_py(py, &self.stored_meta))
            .map(|meta| meta.clone_ref(py))
    }

    /// The document's version (`int`, `datetime` or `Ticket`, as written).
    #[getter]
    fn version(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.version
            .get_or_try_init(py, || version_to_py(py, self.stored_version))
            .map(|version| version.clone_ref(py))
    }

    fn __repr__(&self) -> String {
        format!(
            "Hit(source={:?}, id={:?}, position={}, score={})",
            self.source, self.id, self.position, self.score
        )
    }
}

/// The Python objects of a search's hits, best first.
///
/// Each hit becomes its Python object at once (`Py::new`), so the only Rust buffer built on
/// the way back holds ten pointers. An intermediate `Vec<Hit>` (about 2 KB for ten hits)
/// was the first allocation of 1 KiB or more after the search, and glibc's malloc answers
/// such a request by first consolidating every small block freed since
/// (`malloc_consolidate`): after a graph search over documents of 100 chunks (each hit's
/// chunks row is decoded, then freed) building the hits took 17-18 us instead of 4, charged
/// to the binding although the search's own frees caused it (a Rust caller pays it in its
/// next search). See docs/benchmarks.md, issue 20.
pub(crate) fn hits_to_py(py: Python<'_>, hits: Vec<ratchetdb::Hit>) -> PyResult<Vec<Py<Hit>>> {
    hits.into_iter()
        .map(|hit| Py::new(py, Hit::new(py, hit)?))
        .collect()
}

impl Hit {
    /// The Python form of a ratchetdb hit.
    pub(crate) fn new(_py: Python<'_>, hit: ratchetdb::Hit) -> PyResult<Hit> {
        Ok(Hit {
            stored_meta: hit.meta,
            meta: PyOnceLock::new(),
            stored_version: hit.version,
            version: PyOnceLock::new(),
            source: hit.source,
            id: hit.id,
            position: hit.position,
            text: hit.text,
            score: hit.score,
            generation: hit.generation,
        })
    }
}

/// What `verify()` checked and found: `.ok`, the counts, and `.violations` (dicts with
/// `source`, `id`, `problem`).
#[pyclass(module = "ratchetdb._ratchetdb", frozen, get_all)]
pub(crate) struct VerifyReport {
    /// Whether every invariant holds.
    ok: bool,
    /// Live documents checked.
    documents: u64,
    /// Tombstones checked.
    tombstones: u64,
    /// Live chunks checked.
    chunks: u64,
    /// Live vectors checked.
    vectors: u64,
    /// Every violation found.
    violations: Vec<Py<PyAny>>,
}

#[pymethods]
impl VerifyReport {
    fn __bool__(&self) -> bool {
        self.ok
    }

    fn __repr__(&self) -> String {
        format!(
            "VerifyReport(ok={}, documents={}, chunks={}, violations={})",
            if self.ok { "True" } else { "False" },
            self.documents,
            self.chunks,
            self.violations.len()
        )
    }
}

impl VerifyReport {
    /// The Python form of a verify report.
    pub(crate) fn new(py: Python<'_>, report: ratchetdb::VerifyReport) -> PyResult<VerifyReport> {
        let violations = report
            .violations
            .iter()
            .map(|v| {
                let dict = PyDict::new(py);
                dict.set_item("source", &v.source)?;
                dict.set_item("id", &v.id)?;
                dict.set_item("problem", &v.problem)?;
                Ok(dict.into_any().unbind())
            })
            .collect::<PyResult<Vec<_>>>()?;
        Ok(VerifyReport {
            ok: report.is_ok(),
            documents: report.documents,
            tombstones: report.tombstones,
            chunks: report.chunks,
            vectors: report.vectors,
            violations,
        })
    }
}

/// A stored document as a dict: `source`, `id`, `version`, `deleted`, `generation`,
/// `content_hash`, `meta`, `chunks` (dicts with `position`, `text`, `meta`, `generation`,
/// `vector_id`, and `vector` when asked for).
pub(crate) fn document_to_py(
    py: Python<'_>,
    doc: &ratchetdb::StoredDocument,
) -> PyResult<Py<PyAny>> {
    let dict = PyDict::new(py);
    dict.set_item("source", &doc.source)?;
    dict.set_item("id", &doc.id)?;
    dict.set_item("version", version_to_py(py, doc.version)?)?;
    dict.set_item("deleted", doc.deleted)?;
    dict.set_item("generation", doc.generation)?;
    dict.set_item("content_hash", &doc.content_hash)?;
    dict.set_item("meta", json_to_py(py, &doc.meta)?)?;
    let chunks = doc
        .chunks
        .iter()
        .map(|chunk| {
            let c = PyDict::new(py);
            c.set_item("position", chunk.position)?;
            c.set_item("text", &chunk.text)?;
            c.set_item("meta", json_to_py(py, &chunk.meta)?)?;
            c.set_item("generation", chunk.generation)?;
            c.set_item("vector_id", chunk.vector_id)?;
            if let Some(vector) = &chunk.vector {
                c.set_item("vector", numpy::PyArray1::from_slice(py, vector))?;
            }
            if !chunk.spaces.is_empty() {
                // Its vectors in the other vector spaces, as `upsert`'s `space_vectors`.
                let spaces = PyDict::new(py);
                for (name, vector) in &chunk.spaces {
                    spaces.set_item(name, numpy::PyArray1::from_slice(py, vector))?;
                }
                c.set_item("space_vectors", spaces)?;
            }
            Ok(c.into_any().unbind())
        })
        .collect::<PyResult<Vec<_>>>()?;
    dict.set_item("chunks", chunks)?;
    Ok(dict.into_any().unbind())
}
