//! Python exceptions mirroring ratchetdb's error types.
//!
//! `RatchetError` is the base of all; `InputError` carries `.field`
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
    ForkedError,
    RatchetError,
    "The Store was opened in the parent of this forked process; open a Store of your own here."
);
pyo3::create_exception!(
    _ratchetdb,
    EmbedError,
    RatchetError,
    "An embedder could not be built or could not embed."
);
pyo3::create_exception!(
    _ratchetdb,
    ModelNotFoundError,
    EmbedError,
    "No model folder was found (or the one given lacks a file); the message says how to install it."
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
    m.add("ForkedError", py.get_type::<ForkedError>())?;
    m.add("EmbedError", py.get_type::<EmbedError>())?;
    m.add("ModelNotFoundError", py.get_type::<ModelNotFoundError>())?;
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

/// The Python exception for a ratchetdb input error, its field named as the Python call
/// names it (`vectors[0][3]`, not the Rust `chunks[0].vector[3]`).
pub(crate) fn from_input(error: ratchetdb::InputError) -> PyErr {
    let field = python_field(&error.field);
    input(field, python_message(&error.problem))
}

/// A field of the Rust API as the Python call names it: a chunk's text, vector and metadata
/// are `texts[i]`, `vectors[i]` and `metas[i]`; a search's query is `vector` (one row of
/// `search_many`'s `matrix`); BM25's and fusion's parameters are keyword arguments.
pub(crate) fn python_field(field: &str) -> String {
    for (rust, python) in [
        ("bm25.k1", "k1"),
        ("bm25.b", "b"),
        ("fusion.k", "rrf_k"),
        ("fusion.vector_weight", "vector_weight"),
    ] {
        if field == rust {
            return python.to_string();
        }
    }
    if let Some(rest) = field.strip_prefix("queries") {
        return format!("matrix{rest}");
    }
    if let Some(rest) = field.strip_prefix("query") {
        return format!("vector{rest}");
    }
    if field == "chunks" {
        return "texts".to_string();
    }
    if let Some(rest) = field.strip_prefix("chunks[") {
        if let Some((position, tail)) = rest.split_once(']') {
            if let Some(space) = tail.strip_prefix(".spaces.") {
                // `chunks[0].spaces.minilm[3]`: `space_vectors["minilm"][0][3]`.
                let (name, rest) = space.split_at(space.find('[').unwrap_or(space.len()));
                return format!("space_vectors[{name:?}][{position}]{rest}");
            }
            let (list, tail) = match tail {
                "" | ".text" => ("texts", ""),
                _ if tail.starts_with(".vector") => ("vectors", &tail[".vector".len()..]),
                _ if tail.starts_with(".meta") => ("metas", &tail[".meta".len()..]),
                _ => ("chunks", tail),
            };
            return format!("{list}[{position}]{tail}");
        }
    }
    field.to_string()
}

/// A message of the Rust library as a Python user reads it: the Rust calls and options it
/// suggests become the Python package's (`Store(path, read_only=True)` for
/// `Store::open_read_only`), and the options a Python call has no use for
/// (`Options::wait_for_lock`) are left out.
pub(crate) fn python_message(message: &str) -> String {
    let mut message = message.to_string();
    for (rust, python) in [
        (" (Options::wait_for_lock)", ""),
        (", Options::wait_for_lock", ""),
        ("Options::wait_for_lock", "retrying later"),
        (
            "Options::allow_readers(false), Durability::None",
            "durability=\"none\"",
        ),
        ("Options::text_index(false)", "the text index turned off"),
        (
            "Store::recover, Store::open, or a read-only open with Options::recover_on_read_open",
            "Store(path)",
        ),
        (
            "read its documents with their vectors with the build that wrote it (Store::documents) and write them into a new store",
            "export it with the build that wrote it (Store.export()) and write its documents into a new store",
        ),
        (
            "use Store::create (or Store::open, which creates a missing file) to make one",
            "open it with Store(path) to make one",
        ),
        ("Store::open_read_only_with", "Store(path, read_only=True)"),
        ("Store::open_read_only", "Store(path, read_only=True)"),
        ("Store::open", "Store(path)"),
        ("Store::create", "Store(path)"),
        ("Store::sync", "sync"),
        ("Store::snapshot", "this read"),
        ("Store::ticket", "Store.ticket()"),
    ] {
        if message.contains(rust) {
            message = message.replace(rust, python);
        }
    }
    // A limit's Rust name (`(Limits::max_k)`) means nothing in Python.
    while let Some(start) = message.find(" (Limits::") {
        match message[start..].find(')') {
            Some(end) => message.replace_range(start..=start + end, ""),
            None => break,
        }
    }
    // Any other method the Rust message names has the same name in Python.
    message.replace("Store::", "Store.")
}

/// An exception of class `E` whose message is the Rust message in Python's terms.
fn translated<E: pyo3::PyTypeInfo>(message: &str) -> PyErr {
    PyErr::new::<E, _>(python_message(message))
}

/// The Python exception for an open error.
pub(crate) fn from_open(error: OpenError) -> PyErr {
    let message = error.to_string();
    match error {
        OpenError::Input(input) => from_input(input),
        OpenError::Locked { path } => StoreLockedError::new_err(format!(
            "the database {} is open for writing in another process (or in another Store in \
             this one): one writer at a time; close that one first, or read beside it with \
             Store(path, read_only=True)",
            path.display()
        )),
        OpenError::HeldExclusively { path } => StoreLockedError::new_err(format!(
            "the database {} is open in another process that writes it exclusively, letting no \
             reader in (durability=\"none\", or an older ratchetdb); wait for it to close",
            path.display()
        )),
        OpenError::NotFound { .. } => translated::<StoreNotFoundError>(&message),
        OpenError::Mismatch {
            field,
            stored,
            requested,
        } => with_field::<MismatchError>(
            message,
            field,
            &format!("stored {stored}, requested {requested}"),
        ),
        OpenError::Corrupted { .. } => translated::<CorruptedError>(&message),
        OpenError::Storage { .. } => translated::<StorageError>(&message),
        _ => translated::<StoreOpenError>(&message),
    }
}

/// The Python exception for a write error.
pub(crate) fn from_write(error: WriteError) -> PyErr {
    let message = error.to_string();
    match error {
        WriteError::Input(input) => from_input(input),
        WriteError::DimensionMismatch {
            position,
            expected,
            found,
        } => {
            let field = format!("vectors[{position}]");
            let problem =
                format!("has {found} dimensions; this store holds {expected}-dimensional vectors");
            with_field::<DimensionMismatchError>(
                format!("invalid {field}: {problem}"),
                &field,
                &problem,
            )
        }
        WriteError::VersionKindMismatch { .. } => {
            with_field::<VersionKindMismatchError>(message.clone(), "version", &message)
        }
        WriteError::MissingVector { position } => {
            let field = format!("vectors[{position}]");
            let problem = "is None and the store holds no vector for its text; give its \
                           vector, or open the Store with an embedder (embedder=...)";
            with_field::<MissingVectorError>(format!("invalid {field}: {problem}"), &field, problem)
        }
        WriteError::MissingSpaceVector { space, position } => {
            let field = format!("space_vectors[{space:?}][{position}]");
            let problem = format!(
                "is missing: the store has a complete vector space {space:?} besides its \
                 default one, so every new chunk needs a vector there; give \
                 space_vectors={{{space:?}: rows}}, or open the Store with an embedder of \
                 that space's model (see spaces()) to embed them"
            );
            with_field::<InputError>(format!("invalid {field}: {problem}"), &field, &problem)
        }
        WriteError::Poisoned { .. } => translated::<PoisonedError>(&message),
        WriteError::Corrupted { .. } => translated::<CorruptedError>(&message),
        WriteError::Storage(_) | WriteError::BatchFailed { .. } => {
            translated::<StorageError>(&message)
        }
        WriteError::ReadOnly { path } => ReadOnlyError::new_err(format!(
            "the store {} was opened read-only (read_only=True); open it with Store(path) to \
             write",
            path.display()
        )),
        WriteError::Closed => translated::<ClosedError>(&message),
        _ => translated::<RatchetError>(&message),
    }
}

/// The Python exception for a read error.
pub(crate) fn from_read(error: ReadError) -> PyErr {
    let message = error.to_string();
    match error {
        ReadError::Input(input) => from_input(input),
        ReadError::Corrupted { .. } => translated::<CorruptedError>(&message),
        ReadError::Storage(_) => translated::<StorageError>(&message),
        _ => translated::<RatchetError>(&message),
    }
}

/// A `MismatchError` naming `field`, with `message` and `.problem`.
pub(crate) fn mismatch(field: &str, message: String, problem: String) -> PyErr {
    with_field::<MismatchError>(message, field, &problem)
}
