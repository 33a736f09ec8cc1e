//! A file written by the schema-1 build (a row per chunk and a row per vector) is converted
//! straight to schema 6's rows (stamped with this build's schema, 10; the later schemas add
//! only tables and row layouts that raw rows need not take) when this build opens it: every
//! document, version, generation, content hash, chunk text and metadata, every vector bit
//! for bit, every counter, listing and skip-log row survive; only vector ids change. Each live revision
//! becomes one schema-5 chunks row (its document's version and key, each chunk's vector slot,
//! no text hashes) beside one vectors row, and each document row keeps the first 16 bytes of
//! its content hash (schema 6). The guard goes on deciding against the converted
//! rows, searches find the converted vectors, and the conversion is one transaction: an I/O
//! failure at any point of it leaves a file that opens (converted or still schema 1, then
//! converted) with the same contents. The fixture and how it was made:
//! `tests/fixtures/schema1-README.md`.

use crate::support;

use ratchetdb::{
    Chunk, Document, OpenError, Options, Outcome, SearchOptions, SkipReason, Store, Version,
};
use redb::{ReadableDatabase, ReadableTable, TableDefinition};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use support::converted::vectors_end;
use support::{no_panic, schema_version};

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/schema1-store.redb"
);
const EXPORT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/schema1-export.json"
);

/// The export with the vector ids taken out (they are the one thing that changes), and each
/// vector element as the f32 it stands for.
fn without_vector_ids(documents: Value) -> Value {
    support::vectors_as_f32_bits(documents, |chunk| {
        chunk.remove("vector_id");
    })
}

fn expected() -> (Value, Value) {
    let export: Value =
        serde_json::from_str(&std::fs::read_to_string(EXPORT).expect("read the export"))
            .expect("parse the export");
    (
        without_vector_ids(export["documents"].clone()),
        export["stats"].clone(),
    )
}

fn assert_same_contents(store: &Store, when: &str) {
    let documents = without_vector_ids(support::exported_documents(store));
    let (want_documents, want_stats) = expected();
    assert_eq!(documents, want_documents, "{when}: the documents changed");
    support::assert_same_stats_and_verified(store, &want_stats, when);
}

