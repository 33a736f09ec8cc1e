//! A hot backup: every table of one read snapshot copied into a new file, while writers keep
//! writing. The copy is a store of its own (the same schema, rows and counters as the
//! source at the snapshot's commit); nothing is derived or converted on the way.

use crate::backend::redb::read::Snapshot;
use crate::backend::redb::schema::{
    BUDGET_SNAPSHOT, CHANGELOG, CHUNKS, COUNTERS, DOCS, INDEX_SNAPSHOT, LEGACY_TEXT_CHUNKS,
    LEGACY_TEXT_TOTALS, LISTINGS, LISTING_MEMBERS, META, SKIP_LOG, SPACES, SPACE_CHANGELOG,
    SPACE_VECTORS, TEXT_DOCS, VECTORS,
};
use crate::error::ReadError;
use redb::{
    MultimapTableHandle, ReadTransaction, ReadableTable, TableDefinition, TableHandle,
    WriteTransaction,
};
use std::path::{Path, PathBuf};

/// What [`Store::backup`](crate::Store::backup) wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Backup {
    /// The file written.
    pub path: PathBuf,
    /// The commit sequence number of the snapshot copied: the copy holds exactly what the
    /// source held at that commit (the `seq.commit` counter, which every write transaction
    /// raises).
    pub commit: u64,
    /// The tables copied.
    pub tables: usize,
    /// The rows copied, over every table.
    pub rows: u64,
}

/// Errors from [`Store::backup`](crate::Store::backup).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BackupError {
    /// Something is already at the backup's path: a backup never overwrites a file.
    #[error("{path} already exists; a backup never overwrites a file: choose a new path, or move the file away first")]
    AlreadyExists {
        /// The path.
        path: PathBuf,
    },
    /// Reading the source failed (its snapshot, a row, a table this build does not know).
    #[error("reading the store to back it up: {0}")]
    Read(#[from] ReadError),
    /// Writing the copy failed; the partial copy was removed.
    #[error("writing the backup {path}: {detail}")]
    Write {
        /// The path being written.
        path: PathBuf,
        /// What failed.
        detail: String,
    },
}

/// Copies every table of `snapshot` into a new redb file at `out`, which must not exist.
/// The copy is built in a temporary file beside `out` (`<out>.partial-<pid>`), made durable,
/// and only then linked to `out` (and the name synced), so `out` is either absent or a whole,
/// durable copy. On unix the copy gets the permission bits of `source`, the store's file.
pub(crate) fn write(snapshot: &Snapshot, source: &Path, out: &Path) -> Result<Backup, BackupError> {
    if out.exists() {
        return Err(BackupError::AlreadyExists {
            path: out.to_path_buf(),
        });
    }
    let commit = snapshot.commit()?;
    let mut partial = out.as_os_str().to_owned();
    partial.push(format!(".partial-{}", std::process::id()));
    let partial = PathBuf::from(partial);
    let failed = |detail: String| BackupError::Write {
        path: out.to_path_buf(),
        detail,
    };
    let result = (|| {
        let mut options = std::fs::OpenOptions::new();
        options.read(true).write(true).create_new(true);
        // Readable by the owner alone until it has the source's bits.
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let file = options
            .open(&partial)
            .map_err(|e| failed(format!("{}: {e}", partial.display())))?;
        #[cfg(unix)]
        std::fs::metadata(source)
            .and_then(|m| file.set_permissions(m.permissions()))
            .map_err(|e| {
                failed(format!(
                    "copying the permissions of {}: {e}",
                    source.display()
                ))
            })?;
        #[cfg(not(unix))]
        let _ = source;
        let db = redb::Database::builder()
            .set_cache_size(crate::options::DEFAULT_CACHE_SIZE)
            .create_with_backend(
                redb::backends::FileBackend::new(file).map_err(|e| failed(e.to_string()))?,
            )
            .map_err(|e| failed(e.to_string()))?;
        let mut txn = db.begin_write().map_err(|e| failed(e.to_string()))?;
        txn.set_durability(redb::Durability::Immediate)
            .map_err(|e| failed(e.to_string()))?;
        let (tables, rows) = copy_tables(&snapshot.txn, &txn, &failed)?;
        txn.commit().map_err(|e| failed(e.to_string()))?;
        db.close().map_err(|e| failed(e.to_string()))?;
        link_new(&partial, out)?;
        Ok(Backup {
            path: out.to_path_buf(),
            commit,
            tables,
            rows,
        })
    })();
    let _ = std::fs::remove_file(&partial);
    result
}

