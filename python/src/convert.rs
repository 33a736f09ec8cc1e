//! Converting Python values to the store's inputs (versions, vectors, metadata) and its
//! outputs back to Python values.

use crate::errors::input;
use numpy::{PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyTuple};
use ratchetdb::{Version, VersionKind};

/// A store-issued ticket: a version strictly newer than every ticket the store issued
/// before (`Store.ticket()`); pass it as `version` to order jobs by when they were enqueued.
#[pyclass(module = "ratchetdb._ratchetdb", frozen, eq, hash, ord)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Ticket {
    /// The ticket number.
    #[pyo3(get)]
    pub(crate) value: u64,
}

#[pymethods]
impl Ticket {
    /// A ticket with a known number (normally obtained from `Store.ticket()`).
    #[new]
    fn new(value: u64) -> Ticket {
        Ticket { value }
    }

    fn __repr__(&self) -> String {
        format!("Ticket({})", self.value)
    }

    fn __int__(&self) -> u64 {
        self.value
    }
}

struct DateTimeTypes {
    datetime: Py<PyAny>,
    epoch: Py<PyAny>,
    timedelta: Py<PyAny>,
}

static DATETIME: PyOnceLock<DateTimeTypes> = PyOnceLock::new();

fn datetime_types(py: Python<'_>) -> PyResult<&DateTimeTypes> {
    DATETIME.get_or_try_init(py, || {
        let module = py.import("datetime")?;
        let utc = module.getattr("timezone")?.getattr("utc")?;
        let datetime = module.getattr("datetime")?;
        let epoch = datetime.call1((1970, 1, 1, 0, 0, 0, 0, utc))?;
        Ok(DateTimeTypes {
            datetime: datetime.unbind(),
            epoch: epoch.unbind(),
            timedelta: module.getattr("timedelta")?.unbind(),
        })
    })
}

/// A version from `int` (a source revision number), timezone-aware `datetime` (the source's
/// modification time) or `Ticket`. `field` names the argument in errors.
pub(crate) fn version(value: &Bound<'_, PyAny>, field: &str) -> PyResult<Version> {
    if let Ok(ticket) = value.cast::<Ticket>() {
        return Ok(Version::ticket(ticket.get().value));
    }
    if value.is_instance_of::<PyBool>() {
        return Err(input(
            field,
            "is a bool; give an int, a datetime or a Ticket",
        ));
    }
    if value.is_instance_of::<PyInt>() {
        return value
            .extract::<u64>()
            .map(Version::number)
            .map_err(|_| input(field, "must be an int from 0 to 2**64 - 1"));
    }
    let py = value.py();
    let types = datetime_types(py)?;
    if value.is_instance(types.datetime.bind(py))? {
        if value.getattr("tzinfo")?.is_none() || value.call_method0("utcoffset")?.is_none() {
            return Err(input(
                field,
                "is a naive datetime; give it a timezone (e.g. tzinfo=timezone.utc)",
            ));
        }
        let delta = value.call_method1("__sub__", (types.epoch.bind(py),))?;
        let days: i64 = delta.getattr("days")?.extract()?;
        let seconds: i64 = delta.getattr("seconds")?.extract()?;
        let micros: i64 = delta.getattr("microseconds")?.extract()?;
        let total = days
            .checked_mul(86_400_000_000)
            .and_then(|d| d.checked_add(seconds * 1_000_000 + micros));
        return match total {
            Some(total) if total >= 0 => Ok(Version::timestamp_micros(total as u64)),
            _ => Err(input(field, "is a datetime before 1970-01-01 UTC")),
        };
    }
    Err(input(
        field,
        format!(
            "is a {}; give an int, a timezone-aware datetime or a Ticket",
            value.get_type().name()?
        ),
    ))
}

/// A version as Python sees it: `int`, `datetime` (UTC) or `Ticket`.
pub(crate) fn version_to_py(py: Python<'_>, version: Version) -> PyResult<Py<PyAny>> {
    Ok(match version.kind {
        VersionKind::TimestampMicros => {
            let types = datetime_types(py)?;
            let kwargs = PyDict::new(py);
            kwargs.set_item("microseconds", version.value)?;
            let delta = types.timedelta.bind(py).call((), Some(&kwargs))?;
            types
                .epoch
                .bind(py)
                .call_method1("__add__", (delta,))?
                .unbind()
        }
        VersionKind::Ticket => Py::new(
            py,
            Ticket {
                value: version.value,
            },
        )?
        .into_any(),
        _ => version.value.into_pyobject(py)?.into_any().unbind(),
    })
}

/// Any JSON-like Python value (dict, list, str, int, float, bool, None) as JSON; `field`
/// names it in errors.
pub(crate) fn json(value: &Bound<'_, PyAny>, field: &str) -> PyResult<serde_json::Value> {
    if value.is_none() {
        return Ok(serde_json::Value::Null);
    }
    check_json(value, field, 0)?;
    pythonize::depythonize::<serde_json::Value>(value)
        .map_err(|e| input(field, format!("is not JSON-like ({e})")))
}

/// Levels of nesting a JSON-like value may have: beyond the store's metadata limit (127),
/// and shallow enough that converting it never exhausts the stack.
const MAX_JSON_DEPTH: usize = 128;

