//! Scenario tests: one file per failure F1–F12 the store exists to prevent (docs/design.md).
//!
//! One binary per theme (each links the crate, redb, SQLite and the rest once); one file per
//! scenario, named for it.

#[path = "../common/mod.rs"]
mod common;

mod f01_redelivery_is_one_write;
mod f02_stale_retry_overtaken;
mod f03_concurrent_consumers;
mod f04_dead_letter_replay;
mod f05_backfill_snapshot_after_live_edits;
mod f06_shrinking_revision;
mod f07_readers_never_see_absent_doc;
mod f08_single_file_no_crash_gap;
mod f09_delete_then_stale_write;
mod f10_equal_versions;
mod f11_vanished_documents_retain;
mod f12_ticket_issued_at_enqueue;
