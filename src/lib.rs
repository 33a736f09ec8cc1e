//! ratchetdb: an embedded, single-file chunk-and-vector store for RAG whose index never
//! moves backwards.

mod chunking;
mod embed;
mod index;
