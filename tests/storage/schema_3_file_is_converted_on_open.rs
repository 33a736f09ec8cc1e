//! A file written by the schema-3 build (each live revision as one chunks row and one vectors
//! row, the vectors row with its dimension and the last bytes of the chunks row in the slack
//! of its pages; the chunks row without the document's version, key or slots), with a text
//! index and a persisted graph snapshot, is converted to schema 4 when this build opens it
//! (the original kept beside it as a backup): the chunks row gains its document's version and
//! key and each chunk's vector slot, and is split again beside its vectors. Every document, version, generation, content hash, chunk text and metadata, every
//! vector bit for bit and under the same id, every counter, listing and skip-log row survive;
//! the changelog and the graph snapshot (addressed by vector ids, which do not change) are
//! kept byte for byte, and the snapshot is what the index loads. The text index stays. The
//! guard goes on deciding against the converted rows, vector and text searches resolve their
//! hits to the converted chunks (document, version, generation, position, text, metadata),
//! and opening is one transaction: an I/O failure at any point of it leaves a file that
//! opens (converted, or still schema 3 and then converted) with the same contents. The
//! fixture and how it was made: `tests/fixtures/schema3-README.md`.

use crate::support;

use ratchetdb::{Hit, Options, SearchOptions, Store, Version};
use redb::{ReadableDatabase, ReadableTable, TableDefinition};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;
use support::schema_version;

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/schema3-store.redb"
);
const EXPORT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/schema3-export.json"
);

const CHUNKS: TableDefinition<u64, &[u8]> = TableDefinition::new("doc_chunks");
const VECTORS: TableDefinition<u64, &[u8]> = TableDefinition::new("doc_vectors");
const CHANGELOG: TableDefinition<u64, &[u8]> = TableDefinition::new("changelog");
const INDEX_SNAPSHOT: TableDefinition<u32, &[u8]> = TableDefinition::new("index_snapshot");

/// redb's page, and the bytes a leaf needs beside a lone value under a u64 key.
const PAGE: usize = 4096;
const LEAF_OVERHEAD: usize = 16;

/// The rows of `table` in the closed file at `path` (read from a copy: the fixture is never
/// opened for writing).
fn table_rows<K>(path: &Path, table: TableDefinition<K, &[u8]>) -> Vec<(u64, Vec<u8>)>
where
    K: redb::Key + 'static,
    for<'a> K::SelfType<'a>: Into<u64>,
{
    let copy = tempfile::NamedTempFile::new().expect("temp file");
    std::fs::copy(path, copy.path()).expect("copy");
    let db = redb::Database::open(copy.path()).expect("open with redb");
    let txn = db.begin_read().expect("read");
    let table = txn.open_table(table).expect("table");
    let rows = table
        .iter()
        .expect("iter")
        .map(|e| {
            e.map(|(k, v)| (k.value().into(), v.value().to_vec()))
                .expect("row")
        })
        .collect();
    rows
}

fn u32_at(bytes: &[u8], at: usize) -> usize {
    u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes")) as usize
}

/// Checks that `rows` are schema 3's: each vectors row its count, dimension, slots and
/// vectors, then the chunks row's last bytes, only where the vectors take more than a page;
/// returns how many rows carry such bytes.
fn assert_schema_3_rows(rows: &BTreeMap<u64, (Vec<u8>, Vec<u8>)>) -> usize {
    let mut spilled = 0;
    for (id, (_, vectors)) in rows {
        let count = u32_at(vectors, 0);
        let dimension = u32_at(vectors, 4);
        assert_eq!(dimension, 32, "document {id}: the dimension");
        let end = 8 + count * 4 * (1 + dimension);
        assert!(vectors.len() >= end, "document {id}: the vectors");
        if end + LEAF_OVERHEAD <= PAGE {
            assert_eq!(
                vectors.len(),
                end,
                "document {id}: a row that shares a leaf"
            );
        }
        spilled += usize::from(vectors.len() > end);
    }
    spilled
}

