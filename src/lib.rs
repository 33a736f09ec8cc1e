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
#![deny(unsafe_code)]
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

mod address;
mod backend;
#[cfg(feature = "embed")]
mod chunking;
#[cfg(feature = "embed")]
mod embed;
mod error;
mod index;
#[cfg(feature = "jsonl")]
pub mod jsonl;
mod options;
mod policy;
#[cfg(feature = "embed")]
mod reembed;
mod search;
mod simd;
mod store;
mod sys;
mod text;
mod types;
mod varint;
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

#[cfg(feature = "minilm")]
pub use crate::embed::{locate_model, MiniLmEmbedder};
pub use crate::{
    address::redact_address,
    backend::redb::{
        backup::{Backup, BackupError},
        read::{Documents, Snapshot},
    },
    error::{Error, InputError, OpenError, ReadError, WriteError},
    options::{
        ConflictPolicy, Durability, IndexOptions, Limits, Metric, Options,
        COMPACT_ON_CLOSE_MIN_FREE, COMPACT_ON_CLOSE_SMALL_FILE, DEFAULT_CACHE_SIZE,
        DEFAULT_INDEX_EF_CONSTRUCTION, DEFAULT_INDEX_M, MAX_INDEX_EF_CONSTRUCTION, MAX_INDEX_M,
        MIN_INDEX_M,
    },
    policy::{
        filter::{Filter, MAX_FILTER_DEPTH, MAX_FILTER_TERMS},
        plan::{Plan, PlannedAction},
    },
    search::{FilterStrategy, SearchOptions},
    store::Store,
    text::{Bm25, Fusion, TextLanguage, TextOptions},
    types::{
        counters::Counters,
        document::{
            Chunk, Document, Op, OpOutcome, Outcome, PurgeOutcome, RetainOutcome, SkipReason,
        },
        hit::Hit,
        index_info::IndexInfo,
        listing::Listing,
        report::{VerifyReport, Violation},
        space::{
            ChunkRevision, MissingChunk, ReembedOutcome, ReembedProgress, SpaceInfo, SpaceVector,
            SpaceWriteOutcome, DEFAULT_SPACE,
        },
        stats::{SkipRecord, Stats},
        stored::{StoredChunk, StoredDocument},
        version::{Version, VersionKind},
    },
    writer::{Pending, Writer, WriterOptions, WriterStats},
};
#[cfg(feature = "embed")]
pub use crate::{
    chunking::{chunk_text, ChunkerOptions},
    embed::{EmbedError, Embedder, HashingEmbedder, MINILM_NAME, MODEL_INSTALL_HINT},
    reembed::ReembedError,
};
