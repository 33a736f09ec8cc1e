//! Shared code of the crash, fault, corruption and hostile-input tests: running code under
//! `catch_unwind` while remembering where a panic came from, and reading the seeds and counts
//! the environment may set.
#![allow(dead_code)]

pub mod changelog;
pub mod converted;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Once;

/// A caught panic: its message and where it was raised.
#[derive(Clone, Debug)]
pub struct Panic {
    pub message: String,
    pub location: String,
}

impl Panic {
    /// Whether it was raised inside redb (rather than in ratchetdb or the test).
    pub fn in_redb(&self) -> bool {
        self.location.contains("/redb-")
    }
}

impl std::fmt::Display for Panic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "panicked at {}: {}", self.location, self.message)
    }
}

thread_local! {
    static LAST_PANIC: RefCell<Option<Panic>> = const { RefCell::new(None) };
    static QUIET: RefCell<bool> = const { RefCell::new(false) };
}

static HOOK: Once = Once::new();

fn install_hook() {
    HOOK.call_once(|| {
        let default = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            let message = if let Some(s) = info.payload().downcast_ref::<&str>() {
                (*s).to_string()
            } else if let Some(s) = info.payload().downcast_ref::<String>() {
                s.clone()
            } else {
                "(non-string payload)".to_string()
            };
            let location = info
                .location()
                .map(|l| format!("{}:{}:{}", l.file(), l.line(), l.column()))
                .unwrap_or_default();
            LAST_PANIC.with(|p| *p.borrow_mut() = Some(Panic { message, location }));
            if !QUIET.with(|q| *q.borrow()) {
                default(info);
            }
        }));
    });
}

/// Runs `f`, turning a panic into `Err` with its message and location (printed only when the
/// caller does not handle it).
pub fn catch<T>(f: impl FnOnce() -> T) -> Result<T, Panic> {
    install_hook();
    QUIET.with(|q| *q.borrow_mut() = true);
    let result = panic::catch_unwind(AssertUnwindSafe(f));
    QUIET.with(|q| *q.borrow_mut() = false);
    result.map_err(|_| {
        LAST_PANIC.with(|p| p.borrow_mut().take()).unwrap_or(Panic {
            message: "(unknown)".into(),
            location: "(unknown)".into(),
        })
    })
}

/// Runs `f` and fails the test, naming `what`, if it panics.
pub fn no_panic<T>(what: &str, f: impl FnOnce() -> T) -> T {
    match catch(f) {
        Ok(value) => value,
        Err(p) => panic!("{what}: {p}"),
    }
}

/// A number from the environment, or `default`.
pub fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A seed from the environment, or one from the clock (printed so a failure can be replayed).
pub fn seed(name: &str) -> u64 {
    match std::env::var(name).ok().and_then(|v| v.parse().ok()) {
        Some(seed) => seed,
        None => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1),
    }
}

/// What opening a damaged file did.
#[derive(Debug)]
pub enum Opened {
    /// A typed open error (its variant name, and its message).
    Refused(String, String),
    /// It opened; what using it found, and the document rows it holds (`Err`: a typed read
    /// error).
    Opened(
        ratchetdb::testkit::OpenReport,
        Result<std::collections::BTreeMap<(String, String), ratchetdb::testkit::ModelRow>, String>,
    ),
}

/// The variant name of an open error.
pub fn open_error_kind(e: &ratchetdb::OpenError) -> String {
    format!("{e:?}")
        .split([' ', '{', '('])
        .next()
        .unwrap_or("")
        .to_string()
}

/// Opens the file at `path`, then reads, verifies and writes it (see
/// `ratchetdb::testkit::exercise`), catching any panic.
pub fn open_file(path: &std::path::Path) -> Result<Opened, Panic> {
    open_with(|| ratchetdb::Store::open(path, ratchetdb::testkit::harness_options().must_exist()))
}