/// Checks that every hit is a live chunk of the exported documents: its document, version,
/// generation, position, text and metadata.
fn assert_resolved(hits: &[Hit], documents: &Value, what: &str) {
    for hit in hits {
        let doc = documents
            .as_array()
            .expect("documents")
            .iter()
            .find(|d| d["source"] == hit.source.as_str() && d["id"] == hit.id.as_str())
            .unwrap_or_else(|| panic!("{what}: a hit of no document: {hit:?}"));
        assert_eq!(
            doc["deleted"], false,
            "{what}: a hit of a tombstone: {hit:?}"
        );
        assert_eq!(
            serde_json::to_value(hit.version).expect("version json"),
            doc["version"],
            "{what}: the version of {hit:?}"
        );
        assert_eq!(
            Value::from(hit.generation),
            doc["generation"],
            "{what}: the generation of {hit:?}"
        );
        let chunk = &doc["chunks"][hit.position as usize];
        assert_eq!(
            chunk["text"],
            hit.text.as_str(),
            "{what}: the text of {hit:?}"
        );
        assert_eq!(chunk["meta"], hit.meta, "{what}: the metadata of {hit:?}");
    }
}

/// `(source, id, position, text)` of each hit, sorted.
fn keys(hits: &[Hit]) -> Vec<(String, String, u32, String)> {
    let mut keys: Vec<_> = hits
        .iter()
        .map(|h| (h.source.clone(), h.id.clone(), h.position, h.text.clone()))
        .collect();
    keys.sort();
    keys
}

/// Vector searches (exact, by default, and over the loaded graph) and text searches find
/// the converted chunks, and only live ones.
fn assert_searches_find_converted_chunks(store: &Store) {
    let want = support::fixture_export(EXPORT);
    let documents = &want["documents"];
    // The fixture's vectors repeat (17 patterns): b's vector is also some chunks' of the
    // large documents, and a search for it returns exactly those chunks first, b's "only"
    // among them.
    let snapshot = store.snapshot().expect("snapshot");
    let b_vector = snapshot
        .get_with_vectors("notes", "b")
        .expect("get")
        .and_then(|b| b.chunks.first().and_then(|c| c.vector.clone()))
        .expect("b's vector");
    let mut same = Vec::new();
    for doc in snapshot.documents(true).expect("documents") {
        let doc = doc.expect("document");
        for chunk in doc.chunks {
            if chunk.vector.as_ref() == Some(&b_vector) {
                same.push((
                    doc.source.clone(),
                    doc.id.clone(),
                    chunk.position,
                    chunk.text,
                ));
            }
        }
    }
    same.sort();
    assert!(
        same.len() > 1 && same.iter().any(|c| c.3 == "only"),
        "{same:?}"
    );
    for options in [
        SearchOptions::default().exact(true),
        SearchOptions::default(),
        // Over the graph loaded from the snapshot, searched wider than the store.
        SearchOptions::default().ef(500),
    ] {
        let hits = store
            .search(&b_vector, same.len(), &options)
            .expect("search");
        assert_eq!(keys(&hits), same, "{options:?}");
        assert_resolved(&hits, documents, &format!("search {options:?}"));
    }

    // Text: "only" is b's one chunk; "pawl" is in many chunks of the large documents (and
    // of the deleted "c" and of big's dropped chunks, which must not come back).
    let hits = store
        .search_text("only", 10, &SearchOptions::default())
        .expect("search_text");
    assert_eq!(
        keys(&hits),
        vec![("notes".into(), "b".into(), 0, "only".into())]
    );
    assert_resolved(&hits, documents, "search_text only");
    let mut pawl = Vec::new();
    for doc in documents.as_array().expect("documents") {
        for chunk in doc["chunks"].as_array().expect("chunks") {
            let text = chunk["text"].as_str().expect("text");
            if text.split(' ').any(|word| word == "pawl") {
                let position = chunk["position"].as_u64().expect("position") as u32;
                let (source, id) = (doc["source"].as_str(), doc["id"].as_str());
                let (source, id) = (source.expect("source"), id.expect("id"));
                pawl.push((
                    source.to_string(),
                    id.to_string(),
                    position,
                    text.to_string(),
                ));
            }
        }
    }
    pawl.sort();
    assert!(pawl.len() > 10, "{}", pawl.len());
    let hits = store
        .search_text("pawl", 1000, &SearchOptions::default())
        .expect("search_text");
    assert_eq!(keys(&hits), pawl, "search_text pawl");
    assert_resolved(&hits, documents, "search_text pawl");
}

