//! Exit codes: part of the command-line contract, so they are named once, here.
//!
//! 2 is clap's: the command line itself was invalid.

use std::process::ExitCode;

/// Everything succeeded.
pub fn ok() -> ExitCode {
    ExitCode::SUCCESS
}

/// The command failed: the database could not be opened, read or written, the input could
/// not be read, or `verify` found violations.
pub fn error() -> ExitCode {
    ExitCode::from(1)
}

/// `ingest` rejected at least one line; every other line was applied.
pub fn lines_rejected() -> ExitCode {
    ExitCode::from(3)
}