#[test]
fn schema_1_file_is_converted_on_open() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("old.redb");
    std::fs::copy(FIXTURE, &path).expect("copy the fixture");
    let store = Store::open(&path, Options::default()).expect("a schema-1 file opens");
    assert_same_contents(&store, "after the conversion");
    // The original is kept beside it, with the old build's rows.
    let backup = dir.path().join("old.redb.schema1-backup");
    let original = dir.path().join("original.redb");
    std::fs::copy(FIXTURE, &original).expect("copy the fixture");
    assert_eq!(schema_version(&backup), 1, "the backup is schema 1");
    assert_eq!(
        schema_1_rows(&backup),
        schema_1_rows(&original),
        "the backup holds the original rows"
    );

    // Schemas 4 on have no doc_keys table: each chunks row names its document (`verify`, in
    // `assert_same_contents`, checks the key, version and slots it carries).
    drop(store);
    assert!(
        !support::table_names(&path).contains(&"doc_keys".to_string()),
        "the converted file keeps no doc_keys table"
    );
    // Converted straight to this schema: the file is stamped 7, its chunks rows are schema 5's
    // (unchanged in 6), and its document rows schema 6's, each with the first 16 bytes of
    // the content hash the export shows.
    assert_eq!(schema_version(&path), 10, "the file is stamped schema 10");
    assert_chunks_rows_are_schema_5(&path);
    support::assert_docs_rows_are_schema_6(&path, EXPORT);
    let store = Store::open(&path, Options::default()).expect("reopen");

    // Vectors keep their ids within a document from now on: slot = position.
    let a = store.get("notes", "a").expect("get").expect("a");
    let ids: Vec<u64> = a.chunks.iter().map(|c| c.vector_id).collect();
    assert_eq!(ids.len(), 3);
    assert!(
        ids.windows(2).all(|w| w[1] == w[0] + 1),
        "slots 0, 1, 2: {ids:?}"
    );

    // The guard decides against the converted rows.
    let stale = store
        .upsert(
            Document::new("notes", "b", Version::number(4))
                .with_chunk(Chunk::new("old", vec![1.0; 8])),
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
    let deleted = store
        .upsert(
            Document::new("notes", "c", Version::number(1))
                .with_chunk(Chunk::new("gone", vec![1.0; 8])),
        )
        .expect("write under a tombstone");
    assert!(
        matches!(
            deleted,
            Outcome::Skipped {
                reason: SkipReason::Tombstoned,
                ..
            }
        ),
        "{deleted:?}"
    );
    let listed_away = store
        .upsert(
            Document::new("web", "y", Version::number(10))
                .with_chunk(Chunk::new("page y", vec![1.0; 8])),
        )
        .expect("write under the listing");
    assert!(
        matches!(listed_away, Outcome::Skipped { .. }),
        "{listed_away:?}"
    );
    // An id never written, which the converted listing (web at 11, members [x]) omits.
    let never_listed = store
        .upsert(
            Document::new("web", "z", Version::number(10))
                .with_chunk(Chunk::new("page z", vec![1.0; 8])),
        )
        .expect("write under the listing");
    assert!(
        matches!(
            never_listed,
            Outcome::Skipped {
                reason: SkipReason::Tombstoned,
                ..
            }
        ),
        "the listing did not survive: {never_listed:?}"
    );
    // A new revision reuses a converted vector for unchanged text (sent without one).
    let alpha = a.chunks.iter().find(|c| c.text == "alpha").expect("alpha");
    let revised = store
        .upsert(
            Document::new("notes", "a", Version::number(3))
                .with_chunk(Chunk::without_vector("alpha"))
                .with_chunk(Chunk::new("epsilon", vec![0.5; 8])),
        )
        .expect("revision");
    assert!(
        matches!(
            revised,
            Outcome::Written {
                chunks_reused: 1,
                chunks_written: 1,
                chunks_removed: 1,
                ..
            }
        ),
        "{revised:?}"
    );
    let a3 = store
        .snapshot()
        .expect("snapshot")
        .get_with_vectors("notes", "a")
        .expect("get")
        .expect("a");
    assert_eq!(
        a3.chunks[0].vector_id, alpha.vector_id,
        "the kept vector keeps its id"
    );
    let verified = store.verify().expect("verify");
    assert!(verified.is_ok(), "{:#?}", verified.violations);

    // Searches find converted vectors, exactly and through the index.
    // (b's vector is the converted one: the export comparison above checked it bit for bit.)
    let b_vector = store
        .snapshot()
        .expect("snapshot")
        .get_with_vectors("notes", "b")
        .expect("get")
        .and_then(|b| b.chunks.first().and_then(|c| c.vector.clone()))
        .expect("b's vector");
    for options in [
        SearchOptions::default().exact(true),
        SearchOptions::default(),
    ] {
        let hits = store.search(&b_vector, 1, &options).expect("search");
        assert_eq!(
            hits.first().map(|h| h.text.as_str()),
            Some("only"),
            "{options:?}"
        );
    }
    drop(store);
    support::reopen_verified(&path);
}

/// The conversion is one transaction: fail each of its writes, syncs and length changes
/// in turn; whatever the durable image then is, it opens with the fixture's contents.
#[test]
fn a_failed_conversion_leaves_a_file_that_opens_whole() {
    let image = std::fs::read(FIXTURE).expect("read the fixture");
    let (calls, converted_after_failure) =
        support::every_failed_conversion_reopens(&image, assert_same_contents);
    println!("conversion: {calls} I/O calls x 2 modes failed in turn, each image reopened whole ({converted_after_failure} opens succeeded despite the fault)");
}

