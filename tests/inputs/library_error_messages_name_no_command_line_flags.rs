//! Issue 47 item 8: the library's error messages name library calls (`Options::wait_for_lock`,
//! `Store::open_read_only`), never a command-line flag (`--wait SECONDS`) or a `ratchet`
//! command; the command line adds its own advice where it prints an error. Every variant of
//! every library error whose text the library writes, with placeholder fields.

use ratchetdb::{BackupError, Error, InputError, OpenError, ReadError, VersionKind, WriteError};
use std::path::PathBuf;

fn storage() -> redb::Error {
    redb::Error::Io(std::io::Error::other("the disk said no"))
}

fn open_errors() -> Vec<OpenError> {
    let path = || PathBuf::from("/data/store.redb");
    let errors = vec![
        OpenError::Locked { path: path() },
        OpenError::HeldExclusively { path: path() },
        OpenError::Empty { path: path() },
        OpenError::NeedsRecovery { path: path() },
        OpenError::NeedsConversion {
            path: path(),
            found: 2,
            supported: 6,
        },
        OpenError::NotWritable {
            path: path(),
            detail: "permission denied".into(),
        },
        OpenError::NotFound { path: path() },
        OpenError::AlreadyExists { path: path() },
        OpenError::NotAStore {
            path: path(),
            detail: "no ratchetdb tables".into(),
        },
        OpenError::SchemaTooNew {
            path: path(),
            found: 9,
            supported: 6,
        },
        OpenError::SchemaTooOld {
            path: path(),
            found: 0,
            supported: 6,
        },
        OpenError::Unconvertible {
            path: path(),
            detail: "a document too large for one row".into(),
        },
        OpenError::Mismatch {
            field: "dimension",
            stored: "3".into(),
            requested: "4".into(),
        },
        OpenError::Input(InputError {
            field: "dimension".into(),
            problem: "must be at least 1".into(),
        }),
        OpenError::Corrupted {
            path: path(),
            what: "a row".into(),
            detail: "truncated".into(),
        },
        OpenError::BackendNotBuilt {
            url: "postgres://localhost/rag".into(),
            backend: "PostgreSQL",
            feature: "postgres",
        },
        OpenError::Storage {
            path: path(),
            source: storage(),
        },
    ];
    #[cfg(feature = "postgres")]
    let mut errors = errors;
    #[cfg(feature = "postgres")]
    errors.push(OpenError::Server {
        url: "postgres://localhost/rag".into(),
        detail: "connection refused".into(),
    });
    errors
}

fn write_errors() -> Vec<WriteError> {
    let errors = vec![
        WriteError::DimensionMismatch {
            position: 0,
            expected: 3,
            found: 4,
        },
        WriteError::VersionKindMismatch {
            source_name: "wiki".into(),
            id: "a".into(),
            stored: VersionKind::Number,
            incoming: VersionKind::Ticket,
        },
        WriteError::MissingVector { position: 1 },
        WriteError::Exhausted {
            what: "document ids",
        },
        WriteError::Poisoned {
            cause: "an fsync failed".into(),
        },
        WriteError::Corrupted {
            what: "a row".into(),
            detail: "truncated".into(),
        },
        WriteError::Storage(storage()),
        WriteError::BatchFailed {
            cause: "an fsync failed".into(),
        },
        WriteError::ReadOnly {
            path: PathBuf::from("/data/store.redb"),
        },
        WriteError::Unsupported {
            operation: "Store::sync",
            backend: "PostgreSQL",
        },
        WriteError::Closed,
        WriteError::Full,
    ];
    #[cfg(feature = "postgres")]
    let mut errors = errors;
    #[cfg(feature = "postgres")]
    errors.push(WriteError::Server {
        detail: "connection lost".into(),
    });
    errors
}

fn read_errors() -> Vec<ReadError> {
    let errors = vec![
        ReadError::Corrupted {
            what: "a row".into(),
            detail: "truncated".into(),
        },
        ReadError::Storage(storage()),
        ReadError::Unsupported {
            operation: "Store::snapshot",
            backend: "PostgreSQL",
        },
        ReadError::NoTextIndex {
            detail: "the store was opened without it".into(),
        },
        ReadError::IndexBuild {
            detail: "out of memory".into(),
        },
        ReadError::IndexPersist {
            detail: "the disk is full".into(),
        },
        ReadError::IndexSearch {
            detail: "a point out of range".into(),
        },
    ];
    #[cfg(feature = "postgres")]
    let mut errors = errors;
    #[cfg(feature = "postgres")]
    errors.push(ReadError::Server {
        detail: "connection lost".into(),
    });
    errors
}

#[test]
fn library_error_messages_name_no_command_line_flags() {
    let mut messages: Vec<String> = Vec::new();
    messages.extend(
        open_errors()
            .into_iter()
            .map(|e| Error::Open(e).to_string()),
    );
    messages.extend(
        write_errors()
            .into_iter()
            .map(|e| Error::Write(e).to_string()),
    );
    messages.extend(
        read_errors()
            .into_iter()
            .map(|e| Error::Read(e).to_string()),
    );
    messages.push(
        BackupError::AlreadyExists {
            path: PathBuf::from("/backups/store.redb"),
        }
        .to_string(),
    );
    messages.push(
        BackupError::Write {
            path: PathBuf::from("/backups/store.redb"),
            detail: "the disk is full".into(),
        }
        .to_string(),
    );
    assert!(messages.len() >= 38, "{} messages", messages.len());
    for message in &messages {
        assert!(!message.is_empty());
        assert!(!message.contains("--"), "a command-line flag: {message}");
        assert!(
            !message.contains("`ratchet "),
            "a ratchet command: {message}"
        );
    }
}
