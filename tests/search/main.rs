//! Search tests: never a superseded chunk, recall, filters, and the derived index's lifecycle.
//!
//! One binary per theme (each links the crate, redb, SQLite and the rest once); one file per
//! scenario, named for it.

#[path = "../search_support/mod.rs"]
mod search_support;

mod a_snapshot_with_an_impossible_ef_construction_is_rebuilt;
mod an_unbudgeted_reopen_keeps_no_freed_heap_resident;
mod build_index_while_the_index_loads_keeps_its_graph;
mod filter_language_matches_reference;
mod filter_sees_metadata_only_revisions;
mod filtered_search_racing_writers;
mod hits_of_long_documents_are_their_own_chunk;
mod hits_report_the_version_an_unchanged_upsert_raised;
mod index_options_out_of_range_are_refused;
mod rebuilding_the_index_does_not_grow_the_file;
mod search_absorbs_vectors_written_while_the_index_is_busy;
mod search_dot_metric;
mod search_filtered_graph_matches_exact;
mod search_filters_and_errors;
mod search_finds_every_live_vector;
mod search_many_matches_search;
mod search_never_returns_superseded_chunks;
mod search_recall_structured;
mod search_snapshot_refreshed_as_graph_grows;
mod search_snapshot_round_trip;
mod text_and_hybrid_search_never_return_stale_chunks;
mod text_index_memory_per_term_and_chunk_is_bounded;
mod text_search_matches_reference_bm25;
mod undecodable_metadata_is_corruption_in_search;
