//! A document as stored: what `get` and `documents` return on either backend.

use crate::types::Version;
use serde::{Deserialize, Serialize};

/// A document as stored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoredDocument {
    /// The source.
    pub source: String,
    /// The id.
    pub id: String,
    /// The stored version (of the revision, or of the tombstone).
    pub version: Version,
    /// Whether this is a tombstone.
    pub deleted: bool,
    /// The generation every chunk carries (0 for tombstones).
    pub generation: u64,
    /// The content hash, hex.
    pub content_hash: String,
    /// Document metadata.
    pub meta: serde_json::Value,
    /// The chunks in position order.
    pub chunks: Vec<StoredChunk>,
}

/// A chunk as stored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoredChunk {
    /// Its position, `0..chunk_count`.
    pub position: u32,
    /// The text.
    pub text: String,
    /// Chunk metadata.
    pub meta: serde_json::Value,
    /// The generation it was stamped with.
    pub generation: u64,
    /// The id of its vector.
    pub vector_id: u64,
    /// The vector (as stored: unit length for cosine), when asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vector: Option<Vec<f32>>,
    /// When the vectors are asked for: its vectors in the store's other vector spaces (see
    /// [`Store::add_space`](crate::Store::add_space)), by space name, each as stored; a
    /// space without a vector for it is absent. Empty otherwise, and on PostgreSQL.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub spaces: std::collections::BTreeMap<String, Vec<f32>>,
}