/// A damaged schema-1 file: 400 flipped bits, each opened with the page checksums verified
/// (redb's own remedy for files damaged outside it, see `corrupt_flipped_bytes.rs`). The
/// conversion never panics: it converts, or refuses the file with a typed error.
#[test]
fn a_damaged_schema_1_file_is_converted_or_refused_never_a_panic() {
    let image = std::fs::read(FIXTURE).expect("read the fixture");
    let (opened, refused) = support::flipped_bits_never_panic(&image, 0x5c1e, 400);
    println!("damaged schema-1 files: {opened} opened, {refused} refused, 0 panics");
}

// ---------------------------------------------------------------------------------------
// Schema-1 rows written by hand, to damage a copy of the fixture in chosen ways.

const COUNTERS: TableDefinition<&str, u64> = TableDefinition::new("counters");
const DOCS: TableDefinition<(&str, &str), &[u8]> = TableDefinition::new("docs");
const DOC_KEYS: TableDefinition<u64, (&str, &str)> = TableDefinition::new("doc_keys");
const CHUNKS_V1: TableDefinition<(u64, u32), &[u8]> = TableDefinition::new("chunks");
const VECTORS_V1: TableDefinition<u64, &[u8]> = TableDefinition::new("vectors");

#[derive(Serialize, Deserialize)]
struct DocRowV1 {
    internal_id: u64,
    version_kind: u8,
    version: u64,
    generation: u64,
    chunk_count: u32,
    content_hash: [u8; 32],
    deleted: bool,
    meta: String,
}

#[derive(Serialize, Deserialize)]
struct ChunkRowV1 {
    generation: u64,
    text_hash: [u8; 32],
    vector_id: u64,
    text: String,
    meta: String,
}

fn config() -> impl bincode::config::Config {
    bincode::config::standard()
}

fn vector_row(owner: u64, position: u32, floats: usize) -> Vec<u8> {
    let mut bytes = owner.to_le_bytes().to_vec();
    bytes.extend_from_slice(&position.to_le_bytes());
    for _ in 0..floats {
        bytes.extend_from_slice(&0.5f32.to_le_bytes());
    }
    bytes
}

fn first_vector_id(txn: &redb::WriteTransaction) -> u64 {
    let vectors = txn.open_table(VECTORS_V1).expect("vectors");
    let first = vectors.first().expect("first").expect("a vector").0.value();
    first
}

fn chunk_count_max(txn: &redb::WriteTransaction) {
    let mut docs = txn.open_table(DOCS).expect("docs");
    let bytes = docs
        .get(("notes", "b"))
        .expect("get")
        .expect("b")
        .value()
        .to_vec();
    let (mut row, _): (DocRowV1, usize) =
        bincode::serde::decode_from_slice(&bytes, config()).expect("decode");
    row.chunk_count = u32::MAX;
    let bytes = bincode::serde::encode_to_vec(&row, config()).expect("encode");
    docs.insert(("notes", "b"), bytes.as_slice())
        .expect("insert");
}

fn vector_without_floats(txn: &redb::WriteTransaction) {
    let id = first_vector_id(txn);
    let mut vectors = txn.open_table(VECTORS_V1).expect("vectors");
    let bytes = vectors.get(id).expect("get").expect("row").value()[..12].to_vec();
    vectors.insert(id, bytes.as_slice()).expect("insert");
}

fn vector_of_another_owner(txn: &redb::WriteTransaction) {
    let id = first_vector_id(txn);
    let mut vectors = txn.open_table(VECTORS_V1).expect("vectors");
    let mut bytes = vectors.get(id).expect("get").expect("row").value().to_vec();
    bytes[0] ^= 0x40;
    vectors.insert(id, bytes.as_slice()).expect("insert");
}

