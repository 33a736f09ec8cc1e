//! The `ratchet` command line: its contracts, run as a user runs it.
//!
//! One binary per theme (each links the crate, redb, SQLite and the rest once); one file per
//! scenario, named for it.

#[path = "../common/mod.rs"]
mod common;
#[path = "../support/mod.rs"]
mod support;

mod cli_demo;
mod cli_folder_ingest_search;
mod cli_jsonl_contract;
mod hostile_cli_large_stream;
