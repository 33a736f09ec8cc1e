//! A store belongs to the process that opened it.
//!
//! After `os.fork()` the child has a copy of the parent's memory but none of its threads:
//! the store's writer thread and index builder are gone, and its file handle and locks are
//! shared with the parent. An upsert in the child would wait forever for the writer thread,
//! and a read could wait for a lock some parent thread held at the fork. So every call of
//! a store opened before a fork raises `ForkedError` in the child, which opens its own.
//!
//! Forks are counted by a hook registered with `os.register_at_fork` (a load of one atomic
//! per call); writes and `close` also compare the process id, which covers a fork made
//! without Python's `os.fork`.

use crate::errors::ForkedError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::sync::atomic::{AtomicU64, Ordering};

/// Forks this process descends through since the module was loaded (counted in the child).
static FORKS: AtomicU64 = AtomicU64::new(0);

/// Called by Python in the child of every `os.fork()`.
#[pyfunction]
fn _after_fork_in_child() {
    FORKS.fetch_add(1, Ordering::Relaxed);
}

/// Registers the fork hook (where the platform forks: `os.register_at_fork` exists).
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let os = m.py().import("os")?;
    if os.hasattr("register_at_fork")? {
        let kwargs = PyDict::new(m.py());
        kwargs.set_item("after_in_child", wrap_pyfunction!(_after_fork_in_child, m)?)?;
        os.getattr("register_at_fork")?.call((), Some(&kwargs))?;
    }
    Ok(())
}

/// The process a store was opened in.
pub(crate) struct Origin {
    pid: u32,
    forks: u64,
}

impl Origin {
    /// This process, now.
    pub(crate) fn now() -> Origin {
        Origin {
            pid: std::process::id(),
            forks: FORKS.load(Ordering::Relaxed),
        }
    }

    /// Whether this process is a fork of the origin, as the fork hook counts.
    fn forked(&self) -> bool {
        FORKS.load(Ordering::Relaxed) != self.forks
    }

    /// Whether this process is a fork of the origin, by the hook or the process id.
    pub(crate) fn forked_strict(&self) -> bool {
        self.forked() || std::process::id() != self.pid
    }

    /// `ForkedError` in a forked child (by the hook's count).
    pub(crate) fn check(&self, path: &str) -> PyResult<()> {
        if self.forked() {
            return Err(self.error(path));
        }
        Ok(())
    }

    /// `ForkedError` in a forked child (by the hook's count or the process id).
    pub(crate) fn check_strict(&self, path: &str) -> PyResult<()> {
        if self.forked_strict() {
            return Err(self.error(path));
        }
        Ok(())
    }

    fn error(&self, path: &str) -> PyErr {
        ForkedError::new_err(format!(
            "the Store of {path} was opened in process {}, and this process ({}) is a fork of \
             it: a store's file handle, locks and threads do not survive os.fork(); open a \
             Store of your own in this process (in the worker function, not before the \
             fork: ratchetdb.Store(path, read_only=True) to read beside the parent's writer), \
             or use multiprocessing's \"spawn\" start method",
            self.pid,
            std::process::id()
        ))
    }
}