/// Like [`open_file`], for whatever `open` opens.
pub fn open_with(
    open: impl FnOnce() -> Result<ratchetdb::Store, ratchetdb::OpenError>,
) -> Result<Opened, Panic> {
    catch(|| match open() {
        Err(e) => Opened::Refused(open_error_kind(&e), e.to_string()),
        Ok(store) => {
            let rows = ratchetdb::testkit::store_rows(&store);
            let mut report = ratchetdb::testkit::OpenReport::default();
            ratchetdb::testkit::exercise(&store, &mut report);
            Opened::Opened(report, rows)
        }
    })
}

/// A cleanly closed store file with the harness's base documents; its bytes and rows.
pub fn clean_store_file(
    path: &std::path::Path,
) -> (
    Vec<u8>,
    std::collections::BTreeMap<(String, String), ratchetdb::testkit::ModelRow>,
) {
    let image = ratchetdb::testkit::base_image(0).expect("base image");
    std::fs::write(path, &image).expect("write the file");
    // Open and close it once as a file, so that what is measured is a file redb closed.
    let rows = {
        let store = ratchetdb::Store::open(path, ratchetdb::testkit::harness_options())
            .expect("open the clean file");
        ratchetdb::testkit::store_rows(&store).expect("rows")
    };
    (std::fs::read(path).expect("read the file"), rows)
}

/// The `meta` table, as every schema has it.
const META: redb::TableDefinition<&str, &[u8]> = redb::TableDefinition::new("meta");

/// The schema version recorded in the closed store file at `path` (read straight with redb).
pub fn schema_version(path: &std::path::Path) -> u64 {
    use redb::ReadableDatabase;
    let db = redb::Database::open(path).expect("open with redb");
    let txn = db.begin_read().expect("read");
    let meta = txn.open_table(META).expect("meta");
    let value = meta.get("schema_version").expect("get").expect("present");
    u64::from_le_bytes(value.value().try_into().expect("8 bytes"))
}

/// Records `version` as the schema version of the closed store file at `path`.
pub fn set_schema_version(path: &std::path::Path, version: u64) {
    let db = redb::Database::open(path).expect("open with redb");
    let txn = db.begin_write().expect("write");
    txn.open_table(META)
        .expect("meta")
        .insert("schema_version", version.to_le_bytes().as_slice())
        .expect("insert");
    txn.commit().expect("commit");
}

/// Opens a store from `image`, converting it, with each of the conversion's I/O calls (write,
/// sync, length change) failed in turn, once and forever. Whatever the durable image then
/// is (as left, and after a power loss at that call), it must open and pass `check`.
/// Returns the number of I/O calls and how many opens succeeded despite the fault.
pub fn every_failed_conversion_reopens(
    image: &[u8],
    check: impl Fn(&ratchetdb::Store, &str),
) -> (u64, u64) {
    use ratchetdb::testkit::{Disk, FaultMode};
    use ratchetdb::{Options, Store};
    let probe = Disk::from_image(image.to_vec());
    drop(Store::open_with_backend(probe.backend(), Options::default()).expect("converts"));
    let calls = probe.io_ops();
    assert!(calls > 0);
    let mut converted_after_failure = 0;
    for at in 0..calls {
        for mode in [FaultMode::Once, FaultMode::Forever] {
            let disk = Disk::from_image(image.to_vec());
            disk.fail_at(at, mode);
            let first = no_panic("open with a fault", || {
                Store::open_with_backend(disk.backend(), Options::default()).map(drop)
            });
            for reopened in [disk.durable_image(), disk.power_loss_image(at)] {
                let again = Disk::from_image(reopened);
                let store = Store::open_with_backend(again.backend(), Options::default())
                    .unwrap_or_else(|e| {
                        panic!("call {at} {mode:?}: the file no longer opens: {e}")
                    });
                check(&store, &format!("call {at} {mode:?}"));
            }
            if first.is_ok() {
                converted_after_failure += 1;
            }
        }
    }
    (calls, converted_after_failure)
}

