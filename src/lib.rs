//! ratchetdb: an embedded, single-file chunk-and-vector store for RAG whose index never
//! moves backwards.

mod chunking;
mod embed;
mod index;

pub use chunking::{chunk_text, ChunkerOptions};
#[cfg(feature = "minilm")]
pub use embed::{locate_model, MiniLmEmbedder};
pub use embed::{EmbedError, Embedder, HashingEmbedder, MODEL_INSTALL_HINT};