fn oversized_document(txn: &redb::WriteTransaction) {
    let (internal_id, first_vector) = (1_000u64, 1_000_000u64);
    txn.open_table(DOC_KEYS)
        .expect("keys")
        .insert(internal_id, ("big", "doc"))
        .expect("key");
    let mut chunks = txn.open_table(CHUNKS_V1).expect("chunks");
    let mut vectors = txn.open_table(VECTORS_V1).expect("vectors");
    for position in 0..70u32 {
        let row = ChunkRowV1 {
            generation: 9,
            text_hash: [0; 32],
            vector_id: first_vector + u64::from(position),
            text: "x".repeat(1 << 20),
            meta: "null".into(),
        };
        let bytes = bincode::serde::encode_to_vec(&row, config()).expect("encode");
        chunks
            .insert((internal_id, position), bytes.as_slice())
            .expect("chunk");
        let vector = vector_row(internal_id, position, 8);
        vectors
            .insert(first_vector + u64::from(position), vector.as_slice())
            .expect("vector");
    }
    let doc = DocRowV1 {
        internal_id,
        version_kind: 0,
        version: 1,
        generation: 9,
        chunk_count: 70,
        content_hash: [0; 32],
        deleted: false,
        meta: "null".into(),
    };
    let bytes = bincode::serde::encode_to_vec(&doc, config()).expect("encode");
    txn.open_table(DOCS)
        .expect("docs")
        .insert(("big", "doc"), bytes.as_slice())
        .expect("doc");
}

/// Damaged or oversized schema-1 rows (checksums intact: damage a checksum cannot see) are
/// refused with a typed error, never an abort or a panic, and the file stays schema 1.
#[test]
fn damaged_or_oversized_schema_1_rows_are_refused_and_the_file_stays_schema_1() {
    type Damage = fn(&redb::WriteTransaction);
    let cases: [(&str, Damage, &str); 4] = [
        (
            "a chunk count of u32::MAX",
            chunk_count_max,
            "Unconvertible",
        ),
        (
            "a vector row of no floats",
            vector_without_floats,
            "Corrupted",
        ),
        (
            "a vector row naming another owner",
            vector_of_another_owner,
            "Corrupted",
        ),
        (
            "a document of 70 one-MiB chunks (one row holds 64 MiB)",
            oversized_document,
            "Unconvertible",
        ),
    ];
    let dir = tempfile::tempdir().expect("tempdir");
    for (n, (what, damage, expected)) in cases.into_iter().enumerate() {
        let path = dir.path().join(format!("damaged-{n}.redb"));
        std::fs::copy(FIXTURE, &path).expect("copy the fixture");
        {
            let db = redb::Database::open(&path).expect("open with redb");
            let txn = db.begin_write().expect("write");
            damage(&txn);
            txn.commit().expect("commit");
        }
        let opened = no_panic(what, || Store::open(&path, Options::default()));
        let kind = match &opened {
            Err(OpenError::Unconvertible { .. }) => "Unconvertible",
            Err(OpenError::Corrupted { .. }) => "Corrupted",
            Err(_) => "another error",
            Ok(_) => "opened",
        };
        assert_eq!(kind, expected, "{what}: {opened:?}");
        drop(opened);
        assert_eq!(
            schema_version(&path),
            1,
            "{what}: the file is no longer schema 1"
        );
    }
}

/// Checks the chunks rows of the converted file at `path`: each (joined with what its
/// vectors row carries) decodes whole as schema 5's (no text hash left in it), names a live
/// document of the export with its generation, and holds its vectors row's slots and that
/// document's chunk texts and metadata in order; every live document with chunks has one.
fn assert_chunks_rows_are_schema_5(path: &std::path::Path) {
    let export = support::fixture_export(EXPORT);
    let live: Vec<&Value> = export["documents"]
        .as_array()
        .expect("documents")
        .iter()
        .filter(|d| d["deleted"] == false && !d["chunks"].as_array().expect("chunks").is_empty())
        .collect();
    let mut named = Vec::new();
    for (id, (chunks, vectors)) in support::revision_rows(path) {
        let what = format!("document {id}");
        let joined = [chunks.as_slice(), &vectors[vectors_end(&vectors)..]].concat();
        let row: support::ChunksRowV5 = support::decode_row(&what, &joined);
        let doc = live
            .iter()
            .find(|d| d["source"] == row.source.as_str() && d["id"] == row.id.as_str())
            .unwrap_or_else(|| panic!("{what}: a chunks row of no live document: {row:?}"));
        assert_eq!(
            Value::from(row.generation),
            doc["generation"],
            "{what}: the generation"
        );
        let slots: Vec<u32> = row.chunks.iter().map(|c| c.slot).collect();
        assert_eq!(
            slots,
            support::vectors_row_slots(&vectors),
            "{what}: the slots"
        );
        let texts: Vec<(Value, Value)> = row
            .chunks
            .iter()
            .map(|c| {
                let meta = serde_json::from_str(&c.meta).expect("the chunk's metadata is JSON");
                (Value::from(c.text.as_str()), meta)
            })
            .collect();
        let want: Vec<(Value, Value)> = doc["chunks"]
            .as_array()
            .expect("chunks")
            .iter()
            .map(|c| (c["text"].clone(), c["meta"].clone()))
            .collect();
        assert_eq!(texts, want, "{what}: the chunks' texts and metadata");
        named.push((row.source, row.id));
    }
    named.sort();
    let mut want: Vec<(String, String)> = live
        .iter()
        .map(|d| {
            let key = |field: &str| d[field].as_str().expect("key").to_string();
            (key("source"), key("id"))
        })
        .collect();
    want.sort();
    assert_eq!(named, want, "one chunks row for each live document");
}