/// Opens `flips` copies of `image`, each with one bit of a nonzero byte flipped (chosen from
/// `seed`), with redb's page checksums verified, and verifies what opens. Panics if any of it
/// panics; returns how many opened and how many were refused with a typed error.
pub fn flipped_bits_never_panic(image: &[u8], seed: u64, flips: usize) -> (usize, usize) {
    use ratchetdb::testkit::Disk;
    use ratchetdb::{Options, Store};
    let nonzero: Vec<usize> = (0..image.len()).filter(|&i| image[i] != 0).collect();
    let mut rng = ratchetdb::testkit::SplitMix64::new(seed);
    let (mut opened, mut refused) = (0, 0);
    for _ in 0..flips {
        let position = nonzero[rng.below(nonzero.len() as u64) as usize];
        let bit = 1u8 << rng.below(8);
        let mut damaged = image.to_vec();
        damaged[position] ^= bit;
        let disk = Disk::from_image(damaged);
        let result = catch(|| {
            Store::open_with_backend(
                disk.backend(),
                Options::default().check_integrity_on_open(true),
            )
            .map(|store| store.verify().map(|r| r.is_ok()))
        });
        match result {
            Ok(Ok(_)) => opened += 1,
            Ok(Err(_)) => refused += 1,
            Err(panic) => panic!("bit {bit:#04x} at {position}: panicked: {panic}"),
        }
    }
    (opened, refused)
}

/// Checks that `store`'s `stats()` agree with `want` (a `stats()` exported as JSON) on
/// everything a conversion must keep, and that `verify` is clean.
pub fn assert_same_stats_and_verified(
    store: &ratchetdb::Store,
    want: &serde_json::Value,
    when: &str,
) {
    let stats = serde_json::to_value(store.stats().expect("stats")).expect("stats json");
    for field in [
        "documents",
        "tombstones",
        "chunks",
        "vectors",
        "listings",
        "counters",
        "recent_skips",
        "dimension",
        "model",
        "metric",
    ] {
        assert_eq!(stats[field], want[field], "{when}: stats.{field} changed");
    }
    let report = store.verify().expect("verify");
    assert!(
        report.is_ok(),
        "{when}: verify found {:#?}",
        report.violations
    );
}

/// Opens the store at `path` again and checks that `verify` is clean.
pub fn reopen_verified(path: &std::path::Path) {
    let store = ratchetdb::Store::open(path, ratchetdb::Options::default()).expect("reopen");
    let report = store.verify().expect("verify");
    assert!(report.is_ok(), "{:#?}", report.violations);
}

/// Every document of `store` with its vectors, as `documents(true)` exports them to JSON.
pub fn exported_documents(store: &ratchetdb::Store) -> serde_json::Value {
    let snapshot = store.snapshot().expect("snapshot");
    let documents: Vec<serde_json::Value> = snapshot
        .documents(true)
        .expect("documents")
        .map(|d| serde_json::to_value(d.expect("document")).expect("json"))
        .collect();
    serde_json::Value::Array(documents)
}

/// Exported documents with each vector element as the bits of the f32 it stands for
/// (serde_json's float parsing may be an ulp off in f64; the f32 is exact), and each chunk
/// passed to `edit` (to drop what a comparison should not see).
pub fn vectors_as_f32_bits(
    mut documents: serde_json::Value,
    edit: impl Fn(&mut serde_json::Map<String, serde_json::Value>),
) -> serde_json::Value {
    use serde_json::Value;
    for doc in documents.as_array_mut().into_iter().flatten() {
        let chunks = doc.get_mut("chunks").and_then(Value::as_array_mut);
        for chunk in chunks
            .into_iter()
            .flatten()
            .filter_map(Value::as_object_mut)
        {
            edit(chunk);
            let vector = chunk.get_mut("vector").and_then(Value::as_array_mut);
            for x in vector.into_iter().flatten() {
                *x = Value::from(x.as_f64().map(|x| (x as f32).to_bits()));
            }
        }
    }
    documents
}

/// Schema 2's and 3's chunks row, as the tests decode it (the crate's row types are its
/// own): the generation and the chunks.
#[derive(serde::Deserialize, Debug, PartialEq)]
pub struct ChunksRowV3 {
    pub generation: u64,
    pub chunks: Vec<ChunkV3>,
}

/// A chunk of [`ChunksRowV3`].
#[derive(serde::Deserialize, Debug, PartialEq)]
pub struct ChunkV3 {
    pub text_hash: [u8; 32],
    pub text: String,
    pub meta: String,
}

