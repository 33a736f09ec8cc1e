//! Bad and hostile input through the library: each refused with a typed error naming the field,
//! the store unchanged.
//!
//! One binary per theme (each links the crate, redb, SQLite and the rest once); one file per
//! scenario, named for it.

#[path = "../common/mod.rs"]
mod common;

mod addresses_that_may_hold_a_password_are_refused_unquoted;
mod adopted_tickets_above_2_63_are_refused;
mod bad_input_changes_nothing;
mod check_validates_without_writing;
mod hostile_deep_metadata;
mod hostile_document_limits;
mod hostile_document_of_100k_chunks;
mod hostile_ids;
mod hostile_vectors;
mod library_error_messages_name_no_command_line_flags;
mod plan_before_embedding;
mod restored_counters_above_2_63_are_refused;
mod search_with_an_ef_beyond_the_graph;
mod text_search_bad_input_is_refused;
mod ticket_never_issued_is_refused;
