//! Python exceptions mirroring ratchetdb's error types.
//!
//! `RatchetError` is the base of all; `InputError` (also a `ValueError`) carries `.field`
//! and `.problem`, like the Rust `InputError`.

use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use ratchetdb::{OpenError, ReadError, WriteError};

pyo3::create_exception!(
    _ratchetdb,
    RatchetError,
    PyException,
    "Base class of every ratchetdb error."
);
pyo3::create_exception!(
    _ratchetdb,
    InputError,
    RatchetError,
    "Input the store refuses; `.field` names it, `.problem` says what is wrong. Nothing was changed."
);
pyo3::create_exception!(
    _ratchetdb,
    DimensionMismatchError,
    InputError,
    "A vector's length is not the store's dimension (`.field` names the row)."
);
pyo3::create_exception!(
    _ratchetdb,
    VersionKindMismatchError,
    InputError,
    "A write's version is of another kind (int, datetime, ticket) than the document's."
);
pyo3::create_exception!(
    _ratchetdb,
    MissingVectorError,
    InputError,
    "A chunk came without a vector and the store holds none for its text."
);
pyo3::create_exception!(
    _ratchetdb,
    StoreOpenError,
    RatchetError,
    "Opening the store failed (not a store, schema too new or too old, options mismatch, ...)."
);
pyo3::create_exception!(
    _ratchetdb,
    StoreLockedError,
    StoreOpenError,
    "Another writer (process or Store) holds the file."
);
pyo3::create_exception!(
    _ratchetdb,
    StoreNotFoundError,
    StoreOpenError,
    "No store at the path and creating one was not allowed."
);
pyo3::create_exception!(
    _ratchetdb,
    MismatchError,
    StoreOpenError,
    "The options disagree with what the store recorded (`.field`: dimension, metric or model)."
);
pyo3::create_exception!(
    _ratchetdb,
    CorruptedError,
    RatchetError,
    "The file's contents are damaged."
);
pyo3::create_exception!(
    _ratchetdb,
    StorageError,
    RatchetError,
    "An I/O or storage-engine error (a failed write poisons the store until it is reopened)."
);
pyo3::create_exception!(
    _ratchetdb,
    PoisonedError,
    RatchetError,
    "An earlier commit failed; the store refuses writes until it is reopened."
);
pyo3::create_exception!(
    _ratchetdb,
    ReadOnlyError,
    RatchetError,
    "The store was opened read-only."
);
pyo3::create_exception!(
    _ratchetdb,
    ClosedError,
    RatchetError,
    "The store (or its writer) is closed."
);

/// Registers the exception classes on the module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("RatchetError", py.get_type::<RatchetError>())?;
    m.add("InputError", py.get_type::<InputError>())?;
    m.add(
        "DimensionMismatchError",
        py.get_type::<DimensionMismatchError>(),
    )?;
    m.add(
        "VersionKindMismatchError",
        py.get_type::<VersionKindMismatchError>(),
    )?;
    m.add("MissingVectorError", py.get_type::<MissingVectorError>())?;
    m.add("StoreOpenError", py.get_type::<StoreOpenError>())?;
    m.add("StoreLockedError", py.get_type::<StoreLockedError>())?;
    m.add("StoreNotFoundError", py.get_type::<StoreNotFoundError>())?;
    m.add("MismatchError", py.get_type::<MismatchError>())?;
    m.add("CorruptedError", py.get_type::<CorruptedError>())?;
    m.add("StorageError", py.get_type::<StorageError>())?;
    m.add("PoisonedError", py.get_type::<PoisonedError>())?;
    m.add("ReadOnlyError", py.get_type::<ReadOnlyError>())?;
    m.add("ClosedError", py.get_type::<ClosedError>())?;
    Ok(())
}

/// An exception of class `E` with `.field` and `.problem` set.
fn with_field<E: pyo3::PyTypeInfo>(message: String, field: &str, problem: &str) -> PyErr {
    Python::attach(|py| {
        let error = PyErr::new::<E, _>(message);
        let value = error.value(py);
        // Setting attributes on a fresh exception instance cannot fail short of memory
        // exhaustion; the exception is returned either way.
        let _ = value.setattr("field", field);
        let _ = value.setattr("problem", problem);
        error
    })
}

/// An `InputError` naming `field`.
pub(crate) fn input(field: impl AsRef<str>, problem: impl AsRef<str>) -> PyErr {
    let (field, problem) = (field.as_ref(), problem.as_ref());
    with_field::<InputError>(format!("invalid {field}: {problem}"), field, problem)
}

/// The Python exception for a ratchetdb input error.
pub(crate) fn from_input(error: ratchetdb::InputError) -> PyErr {
    with_field::<InputError>(error.to_string(), &error.field, &error.problem)
}

/// The Python exception for an open error.
pub(crate) fn from_open(error: OpenError) -> PyErr {
    let message = error.to_string();
    match error {
        OpenError::Input(input) => from_input(input),
        OpenError::Locked { .. } | OpenError::HeldExclusively { .. } => {
            StoreLockedError::new_err(message)
        }
        OpenError::NotFound { .. } => StoreNotFoundError::new_err(message),
        OpenError::Mismatch {
            field,
            stored,
            requested,
        } => with_field::<MismatchError>(
            message,
            field,
            &format!("stored {stored}, requested {requested}"),
        ),
        OpenError::Corrupted { .. } => CorruptedError::new_err(message),
        OpenError::Storage { .. } => StorageError::new_err(message),
        _ => StoreOpenError::new_err(message),
    }
}

/// The Python exception for a write error.
pub(crate) fn from_write(error: WriteError) -> PyErr {
    let message = error.to_string();
    match error {
        WriteError::Input(input) => from_input(input),
        WriteError::DimensionMismatch { position, .. } => with_field::<DimensionMismatchError>(
            message.clone(),
            &format!("vectors[{position}]"),
            &message,
        ),
        WriteError::VersionKindMismatch { .. } => {
            with_field::<VersionKindMismatchError>(message.clone(), "version", &message)
        }
        WriteError::MissingVector { position } => with_field::<MissingVectorError>(
            message.clone(),
            &format!("vectors[{position}]"),
            &message,
        ),
        WriteError::Poisoned { .. } => PoisonedError::new_err(message),
        WriteError::Corrupted { .. } => CorruptedError::new_err(message),
        WriteError::Storage(_) | WriteError::BatchFailed { .. } => StorageError::new_err(message),
        WriteError::ReadOnly { .. } => ReadOnlyError::new_err(message),
        WriteError::Closed => ClosedError::new_err(message),
        _ => RatchetError::new_err(message),
    }
}

/// The Python exception for a read error.
pub(crate) fn from_read(error: ReadError) -> PyErr {
    let message = error.to_string();
    match error {
        ReadError::Input(input) => from_input(input),
        ReadError::Corrupted { .. } => CorruptedError::new_err(message),
        ReadError::Storage(_) => StorageError::new_err(message),
        _ => RatchetError::new_err(message),
    }
}
