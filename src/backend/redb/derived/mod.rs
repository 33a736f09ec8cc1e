//! The embedded store's derived state: what is kept in memory beside the file and brought
//! up to a snapshot's commit from the changelog (the vector index, the filter postings, the
//! text cache), and its lifecycle (`indexer.rs`).

pub(crate) mod filter_index;
pub(crate) mod indexer;
pub(crate) mod live_index;
