//! ratchetdb: an embedded, single-file chunk-and-vector store for RAG whose index never
//! moves backwards.
//!
//! Ingestion work arrives at least once and in no guaranteed order. Every document write
//! here is one ACID transaction in one redb file: the version comparison, the generation
//! stamp on every chunk, the removal of the chunks a revision no longer has, the vectors, and
//! the counters that say why a write was refused. See `ARCHITECTURE.md` for the map.
//!
//! Start with [`Store`].

mod chunking;
mod counters;
mod document;
mod embed;
mod error;
mod filter;
#[doc(hidden)]
pub mod fuzzing;
mod guard;
mod index;
mod live_index;
mod migrate;
mod options;
mod prepare;
mod read;
mod schema;
mod search;
mod stats;
mod store;
mod verify;
mod version;
mod write;
mod writer;

#[cfg(feature = "minilm")]
pub use crate::embed::{locate_model, MiniLmEmbedder};
pub use crate::{
    chunking::{chunk_text, ChunkerOptions},
    counters::Counters,
    document::{Chunk, Document, Op, OpOutcome, Outcome, PurgeOutcome, RetainOutcome},
    embed::{EmbedError, Embedder, HashingEmbedder, MINILM_NAME, MODEL_INSTALL_HINT},
    error::{Error, InputError, OpenError, ReadError, WriteError},
    filter::{Filter, MAX_FILTER_DEPTH, MAX_FILTER_TERMS},
    guard::{ConflictPolicy, SkipReason},
    options::{Durability, Limits, Metric, Options, DEFAULT_CACHE_SIZE},
    read::{Documents, Snapshot, StoredChunk, StoredDocument},
    search::{FilterStrategy, Hit, SearchOptions},
    stats::{SkipRecord, Stats},
    store::{IndexInfo, Plan, PlannedAction, Store},
    verify::{VerifyReport, Violation},
    version::{Version, VersionKind},
    writer::{Pending, Writer, WriterOptions, WriterStats},
};