/// Refuses what JSON cannot hold faithfully (NaN and infinite floats, which would become
/// `null`) and nesting deeper than [`MAX_JSON_DEPTH`], before anything is converted.
fn check_json(value: &Bound<'_, PyAny>, field: &str, depth: usize) -> PyResult<()> {
    if depth > MAX_JSON_DEPTH {
        return Err(input(
            field,
            format!("is nested deeper than {MAX_JSON_DEPTH} levels"),
        ));
    }
    if let Ok(x) = value.cast::<PyFloat>() {
        if !x.value().is_finite() {
            return Err(input(
                field,
                "holds a NaN or infinite float, which JSON cannot",
            ));
        }
    } else if let Ok(dict) = value.cast::<PyDict>() {
        for (_, item) in dict.iter() {
            check_json(&item, field, depth + 1)?;
        }
    } else if let Ok(list) = value.cast::<PyList>() {
        for item in list.iter() {
            check_json(&item, field, depth + 1)?;
        }
    } else if let Ok(tuple) = value.cast::<PyTuple>() {
        for item in tuple.iter() {
            check_json(&item, field, depth + 1)?;
        }
    }
    Ok(())
}

/// A JSON value as a Python object.
pub(crate) fn json_to_py(py: Python<'_>, value: &serde_json::Value) -> PyResult<Py<PyAny>> {
    if value.is_null() {
        return Ok(py.None());
    }
    Ok(pythonize::pythonize(py, value)
        .map_err(PyErr::from)?
        .unbind())
}

/// Rows of vectors: a 2-D NumPy array (float32 read in place; other dtypes converted), or a
/// sequence of rows, each a 1-D array, a sequence of floats, or `None` (no vector: the store
/// reuses the one it holds for identical text in the document).
pub(crate) fn vector_rows(
    value: &Bound<'_, PyAny>,
    expected: usize,
    field: &str,
) -> PyResult<Vec<Option<Vec<f32>>>> {
    let array = match value.extract::<PyReadonlyArray2<'_, f32>>() {
        Ok(array) => Some(array),
        Err(_) if is_ndarray(value)? => Some(
            as_f32_array(value, field)?
                .extract()
                .map_err(|_| input(field, "must be a 2-D array (one row per text)"))?,
        ),
        Err(_) => None,
    };
    if let Some(array) = array {
        let shape = array.shape();
        if shape[0] != expected {
            return Err(input(
                field,
                format!("has {} rows for {expected} texts", shape[0]),
            ));
        }
        let view = array.as_array();
        return Ok(view.rows().into_iter().map(|r| Some(r.to_vec())).collect());
    }
    let rows = sequence(value, field)?;
    if rows.len() != expected {
        return Err(input(
            field,
            format!("has {} rows for {expected} texts", rows.len()),
        ));
    }
    rows.iter()
        .enumerate()
        .map(|(i, row)| {
            if row.is_none() {
                Ok(None)
            } else {
                vector(row, &format!("{field}[{i}]")).map(Some)
            }
        })
        .collect()
}

/// One vector: a 1-D array or a sequence of floats.
pub(crate) fn vector(value: &Bound<'_, PyAny>, field: &str) -> PyResult<Vec<f32>> {
    if let Ok(array) = value.extract::<PyReadonlyArray1<'_, f32>>() {
        return Ok(array.as_array().to_vec());
    }
    if is_ndarray(value)? {
        let array: PyReadonlyArray1<'_, f32> = as_f32_array(value, field)?
            .extract()
            .map_err(|_| input(field, "must be a 1-D array"))?;
        return Ok(array.as_array().to_vec());
    }
    value
        .extract::<Vec<f32>>()
        .map_err(|_| input(field, "must be a sequence of floats"))
}

static NDARRAY: PyOnceLock<(Py<PyAny>, Py<PyAny>)> = PyOnceLock::new();

fn numpy_types(py: Python<'_>) -> PyResult<&(Py<PyAny>, Py<PyAny>)> {
    NDARRAY.get_or_try_init(py, || {
        let numpy = py.import("numpy")?;
        Ok((
            numpy.getattr("ndarray")?.unbind(),
            numpy.getattr("asarray")?.unbind(),
        ))
    })
}

fn is_ndarray(value: &Bound<'_, PyAny>) -> PyResult<bool> {
    let py = value.py();
    value.is_instance(numpy_types(py)?.0.bind(py))
}

/// `numpy.asarray(value, dtype="float32")` (a copy only when the dtype or layout differs).
fn as_f32_array<'py>(value: &Bound<'py, PyAny>, field: &str) -> PyResult<Bound<'py, PyAny>> {
    let py = value.py();
    let kwargs = PyDict::new(py);
    kwargs.set_item("dtype", "float32")?;
    numpy_types(py)?
        .1
        .bind(py)
        .call((value,), Some(&kwargs))
        .map_err(|e| input(field, format!("cannot be read as float32 ({e})")))
}

/// The items of a list or tuple (any other sequence is converted with `list()`).
pub(crate) fn sequence<'py>(
    value: &Bound<'py, PyAny>,
    field: &str,
) -> PyResult<Vec<Bound<'py, PyAny>>> {
    if let Ok(list) = value.cast::<PyList>() {
        return Ok(list.iter().collect());
    }
    if let Ok(tuple) = value.cast::<PyTuple>() {
        return Ok(tuple.iter().collect());
    }
    if value.is_instance_of::<pyo3::types::PyString>() {
        return Err(input(field, "must be a sequence, not a str"));
    }
    value
        .try_iter()
        .and_then(|items| items.collect::<PyResult<Vec<_>>>())
        .map_err(|_| input(field, "must be a sequence"))
}

/// A list of strings.
pub(crate) fn strings(value: &Bound<'_, PyAny>, field: &str) -> PyResult<Vec<String>> {
    sequence(value, field)?
        .iter()
        .enumerate()
        .map(|(i, item)| {
            item.extract::<String>()
                .map_err(|_| input(format!("{field}[{i}]"), "must be a str"))
        })
        .collect()
}

/// A count argument (`k`, `ef`, `dimension`): a positive int.
pub(crate) fn count(value: i64, field: &str) -> PyResult<usize> {
    usize::try_from(value)
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| input(field, format!("is {value}; it must be a positive int")))
}
