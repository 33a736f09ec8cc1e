//! ratchetdb: an embedded, single-file chunk-and-vector store for RAG whose index never
//! moves backwards.
//!
//! Ingestion work arrives at least once and in no guaranteed order. Every document write
//! here is one ACID transaction in one redb file: the version comparison, the generation
//! stamp on every chunk, the removal of the chunks a revision no longer has, the vectors, and
//! the counters that say why a write was refused. See `ARCHITECTURE.md` for the map.
//!
//! Start with [`Store`]:
//!
//! ```
//! use ratchetdb::{Chunk, Document, Options, Outcome, SearchOptions, Store, Version};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let dir = tempfile::tempdir()?;
//! # let path = dir.path().join("notes.redb");
//! let store = Store::open(&path, Options::default().dimension(3))?;
//! let revision = |version, text: &str, vector: [f32; 3]| {
//!     Document::new("wiki", "ratchet.md", Version::number(version))
//!         .with_chunk(Chunk::new(text, vector.to_vec()))
//! };
//!
//! // Revision 2 lands first; the retry of revision 1 arriving late is refused, not applied.
//! let newer = store.upsert(revision(2, "turns one way", [1.0, 0.0, 0.0]))?;
//! assert!(matches!(newer, Outcome::Written { .. }));
//! let late_retry = store.upsert(revision(1, "turns both ways", [0.0, 1.0, 0.0]))?;
//! assert!(matches!(late_retry, Outcome::Skipped { .. }));
//!
//! let hits = store.search(&[1.0, 0.1, 0.0], 1, &SearchOptions::default())?;
//! assert_eq!(hits[0].text, "turns one way");
//! # Ok(())
//! # }
//! ```

#![warn(missing_docs, unreachable_pub, rustdoc::broken_intra_doc_links)]
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

#[cfg(feature = "postgres")]
mod backend;
mod backup;
#[cfg(feature = "embed")]
mod chunking;
mod contain;
mod counters;
mod document;
#[cfg(feature = "embed")]
mod embed;
mod engine;
mod error;
mod filter;
mod guard;
mod history;
mod index;
mod indexer;
#[cfg(feature = "jsonl")]
pub mod jsonl;
mod live_index;
mod open;
mod options;
mod plan;
mod prepare;
mod read;
mod schema;
mod search;
mod stats;
mod store;
mod text;
mod verify;
mod version;
mod write;
mod writer;

/// The test harness (simulated disk, reference model, fuzz entry points): only in the crate's
/// own tests and under the doc-hidden `testkit` feature, never in a user's build.
#[cfg(any(test, feature = "testkit"))]
#[doc(hidden)]
pub mod testkit;

/// The README's library example, compiled and run as a doctest so it stays true.
#[cfg(all(doctest, feature = "embed"))]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

#[cfg(feature = "postgres")]
pub use crate::backend::postgres::PgStore;
#[cfg(feature = "minilm")]
pub use crate::embed::{locate_model, MiniLmEmbedder};
pub use crate::{
    backup::{Backup, BackupError},
    counters::Counters,
    document::{Chunk, Document, Op, OpOutcome, Outcome, PurgeOutcome, RetainOutcome},
    error::{Error, InputError, OpenError, ReadError, WriteError},
    filter::{Filter, MAX_FILTER_DEPTH, MAX_FILTER_TERMS},
    guard::{ConflictPolicy, SkipReason},
    history::Listing,
    indexer::IndexInfo,
    options::{
        Durability, IndexOptions, Limits, Metric, Options, COMPACT_ON_CLOSE_MIN_FREE,
        DEFAULT_CACHE_SIZE, DEFAULT_INDEX_EF_CONSTRUCTION, DEFAULT_INDEX_M,
        MAX_INDEX_EF_CONSTRUCTION, MAX_INDEX_M, MIN_INDEX_M,
    },
    plan::{Plan, PlannedAction},
    read::{Documents, Snapshot, StoredChunk, StoredDocument},
    search::{FilterStrategy, Hit, SearchOptions},
    stats::{SkipRecord, Stats},
    store::{redact_address, Store},
    text::{Bm25, Fusion, TextLanguage, TextOptions},
    verify::{VerifyReport, Violation},
    version::{Version, VersionKind},
    writer::{Pending, Writer, WriterOptions, WriterStats},
};
#[cfg(feature = "embed")]
pub use crate::{
    chunking::{chunk_text, ChunkerOptions},
    embed::{EmbedError, Embedder, HashingEmbedder, MINILM_NAME, MODEL_INSTALL_HINT},
};
