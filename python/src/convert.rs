//! Converting Python values to the store's inputs (versions, vectors, metadata) and its
//! outputs back to Python values.

use crate::errors::input;
use numpy::{PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{
    PyBool, PyByteArray, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple,
};
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
    fn new(value: &Bound<'_, PyAny>) -> PyResult<Ticket> {
        Ok(Ticket {
            value: int_in(value, "value", 0, u64::MAX)?,
        })
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
    if let Some(int) = as_int(value)? {
        return int
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
            "is of type {}; give an int, a timezone-aware datetime or a Ticket",
            value.get_type().name()?
        ),
    ))
}

/// A version as Python sees it: `int`, `datetime` (UTC) or `Ticket`. A timestamp past
/// `datetime`'s year 9999 (Node writes dates to the year 275760, the CLI any microseconds)
/// is its microseconds since 1970 as an `int`: raising `OverflowError` instead stopped an
/// export halfway and failed a write whose batch had committed (a review's finding).
pub(crate) fn version_to_py(py: Python<'_>, version: Version) -> PyResult<Py<PyAny>> {
    Ok(match version.kind {
        VersionKind::TimestampMicros => {
            let types = datetime_types(py)?;
            let kwargs = PyDict::new(py);
            kwargs.set_item("microseconds", version.value)?;
            let at = types
                .timedelta
                .bind(py)
                .call((), Some(&kwargs))
                .and_then(|delta| types.epoch.bind(py).call_method1("__add__", (delta,)));
            match at {
                Ok(at) => at.unbind(),
                Err(error) if error.is_instance_of::<pyo3::exceptions::PyOverflowError>(py) => {
                    version.value.into_pyobject(py)?.into_any().unbind()
                }
                Err(error) => return Err(error),
            }
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

/// Refuses what JSON cannot hold faithfully, before anything is converted: NaN and infinite
/// floats (which would become `null`), nesting deeper than [`MAX_JSON_DEPTH`], and any type
/// but `None`, `bool`, `int`, `float`, `str`, `dict`, `list` and `tuple` (and their
/// subclasses).
///
/// Regression (review): only dicts, lists and tuples were walked, while the conversion also
/// takes sets, any `Sequence` or `Mapping` (`UserList`, `deque`, `UserDict`) and dataclasses:
/// a NaN inside one became `null` unnoticed, a `UserList` holding itself recursed until the
/// stack overflowed, and a set's order (its hash seed's) made the same metadata hash
/// differently in another process, so a redelivery was refused as a conflict.
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
    } else if !(value.is_none()
        || value.is_instance_of::<PyBool>()
        || value.is_instance_of::<PyInt>()
        || value.is_instance_of::<PyString>())
    {
        return Err(input(
            field,
            format!(
                "holds a {}, which JSON cannot hold: give dicts, lists, tuples, str, int, \
                 float, bool and None",
                value.get_type().name()?
            ),
        ));
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

/// Rows of vectors: a 2-D NumPy array of real numbers (float32 read in place; other
/// real dtypes converted), or a sequence of rows, each a 1-D array, a sequence of real
/// numbers, or `None` (no vector: the store reuses the one it holds for identical text in
/// the document). `expected` rows, one per text.
pub(crate) fn vector_rows(
    value: &Bound<'_, PyAny>,
    expected: usize,
    field: &str,
) -> PyResult<Vec<Option<Vec<f32>>>> {
    let rows = RowsArg::read(value, field)?;
    if rows.len() != expected {
        return Err(input(
            field,
            format!("has {} rows for {expected} texts", rows.len()),
        ));
    }
    rows.vectors(field)
}

/// Rows of vectors as given, read once: a 2-D array (no Python object per row), or the items
/// of a list, a tuple or any other iterable (a generator is consumed here, once).
pub(crate) enum RowsArg<'py> {
    /// A 2-D array of real numbers, as float32.
    Array(PyReadonlyArray2<'py, f32>),
    /// The items of a sequence or iterable: rows (or `None`), not yet converted.
    Items(Vec<Bound<'py, PyAny>>),
}

impl<'py> RowsArg<'py> {
    /// Reads `value` (its items, if it is no array); `field` names it in errors.
    pub(crate) fn read(value: &Bound<'py, PyAny>, field: &str) -> PyResult<RowsArg<'py>> {
        match value.extract::<PyReadonlyArray2<'py, f32>>() {
            Ok(array) => Ok(RowsArg::Array(array)),
            Err(_) if is_ndarray(value)? && !is_object_array(value)? => Ok(RowsArg::Array(
                as_f32_array(value, field)?
                    .extract()
                    .map_err(|_| input(field, "must be a 2-D array (one row per text)"))?,
            )),
            Err(_) => sequence(value, field).map(RowsArg::Items),
        }
    }

    /// How many rows there are.
    pub(crate) fn len(&self) -> usize {
        match self {
            RowsArg::Array(array) => array.shape()[0],
            RowsArg::Items(items) => items.len(),
        }
    }

    /// Every row as a vector (`None` for an item that is `None`); an item that is no vector
    /// is an `InputError` naming `field[i]`.
    pub(crate) fn vectors(&self, field: &str) -> PyResult<Vec<Option<Vec<f32>>>> {
        match self {
            RowsArg::Array(array) => Ok(array
                .as_array()
                .rows()
                .into_iter()
                .map(|r| Some(r.to_vec()))
                .collect()),
            RowsArg::Items(items) => items
                .iter()
                .enumerate()
                .map(|(i, row)| {
                    if row.is_none() {
                        Ok(None)
                    } else {
                        vector(row, &format!("{field}[{i}]")).map(Some)
                    }
                })
                .collect(),
        }
    }
}

/// One vector: a 1-D array of real numbers or a sequence of real numbers (`int`, `float`,
/// NumPy integers and floats; not `bool`, `complex`, `str` or `bytes`).
pub(crate) fn vector(value: &Bound<'_, PyAny>, field: &str) -> PyResult<Vec<f32>> {
    if let Ok(array) = value.extract::<PyReadonlyArray1<'_, f32>>() {
        return Ok(array.as_array().to_vec());
    }
    if is_ndarray(value)? && !is_object_array(value)? {
        let array: PyReadonlyArray1<'_, f32> = as_f32_array(value, field)?
            .extract()
            .map_err(|_| input(field, "must be a 1-D array"))?;
        return Ok(array.as_array().to_vec());
    }
    if value.is_instance_of::<PyString>()
        || value.is_instance_of::<PyBytes>()
        || value.is_instance_of::<PyByteArray>()
    {
        return Err(input(
            field,
            format!(
                "is of type {}; give a sequence of floats or a 1-D array",
                type_name(value)
            ),
        ));
    }
    let items = sequence(value, field).map_err(|_| input(field, "must be a sequence of floats"))?;
    items
        .iter()
        .enumerate()
        .map(|(i, item)| real(item, &format!("{field}[{i}]")).map(|x| x as f32))
        .collect()
}

/// A real number: a `float`, an `int` (not a `bool`) or a NumPy real scalar.
pub(crate) fn real(value: &Bound<'_, PyAny>, field: &str) -> PyResult<f64> {
    if let Ok(x) = value.cast_exact::<PyFloat>() {
        return Ok(x.value());
    }
    if value.is_instance_of::<PyInt>() && !value.is_instance_of::<PyBool>() {
        return value
            .extract::<f64>()
            .map_err(|_| input(field, "is an int too large for a float"));
    }
    let py = value.py();
    let types = numpy_types(py)?;
    if value.is_instance(types.real.bind(py))?
        && !value.is_instance_of::<PyBool>()
        && !value.is_instance(types.bool_.bind(py))?
    {
        return value
            .call_method0("__float__")
            .and_then(|x| x.extract::<f64>())
            .map_err(|e| input(field, format!("cannot be read as a float ({e})")));
    }
    Err(input(
        field,
        format!("is of type {}; give a real number", type_name(value)),
    ))
}

/// The name of a value's type, for messages.
pub(crate) fn type_name(value: &Bound<'_, PyAny>) -> String {
    value
        .get_type()
        .name()
        .map(|name| name.to_string())
        .unwrap_or_else(|_| "value".to_string())
}

struct NumpyTypes {
    ndarray: Py<PyAny>,
    asarray: Py<PyAny>,
    bool_: Py<PyAny>,
    real: Py<PyAny>,
}

static NUMPY: PyOnceLock<NumpyTypes> = PyOnceLock::new();

fn numpy_types(py: Python<'_>) -> PyResult<&NumpyTypes> {
    NUMPY.get_or_try_init(py, || {
        let numpy = py.import("numpy")?;
        Ok(NumpyTypes {
            ndarray: numpy.getattr("ndarray")?.unbind(),
            asarray: numpy.getattr("asarray")?.unbind(),
            bool_: numpy.getattr("bool_")?.unbind(),
            real: py.import("numbers")?.getattr("Real")?.unbind(),
        })
    })
}

fn is_ndarray(value: &Bound<'_, PyAny>) -> PyResult<bool> {
    let py = value.py();
    value.is_instance(numpy_types(py)?.ndarray.bind(py))
}

/// Whether an array holds Python objects (`dtype=object`): its items are checked one by one
/// as a sequence's are.
fn is_object_array(value: &Bound<'_, PyAny>) -> PyResult<bool> {
    let kind: String = value.getattr("dtype")?.getattr("kind")?.extract()?;
    Ok(kind == "O")
}

/// `numpy.asarray(value, dtype="float32")` (a copy only when the dtype or layout differs),
/// for arrays of real numbers only: casting would drop a complex number's imaginary part
/// and read booleans, strings and dates as numbers.
fn as_f32_array<'py>(value: &Bound<'py, PyAny>, field: &str) -> PyResult<Bound<'py, PyAny>> {
    let py = value.py();
    let dtype = value.getattr("dtype")?;
    let kind: String = dtype.getattr("kind")?.extract()?;
    if !matches!(kind.as_str(), "f" | "i" | "u") {
        return Err(input(
            field,
            format!(
                "is an array of dtype {}; give real numbers (float32 is read in place)",
                dtype.str()?
            ),
        ));
    }
    let kwargs = PyDict::new(py);
    kwargs.set_item("dtype", "float32")?;
    numpy_types(py)?
        .asarray
        .bind(py)
        .call((value,), Some(&kwargs))
        .map_err(|e| input(field, format!("cannot be read as float32 ({e})")))
}

/// The items of a list or tuple (any other sequence is converted with `list()`; a `str` or
/// `bytes` is refused, not split into characters or bytes).
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
    if value.is_instance_of::<PyString>()
        || value.is_instance_of::<PyBytes>()
        || value.is_instance_of::<PyByteArray>()
    {
        return Err(input(
            field,
            format!("must be a sequence, not {}", type_name(value)),
        ));
    }
    value
        .try_iter()
        .and_then(|items| items.collect::<PyResult<Vec<_>>>())
        .map_err(|_| input(field, "must be a sequence"))
}

/// A `str` argument as UTF-8: anything else, or a `str` holding a lone surrogate (which
/// UTF-8 cannot encode), is an `InputError` naming `field`.
pub(crate) fn text(value: &Bound<'_, PyAny>, field: &str) -> PyResult<String> {
    let string = value
        .cast::<PyString>()
        .map_err(|_| input(field, format!("must be a str, not {}", type_name(value))))?;
    match string.to_cow() {
        Ok(s) => Ok(s.into_owned()),
        Err(_) => {
            let at = string
                .to_string_lossy()
                .chars()
                .position(|c| c == char::REPLACEMENT_CHARACTER)
                .unwrap_or(0);
            Err(input(
                field,
                format!(
                    "holds a lone surrogate (at index {at}), which is not valid Unicode text; \
                     decode the source with errors=\"replace\" or remove it"
                ),
            ))
        }
    }
}

/// A list of strings.
pub(crate) fn strings(value: &Bound<'_, PyAny>, field: &str) -> PyResult<Vec<String>> {
    sequence(value, field)?
        .iter()
        .enumerate()
        .map(|(i, item)| text(item, &format!("{field}[{i}]")))
        .collect()
}

/// An `int` (or NumPy integer: anything with `__index__`), never a `bool`; `None` for
/// anything else.
pub(crate) fn as_int<'py>(value: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyInt>>> {
    if value.is_instance_of::<PyBool>() {
        return Ok(None);
    }
    if let Ok(int) = value.cast::<PyInt>() {
        return Ok(Some(int.clone()));
    }
    let py = value.py();
    if value.is_instance_of::<PyFloat>()
        || value.is_instance(numpy_types(py)?.bool_.bind(py))?
        || !value.hasattr("__index__")?
    {
        return Ok(None);
    }
    Ok(value
        .call_method0("__index__")
        .ok()
        .and_then(|int| int.cast_into::<PyInt>().ok()))
}

