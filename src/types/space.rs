//! Vector spaces: named sets of vectors, one per chunk, each made by one embedding model
//! (see [`Store::add_space`](crate::Store::add_space)).

use serde::{Deserialize, Serialize};

/// The name of the space a store's own vectors form: [`Chunk::vector`](crate::Chunk::vector)
/// is this space's vector.
pub const DEFAULT_SPACE: &str = "default";

/// One vector space of a store, and how much of the store it covers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SpaceInfo {
    /// The space's name: for the store's own vectors [`DEFAULT_SPACE`], or, once a space
    /// was promoted in the default one's place
    /// ([`Store::drop_space`](crate::Store::drop_space)), that space's name (`default`
    /// still names it too).
    pub name: String,
    /// The embedding model's name, as given when the space was added (the store's recorded
    /// model for the default space; empty if none was recorded).
    pub model: String,
    /// The vector dimension (`None` only for the default space of a store without one yet).
    pub dimension: Option<usize>,
    /// Live chunks with a vector in this space.
    pub vectors: u64,
    /// Live chunks of the store.
    pub live_chunks: u64,
    /// Whether searches without [`SearchOptions::space`](crate::SearchOptions::space) use it.
    pub active: bool,
}

impl SpaceInfo {
    /// Live chunks still without a vector in this space.
    pub fn missing(&self) -> u64 {
        self.live_chunks.saturating_sub(self.vectors)
    }

    /// Whether every live chunk has a vector in this space (then every new revision must
    /// bring one, and the space can be activated).
    pub fn is_complete(&self) -> bool {
        self.vectors >= self.live_chunks
    }
}

/// Names one stored chunk as it was when it was read: the same while the chunk's text (and
/// default vector) is kept by later revisions, another one once a revision replaces it. A
/// vector made from the chunk's text is written only while the chunk is still this one
/// ([`Store::write_space_vectors`](crate::Store::write_space_vectors)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ChunkRevision(pub(crate) u64);

impl ChunkRevision {
    /// The opaque value (ascending in the order
    /// [`Store::chunks_missing_vectors`](crate::Store::chunks_missing_vectors) walks).
    pub fn value(self) -> u64 {
        self.0
    }

    /// The revision of value `value` (as [`ChunkRevision::value`] gave it).
    pub fn from_value(value: u64) -> ChunkRevision {
        ChunkRevision(value)
    }
}

/// A live chunk without a vector in some space, as the walk hands it out.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct MissingChunk {
    /// The document's source.
    pub source: String,
    /// The document's id.
    pub id: String,
    /// The chunk's position in its document's revision.
    pub position: usize,
    /// The chunk as read: hand it back with its vector.
    pub revision: ChunkRevision,
    /// The chunk's text, to embed.
    pub text: String,
}

/// A vector for one chunk in one space, made from the chunk read as `revision`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SpaceVector {
    /// The document's source.
    pub source: String,
    /// The document's id.
    pub id: String,
    /// The chunk's position when it was read (reported back; the revision decides).
    pub position: usize,
    /// The chunk as it was read.
    pub revision: ChunkRevision,
    /// The vector.
    pub vector: Vec<f32>,
}

impl SpaceVector {
    /// The vector `vector` for the chunk `chunk` was read as.
    pub fn for_chunk(chunk: &MissingChunk, vector: Vec<f32>) -> SpaceVector {
        SpaceVector {
            source: chunk.source.clone(),
            id: chunk.id.clone(),
            position: chunk.position,
            revision: chunk.revision,
            vector,
        }
    }
}

/// What [`Store::write_space_vectors`](crate::Store::write_space_vectors) did, by reason.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SpaceWriteOutcome {
    /// Vectors written.
    pub written: u64,
    /// Vectors not written because their chunk is no longer stored as it was read: its
    /// document was rewritten (the new revision brings its own vectors, or the walk hands
    /// its chunks out again) or deleted.
    pub superseded: u64,
    /// Vectors not written because the chunk already has one in the space.
    pub present: u64,
}

/// What `Store::reembed` (feature `embed`) did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ReembedOutcome {
    /// Chunks embedded.
    pub embedded: u64,
    /// Vectors written, superseded and already present, summed over every batch.
    pub writes: SpaceWriteOutcome,
    /// Whether the space covered every live chunk when the walk ended.
    pub complete: bool,
}

/// A re-embed's progress, after each batch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReembedProgress {
    /// Chunks embedded so far by this call.
    pub embedded: u64,
    /// Live chunks still without a vector in the space when the batch began.
    pub missing: u64,
}
