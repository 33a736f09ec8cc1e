//! ratchetdb's errors, carried to JavaScript.
//!
//! A rejected promise carries a `napi::Error` whose message is a tagged JSON record
//! (`{"class", "field", "message"}`); `index.js` turns it into an instance of the exported
//! error class of that name (`InputError`, `StoreLockedError`, ...), with `.code` and
//! `.field`, and its message in the JavaScript API's words.

use napi::{Error, Status};
use ratchetdb::{OpenError, ReadError, WriteError};

/// What every tagged message starts with.
pub const TAG: &str = "ratchetdb-error:";

/// An error of JavaScript class `class`, naming `field` when there is one.
pub fn tagged(class: &str, field: Option<&str>, message: &str) -> Error {
    let record = serde_json::json!({ "class": class, "field": field, "message": message });
    Error::new(Status::GenericFailure, format!("{TAG}{record}"))
}

/// An `InputError` naming `field`.
pub fn input(field: &str, problem: impl std::fmt::Display) -> Error {
    tagged(
        "InputError",
        Some(field),
        &format!("invalid {field}: {problem}"),
    )
}

/// A failure inside the binding itself (a bug, not the caller's input).
pub fn internal(message: &str) -> Error {
    tagged("RatchetError", None, message)
}

/// The store was closed.
pub fn closed(path: &str) -> Error {
    tagged("ClosedError", None, &format!("the store {path} is closed"))
}

fn from_input(error: &ratchetdb::InputError) -> Error {
    // A chunk's vector in another space is its `spaceVectors` entry in JavaScript.
    if error.field.contains(".spaces.") {
        let field = error.field.replacen(".spaces.", ".spaceVectors.", 1);
        return tagged(
            "InputError",
            Some(&field),
            &format!("invalid {field}: {}", error.problem),
        );
    }
    tagged("InputError", Some(&error.field), &error.to_string())
}

/// The JavaScript error for an open error.
pub fn from_open(error: OpenError) -> Error {
    let message = error.to_string();
    match &error {
        OpenError::Input(input) => from_input(input),
        OpenError::Locked { .. } | OpenError::HeldExclusively { .. } => {
            tagged("StoreLockedError", None, &message)
        }
        OpenError::NotFound { .. } => tagged("StoreNotFoundError", None, &message),
        OpenError::Mismatch { field, .. } => tagged("MismatchError", Some(field), &message),
        OpenError::Corrupted { .. } => tagged("CorruptedError", None, &message),
        OpenError::Storage { .. } => tagged("StorageError", None, &message),
        OpenError::NeedsRecovery { .. } => tagged("NeedsRecoveryError", None, &message),
        _ => tagged("StoreOpenError", None, &message),
    }
}

/// The JavaScript error for a write error; `position` fields are named as in JavaScript
/// (`chunks[3].vector`).
pub fn from_write(error: WriteError) -> Error {
    let message = error.to_string();
    match &error {
        WriteError::Input(input) => from_input(input),
        WriteError::DimensionMismatch { position, .. } => tagged(
            "DimensionMismatchError",
            Some(&format!("chunks[{position}].vector")),
            &message,
        ),
        WriteError::VersionKindMismatch { .. } => {
            tagged("VersionKindMismatchError", Some("version"), &message)
        }
        WriteError::MissingVector { position } => tagged(
            "MissingVectorError",
            Some(&format!("chunks[{position}].vector")),
            &message,
        ),
        WriteError::MissingSpaceVector { space, position } => {
            let field = format!("chunks[{position}].spaceVectors.{space}");
            tagged(
                "InputError",
                Some(&field),
                &format!(
                    "invalid {field}: is missing: the store has a complete vector space \
                     {space:?} besides its default one, so every new chunk needs a vector \
                     there; give it in the chunk's spaceVectors, or open the store with an \
                     embedder of that space's model (see spaces()) to embed them"
                ),
            )
        }
        WriteError::Poisoned { .. } => tagged("PoisonedError", None, &message),
        WriteError::Corrupted { .. } => tagged("CorruptedError", None, &message),
        WriteError::Storage(_) | WriteError::BatchFailed { .. } => {
            tagged("StorageError", None, &message)
        }
        WriteError::ReadOnly { .. } => tagged("ReadOnlyError", None, &message),
        WriteError::Closed => tagged("ClosedError", None, &message),
        WriteError::Unsupported { .. } => tagged("UnsupportedError", None, &message),
        _ => tagged("RatchetError", None, &message),
    }
}

/// The JavaScript error for a refused [`ratchetdb::Store::plan`] (run before embedding an
/// upsert's chunks): a version of another kind than the document's is a
/// `VersionKindMismatchError`, as the write's own refusal is, where it was a plain
/// `InputError` (a store with an embedder, a chunk without a vector).
pub fn from_plan(error: ReadError) -> Error {
    if let ReadError::Input(input) = &error {
        if input.field == "version" && input.problem.contains("the document is versioned by") {
            return tagged(
                "VersionKindMismatchError",
                Some("version"),
                &input.to_string(),
            );
        }
    }
    from_read(error)
}

/// The JavaScript error for a read error.
pub fn from_read(error: ReadError) -> Error {
    let message = error.to_string();
    match &error {
        ReadError::Input(input) => from_input(input),
        ReadError::Corrupted { .. } => tagged("CorruptedError", None, &message),
        ReadError::Storage(_) => tagged("StorageError", None, &message),
        ReadError::Unsupported { .. } => tagged("UnsupportedError", None, &message),
        ReadError::NoTextIndex { .. } => tagged("NoTextIndexError", None, &message),
        _ => tagged("RatchetError", None, &message),
    }
}
