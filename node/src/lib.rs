//! `ratchetdb` for Node.js and Electron: the native half of the npm package.
//!
//! The JavaScript half (`index.js`) gives the API its JavaScript shape (objects, camelCase,
//! `bigint`/`Date` versions, error classes) and calls into this module. Every call that reads
//! or writes the store runs off the event loop: searches on the addon's reader threads
//! (settled through one threadsafe function per store), other reads as napi async tasks on
//! libuv's pool, writes through one [`ratchetdb::Writer`] per store fed by a submitting
//! thread, with each write's promise settled from the thread that waits for its commit. The
//! crate's embedders (`HashingEmbedder`, MiniLM with the `minilm` feature) embed off the
//! event loop too.

#![deny(clippy::unwrap_used, clippy::expect_used)]

mod convert;
mod embedder;
mod errors;
mod export;
mod reads;
mod store;
mod task;
mod writes;

pub use crate::embedder::{hashing_embedder, load_minilm, NativeEmbedder};
pub use crate::export::NativeExport;
pub use crate::reads::yield_now;
pub use crate::store::{open, NativeStore};