#[test]
fn schema_3_file_is_converted_on_open() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("old.redb");
    std::fs::copy(FIXTURE, &path).expect("copy the fixture");
    let old_rows = support::revision_rows(&path);
    // The fixture's live documents with vectors over a page, "long" and "meta", carry
    // chunk bytes in their vectors rows.
    let spilled = assert_schema_3_rows(&old_rows);
    assert!(spilled >= 2, "only {spilled} rows carry chunk bytes");
    let old_graph = table_rows(&path, INDEX_SNAPSHOT);
    assert!(
        !old_graph.is_empty(),
        "the fixture carries a graph snapshot"
    );
    // Written before snapshot format 5: format 3, every row at its capacity. It is kept
    // byte for byte below after the index settled, so it was loaded, not rebuilt (a build
    // writes a format-5 snapshot).
    assert_eq!(
        u32_at(&old_graph[0].1, 8),
        3,
        "the fixture's snapshot format"
    );

    let store = Store::open(&path, Options::default()).expect("a schema-3 file opens");
    assert!(store.has_text_index(), "the text index is kept");
    support::assert_same_contents_as_export(&store, EXPORT, "after the conversion");
    // The graph is the persisted one: a store of 132 vectors builds none of its own.
    assert!(
        store.wait_for_index(Duration::from_secs(60)),
        "the index settles"
    );
    let info = store.index_info();
    assert!(
        info.graph_ready && info.persisted_points > 0 && info.live_vectors == 132,
        "{info:?}"
    );
    assert_searches_find_converted_chunks(&store);
    drop(store);
    assert_eq!(schema_version(&path), 4, "the file is stamped schema 4");

    // The changelog and the graph snapshot (addressed by vector ids, which did not change)
    // are kept whole.
    assert_eq!(
        table_rows(&path, CHANGELOG),
        table_rows(Path::new(FIXTURE), CHANGELOG)
    );
    assert!(!table_rows(&path, CHANGELOG).is_empty());
    assert_eq!(
        table_rows(&path, INDEX_SNAPSHOT),
        old_graph,
        "the graph snapshot"
    );

    // The original is kept beside it, with the old build's rows.
    let backup = dir.path().join("old.redb.schema3-backup");
    assert_eq!(schema_version(&backup), 3, "the backup is schema 3");
    assert_eq!(
        support::revision_rows(&backup),
        old_rows,
        "the backup holds the original rows"
    );
    // The rows stay under the same internal ids (the vector ids name them), the vectors bit
    // for bit; each chunks row (joined with what its vectors row carries) is the old one with
    // its document's key and its chunks' slots.
    let new_rows = support::revision_rows(&path);
    assert_eq!(
        new_rows.keys().collect::<Vec<_>>(),
        old_rows.keys().collect::<Vec<_>>()
    );
    // Schema 4 has no `doc_keys` table: the keys are the old file's.
    let keys = support::doc_keys(&backup);
    assert!(
        !support::table_names(&path).contains(&"doc_keys".to_string()),
        "the converted file keeps no doc_keys table"
    );
    for (id, (old_chunks, old_vectors)) in &old_rows {
        let (new_chunks, new_vectors) = &new_rows[id];
        let end = 8 + u32_at(old_vectors, 0) * 4 * (1 + u32_at(old_vectors, 4));
        assert_eq!(
            &new_vectors[..end],
            &old_vectors[..end],
            "document {id}: the vectors"
        );
        support::assert_converted_chunks_row(
            &format!("document {id}"),
            &[new_chunks.as_slice(), &new_vectors[end..]].concat(),
            &[old_chunks.as_slice(), &old_vectors[end..]].concat(),
            new_vectors,
            &keys[id],
        );
    }

    // The guard decides against the converted rows.
    let store = Store::open(&path, Options::default()).expect("reopen the converted file");
    support::revise_converted_fixture(&store);
    // The new revision is what both searches find of "long" now.
    let hits = store
        .search_text("new last chunk", 5, &SearchOptions::default())
        .expect("search_text");
    assert_eq!(
        (hits[0].id.as_str(), hits[0].text.as_str(), hits[0].version),
        ("long", "a new last chunk", Version::number(2))
    );
    let hits = store
        .search(&[0.25; 32], 1, &SearchOptions::default().exact(true))
        .expect("search");
    assert_eq!(hits[0].text, "a new last chunk");
    let verified = store.verify().expect("verify");
    assert!(verified.is_ok(), "{:#?}", verified.violations);
    drop(store);
    support::reopen_verified(&path);
}

