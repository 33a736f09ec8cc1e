//! Shared helpers of the library-level integration tests (the F-scenarios, planning,
//! persistence): opening a 3-dimensional store, deterministic vectors and documents, and the
//! counter, verify and export reads the scenarios check. Each test binary uses a subset.
#![allow(dead_code)]

pub mod cli;

use ratchetdb::{
    Chunk, Counters, Document, Options, Outcome, SkipReason, Store, StoredDocument, Version,
};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Opens (or creates) the store `db.redb` in `dir`, with dimension 3.
///
/// Regression: opening a new store with `.dimension(..)` used to trip a redb debug assertion
/// (a read guard on the format marker outlived its transaction while the dimension was
/// recorded); fixed in `Store::from_database`. Every test that uses this opens that way.
pub fn open(dir: &Path) -> Store {
    open_file(&dir.join("db.redb"))
}

/// Opens (or creates) the store file at `path`, with dimension 3.
pub fn open_file(path: &Path) -> Store {
    Store::open(path, Options::default().dimension(3)).unwrap()
}

/// A deterministic, non-zero vector for a text.
pub fn vector(text: &str) -> Vec<f32> {
    let h = text
        .bytes()
        .fold(7u32, |h, b| h.wrapping_mul(31).wrapping_add(b.into()));
    vec![
        1.0 + (h % 13) as f32,
        1.0 + (h / 13 % 17) as f32,
        1.0 + (h / 221 % 19) as f32,
    ]
}

/// A document with one chunk per text, each with its [`vector`].
pub fn document(source: &str, id: &str, version: Version, texts: &[impl AsRef<str>]) -> Document {
    let mut doc = Document::new(source, id, version);
    for text in texts {
        let text = text.as_ref();
        doc = doc.with_chunk(Chunk::new(text, vector(text)));
    }
    doc
}

pub fn counters(store: &Store) -> Counters {
    store.stats().unwrap().counters
}

pub fn assert_verified(store: &Store) {
    let report = store.verify().unwrap();
    assert!(report.is_ok(), "{:?}", report.violations);
}

/// Every document, tombstones included, with vectors (either backend).
pub fn export(store: &Store) -> Vec<StoredDocument> {
    store.documents(true).unwrap()
}

/// A stored document read with its vectors; it must exist.
pub fn stored_with_vectors(store: &Store, source: &str, id: &str) -> StoredDocument {
    if store.is_postgres() {
        return export(store)
            .into_iter()
            .find(|d| d.source == source && d.id == id)
            .unwrap();
    }
    let snapshot = store.snapshot().unwrap();
    snapshot.get_with_vectors(source, id).unwrap().unwrap()
}

/// The texts of a stored document, after checking its chunks are all of its generation.
pub fn texts_of_one_generation(store: &Store, source: &str, id: &str) -> Vec<String> {
    let stored = store.get(source, id).unwrap().unwrap();
    assert!(stored
        .chunks
        .iter()
        .all(|c| c.generation == stored.generation));
    stored.chunks.iter().map(|c| c.text.clone()).collect()
}

/// The outcome of a refused write of numbered versions.
pub fn skipped(reason: SkipReason, stored: u64, incoming: u64) -> Outcome {
    Outcome::Skipped {
        reason,
        stored_version: Version::number(stored),
        incoming_version: Version::number(incoming),
    }
}

/// A redb in-memory backend that counts its `read` and `sync_data` calls.
#[derive(Debug, Default)]
pub struct CountingBackend {
    memory: redb::backends::InMemoryBackend,
    /// `read` calls so far.
    pub reads: Arc<AtomicU64>,
    /// `sync_data` calls so far (one or more per durable commit).
    pub syncs: Arc<AtomicU64>,
}

impl redb::StorageBackend for CountingBackend {
    fn len(&self) -> std::io::Result<u64> {
        self.memory.len()
    }
    fn read(&self, offset: u64, out: &mut [u8]) -> std::io::Result<()> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        self.memory.read(offset, out)
    }
    fn set_len(&self, len: u64) -> std::io::Result<()> {
        self.memory.set_len(len)
    }
    fn sync_data(&self) -> std::io::Result<()> {
        self.syncs.fetch_add(1, Ordering::SeqCst);
        self.memory.sync_data()
    }
    fn write(&self, offset: u64, data: &[u8]) -> std::io::Result<()> {
        self.memory.write(offset, data)
    }
}
