//! What goes in (documents, chunks, operations) and what comes out (outcomes).

use crate::types::Version;
use serde::{Deserialize, Serialize};
use std::fmt;

/// One revision of a source document, cut into chunks.
///
/// `(source, id)` names the document; `version` says how new this revision is. The chunks are
/// the whole document: a revision with fewer chunks than the stored one removes the surplus.
///
/// ```
/// use ratchetdb::{Chunk, Document, Version};
/// let doc = Document::new("wiki", "pages/intro.md", Version::number(3))
///     .with_chunk(Chunk::new("Ratchets turn one way.", vec![1.0, 0.0, 0.0]));
/// assert_eq!(doc.chunks.len(), 1);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Document {
    /// The source (a connector, a folder root, a tenant).
    pub source: String,
    /// The document's id within its source.
    pub id: String,
    /// The revision's version.
    pub version: Version,
    /// The chunks, in order; position `i` is `chunks[i]`.
    pub chunks: Vec<Chunk>,
    /// Document-level metadata (any JSON; `null` for none). Part of the content hash.
    #[serde(default)]
    pub meta: serde_json::Value,
}

impl Document {
    /// A document with no chunks and no metadata.
    pub fn new(source: impl Into<String>, id: impl Into<String>, version: Version) -> Document {
        Document {
            source: source.into(),
            id: id.into(),
            version,
            chunks: Vec::new(),
            meta: serde_json::Value::Null,
        }
    }

    /// Appends a chunk.
    pub fn with_chunk(mut self, chunk: Chunk) -> Document {
        self.chunks.push(chunk);
        self
    }

    /// Sets the document metadata.
    pub fn with_meta(mut self, meta: serde_json::Value) -> Document {
        self.meta = meta;
        self
    }
}

/// One chunk of a document: its text, its embedding and its metadata.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Chunk {
    /// The text.
    pub text: String,
    /// The embedding. `None` asks the store to reuse the vector it already holds for
    /// identical text in this document (see [`Store::plan`](crate::Store::plan)).
    #[serde(default)]
    pub vector: Option<Vec<f32>>,
    /// Chunk metadata (any JSON; `null` for none). Part of the content hash.
    #[serde(default)]
    pub meta: serde_json::Value,
    /// Vectors of this chunk in the store's other vector spaces, by space name (see
    /// [`Store::add_space`](crate::Store::add_space)); [`Chunk::vector`] is the default
    /// space's. A revision must bring one for every complete space for each chunk it does
    /// not keep; for an incomplete space it may omit them (a re-embed fills them in). Not
    /// part of the content hash.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub spaces: std::collections::BTreeMap<String, Vec<f32>>,
}

impl Chunk {
    /// A chunk with a vector and no metadata.
    pub fn new(text: impl Into<String>, vector: Vec<f32>) -> Chunk {
        Chunk {
            text: text.into(),
            vector: Some(vector),
            meta: serde_json::Value::Null,
            spaces: Default::default(),
        }
    }

    /// A chunk without a vector: the store fills it from an identical stored text.
    pub fn without_vector(text: impl Into<String>) -> Chunk {
        Chunk {
            text: text.into(),
            vector: None,
            meta: serde_json::Value::Null,
            spaces: Default::default(),
        }
    }

    /// Sets the chunk metadata.
    pub fn with_meta(mut self, meta: serde_json::Value) -> Chunk {
        self.meta = meta;
        self
    }

    /// Adds this chunk's vector in the vector space `space` (not the default space's: that
    /// is [`Chunk::vector`]).
    pub fn with_space_vector(mut self, space: impl Into<String>, vector: Vec<f32>) -> Chunk {
        self.spaces.insert(space.into(), vector);
        self
    }
}

