//! One module per subcommand. Each has its clap `Args` and a `run` returning the exit code.

pub mod backup;
#[cfg(feature = "postgres")]
pub mod copy;
pub mod demo;
pub mod export;
pub mod ingest;
pub mod recover;
pub mod reembed;
pub mod search;
pub mod spaces;
pub mod stats;
pub mod verify;
