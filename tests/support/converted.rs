//! What the conversions of the schema-3 and schema-4 fixtures share: reading a closed file's
//! rows, and the searches that must find the converted chunks (the two fixtures hold the
//! same documents: `tests/fixtures/schema3-README.md`).

use ratchetdb::{Hit, Options, SearchOptions, Store};
use redb::{ReadableDatabase, ReadableTable, TableDefinition};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// The rows of `table` in the closed file at `path` (read from a copy: the fixture is never
/// opened for writing).
pub fn table_rows<K>(path: &Path, table: TableDefinition<K, &[u8]>) -> Vec<(u64, Vec<u8>)>
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

/// The little-endian u32 at `at` of `bytes`, as a `usize`.
pub fn u32_at(bytes: &[u8], at: usize) -> usize {
    u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes")) as usize
}

/// Checks that every hit is a live chunk of the exported documents: its document, version,
/// generation, position, text and metadata.
pub fn assert_resolved(hits: &[Hit], documents: &Value, what: &str) {
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
pub fn keys(hits: &[Hit]) -> Vec<(String, String, u32, String)> {
    let mut keys: Vec<_> = hits
        .iter()
        .map(|h| (h.source.clone(), h.id.clone(), h.position, h.text.clone()))
        .collect();
    keys.sort();
    keys
}

/// Vector searches (exact, by default, and over the loaded graph) and text searches find
/// the converted chunks of the fixture exported to `export`, and only live ones.
pub fn assert_searches_find_converted_chunks(store: &Store, export: &str) {
    let want = super::fixture_export(export);
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

/// redb's page, and the bytes a leaf needs beside a lone value under a u64 key.
pub const PAGE: usize = 4096;
pub const LEAF_OVERHEAD: usize = 16;

/// Checks that `rows` (`support::revision_rows`) have schema 3's to 5's vectors rows: each its
/// count, dimension (the fixtures' 32), slots and vectors, then the chunks row's last bytes,
/// only where the vectors take more than a page; returns how many rows carry such bytes.
pub fn assert_spilled_rows(rows: &BTreeMap<u64, (Vec<u8>, Vec<u8>)>) -> usize {
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

const CHUNKS: TableDefinition<u64, &[u8]> = TableDefinition::new("doc_chunks");
const VECTORS: TableDefinition<u64, &[u8]> = TableDefinition::new("doc_vectors");
const TEXT_CHUNKS: TableDefinition<u64, &[u8]> = TableDefinition::new("text_chunks");

/// Rows no live document claims (the old build's `verify` reported them as orphans) are
/// dropped by the conversion of the file `fixture` (exported to `export`), not refused and
/// not carried into schema 5 unconverted: here a copy of a live document's chunks and
/// vectors rows under an internal id no document has, and a text-index row for one of its
/// vector ids. The file opens with the same contents, `verify` is clean (the text index,
/// which held the orphan's row, was rebuilt), and no search returns the orphan.
pub fn assert_orphan_rows_are_dropped(fixture: &str, export: &str) {
    const ORPHAN: u64 = 999_999;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("old.redb");
    std::fs::copy(fixture, &path).expect("copy the fixture");
    {
        let db = redb::Database::open(&path).expect("open with redb");
        let txn = db.begin_write().expect("write");
        {
            let mut chunks = txn.open_table(CHUNKS).expect("chunks");
            let mut vectors = txn.open_table(VECTORS).expect("vectors");
            let mut text = txn.open_table(TEXT_CHUNKS).expect("text");
            let (live, (chunk_row, vector_row)) = super::revision_rows(Path::new(fixture))
                .into_iter()
                .next()
                .expect("a live document");
            chunks
                .insert(ORPHAN, chunk_row.as_slice())
                .expect("orphan chunks row");
            vectors
                .insert(ORPHAN, vector_row.as_slice())
                .expect("orphan vectors row");
            let slot = super::vectors_row_slots(&vector_row)[0];
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
    super::assert_same_contents_as_export(&store, export, "after converting a file with orphans");
    assert!(store.has_text_index(), "the text index is kept");
    assert_searches_find_converted_chunks(&store, export);
    drop(store);
    assert!(
        !super::revision_rows(&path).contains_key(&ORPHAN),
        "the orphan's rows were carried into schema 5"
    );
}

const CHANGELOG: TableDefinition<u64, &[u8]> = TableDefinition::new("changelog");
const INDEX_SNAPSHOT: TableDefinition<u32, &[u8]> = TableDefinition::new("index_snapshot");

/// Where the vectors of a vectors row (schema 3 to 5) end: after its count, dimension, slots
/// and vectors; what follows is the chunks row's tail.
pub fn vectors_end(vectors_row: &[u8]) -> usize {
    8 + u32_at(vectors_row, 0) * 4 * (1 + u32_at(vectors_row, 4))
}

/// A fixture converted by [`convert_keeping_ids`]: the converted file, the original kept
/// beside it, and both files' revision rows (`super::revision_rows`).
pub struct Converted {
    pub dir: tempfile::TempDir,
    pub path: std::path::PathBuf,
    pub backup: std::path::PathBuf,
    pub old_rows: BTreeMap<u64, (Vec<u8>, Vec<u8>)>,
    pub new_rows: BTreeMap<u64, (Vec<u8>, Vec<u8>)>,
}

/// Opens a copy of `fixture` (schema `from`, 3 or 4, with a text index, a changelog and a
/// graph snapshot of format `snapshot_format`; exported to `export`) with this build, and
/// checks what a conversion that keeps vector ids keeps: every document (the export), the
/// text index, the graph snapshot loaded (not rebuilt: a store of 132 vectors builds none of
/// its own, and the snapshot's rows are byte for byte the fixture's after the index settled),
/// searches that find the converted chunks, the file stamped schema 8 with each document row
/// the old one holding the first 16 bytes of its content hash, the changelog byte for
/// byte, the original kept as `<file>.schema<from>-backup` with its rows, no `doc_keys`
/// table, every revision's rows under the same internal id and its vectors bit for bit.
/// The chunks rows are left to the caller (they differ by schema).
pub fn convert_keeping_ids(
    fixture: &str,
    export: &str,
    from: u64,
    snapshot_format: usize,
) -> Converted {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("old.redb");
    std::fs::copy(fixture, &path).expect("copy the fixture");
    let old_rows = super::revision_rows(&path);
    // The fixture's live documents with vectors over a page, "long" and "meta", carry
    // chunk bytes in their vectors rows.
    let spilled = assert_spilled_rows(&old_rows);
    assert!(spilled >= 2, "only {spilled} rows carry chunk bytes");
    let old_graph = table_rows(&path, INDEX_SNAPSHOT);
    assert!(
        !old_graph.is_empty(),
        "the fixture carries a graph snapshot"
    );
    assert_eq!(
        u32_at(&old_graph[0].1, 8),
        snapshot_format,
        "the fixture's snapshot format"
    );

    let store = Store::open(&path, Options::default()).expect("the fixture opens");
    assert!(store.has_text_index(), "the text index is kept");
    super::assert_same_contents_as_export(&store, export, "after the conversion");
    assert!(
        store.wait_for_index(std::time::Duration::from_secs(60)),
        "the index settles"
    );
    let info = store.index_info();
    assert!(
        info.graph_ready && info.persisted_points > 0 && info.live_vectors == 132,
        "{info:?}"
    );
    assert_searches_find_converted_chunks(&store, export);
    drop(store);
    assert_eq!(
        super::schema_version(&path),
        10,
        "the file is stamped schema 10"
    );
    // Each document row is the old one with the first 16 bytes of its content hash.
    super::assert_docs_rows_are_schema_6(&path, export);
    let old_docs = super::doc_rows(Path::new(fixture));
    for (key, new) in super::doc_rows(&path) {
        let old: super::DocRowV5 = super::decode_row("old document row", &old_docs[&key]);
        let row: super::DocRowV6 = super::decode_row("document row", &new);
        assert_eq!(row.content_key[..], old.content_hash[..16], "{key:?}");
        assert_eq!(
            (
                row.internal_id,
                row.version_kind,
                row.version,
                row.generation
            ),
            (
                old.internal_id,
                old.version_kind,
                old.version,
                old.generation
            ),
            "{key:?}"
        );
        assert_eq!(
            (row.chunk_count, row.deleted, &row.meta, row.next_slot),
            (old.chunk_count, old.deleted, &old.meta, old.next_slot),
            "{key:?}"
        );
        assert_eq!(
            new.len() + 16,
            old_docs[&key].len(),
            "{key:?}: the row's length"
        );
    }

    // The changelog and the graph snapshot (addressed by vector ids, which did not change)
    // are kept whole.
    let changelog = table_rows(&path, CHANGELOG);
    assert_eq!(changelog, table_rows(Path::new(fixture), CHANGELOG));
    assert!(!changelog.is_empty());
    assert_eq!(
        table_rows(&path, INDEX_SNAPSHOT),
        old_graph,
        "the graph snapshot"
    );

    // The original is kept beside it, with the old build's rows.
    let backup = dir.path().join(format!("old.redb.schema{from}-backup"));
    assert_eq!(super::schema_version(&backup), from, "the backup's schema");
    assert_eq!(
        super::revision_rows(&backup),
        old_rows,
        "the backup holds the original rows"
    );
    // The rows stay under the same internal ids (the vector ids name them), the vectors bit
    // for bit.
    let new_rows = super::revision_rows(&path);
    assert_eq!(
        new_rows.keys().collect::<Vec<_>>(),
        old_rows.keys().collect::<Vec<_>>()
    );
    assert!(
        !super::table_names(&path).contains(&"doc_keys".to_string()),
        "the converted file keeps no doc_keys table"
    );
    for (id, (_, old_vectors)) in &old_rows {
        let end = vectors_end(old_vectors);
        assert_eq!(
            &new_rows[id].1[..end],
            &old_vectors[..end],
            "document {id}: the vectors"
        );
    }
    Converted {
        dir,
        path,
        backup,
        old_rows,
        new_rows,
    }
}

/// The guard decides against the converted rows of the fixture at `path`
/// (`super::revise_converted_fixture`), and the new revision is what both searches find of
/// "long" now; the converted content of "b" (version 5, one chunk "only") decides equal and
/// newer versions by its content: the same content at version 5 is a duplicate, other
/// content a conflict, the same content at version 6 unchanged; `verify` is clean, and the
/// file reopens verified.
pub fn assert_converted_fixture_revises(path: &Path) {
    use ratchetdb::{Chunk, Document, Outcome, SkipReason, Version};
    let store = Store::open(path, Options::default()).expect("reopen the converted file");
    super::revise_converted_fixture(&store);
    // The fixture's vector of "b" (`schema3-README.md`'s `v(5)`); vectors are not content.
    let v5: Vec<f32> = (0..32u32)
        .map(|i| ((5 * 31 + i * 7) % 17) as f32 - 8.0 + 0.5)
        .collect();
    let b = |version: u64, text: &str| {
        Document::new("notes", "b", Version::number(version))
            .with_chunk(Chunk::new(text, v5.clone()))
    };
    let outcome = store.upsert(b(5, "only")).expect("redelivery of b");
    assert_eq!(
        outcome.skip_reason(),
        Some(SkipReason::Duplicate),
        "{outcome:?}"
    );
    let outcome = store.upsert(b(5, "other")).expect("another b at version 5");
    assert_eq!(
        outcome.skip_reason(),
        Some(SkipReason::Conflict),
        "{outcome:?}"
    );
    let outcome = store.upsert(b(6, "only")).expect("b at version 6");
    assert!(matches!(outcome, Outcome::Unchanged { .. }), "{outcome:?}");
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
    super::reopen_verified(path);
}

/// Opening the file `fixture` (exported to `export`) is one transaction: each of its
/// writes, syncs and length changes is failed in turn (`super::every_failed_conversion_reopens`),
/// and whatever the durable image then is, it opens with the fixture's contents.
pub fn assert_failed_conversions_reopen_whole(fixture: &str, export: &str) {
    let image = std::fs::read(fixture).expect("read the fixture");
    let (calls, converted_after_failure) =
        super::every_failed_conversion_reopens(&image, |store, when| {
            super::assert_same_contents_as_export(store, export, when)
        });
    println!("conversion: {calls} I/O calls x 2 modes failed in turn, each image reopened whole ({converted_after_failure} opens succeeded despite the fault)");
}

/// The file `fixture` damaged by 400 flipped bits (from `seed`), each copy opened with the
/// page checksums verified: it converts, or is refused with a typed error, never a panic.
pub fn assert_damaged_files_convert_or_are_refused(fixture: &str, seed: u64, what: &str) {
    let image = std::fs::read(fixture).expect("read the fixture");
    let (opened, refused) = super::flipped_bits_never_panic(&image, seed, 400);
    println!("damaged {what} files: {opened} opened, {refused} refused, 0 panics");
}
