//! F8: chunks live in a vector store, the document row in another store, and the process
//! crashes between the two writes (or one operation of a batch fails half-way).
//!
//! A naive two-store design ends with orphaned chunks (vectors of a document the catalogue
//! never recorded) or unknown ones (a catalogue entry whose vectors were never written), and
//! no reconciliation can tell which side is right. ratchetdb keeps documents, chunks,
//! vectors, counters and the changelog in one redb file and changes them in one transaction
//! per batch: there is no gap to crash in. An operation refused inside a batch changes
//! nothing; a storage failure loses the whole batch, never half of it.

use crate::common;
use crate::fixture::Fixture;

use common::{assert_verified, export, open_file, vector};
use ratchetdb::{
    Chunk, Document, InputError, Op, OpOutcome, Options, Outcome, Store, Version, WriteError,
};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

crate::conformance!(an_operation_refused_mid_batch_leaves_no_orphans);

fn doc(id: &str, version: u64, texts: &[&str]) -> Document {
    common::document("docs", id, Version::number(version), texts)
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn everything_acknowledged_is_in_the_one_file_after_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index.redb");
    let store = open_file(&path);
    store.upsert(doc("a", 1, &["alpha", "beta"])).unwrap();
    store.upsert(doc("b", 1, &["gamma"])).unwrap();
    store
        .upsert(doc("a", 2, &["alpha", "beta two", "delta"]))
        .unwrap();
    store.delete("docs", "b", Version::number(2)).unwrap();
    store.upsert(doc("c", 1, &["epsilon"])).unwrap();
    store
        .retain("docs", ["a", "b", "c"], Version::number(3))
        .unwrap();
    store.upsert(doc("a", 1, &["stale"])).unwrap();
    assert_verified(&store);
    let state = export(&store);
    let stats = store.stats().unwrap();
    assert_eq!((stats.documents, stats.tombstones, stats.chunks), (2, 1, 4));

    // One file, while open and after close: no sidecar, journal, lock or vector file.
    assert_eq!(files_in(dir.path()), ["index.redb"]);
    drop(store);
    assert_eq!(files_in(dir.path()), ["index.redb"]);

    let store = Store::open(&path, Options::default().must_exist()).unwrap();
    assert_eq!(export(&store), state);
    assert_eq!(store.stats().unwrap(), stats);
    assert_eq!(store.dimension(), Some(3));
    assert_verified(&store);
    assert_eq!(files_in(dir.path()), ["index.redb"]);
}

fn an_operation_refused_mid_batch_leaves_no_orphans(backend: &dyn Fixture) {
    let store = backend.open("index");
    store.upsert(doc("kept", 1, &["one", "two"])).unwrap();
    assert_verified(&store);
    let kept_before = store.get("docs", "kept").unwrap().unwrap();
    let counters_before = store.stats().unwrap().counters;

    let mut nan = doc("nan", 1, &["x", "y"]);
    nan.chunks[1].vector = Some(vec![1.0, f32::NAN, 0.0]);
    // A revision of "kept" whose new chunk has no vector and no stored text to reuse: it is
    // refused inside the transaction, after the first upsert of the batch was applied.
    let unembedded = Document::new("docs", "kept", Version::number(2))
        .with_chunk(Chunk::new("one", vector("one")))
        .with_chunk(Chunk::without_vector("three"));
    let results = store
        .write_batch(vec![
            Op::Upsert(doc("first", 1, &["p", "q", "r"])),
            Op::Upsert(unembedded),
            Op::Upsert(nan),
            Op::Upsert(doc("last", 1, &["s"])),
        ])
        .unwrap();
    assert_eq!(results.len(), 4);
    assert!(matches!(
        results[0],
        Ok(OpOutcome::Document(Outcome::Written {
            chunks_written: 3,
            ..
        }))
    ));
    assert!(
        matches!(results[1], Err(WriteError::MissingVector { position: 1 })),
        "{:?}",
        results[1]
    );
    match &results[2] {
        Err(WriteError::Input(InputError { field, .. })) => {
            assert_eq!(field, "chunks[1].vector[1]")
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        results[3],
        Ok(OpOutcome::Document(Outcome::Written {
            chunks_written: 1,
            ..
        }))
    ));

    // The refused revision changed nothing; the others are whole; no chunk or vector row
    // belongs to nobody.
    assert_verified(&store);
    assert_eq!(store.get("docs", "kept").unwrap().unwrap(), kept_before);
    assert_eq!(store.get("docs", "nan").unwrap(), None);
    let stats = store.stats().unwrap();
    assert_eq!((stats.documents, stats.chunks, stats.vectors), (3, 6, 6));
    let mut expected = counters_before;
    expected.written_new += 2;
    expected.chunks_written += 4;
    expected.commits += 1;
    assert_eq!(stats.counters, expected);
}

