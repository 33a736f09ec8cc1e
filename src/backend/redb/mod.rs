//! The embedded backend: one redb file is the only source of truth; everything in memory
//! (the vector index, the filter postings, the text cache: `derived/`) is derived from it
//! and can be rebuilt from it.

pub(crate) mod backup;
pub(crate) mod contain;
pub(crate) mod derived;
pub(crate) mod engine;
pub(crate) mod history;
pub(crate) mod open;
pub(crate) mod read;
pub(crate) mod schema;
pub(crate) mod search;
pub(crate) mod stats;
pub(crate) mod text;
pub(crate) mod verify;
pub(crate) mod write;
