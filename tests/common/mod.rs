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

/// Where a scenario's stores live: the F-scenarios run their one body on each backend
/// (see [`on_both_backends`](crate::on_both_backends)).
pub enum Backend {
    /// redb files in a temporary directory.
    File(tempfile::TempDir),
    /// Schemas of the PostgreSQL server at `RATCHETDB_PG_URL` (the `postgres` feature).
    Postgres {
        url: String,
        test: String,
        opened: std::sync::Mutex<std::collections::HashSet<String>>,
    },
}

impl Backend {
    /// Files in a new temporary directory.
    pub fn file() -> Backend {
        Backend::File(tempfile::tempdir().unwrap())
    }

    /// The PostgreSQL server, or `None` after saying why the test is skipped (no
    /// `RATCHETDB_PG_URL`, or a build without the `postgres` feature).
    pub fn postgres(test: &str) -> Option<Backend> {
        if !cfg!(feature = "postgres") {
            say_skipped(test, "built without the `postgres` feature");
            return None;
        }
        match std::env::var("RATCHETDB_PG_URL") {
            Ok(url) if !url.is_empty() => Some(Backend::Postgres {
                url,
                test: test.to_string(),
                opened: Default::default(),
            }),
            _ => {
                say_skipped(
                    test,
                    "RATCHETDB_PG_URL is not set (scripts/postgres.sh start prints it)",
                );
                None
            }
        }
    }

    /// The address of the store called `name`: a file in the directory, or a schema of its
    /// own on the server (dropped the first time this backend opens it, so every run starts
    /// empty; reopening it later keeps it).
    pub fn address(&self, name: &str) -> String {
        match self {
            Backend::File(dir) => dir
                .path()
                .join(format!("{name}.redb"))
                .display()
                .to_string(),
            Backend::Postgres { url, test, opened } => {
                // PostgreSQL names are at most 63 bytes: the test by its hash.
                use std::hash::{Hash, Hasher};
                let mut hasher = std::collections::hash_map::DefaultHasher::new();
                test.hash(&mut hasher);
                let schema = format!("f_{:016x}_{name}_{}", hasher.finish(), std::process::id())
                    .to_lowercase();
                if opened.lock().unwrap().insert(schema.clone()) {
                    drop_schema(url, &schema);
                }
                let separator = if url.contains('?') { '&' } else { '?' };
                format!("{url}{separator}schema={schema}")
            }
        }
    }

    /// Opens (or creates) the store called `name`, with dimension 3.
    pub fn open(&self, name: &str) -> Store {
        self.open_with(name, Options::default().dimension(3))
    }

    /// Opens (or creates) the store called `name` with `options`.
    pub fn open_with(&self, name: &str, options: Options) -> Store {
        Store::open(self.address(name), options).unwrap()
    }

    /// Whether this is the PostgreSQL backend.
    pub fn is_postgres(&self) -> bool {
        matches!(self, Backend::Postgres { .. })
    }
}

/// Tells the person running the tests that the running test skipped its PostgreSQL half, and
/// `why`. libtest captures `eprintln!` (shown only when a test fails), so a skipped test read
/// `... ok` and nothing else; a write to `std::io::stdout()` itself (not through the print
/// macros) is not captured, and shows as a whole line among libtest's, naming the test
/// (libtest names each test's thread after it). Under `cargo nextest` pass `--no-capture` to see it.
fn say_skipped(test: &str, why: &str) {
    use std::io::Write;
    let thread = std::thread::current();
    let name = thread.name().filter(|n| *n != "main").unwrap_or(test);
    let _ = writeln!(
        std::io::stdout().lock(),
        "test {name} SKIPPED on PostgreSQL: {why}"
    );
}

#[cfg(feature = "postgres")]
fn drop_schema(url: &str, schema: &str) {
    ratchetdb::testkit::pg_execute(url, &format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
        .unwrap();
}

#[cfg(not(feature = "postgres"))]
fn drop_schema(_url: &str, _schema: &str) {}

/// Runs the scenario `fn NAME(backend: &Backend)` as two tests: `NAME::redb` on files and
/// `NAME::postgres` on the server (which says it skipped, and passes, without
/// `RATCHETDB_PG_URL` or the `postgres` feature).
#[macro_export]
macro_rules! on_both_backends {
    ($scenario:ident) => {
        mod $scenario {
            #[test]
            fn redb() {
                super::$scenario(&$crate::common::Backend::file());
            }

            #[test]
            fn postgres() {
                if let Some(backend) = $crate::common::Backend::postgres(stringify!($scenario)) {
                    super::$scenario(&backend);
                }
            }
        }
    };
}