/// One operation of a batch.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Op {
    /// Write a revision (guarded).
    Upsert(Document),
    /// Delete a document at a version (a versioned tombstone; guarded).
    Delete {
        /// The source.
        source: String,
        /// The document id.
        id: String,
        /// The version of the delete.
        version: Version,
    },
    /// A listing of what exists in `source` at `version`: a versioned delete of every id it
    /// omits, seen or not yet seen.
    Retain {
        /// The source.
        source: String,
        /// The ids that exist.
        present: Vec<String>,
        /// The listing's version.
        version: Version,
    },
}

/// What one upsert or delete did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Outcome {
    /// The revision was written.
    Written {
        /// The generation stamped on every chunk of this revision.
        generation: u64,
        /// Chunks written with a new vector.
        chunks_written: u64,
        /// Chunks whose stored vector was kept (same text).
        chunks_reused: u64,
        /// Surplus chunks of the previous revision removed.
        chunks_removed: u64,
    },
    /// A newer version with identical content: the version was raised, no chunk touched.
    Unchanged {
        /// The version now stored.
        version: Version,
    },
    /// The document was deleted (a tombstone written or raised).
    Deleted {
        /// Chunks removed.
        chunks_removed: u64,
    },
    /// The write was refused; nothing but a counter changed.
    Skipped {
        /// Why.
        reason: SkipReason,
        /// What is stored (for a listing that blocks an unseen id: the listing's version).
        stored_version: Version,
        /// What arrived.
        incoming_version: Version,
    },
}

impl Outcome {
    /// The skip reason, if the write was refused.
    pub fn skip_reason(&self) -> Option<SkipReason> {
        match self {
            Outcome::Skipped { reason, .. } => Some(*reason),
            _ => None,
        }
    }
}

/// What a [`Store::retain`](crate::Store::retain) listing did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetainOutcome {
    /// `Some` when the listing itself was refused: `Duplicate` (this exact listing is already
    /// recorded) or `Conflict` (another listing with the same version and other ids is).
    pub skipped: Option<SkipReason>,
    /// Live documents the listing omitted, now tombstoned at the listing's version.
    pub documents_removed: u64,
    /// Chunks those documents had.
    pub chunks_removed: u64,
    /// Omitted documents left alone because they are newer than the listing.
    pub newer_kept: u64,
}

/// What one operation of a batch did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum OpOutcome {
    /// An upsert's or delete's outcome.
    Document(Outcome),
    /// A retain's outcome.
    Retain(RetainOutcome),
}

/// What a [`Store::purge`](crate::Store::purge) removed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PurgeOutcome {
    /// Tombstone rows removed.
    pub tombstones_purged: u64,
    /// Listings removed.
    pub listings_purged: u64,
}

/// Why a write was refused. Every refusal is counted by reason.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SkipReason {
    /// The incoming version is lower than the stored one (a late retry, a replay, a backfill).
    Older,
    /// The same version with the same content is already stored (a redelivery).
    Duplicate,
    /// The same version with different content: the version signal cannot tell the two apart,
    /// and the store will not pick one silently (see [`ConflictPolicy`](crate::ConflictPolicy)).
    Conflict,
    /// The document was deleted (or omitted by a listing) at a version not older than this one.
    Tombstoned,
}

impl SkipReason {
    /// The name used in JSON, counters and messages.
    pub fn as_str(self) -> &'static str {
        match self {
            SkipReason::Older => "older",
            SkipReason::Duplicate => "duplicate",
            SkipReason::Conflict => "conflict",
            SkipReason::Tombstoned => "tombstoned",
        }
    }

    pub(crate) fn to_byte(self) -> u8 {
        match self {
            SkipReason::Older => 0,
            SkipReason::Duplicate => 1,
            SkipReason::Conflict => 2,
            SkipReason::Tombstoned => 3,
        }
    }

    pub(crate) fn from_byte(byte: u8) -> Option<SkipReason> {
        match byte {
            0 => Some(SkipReason::Older),
            1 => Some(SkipReason::Duplicate),
            2 => Some(SkipReason::Conflict),
            3 => Some(SkipReason::Tombstoned),
            _ => None,
        }
    }
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
