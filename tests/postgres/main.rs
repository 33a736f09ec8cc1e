//! What only the PostgreSQL backend (`Store::open` on a `postgres://` URL, the `postgres` feature) has, against a real
//! server: the façade's dispatch to it, its schema and SQL (the text index's rows, verify
//! over them, the HNSW index walked), the CLI on a `postgres://` URL, and what only a server
//! shows (writers on separate connections racing, a writer killed mid-transaction, two
//! processes ingesting the same documents). Every property both backends share is written
//! once in `tests/conformance/` and runs there on each.
//!
//! Every test needs `RATCHETDB_PG_URL` (`scripts/postgres.sh start` prints it); without it
//! each test passes without running and prints `test NAME SKIPPED: …` to the terminal
//! (`pg::say_skipped`: libtest has no runtime "ignored" and captures `eprintln!`). Each test
//! works in its own PostgreSQL schema, so they run in parallel.

mod pg;

mod a_nul_in_chunk_text_is_refused_on_postgres;
mod cli_commands_on_a_postgres_url;
mod cli_copy_moves_listings_counters_and_skip_log;
mod cli_copy_round_trip;
mod cli_two_processes_ingest_the_same_documents;
mod killed_writer_leaves_nothing_partial;
mod racing_writers_on_separate_connections_converge;
mod revisions_on_postgres_reuse_vectors_as_the_embedded_store;
mod search_walks_the_hnsw_index;
mod store_open_postgres_url_dispatches;
mod verify_on_postgres_checks_the_text_index;