/// Opening is one transaction: fail each of its writes, syncs and length changes in turn;
/// whatever the durable image then is, it opens with the fixture's contents.
#[test]
fn a_failed_conversion_of_a_schema_3_file_leaves_a_file_that_opens_whole() {
    let image = std::fs::read(FIXTURE).expect("read the fixture");
    let (calls, converted_after_failure) =
        support::every_failed_conversion_reopens(&image, |store, when| {
            support::assert_same_contents_as_export(store, EXPORT, when)
        });
    println!("conversion: {calls} I/O calls x 2 modes failed in turn, each image reopened whole ({converted_after_failure} opens succeeded despite the fault)");
}

/// A damaged schema-3 file: 400 flipped bits, each opened with the page checksums verified.
/// The conversion never panics: it converts, or refuses the file with a typed error.
#[test]
fn a_damaged_schema_3_file_is_converted_or_refused_never_a_panic() {
    let image = std::fs::read(FIXTURE).expect("read the fixture");
    let (opened, refused) = support::flipped_bits_never_panic(&image, 0x5c3e, 400);
    println!("damaged schema-3 files: {opened} opened, {refused} refused, 0 panics");
}

const TEXT_CHUNKS: TableDefinition<u64, &[u8]> = TableDefinition::new("text_chunks");

/// Rows no live document claims (a schema-3 build's `verify` reported them as orphans) are
/// dropped by the conversion, not refused and not carried into schema 4 unconverted: here a
/// copy of a live document's chunks and vectors rows under an internal id no document has,
/// and a text-index row for one of its vector ids. The file opens with the same contents,
/// `verify` is clean (the text index, which held the orphan's row, was rebuilt), and no
/// search returns the orphan.
#[test]
fn orphan_rows_of_a_schema_3_file_are_dropped_by_the_conversion() {
    const ORPHAN: u64 = 999_999;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("old.redb");
    std::fs::copy(FIXTURE, &path).expect("copy the fixture");
    {
        let db = redb::Database::open(&path).expect("open with redb");
        let txn = db.begin_write().expect("write");
        {
            let mut chunks = txn.open_table(CHUNKS).expect("chunks");
            let mut vectors = txn.open_table(VECTORS).expect("vectors");
            let mut text = txn.open_table(TEXT_CHUNKS).expect("text");
            let (live, (chunk_row, vector_row)) = support::revision_rows(Path::new(FIXTURE))
                .into_iter()
                .next()
                .expect("a live document");
            chunks
                .insert(ORPHAN, chunk_row.as_slice())
                .expect("orphan chunks row");
            vectors
                .insert(ORPHAN, vector_row.as_slice())
                .expect("orphan vectors row");
            let slot = support::vectors_row_slots(&vector_row)[0];
            let live_text = text
                .get((live << 24) | u64::from(slot))
                .expect("get")
                .expect("the live chunk's text row")
                .value()
                .to_vec();
            text.insert((ORPHAN << 24) | u64::from(slot), live_text.as_slice())
                .expect("orphan text row");
        }
        txn.commit().expect("commit");
    }
    let store = Store::open(&path, Options::default()).expect("the file converts");
    support::assert_same_contents_as_export(&store, EXPORT, "after converting a file with orphans");
    assert!(store.has_text_index(), "the text index is kept");
    assert_searches_find_converted_chunks(&store);
    drop(store);
    assert!(
        !support::revision_rows(&path).contains_key(&ORPHAN),
        "the orphan's rows were carried into schema 4"
    );
}