/// Gives the finished copy its name (and makes that name durable) without ever replacing a
/// file that appeared there meanwhile.
fn link_new(partial: &Path, out: &Path) -> Result<(), BackupError> {
    crate::backend::redb::open::link_durably(partial, out).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            BackupError::AlreadyExists {
                path: out.to_path_buf(),
            }
        } else {
            BackupError::Write {
                path: out.to_path_buf(),
                detail: e.to_string(),
            }
        }
    })
}

/// Copies every table the source holds; a table this build does not know is refused (the
/// copy would silently lack it).
fn copy_tables(
    from: &ReadTransaction,
    to: &WriteTransaction,
    failed: &dyn Fn(String) -> BackupError,
) -> Result<(usize, u64), BackupError> {
    let names: Vec<String> = from
        .list_tables()
        .map_err(ReadError::storage)?
        .map(|t| t.name().to_string())
        .collect();
    let multimaps = from
        .list_multimap_tables()
        .map_err(ReadError::storage)?
        .map(|t| t.name().to_string())
        .collect::<Vec<_>>();
    if let Some(name) = multimaps.first() {
        return Err(unknown_table(name));
    }
    let mut rows = 0;
    for name in &names {
        rows += match name.as_str() {
            n if n == META.name() => copy(from, to, META, failed)?,
            n if n == COUNTERS.name() => copy(from, to, COUNTERS, failed)?,
            n if n == DOCS.name() => copy(from, to, DOCS, failed)?,
            n if n == CHUNKS.name() => copy(from, to, CHUNKS, failed)?,
            n if n == VECTORS.name() => copy(from, to, VECTORS, failed)?,
            n if n == CHANGELOG.name() => copy(from, to, CHANGELOG, failed)?,
            n if n == SKIP_LOG.name() => copy(from, to, SKIP_LOG, failed)?,
            n if n == LISTINGS.name() => copy(from, to, LISTINGS, failed)?,
            n if n == LISTING_MEMBERS.name() => copy(from, to, LISTING_MEMBERS, failed)?,
            n if n == INDEX_SNAPSHOT.name() => copy(from, to, INDEX_SNAPSHOT, failed)?,
            n if n == BUDGET_SNAPSHOT.name() => copy(from, to, BUDGET_SNAPSHOT, failed)?,
            n if n == TEXT_DOCS.name() => copy(from, to, TEXT_DOCS, failed)?,
            n if n == SPACES.name() => copy(from, to, SPACES, failed)?,
            n if n == SPACE_VECTORS.name() => copy(from, to, SPACE_VECTORS, failed)?,
            n if n == SPACE_CHANGELOG.name() => copy(from, to, SPACE_CHANGELOG, failed)?,
            n if n == LEGACY_TEXT_CHUNKS.name() => copy(from, to, LEGACY_TEXT_CHUNKS, failed)?,
            n if n == LEGACY_TEXT_TOTALS.name() => copy(from, to, LEGACY_TEXT_TOTALS, failed)?,
            other => return Err(unknown_table(other)),
        };
    }
    Ok((names.len(), rows))
}

fn unknown_table(name: &str) -> BackupError {
    ReadError::Corrupted {
        what: "table list".to_string(),
        detail: format!(
            "table {name:?} is not one this build knows, so a backup would lack it; back \
             the file up with the build that wrote it"
        ),
    }
    .into()
}

/// Copies one table row by row, in key order.
fn copy<K: redb::Key + 'static, V: redb::Value + 'static>(
    from: &ReadTransaction,
    to: &WriteTransaction,
    table: TableDefinition<K, V>,
    failed: &dyn Fn(String) -> BackupError,
) -> Result<u64, BackupError> {
    let source = from.open_table(table).map_err(ReadError::storage)?;
    let mut target = to.open_table(table).map_err(|e| failed(e.to_string()))?;
    let mut rows = 0;
    for entry in source.iter().map_err(ReadError::storage)? {
        let (key, value) = entry.map_err(ReadError::storage)?;
        target
            .insert(key.value(), value.value())
            .map_err(|e| failed(e.to_string()))?;
        rows += 1;
    }
    Ok(rows)
}