/// Every row of a schema-1 file's document, chunk and vector tables, as bytes.
fn schema_1_rows(path: &std::path::Path) -> Vec<Vec<u8>> {
    let db = redb::Database::open(path).expect("open with redb");
    let txn = db.begin_read().expect("read");
    let mut rows = Vec::new();
    for entry in txn.open_table(DOCS).expect("docs").iter().expect("iter") {
        let (key, value) = entry.expect("entry");
        let (source, id) = key.value();
        rows.push([source.as_bytes(), id.as_bytes(), value.value()].concat());
    }
    for entry in txn
        .open_table(CHUNKS_V1)
        .expect("chunks")
        .iter()
        .expect("iter")
    {
        let (key, value) = entry.expect("entry");
        let (doc, position) = key.value();
        rows.push(
            [
                &doc.to_le_bytes()[..],
                &position.to_le_bytes(),
                value.value(),
            ]
            .concat(),
        );
    }
    for entry in txn
        .open_table(VECTORS_V1)
        .expect("vectors")
        .iter()
        .expect("iter")
    {
        let (key, value) = entry.expect("entry");
        rows.push([&key.value().to_le_bytes()[..], value.value()].concat());
    }
    assert!(rows.len() > 10, "the fixture's rows were read");
    rows
}

/// Rows schema 1 left behind (a chunk and a vector no document reaches, which its `verify`
/// reported as orphans) are not carried over, and the gauges are recounted from what is.
#[test]
fn orphan_schema_1_rows_are_dropped_and_the_gauges_recounted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("orphans.redb");
    std::fs::copy(FIXTURE, &path).expect("copy the fixture");
    {
        let db = redb::Database::open(&path).expect("open with redb");
        let txn = db.begin_write().expect("write");
        {
            let row = ChunkRowV1 {
                generation: 1,
                text_hash: [0; 32],
                vector_id: 777,
                text: "orphan".into(),
                meta: "null".into(),
            };
            let bytes = bincode::serde::encode_to_vec(&row, config()).expect("encode");
            let mut chunks = txn.open_table(CHUNKS_V1).expect("chunks");
            chunks.insert((555, 0), bytes.as_slice()).expect("chunk");
            let mut vectors = txn.open_table(VECTORS_V1).expect("vectors");
            vectors
                .insert(777, vector_row(555, 0, 8).as_slice())
                .expect("vector");
            // As schema 1's gauges would have counted them.
            let mut counters = txn.open_table(COUNTERS).expect("counters");
            counters.insert("live.chunks", 7).expect("gauge");
            counters.insert("live.vectors", 7).expect("gauge");
        }
        txn.commit().expect("commit");
    }
    let store = Store::open(&path, Options::default()).expect("converts");
    let report = store.verify().expect("verify");
    assert!(report.is_ok(), "{:#?}", report.violations);
    let stats = store.stats().expect("stats");
    assert_eq!(
        (stats.chunks, stats.vectors),
        (6, 6),
        "the orphans are not counted"
    );
}
