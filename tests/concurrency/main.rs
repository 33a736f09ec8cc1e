//! Concurrency and crashes: the Writer, readers beside writers, process kills, model-based
//! schedules.
//!
//! One binary per theme (each links the crate, redb, SQLite and the rest once); one file per
//! scenario, named for it.

#[path = "../support/mod.rs"]
mod support;

mod model_based_schedules;
mod process_kill_writer_stream;
mod readers_never_see_mixed_revisions;
mod writer_backpressure_and_shutdown;
mod writer_group_commit_stress;
mod writer_same_document_twice_in_one_batch;