/// Schema 4's chunks row: schema 3's with the document's version and key, and each chunk's
/// vector slot.
#[derive(serde::Deserialize, serde::Serialize, Debug, PartialEq)]
pub struct ChunksRowV4 {
    pub generation: u64,
    pub version_kind: u8,
    pub version: u64,
    pub source: String,
    pub id: String,
    pub chunks: Vec<ChunkV4>,
}

/// A chunk of [`ChunksRowV4`].
#[derive(serde::Deserialize, serde::Serialize, Debug, PartialEq)]
pub struct ChunkV4 {
    pub slot: u32,
    pub text_hash: [u8; 32],
    pub text: String,
    pub meta: String,
}

/// Schema 5's chunks row: schema 4's without each chunk's text hash.
#[derive(serde::Deserialize, serde::Serialize, Debug, PartialEq)]
pub struct ChunksRowV5 {
    pub generation: u64,
    pub version_kind: u8,
    pub version: u64,
    pub source: String,
    pub id: String,
    pub chunks: Vec<ChunkV5>,
}

/// A chunk of [`ChunksRowV5`].
#[derive(serde::Deserialize, serde::Serialize, Debug, PartialEq)]
pub struct ChunkV5 {
    pub slot: u32,
    pub text: String,
    pub meta: String,
}

/// Schemas 2 to 5's document row: the content hash whole.
#[derive(serde::Deserialize, Debug, PartialEq)]
pub struct DocRowV5 {
    pub internal_id: u64,
    pub version_kind: u8,
    pub version: u64,
    pub generation: u64,
    pub chunk_count: u32,
    pub content_hash: [u8; 32],
    pub deleted: bool,
    pub meta: String,
    pub next_slot: u32,
}

/// Schema 6's document row: schema 5's with the first 16 bytes of the content hash.
#[derive(serde::Deserialize, Debug, PartialEq)]
pub struct DocRowV6 {
    pub internal_id: u64,
    pub version_kind: u8,
    pub version: u64,
    pub generation: u64,
    pub chunk_count: u32,
    pub content_key: [u8; 16],
    pub deleted: bool,
    pub meta: String,
    pub next_slot: u32,
}

/// The document rows of the closed file at `path` (read from a copy), by key, as bytes.
pub fn doc_rows(path: &std::path::Path) -> BTreeMap<(String, String), Vec<u8>> {
    use redb::{ReadableDatabase, ReadableTable};
    const DOCS: redb::TableDefinition<(&str, &str), &[u8]> = redb::TableDefinition::new("docs");
    let copy = tempfile::NamedTempFile::new().expect("temp file");
    std::fs::copy(path, copy.path()).expect("copy");
    let db = redb::Database::open(copy.path()).expect("open with redb");
    let txn = db.begin_read().expect("read");
    let table = txn.open_table(DOCS).expect("docs");
    let rows = table
        .iter()
        .expect("iter")
        .map(|e| {
            let (k, v) = e.expect("row");
            let (source, id) = k.value();
            ((source.to_string(), id.to_string()), v.value().to_vec())
        })
        .collect();
    rows
}

/// Every document row of the converted file at `path` decodes whole as schema 6's, and keeps
/// the first 16 bytes of the content hash the export at `export` shows for it (zeros for a
/// tombstone, as a tombstone's hash is).
pub fn assert_docs_rows_are_schema_6(path: &std::path::Path, export: &str) {
    let want = fixture_export(export);
    let hashes: BTreeMap<(String, String), String> = want["documents"]
        .as_array()
        .expect("documents")
        .iter()
        .map(|d| {
            let field = |name: &str| d[name].as_str().expect("a string").to_string();
            ((field("source"), field("id")), field("content_hash"))
        })
        .collect();
    let rows = doc_rows(path);
    assert_eq!(
        rows.keys().collect::<Vec<_>>(),
        hashes.keys().collect::<Vec<_>>(),
        "the document rows' keys"
    );
    for (key, bytes) in &rows {
        let row: DocRowV6 = decode_row(&format!("document row {key:?}"), bytes);
        let hex: String = row.content_key.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, hashes[key][..32], "{key:?}: the content key");
    }
}

