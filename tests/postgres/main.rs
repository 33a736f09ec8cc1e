//! The Postgres backend (`PgStore`, the `postgres` feature) against a real server: the
//! guard's schedules against the reference model and the embedded store, search never
//! returning a superseded chunk, text and hybrid search against the embedded store, the
//! text index built on open and checked by verify, filters against the reference semantics, bad input, and
//! what only a server shows (writers on separate connections racing, a writer killed
//! mid-transaction).
//!
//! Every test needs `RATCHETDB_PG_URL` (`scripts/postgres.sh start` prints it); without it
//! each test passes without running and prints `test NAME SKIPPED: …` to the terminal
//! (`pg::say_skipped`: libtest has no runtime "ignored" and captures `eprintln!`). Each test works in its own PostgreSQL schema, so
//! they run in parallel.

mod pg;

mod bad_input_changes_nothing_on_postgres;
mod cli_commands_on_a_postgres_url;
mod cli_copy_moves_listings_counters_and_skip_log;
mod cli_copy_round_trip;
mod cli_two_processes_ingest_the_same_documents;
mod filters_on_postgres_match_the_reference;
mod killed_writer_leaves_nothing_partial;
mod model_schedules_on_postgres;
#[path = "../search_support/per_document.rs"]
mod per_document_scenario;
mod per_document_search_on_postgres;
mod racing_writers_on_separate_connections_converge;
mod read_only_open_on_postgres_writes_nothing;
mod revisions_on_postgres_reuse_vectors_as_the_embedded_store;
mod search_never_returns_superseded_chunks_on_postgres;
mod search_walks_the_hnsw_index;
mod search_with_a_k_beyond_i64_on_postgres;
mod store_open_postgres_url_dispatches;
mod store_without_text_index_gains_it_on_postgres;
mod text_and_hybrid_search_on_postgres_match_the_embedded_store;
mod verify_on_postgres_checks_the_text_index;
mod writer_group_commit_on_postgres;
