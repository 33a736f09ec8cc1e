//! Storage tests: damaged and foreign files, fault injection at every I/O point, schema
//! conversions, persistence and the file's layout.
//!
//! One binary per theme (each links the crate, redb, SQLite and the rest once); one file per
//! scenario, named for it.

#[path = "../common/mod.rs"]
mod common;
#[path = "../search_support/mod.rs"]
mod search_support;
#[path = "../support/mod.rs"]
mod support;

mod a_closed_store_with_a_graph_snapshot_keeps_no_free_pages;
mod a_coded_vectors_row_carrying_a_spill_is_revised_in_place;
mod a_damaged_coded_vectors_row_is_corruption_not_a_panic;
mod a_damaged_text_codec_is_corruption_not_a_panic;
mod a_failed_graph_snapshot_write_leaves_the_store_writable;
mod a_schema_7_file_is_read_and_written_beside_coded_rows;
mod a_sequence_at_its_largest_value_refuses_writes;
mod a_small_document_revised_across_the_whole_row_spill_serves_only_its_latest_text;
mod a_text_index_in_the_row_per_chunk_format_is_rebuilt;
mod a_text_row_that_disagrees_with_its_document_refuses_the_write;
mod chunk_texts_are_compressed_once_the_store_holds_enough_text;
mod closing_a_store_compacts_its_free_pages;
mod closing_a_store_repacks_a_sparse_documents_table;
mod closing_a_store_repacks_the_documents_table_of_ten_thousand_ids;
mod closing_a_store_trims_its_changelog;
mod coded_rows_searched_under_a_memory_budget_score_as_without_one;
mod coded_vectors_come_back_bit_for_bit;
mod corrupt_flipped_bytes;
mod corrupt_foreign_redb_tables;
mod corrupt_meta_rows;
mod corrupt_missing_table;
mod corrupt_not_a_redb_file;
mod corrupt_schema_version_too_new;
mod corrupt_storage_panics_are_contained;
mod corrupt_truncated_file;
mod creation_is_atomic;
mod disk_full_while_closing_compacts;
mod fault_injection_clean_reopen_no_repair;
mod fault_injection_durability_none;
mod fault_injection_every_io_point;
mod fault_injection_writer_batch;
mod fuzz_corpus_replay;
mod metadata_only_revision_of_a_spilled_document;
mod older_schema_version_is_refused_with_export_advice;
mod one_chunk_384_d_documents_take_a_third_of_a_leaf_each;
mod page_cache_size_changes_nothing_stored;
mod persistence_across_reopen;
mod repack;
mod schema_1_file_is_converted_on_open;
mod schema_2_file_is_converted_on_open;
mod schema_3_file_is_converted_on_open;
mod schema_4_file_is_converted_on_open;
mod schema_5_file_is_converted_on_open;
mod schema_6_file_is_converted_on_open;
mod single_chunk_documents_carry_their_text_in_the_vectors_pages;
mod slot_space_exhausted_moves_document_to_new_id;
mod spilled_layout_uses_the_pages_it_promises;
mod stale_revision_with_wrong_dimension;
mod text_index_is_built_for_existing_stores;
mod verify_decodes_every_metadata_value;
mod verify_deep_finds_a_changed_vector;
mod verify_finds_a_chunks_row_that_disagrees;
mod verify_finds_a_non_finite_value_in_a_coded_vectors_row;
mod write_into_a_store_damaged_elsewhere;