/// Decodes a whole bincode row (the store's encoding: bincode's standard configuration).
pub fn decode_row<T: serde::de::DeserializeOwned>(what: &str, bytes: &[u8]) -> T {
    let (row, used) = bincode::serde::decode_from_slice(bytes, bincode::config::standard())
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(used, bytes.len(), "{what}: trailing bytes");
    row
}

/// The slots of a schema-3/4 vectors row (`count | dimension | slot * count | ...`).
pub fn vectors_row_slots(row: &[u8]) -> Vec<u32> {
    let count = u32::from_le_bytes(row[0..4].try_into().expect("4 bytes")) as usize;
    row[8..8 + 4 * count]
        .chunks_exact(4)
        .map(|s| u32::from_le_bytes(s.try_into().expect("4 bytes")))
        .collect()
}

/// The `doc_keys` table (schemas 1 to 3) of the closed file at `path`: internal id ->
/// (source, id).
pub fn doc_keys(path: &std::path::Path) -> std::collections::BTreeMap<u64, (String, String)> {
    use redb::{ReadableDatabase, ReadableTable};
    const DOC_KEYS: redb::TableDefinition<u64, (&str, &str)> =
        redb::TableDefinition::new("doc_keys");
    let copy = tempfile::NamedTempFile::new().expect("temp file");
    std::fs::copy(path, copy.path()).expect("copy");
    let db = redb::Database::open(copy.path()).expect("open with redb");
    let txn = db.begin_read().expect("read");
    let table = txn.open_table(DOC_KEYS).expect("doc_keys");
    let keys = table
        .iter()
        .expect("iter")
        .map(|entry| {
            let (id, key) = entry.expect("row");
            let (source, doc) = key.value();
            (id.value(), (source.to_string(), doc.to_string()))
        })
        .collect();
    keys
}

/// The chunks row a conversion started from: schema 2's and 3's (`ChunksRowV3`) or schema 4's.
pub enum OldChunksRow<'a> {
    /// Schema 2's or 3's encoded row, and the document's key from `doc_keys`.
    V3(&'a [u8], &'a (String, String)),
    /// Schema 4's encoded row (it names its document itself).
    V4(&'a [u8]),
}

/// Checks a converted document's schema-5 chunks row (`joined`: its chunks row joined with
/// what its vectors row carries) against its old chunks row (`old`, whole): the same
/// generation and key, each chunk's slot the converted vectors row's at its position (and,
/// from schema 4, the old row's), the same texts and metadata, and each old text hash the
/// blake3 of the converted text: the hashes schema 5 drops were those of the kept texts.
/// (The version is checked against the document row by `verify`.)
pub fn assert_converted_chunks_row(
    what: &str,
    joined: &[u8],
    old: OldChunksRow<'_>,
    vectors_row: &[u8],
) {
    let new: ChunksRowV5 = decode_row(&format!("{what}: the converted chunks row"), joined);
    let old_what = format!("{what}: the old chunks row");
    // (generation, key, [(slot, text hash, text, meta)]) of the old row.
    type OldChunk = (Option<u32>, [u8; 32], String, String);
    let (generation, key, chunks): (u64, (String, String), Vec<OldChunk>) = match old {
        OldChunksRow::V3(bytes, key) => {
            let old: ChunksRowV3 = decode_row(&old_what, bytes);
            let chunks = old
                .chunks
                .into_iter()
                .map(|c| (None, c.text_hash, c.text, c.meta))
                .collect();
            (old.generation, key.clone(), chunks)
        }
        OldChunksRow::V4(bytes) => {
            let old: ChunksRowV4 = decode_row(&old_what, bytes);
            assert_eq!(
                (new.version_kind, new.version),
                (old.version_kind, old.version),
                "{what}: the version"
            );
            let chunks = old
                .chunks
                .into_iter()
                .map(|c| (Some(c.slot), c.text_hash, c.text, c.meta))
                .collect();
            (old.generation, (old.source, old.id), chunks)
        }
    };
    assert_eq!(new.generation, generation, "{what}: the generation");
    assert_eq!((&new.source, &new.id), (&key.0, &key.1), "{what}: the key");
    let slots: Vec<u32> = new.chunks.iter().map(|c| c.slot).collect();
    assert_eq!(slots, vectors_row_slots(vectors_row), "{what}: the slots");
    assert_eq!(new.chunks.len(), chunks.len(), "{what}: the chunk count");
    for (position, (chunk, (old_slot, hash, text, meta))) in
        new.chunks.iter().zip(&chunks).enumerate()
    {
        if let Some(old_slot) = old_slot {
            assert_eq!(chunk.slot, *old_slot, "{what}: chunk {position}'s slot");
        }
        assert_eq!(
            (&chunk.text, &chunk.meta),
            (text, meta),
            "{what}: chunk {position}"
        );
        assert_eq!(
            blake3::hash(chunk.text.as_bytes()).as_bytes(),
            hash,
            "{what}: chunk {position}'s old text hash is not its text's"
        );
    }
}

