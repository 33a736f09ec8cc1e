//! Concurrency and crashes: the Writer, readers beside writers (in this process and in
//! others), process kills, model-based schedules.
//!
//! One binary per theme (each links the crate, redb, SQLite and the rest once); one file per
//! scenario, named for it.

#[path = "../common/mod.rs"]
mod common;
#[path = "../support/mod.rs"]
mod support;

mod a_backup_keeps_the_source_file_s_permissions;
mod a_closed_store_releases_its_file_while_its_index_loads;
mod a_reader_while_the_writer_crashes_compacts_or_converts;
mod a_wait_too_long_for_the_clock_has_no_deadline;
mod backup_while_a_writer_writes;
mod model_based_schedules;
mod one_writer_at_a_time;
mod process_kill_writer_stream;
mod process_readers_beside_a_streaming_writer;
mod read_only_open_never_writes;
mod reader_store_follows_the_writer;
mod readers_never_see_mixed_revisions;
mod writer_backpressure_and_shutdown;
mod writer_group_commit_stress;
mod writer_same_document_twice_in_one_batch;
