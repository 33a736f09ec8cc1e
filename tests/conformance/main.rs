//! The conformance suite: every property the `Store` API promises on any backend, written
//! once and run on each backend (tantivy's directory tests are the model).
//!
//! A property is a function `fn NAME(b: &dyn Fixture)` that opens its stores through the
//! public API only (`b.open_with("db", options)` is `Store::open` on the fixture's
//! address: a redb file, or a fresh schema on the PostgreSQL server) and asserts what every
//! backend must do. `crate::conformance!(NAME, OTHER)` at the top of its file makes one
//! test per backend: `FILE::redb::NAME`, and with the `postgres` feature
//! `FILE::postgres::NAME` (which says it skipped, and passes, when `RATCHETDB_PG_URL` is
//! not set; `scripts/postgres.sh start` prints it). Where a backend lacks an operation, the
//! body asserts its typed `Unsupported` error; where the backends genuinely differ, the
//! assertion stays and that backend's instance is ignored with the reason
//! (`NAME [postgres: ignore = "drift: …"]`), a drift to fix, not a property to loosen.
//!
//! - **A property:** a new file here named for it (one scenario per file), declared below,
//!   with `crate::conformance!(NAME);` after its imports.
//!   The macro's `mod redb` shadows the `redb` crate in that file: name the crate `::redb`.
//! - **A backend:** an implementation of [`fixture::Fixture`] (its name and a fresh address
//!   per store name), a runner beside [`fixture::on_redb`], and a `mod` for it in the
//!   `conformance!` macro.
//!
//! What only one backend has stays in its own binary: the file's storage, crashes and
//! formats in `tests/storage/`, `tests/concurrency/`, `tests/search/`; the server's SQL,
//! schema and processes in `tests/postgres/`. The F-scenarios (F1–F12, docs/design.md) are
//! here too, with F8's storage faults and F12's fsync count on the file only.

#[path = "../common/mod.rs"]
mod common;
mod fixture;

mod a_store_without_the_text_index_gains_it_on_open;
mod bad_input_is_refused_and_changes_nothing;
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
mod filters_match_the_reference;
mod get_and_documents_with_and_without_vectors;
mod listings_and_history_move_between_stores;
mod model_schedules;
mod one_store_api_writes_reads_and_searches;
mod per_document_search_returns_k_distinct_documents;
mod read_only_stores_refuse_writes;
mod search_never_returns_a_superseded_chunk;
mod search_with_a_k_beyond_i64;
mod text_and_hybrid_search_match_the_embedded_store;
mod vector_spaces_are_added_filled_activated_and_dropped;
mod writer_group_commit;