/// The names of the tables of the closed file at `path`.
pub fn table_names(path: &std::path::Path) -> Vec<String> {
    use redb::{ReadableDatabase, TableHandle};
    let copy = tempfile::NamedTempFile::new().expect("temp file");
    std::fs::copy(path, copy.path()).expect("copy");
    let db = redb::Database::open(copy.path()).expect("open with redb");
    let txn = db.begin_read().expect("read");
    let names = txn
        .list_tables()
        .expect("tables")
        .map(|t| t.name().to_string())
        .collect();
    names
}

/// The schema-2 and schema-3 fixtures after their conversion: the guard decides against the
/// converted rows (a stale write of "big" is refused), and a new revision of the spilled
/// document "long" reuses its converted vectors for unchanged text (sent without vectors),
/// under the same ids.
pub fn revise_converted_fixture(store: &ratchetdb::Store) {
    use ratchetdb::{Chunk, Document, Outcome, SkipReason, Version};
    let stale = store
        .upsert(
            Document::new("notes", "big", Version::number(1))
                .with_chunk(Chunk::new("old", vec![1.0; 32])),
        )
        .expect("stale upsert");
    assert!(
        matches!(
            stale,
            Outcome::Skipped {
                reason: SkipReason::Older,
                ..
            }
        ),
        "{stale:?}"
    );
    let long = store.get("notes", "long").expect("get").expect("long");
    let mut revision = Document::new("notes", "long", Version::number(2));
    for chunk in long.chunks.iter().skip(10) {
        revision = revision.with_chunk(Chunk::without_vector(chunk.text.clone()));
    }
    revision = revision.with_chunk(Chunk::new("a new last chunk", vec![0.25; 32]));
    let revised = store.upsert(revision).expect("revision");
    let kept = long.chunks.len() as u64 - 10;
    assert!(
        matches!(
            revised,
            Outcome::Written {
                chunks_reused,
                chunks_written: 1,
                chunks_removed: 9,
                ..
            } if chunks_reused == kept
        ),
        "{revised:?}"
    );
    let long2 = store
        .snapshot()
        .expect("snapshot")
        .get_with_vectors("notes", "long")
        .expect("get")
        .expect("long");
    assert_eq!(long2.chunks.len() as u64, kept + 1);
    for (old, new) in long.chunks.iter().skip(10).zip(&long2.chunks) {
        assert_eq!(
            (old.vector_id, &old.text),
            (new.vector_id, &new.text),
            "a kept vector keeps its id"
        );
    }
}

/// A conversion fixture's export (`schemaN-export.json`): its documents and stats.
pub fn fixture_export(path: &str) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("read the export"))
        .expect("parse the export")
}

/// `store` holds what the fixture's export at `export` holds: every document with its
/// vector ids (kept by a conversion from schema 2 or 3) and every vector bit for bit, the
/// same stats, and `verify` is clean.
pub fn assert_same_contents_as_export(store: &ratchetdb::Store, export: &str, when: &str) {
    let want = fixture_export(export);
    let bits = |documents: serde_json::Value| vectors_as_f32_bits(documents, |_| {});
    assert!(
        bits(exported_documents(store)) == bits(want["documents"].clone()),
        "{when}: the documents changed"
    );
    assert_same_stats_and_verified(store, &want["stats"], when);
}