/// An in-memory redb backend that can be told to fail every write from now on.
#[derive(Debug, Clone)]
struct FailingBackend {
    memory: Arc<::redb::backends::InMemoryBackend>,
    failing: Arc<AtomicBool>,
}

impl FailingBackend {
    fn check(&self) -> std::io::Result<()> {
        if self.failing.load(Ordering::SeqCst) {
            Err(std::io::Error::other("injected write failure"))
        } else {
            Ok(())
        }
    }
}

impl ::redb::StorageBackend for FailingBackend {
    fn len(&self) -> std::io::Result<u64> {
        self.memory.len()
    }
    fn read(&self, offset: u64, out: &mut [u8]) -> std::io::Result<()> {
        self.memory.read(offset, out)
    }
    fn set_len(&self, len: u64) -> std::io::Result<()> {
        self.check()?;
        self.memory.set_len(len)
    }
    fn sync_data(&self) -> std::io::Result<()> {
        self.check()?;
        self.memory.sync_data()
    }
    fn write(&self, offset: u64, data: &[u8]) -> std::io::Result<()> {
        self.check()?;
        self.memory.write(offset, data)
    }
}

#[test]
fn a_batch_whose_commit_fails_is_lost_whole() {
    let backend = FailingBackend {
        memory: Arc::new(::redb::backends::InMemoryBackend::new()),
        failing: Arc::new(AtomicBool::new(false)),
    };
    let store = Store::open_with_backend(backend.clone(), Options::default().dimension(3)).unwrap();
    store.upsert(doc("a", 1, &["alpha", "beta"])).unwrap();
    assert_verified(&store);
    let state = export(&store);
    let stats = store.stats().unwrap();

    backend.failing.store(true, Ordering::SeqCst);
    let result = store.write_batch(vec![
        Op::Upsert(doc("a", 2, &["alpha", "beta", "gamma"])),
        Op::Upsert(doc("b", 1, &["delta"])),
    ]);
    assert!(matches!(result, Err(WriteError::Storage(_))), "{result:?}");
    // The store refuses further writes until reopened; reads see the state before the batch.
    assert!(matches!(
        store.upsert(doc("c", 1, &["x"])),
        Err(WriteError::Poisoned { .. })
    ));
    assert_eq!(export(&store), state);
    drop(store);

    backend.failing.store(false, Ordering::SeqCst);
    let store = Store::open_with_backend(backend.clone(), Options::default()).unwrap();
    assert_eq!(export(&store), state);
    assert_eq!(store.stats().unwrap(), stats);
    assert_verified(&store);
    // And the batch, retried, applies whole.
    let results = store
        .write_batch(vec![
            Op::Upsert(doc("a", 2, &["alpha", "beta", "gamma"])),
            Op::Upsert(doc("b", 1, &["delta"])),
        ])
        .unwrap();
    assert!(results
        .iter()
        .all(|r| matches!(r, Ok(OpOutcome::Document(Outcome::Written { .. })))));
    assert_verified(&store);
    assert_eq!(store.stats().unwrap().chunks, 4);
}
