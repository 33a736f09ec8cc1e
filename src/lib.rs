//! ratchetdb: an embedded, single-file chunk-and-vector store for RAG whose index never
//! moves backwards.

mod embed;
mod index;
