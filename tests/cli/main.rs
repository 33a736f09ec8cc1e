//! The `ratchet` command line: its contracts, run as a user runs it.
//!
//! One binary per theme (each links the crate, redb, SQLite and the rest once); one file per
//! scenario, named for it.

#[path = "../common/mod.rs"]
mod common;
#[path = "../support/mod.rs"]
mod support;

mod cli_addresses_that_may_hold_a_password_are_never_echoed;
mod cli_copy_and_search_a_promoted_store;
mod cli_copy_from_a_postgres_url_hides_its_password;
mod cli_demo;
mod cli_export_and_copy_carry_every_vector_space;
mod cli_export_ingests_back_into_the_same_store;
mod cli_folder_dangling_link_is_skipped_as_outside;
mod cli_folder_fifo_never_blocks;
mod cli_folder_html_page_with_a_huge_tag_is_skipped;
mod cli_folder_html_text_starting_with_hash_is_not_a_heading;
mod cli_folder_ingest_metadata_filters;
mod cli_folder_ingest_reads_html_pages;
mod cli_folder_ingest_search;
mod cli_folder_links_outside_the_folder_are_skipped;
mod cli_folder_refusals_reach_the_counters;
mod cli_folder_skipped_files_warn_unless_strict;
mod cli_hints_name_the_binary_as_invoked;
mod cli_ingest_of_an_export_for_another_metric_writes_nothing;
mod cli_ingest_reads_a_whole_store_line_from_a_slow_pipe;
mod cli_ingest_refuses_a_line_missing_a_complete_space_s_vector;
mod cli_jsonl_contract;
mod cli_memory_budget_is_passed_and_an_impossible_one_refused;
mod cli_messages_a_person_hits;
mod cli_no_command_prints_a_store_password;
mod cli_open_errors_add_the_command_lines_advice;
mod cli_process_kill_ingest;
mod cli_read_commands_after_a_killed_ingest;
mod cli_read_commands_on_read_only_media;
mod cli_reembed_drop_old_promotes_the_new_embedder;
mod cli_reembed_killed_at_random_points_resumes;
mod cli_reembed_moves_a_store_to_another_embedder_while_it_is_searched;
mod cli_reingest_summary_and_stats_use_the_same_words;
mod cli_search_a_named_space;
mod cli_search_hybrid_with_a_question_and_a_vector;
mod cli_search_modes;
mod cli_search_per_document;
mod cli_search_vector_errors_name_the_argument;
mod cli_spaces_drop_default_killed_is_before_or_after;
mod hostile_cli_large_stream;
mod hostile_cli_million_tiny_documents;
mod hostile_cli_parse_amplification;
mod hostile_cli_vectors_nan_zero_duplicate;
