//! One search result.

use crate::types::Version;
use serde::{Deserialize, Serialize};

/// One search result: a live chunk of the snapshot the search read.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Hit {
    /// The document's source.
    pub source: String,
    /// The document id.
    pub id: String,
    /// The chunk's position in the document.
    pub position: u32,
    /// The chunk's text.
    pub text: String,
    /// The chunk's metadata.
    pub meta: serde_json::Value,
    /// The document's version.
    pub version: Version,
    /// The generation of the document's current revision (every chunk carries it).
    pub generation: u64,
    /// Cosine similarity or dot product (higher is closer), or L2 distance (lower is
    /// closer).
    pub score: f32,
}