/// A whole number from `min` to `max`; anything else is an `InputError` naming `field`.
pub(crate) fn int_in(value: &Bound<'_, PyAny>, field: &str, min: u64, max: u64) -> PyResult<u64> {
    let bounds = || format!("it must be an int from {min} to {max}");
    let int = as_int(value)?.ok_or_else(|| {
        input(
            field,
            format!("is of type {}; {}", type_name(value), bounds()),
        )
    })?;
    int.extract::<u64>()
        .ok()
        .filter(|n| (min..=max).contains(n))
        .ok_or_else(|| input(field, format!("is {int}; {}", bounds())))
}

/// A count argument (`k`, `ef`, `dimension`): a positive int.
pub(crate) fn count(value: &Bound<'_, PyAny>, field: &str) -> PyResult<usize> {
    let max = u64::try_from(usize::MAX).unwrap_or(u64::MAX);
    let n = int_in(value, field, 1, max)?;
    usize::try_from(n).map_err(|_| input(field, format!("is {n}; it is too large")))
}

/// An optional count argument (`None` for `None`).
pub(crate) fn count_opt(value: Option<&Bound<'_, PyAny>>, field: &str) -> PyResult<Option<usize>> {
    match value {
        Some(v) if !v.is_none() => count(v, field).map(Some),
        _ => Ok(None),
    }
}

/// A `bool` argument (`True`/`False` or a NumPy bool).
pub(crate) fn flag(value: &Bound<'_, PyAny>, field: &str) -> PyResult<bool> {
    if let Ok(b) = value.cast::<PyBool>() {
        return Ok(b.is_true());
    }
    let py = value.py();
    if value.is_instance(numpy_types(py)?.bool_.bind(py))? {
        return value.is_truthy();
    }
    Err(input(
        field,
        format!("is of type {}; give True or False", type_name(value)),
    ))
}

/// An optional real-number argument (`None` for `None`), finite.
pub(crate) fn real_opt(value: Option<&Bound<'_, PyAny>>, field: &str) -> PyResult<Option<f64>> {
    match value {
        Some(v) if !v.is_none() => {
            let x = real(v, field)?;
            if x.is_finite() {
                Ok(Some(x))
            } else {
                Err(input(field, format!("is {x}; give a finite number")))
            }
        }
        _ => Ok(None),
    }
}
