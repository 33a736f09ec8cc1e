//! Containing panics from the storage layer at the API boundary.
//!
//! redb trusts a cleanly closed file: on one damaged outside redb, a plain open, read or write
//! may panic inside redb (an `unwrap` on a bad UTF-8 key, an index past a page, an
//! `unreachable!`). Every public entry point that reaches redb runs its work through
//! [`contain`], so such a panic comes back as the operation's typed `Corrupted` error instead
//! of ending the process. ratchetdb's own code does not panic on file contents (its decoders
//! return `Corruption`); what is contained here is redb's.
//!
//! The default panic hook still prints the panic's message on stderr when it happens; the
//! caller gets the error. A write that panicked poisons the store (see `Engine::write_txn`): the
//! transaction was dropped while unwinding, so nothing of it is visible, and redb's in-memory
//! state is not trusted for further writes until the file is reopened.

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};

pub(crate) use crate::error::CONTAINED as WHAT;

/// Runs `work`; a panic inside it becomes `corrupted(message)`.
pub(crate) fn contain<T, E>(
    corrupted: impl FnOnce(String) -> E,
    work: impl FnOnce() -> Result<T, E>,
) -> Result<T, E> {
    // Unwind safety: after a panic the only state the caller touches again is through the
    // error returned here; a store whose write panicked is poisoned by its caller.
    match catch_unwind(AssertUnwindSafe(work)) {
        Ok(result) => result,
        Err(payload) => Err(corrupted(detail(payload.as_ref()))),
    }
}

/// The panic's message, saying where it came from.
fn detail(payload: &(dyn Any + Send)) -> String {
    let message = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_string());
    format!(
        "the storage engine panicked reading the file ({message}); the file is damaged: \
         check every page (open it with `Options::check_integrity_on_open`), and restore it \
         from a backup or re-ingest"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_the_error() {
        let result: Result<(), String> = contain(|detail| detail, || panic!("boom at page 7"));
        let detail = result.err().unwrap_or_default();
        assert!(detail.contains("boom at page 7"), "{detail}");
        assert!(detail.contains("check_integrity_on_open"), "{detail}");
        let formatted: Result<(), String> =
            contain(|detail| detail, || panic!("index {} out of range", 9));
        assert!(formatted.err().unwrap_or_default().contains("index 9"));
    }

    #[test]
    fn results_pass_through() {
        assert_eq!(contain(|d| d, || Ok::<u8, String>(3)), Ok(3));
        assert_eq!(
            contain(|d| d, || Err::<u8, String>("own".into())),
            Err("own".into())
        );
    }
}