/// The chunks and vectors rows of the closed file at `path`, by internal id, a coded vectors
/// row in the raw layout; each vectors row has a chunks row beside it and each chunks row a
/// vectors row.
pub fn revision_rows(
    path: &std::path::Path,
) -> std::collections::BTreeMap<u64, (Vec<u8>, Vec<u8>)> {
    use redb::{ReadableDatabase, ReadableTable, ReadableTableMetadata};
    const CHUNKS: redb::TableDefinition<u64, &[u8]> = redb::TableDefinition::new("doc_chunks");
    const VECTORS: redb::TableDefinition<u64, &[u8]> = redb::TableDefinition::new("doc_vectors");
    // Read-only: callers pass the checked-in fixtures themselves, which must never change
    // (a writable open rewrites the header and allocator pages).
    let db = redb::Builder::new()
        .open_read_only(path)
        .expect("open with redb, read-only");
    let txn = db.begin_read().expect("read");
    let chunks = txn.open_table(CHUNKS).expect("chunks");
    let vectors = txn.open_table(VECTORS).expect("vectors");
    let mut rows = std::collections::BTreeMap::new();
    for entry in vectors.iter().expect("iter") {
        let (id, bytes) = entry.expect("row");
        let chunk = chunks
            .get(id.value())
            .expect("get")
            .expect("a chunks row beside each vectors row");
        // Coded rows (schema 8) in the raw layout, so that rows compare bit for bit.
        let vectors = ratchetdb::testkit::raw_vectors_row(bytes.value());
        rows.insert(id.value(), (chunk.value().to_vec(), vectors));
    }
    assert_eq!(
        chunks.len().expect("len"),
        rows.len() as u64,
        "a vectors row beside each chunks row"
    );
    rows
}

/// A new store at `path` of `dimension` without a text index (the page-layout tests measure
/// the rows alone), `docs` written in one transaction (each written, `verify` clean); the
/// store, still open.
pub fn store_of_one_batch(
    path: &std::path::Path,
    dimension: usize,
    docs: Vec<ratchetdb::Document>,
) -> ratchetdb::Store {
    let store = ratchetdb::Store::open(
        path,
        ratchetdb::Options::default()
            .dimension(dimension)
            .durability(ratchetdb::Durability::Immediate)
            .text_index(false),
    )
    .expect("open");
    let ops = docs.into_iter().map(ratchetdb::Op::Upsert).collect();
    for outcome in store.write_batch(ops).expect("write_batch") {
        assert!(outcome.is_ok(), "{outcome:?}");
    }
    let report = store.verify().expect("verify");
    assert!(report.is_ok(), "{report:?}");
    store
}

/// The closed file's allocated pages and redb's page size.
pub fn allocated_pages(path: &std::path::Path) -> (u64, u64) {
    let db = redb::Database::open(path).expect("redb open");
    let txn = db.begin_write().expect("begin_write");
    let stats = txn.stats().expect("stats");
    (stats.allocated_pages(), stats.page_size() as u64)
}

/// The closed file's free bytes: its length less redb's allocated pages.
pub fn free_bytes(path: &std::path::Path) -> u64 {
    let db = redb::Database::open(path).expect("redb open");
    let txn = db.begin_write().expect("write");
    let stats = txn.stats().expect("stats");
    let allocated = stats.allocated_pages() * stats.page_size() as u64;
    txn.abort().expect("abort");
    drop(db);
    let len = std::fs::metadata(path).expect("file").len();
    len.saturating_sub(allocated)
}

/// A MiniLM-like embedding of `dimension` floats from `seed`
/// ([`ratchetdb::testkit::SplitMix64::minilm_like`]).
pub fn minilm_like(seed: u64, dimension: usize) -> Vec<f32> {
    ratchetdb::testkit::SplitMix64::new(seed).minilm_like(dimension)
}

/// The bit patterns of `vector`'s floats (compared where two floats must be the same bits,
/// `-0.0` and `0.0` apart).
pub fn bits(vector: &[f32]) -> Vec<u32> {
    vector.iter().map(|x| x.to_bits()).collect()
}
