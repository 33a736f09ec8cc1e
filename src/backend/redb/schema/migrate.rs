//! Converting an older file to this build's schema, in one write transaction on open.
//!
//! Schema 1 stored a row per chunk (`chunks`, keyed by internal id and position) and a row
//! per vector (`vectors`, keyed by a global vector id, each row naming its owner). Schema 2
//! stores each live revision as one chunks row and one vectors row under the document's
//! internal id. Schema 3 keeps those two rows, with the vectors row's dimension in its
//! header and the last bytes of the encoded chunks row moved to the end of the vectors row,
//! into the slack of its pages. Schema 4 puts the document's version and key and each
//! chunk's vector slot in the chunks row, so a search hit resolves from that row alone, and
//! drops the `doc_keys` table (internal id -> key), which the chunks row replaces. Schema 5
//! drops each chunk's 32-byte text hash from the chunks row: a revision matches its chunks
//! to the stored ones by their texts, and the document's content hash (which hashes each
//! chunk's text) is unchanged. Schema 6 (`schema/`) keeps the first 16 bytes of that content
//! hash in the document row, what the guard compares; the whole hash is computed from the
//! rows where it is shown.
//!
//! A schema-1 file is converted straight to schema 6. The conversion keeps every document
//! row, version, generation, content hash, chunk text and metadata, every vector bit for
//! bit, and every counter, listing and skip-log row; only vector ids change (slot =
//! position), so the changelog and any persisted graph snapshot, both addressed by the old
//! ids, are dropped: the index is rebuilt from the rows as on any open.
//!
//! A schema-2, -3 or -4 file keeps everything, vector ids, changelog, text index and graph
//! snapshot included: only the two rows of each revision and the document rows are
//! rewritten. A schema-5 file has only its document rows rewritten.
//!
//! Schema 7 adds the vector spaces (`spaces`, `space_vectors`, `space_changelog`): a
//! schema-6 file gains the three tables, empty, and nothing else changes ([`schema_6`]); the
//! older schemas are converted as before and gain them too.
//!
//! Schema 8 adds the coded layout of a vectors row (`vector_code.rs`): a schema-7 file is
//! only stamped ([`schema_7`]), its raw rows read as they are, and a read-only open reads it
//! unconverted.
//!
//! Schema 9 compresses chunk texts with the store's FSST table (`text_code.rs`): a schema-8
//! file is only stamped ([`schema_8`]), its raw texts read as they are; so is a schema-7
//! one.
//!
//! Schema 10 compresses the text index's terms with the same table (`text/row.rs`): a
//! schema-9 file is only stamped ([`schema_9`]), its raw terms read as they are; so are
//! schema-7 and -8 ones.
//!
//! Invariant: a conversion commits whole or not at all, so a crash during it leaves the old
//! file as it was, to be converted on the next open.

use crate::backend::redb::schema::{
    self, meta_key, text_key, ChunkEntry, ChunksRow, DocRow, RevisionRows, VectorData, VectorsRow,
    CHANGELOG, CHUNKS, COUNTERS, DOCS, INDEX_SNAPSHOT, LEGACY_TEXT_TOTALS, META, VECTORS,
};
use crate::error::Corruption;
use crate::policy::guard::{content_key, ContentHash};
use crate::types::counters::name as counter;
use redb::{ReadableTable, Table, TableDefinition, WriteTransaction};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, HashMap};

/// Schema 1's chunk rows: (internal id, position) -> [`ChunkRowV1`].
const CHUNKS_V1: TableDefinition<(u64, u32), &[u8]> = TableDefinition::new("chunks");
/// Schema 1's vector rows: vector id -> `owner u64 | position u32 | f32 * dimension`.
const VECTORS_V1: TableDefinition<u64, &[u8]> = TableDefinition::new("vectors");
/// Schemas 1 to 3's reverse entries: internal id -> (source, id). Schema 4's chunks row
/// names its document, and the table is dropped.
const DOC_KEYS_V3: TableDefinition<u64, (&str, &str)> = TableDefinition::new("doc_keys");
/// Schema 1's vector id sequence, gone in schema 2 (ids are internal id and slot).
const NEXT_VECTOR_V1: &str = "seq.next_vector";

/// Schema 1's document row: schema 2's without `next_slot`.
#[derive(Serialize, Deserialize)]
struct DocRowV1 {
    internal_id: u64,
    version_kind: u8,
    version: u64,
    generation: u64,
    chunk_count: u32,
    content_hash: ContentHash,
    deleted: bool,
    meta: String,
}

/// Schemas 2 to 5's document row: schema 6's with the whole 32-byte content hash.
#[derive(Serialize, Deserialize)]
struct DocRowV5 {
    internal_id: u64,
    version_kind: u8,
    version: u64,
    generation: u64,
    chunk_count: u32,
    content_hash: ContentHash,
    deleted: bool,
    meta: String,
    next_slot: u32,
}

/// Schema 1's chunk row.
#[derive(Serialize, Deserialize)]
struct ChunkRowV1 {
    generation: u64,
    text_hash: ContentHash,
    vector_id: u64,
    text: String,
    meta: String,
}

/// Why a conversion failed: the file's storage, or its schema-1 contents.
#[derive(Debug)]
pub(crate) enum MigrationError {
    Storage(redb::Error),
    Corrupted(Corruption),
    /// A document schema 1 held that this schema cannot.
    TooLarge(String),
}

impl<E: Into<redb::Error>> From<E> for MigrationError {
    fn from(error: E) -> MigrationError {
        MigrationError::Storage(error.into())
    }
}

fn corrupted(what: &str, detail: impl Into<String>) -> MigrationError {
    MigrationError::Corrupted(Corruption::new(what, detail))
}

/// Writes a revision's chunks row (encoded) and vectors in this schema's two rows, split
/// by [`RevisionRows`] as a write splits them.
fn put_revision(
    chunks: &mut Table<'_, u64, &'static [u8]>,
    vectors: &mut Table<'_, u64, &'static [u8]>,
    id: u64,
    chunks_bytes: &[u8],
    entries: &[(u32, VectorData<'_>)],
) -> Result<(), MigrationError> {
    let rows = RevisionRows::split(chunks_bytes, entries);
    let row = rows
        .vectors_row(entries)
        .map_err(MigrationError::Corrupted)?;
    vectors.insert(id, row.as_slice())?;
    chunks.insert(id, rows.chunks_row())?;
    Ok(())
}

/// Records this build's schema version in the file, with the vector spaces' tables (schema
/// 7: empty, the file's vectors being its default space).
fn stamp_schema_version(txn: &WriteTransaction) -> Result<(), MigrationError> {
    txn.open_table(schema::SPACES)?;
    txn.open_table(schema::SPACE_VECTORS)?;
    txn.open_table(schema::SPACE_CHANGELOG)?;
    txn.open_table(META)?.insert(
        meta_key::SCHEMA_VERSION,
        u64::from(schema::SCHEMA_VERSION).to_le_bytes().as_slice(),
    )?;
    Ok(())
}

/// Converts a schema-6 file to this schema inside `txn` (the caller commits): only the
/// vector spaces' tables are added, empty; every row of the file is kept as it is, and its
/// vectors are the `default` space, active.
pub(crate) fn schema_6(txn: &WriteTransaction) -> Result<(), MigrationError> {
    stamp_schema_version(txn)
}

/// Converts a schema-7 file to this schema inside `txn` (the caller commits): the version is
/// stamped and nothing else changes. Schema 8 adds a coded layout of the vectors row, which
/// an older build cannot read; the file's raw rows stay as they are, and revisions written
/// from now on may be coded.
pub(crate) fn schema_7(txn: &WriteTransaction) -> Result<(), MigrationError> {
    stamp_schema_version(txn)
}

/// Converts a schema-8 file to this schema inside `txn` (the caller commits): the version is
/// stamped and nothing else changes. Schema 9 compresses chunk texts, which an older build
/// cannot read; the file's raw texts stay as they are, and revisions written from now on
/// may be compressed.
pub(crate) fn schema_8(txn: &WriteTransaction) -> Result<(), MigrationError> {
    stamp_schema_version(txn)
}

/// Converts a schema-9 file to this schema inside `txn` (the caller commits): the version is
/// stamped and nothing else changes. Schema 10 compresses the text index's terms, which an
/// older build cannot read; the file's raw terms stay as they are, and segments written from
/// now on may be compressed.
pub(crate) fn schema_9(txn: &WriteTransaction) -> Result<(), MigrationError> {
    stamp_schema_version(txn)
}

/// Converts a schema-1 file to this schema inside `txn` (the caller commits), every vector
/// of `dimension` (the store's, if recorded). Returns the number of documents converted.
pub(crate) fn schema_1(
    txn: &WriteTransaction,
    dimension: Option<usize>,
) -> Result<u64, MigrationError> {
    let chunks_v1 = txn.open_table(CHUNKS_V1)?;
    let vectors_v1 = txn.open_table(VECTORS_V1)?;
    let mut docs = txn.open_table(DOCS)?;
    let mut chunks = txn.open_table(CHUNKS)?;
    let mut vectors = txn.open_table(VECTORS)?;

    let (mut live_documents, mut tombstones, mut live_chunks) = (0u64, 0u64, 0u64);
    let mut keys: Vec<(String, String)> = Vec::new();
    for entry in docs.iter()? {
        let (key, _) = entry?;
        let (source, id) = key.value();
        keys.push((source.to_string(), id.to_string()));
    }
    for (source, id) in &keys {
        let bytes = match docs.get((source.as_str(), id.as_str()))? {
            Some(bytes) => bytes.value().to_vec(),
            None => continue,
        };
        let old: DocRowV1 =
            schema::decode("schema-1 document row", &bytes).map_err(MigrationError::Corrupted)?;
        let count = old.chunk_count;
        if !old.deleted {
            if u64::from(count) > schema::SLOTS_PER_DOC {
                return Err(MigrationError::TooLarge(format!(
                    "{source}/{id} has {count} chunks; schema 2 holds at most {}",
                    schema::SLOTS_PER_DOC
                )));
            }
            let revision = read_revision_v1(
                &chunks_v1,
                &vectors_v1,
                (source.as_str(), id.as_str()),
                &old,
            )?;
            put_revision_v1(
                &mut chunks,
                &mut vectors,
                (source.as_str(), id.as_str()),
                old.internal_id,
                revision,
                dimension,
            )?;
            live_documents += 1;
            live_chunks += u64::from(count);
        }
        if old.deleted {
            tombstones += 1;
        }
        let row = DocRow {
            internal_id: old.internal_id,
            version_kind: old.version_kind,
            version: old.version,
            generation: old.generation,
            chunk_count: count,
            content_key: content_key(&old.content_hash),
            deleted: old.deleted,
            meta: old.meta,
            next_slot: if old.deleted { 0 } else { count },
        };
        docs.insert(
            (source.as_str(), id.as_str()),
            schema::encode(&row).as_slice(),
        )?;
    }
    drop((chunks_v1, vectors_v1));
    txn.delete_table(CHUNKS_V1)?;
    txn.delete_table(VECTORS_V1)?;
    txn.delete_table(DOC_KEYS_V3)?;
    txn.open_table(CHANGELOG)?.retain(|_, _| false)?;
    txn.open_table(INDEX_SNAPSHOT)?.retain(|_, _| false)?;
    txn.open_table(META)?.remove(meta_key::INDEX_SNAPSHOT_SEQ)?;
    stamp_schema_version(txn)?;
    let mut counters = txn.open_table(COUNTERS)?;
    counters.remove(NEXT_VECTOR_V1)?;
    // The gauges describe the rows: recounted, so rows schema 1 left behind (orphans its
    // `verify` reported, which the conversion does not carry over) leave no drift.
    for (gauge, value) in [
        (counter::LIVE_DOCUMENTS, live_documents),
        (counter::LIVE_TOMBSTONES, tombstones),
        (counter::LIVE_CHUNKS, live_chunks),
        (counter::LIVE_VECTORS, live_chunks),
    ] {
        counters.insert(gauge, value)?;
    }
    Ok(keys.len() as u64)
}

/// A live schema-1 document's chunk rows and vectors, checked: every position present,
/// under the document's generation, each vector owned by its chunk.
fn read_revision_v1(
    chunks_v1: &Table<'_, (u64, u32), &'static [u8]>,
    vectors_v1: &Table<'_, u64, &'static [u8]>,
    (source, id): (&str, &str),
    old: &DocRowV1,
) -> Result<(ChunksRow, Vec<Vec<u8>>), MigrationError> {
    let count = old.chunk_count;
    // Not sized from the row alone: a damaged count must not allocate.
    let mut entries = Vec::with_capacity((count as usize).min(1024));
    let mut floats: Vec<Vec<u8>> = Vec::with_capacity((count as usize).min(1024));
    for position in 0..count {
        let Some(bytes) = chunks_v1.get((old.internal_id, position))? else {
            return Err(corrupted(
                "schema-1 chunk table",
                format!("{source}/{id} lacks chunk {position} of {count}"),
            ));
        };
        let chunk: ChunkRowV1 = schema::decode("schema-1 chunk row", bytes.value())
            .map_err(MigrationError::Corrupted)?;
        if chunk.generation != old.generation {
            return Err(corrupted(
                "schema-1 chunk row",
                format!("{source}/{id} chunk {position} has another generation"),
            ));
        }
        let Some(vector) = vectors_v1.get(chunk.vector_id)? else {
            return Err(corrupted(
                "schema-1 vector table",
                format!(
                    "{source}/{id} chunk {position}: vector {} is missing",
                    chunk.vector_id
                ),
            ));
        };
        let vector = vector.value();
        let owner = vector
            .get(..12)
            .map(|h| (&h[0..8], &h[8..12]))
            .map(|(d, p)| {
                (
                    u64::from_le_bytes([d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]]),
                    u32::from_le_bytes([p[0], p[1], p[2], p[3]]),
                )
            });
        if owner != Some((old.internal_id, position)) || vector.len() % 4 != 0 {
            return Err(corrupted(
                "schema-1 vector row",
                format!(
                    "vector {} does not belong to {source}/{id} chunk {position}",
                    chunk.vector_id
                ),
            ));
        }
        floats.push(vector[12..].to_vec());
        entries.push(ChunkEntry {
            // Slot = position (see `put_revision_v1`).
            slot: position,
            text: chunk.text,
            meta: chunk.meta,
        });
    }
    Ok((
        ChunksRow {
            generation: old.generation,
            version_kind: old.version_kind,
            version: old.version,
            source: source.to_string(),
            id: id.to_string(),
            chunks: entries,
        },
        floats,
    ))
}

/// Writes a live schema-1 document's revision (read by [`read_revision_v1`]) as this
/// schema's two rows, slot = position, after checking it fits one row and every vector has
/// the store's `dimension`.
fn put_revision_v1(
    chunks: &mut Table<'_, u64, &'static [u8]>,
    vectors: &mut Table<'_, u64, &'static [u8]>,
    (source, id): (&str, &str),
    internal_id: u64,
    (row, floats): (ChunksRow, Vec<Vec<u8>>),
    dimension: Option<usize>,
) -> Result<(), MigrationError> {
    // One row must stay readable (rows decode under `MAX_ROW_BYTES`): a document schema 1
    // held in many rows may not fit in one.
    let bytes = schema::encode_chunks_row(&row, None);
    let len = bytes.len();
    if len > schema::MAX_ROW_BYTES {
        return Err(MigrationError::TooLarge(format!(
            "{source}/{id} holds {len} bytes of chunk text and metadata; one row holds at most {}",
            schema::MAX_ROW_BYTES
        )));
    }
    let width = dimension.map_or_else(|| floats.first().map_or(0, Vec::len), |d| d * 4);
    if floats.iter().any(|f| f.len() != width || f.is_empty()) {
        return Err(corrupted(
            "schema-1 vector row",
            format!("{source}/{id} has a vector of another length than the store's dimension"),
        ));
    }
    // Slot = position: every vector gets a new id, and the old ids are gone with the
    // changelog and the graph snapshot.
    let slotted: Vec<(u32, VectorData<'_>)> = (0u32..)
        .zip(floats.iter().map(|f| VectorData::Raw(f)))
        .collect();
    put_revision(chunks, vectors, internal_id, &bytes, &slotted)
}

/// A schema-2 vectors row: `count u32 LE | slot u32 LE * count | f32 LE * dimension * count`
/// (the dimension is what the length leaves). Returns its slots and vectors' bytes.
fn parse_vectors_row_v2(bytes: &[u8]) -> Result<Vec<(u32, &[u8])>, Corruption> {
    let bad = |detail: String| Corruption::new("schema-2 vectors row", detail);
    let Some(head) = bytes.get(0..4) else {
        return Err(bad(format!(
            "{} bytes is shorter than its count",
            bytes.len()
        )));
    };
    let count = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize;
    let body = (bytes.len() - 4)
        .checked_sub(count.saturating_mul(4))
        .ok_or_else(|| bad(format!("{} bytes cannot hold {count} slots", bytes.len())))?;
    if count == 0 {
        return match body {
            0 => Ok(Vec::new()),
            _ => Err(bad(format!("{body} bytes after an empty row"))),
        };
    }
    if body == 0 || body % (count * 4) != 0 {
        return Err(bad(format!(
            "{body} bytes of vectors is not {count} whole equal-length f32 vectors"
        )));
    }
    let width = body / count;
    let (slots, floats) = bytes[4..].split_at(count * 4);
    Ok(slots
        .chunks_exact(4)
        .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
        .zip(floats.chunks_exact(width))
        .collect())
}

/// Schema 2's and 3's chunks row: schema 4's without the document's version and key and
/// without each chunk's slot.
#[derive(Serialize, Deserialize)]
struct ChunksRowV3 {
    generation: u64,
    chunks: Vec<ChunkEntryV3>,
}

/// A chunk of [`ChunksRowV3`].
#[derive(Serialize, Deserialize)]
struct ChunkEntryV3 {
    text_hash: ContentHash,
    text: String,
    meta: String,
}

/// Schema 4's chunks row: schema 5's with each chunk's text hash.
#[derive(Serialize, Deserialize)]
struct ChunksRowV4 {
    generation: u64,
    version_kind: u8,
    version: u64,
    source: String,
    id: String,
    chunks: Vec<ChunkEntryV4>,
}

/// A chunk of [`ChunksRowV4`].
#[derive(Serialize, Deserialize)]
struct ChunkEntryV4 {
    slot: u32,
    text_hash: ContentHash,
    text: String,
    meta: String,
}

/// An older chunks row's generation and its chunks' slots (schema 4 only), texts and
/// metadata.
struct OldChunks {
    generation: u64,
    chunks: Vec<(Option<u32>, String, String)>,
}

/// Decodes the chunks row of schema `from` (2 to 4).
fn decode_old_chunks(from: u32, bytes: &[u8]) -> Result<OldChunks, Corruption> {
    if from == 4 {
        let row: ChunksRowV4 = schema::decode("schema-4 chunks row", bytes)?;
        Ok(OldChunks {
            generation: row.generation,
            chunks: row
                .chunks
                .into_iter()
                .map(|c| (Some(c.slot), c.text, c.meta))
                .collect(),
        })
    } else {
        let row: ChunksRowV3 = schema::decode("chunks row", bytes)?;
        Ok(OldChunks {
            generation: row.generation,
            chunks: row
                .chunks
                .into_iter()
                .map(|c| (None, c.text, c.meta))
                .collect(),
        })
    }
}

/// What a conversion needs of a live document: its key, version and generation.
struct LiveDoc {
    source: String,
    id: String,
    version_kind: u8,
    version: u64,
    generation: u64,
}

/// Converts a schema-2 to -5 file (`from`) to this schema inside `txn` (the caller
/// commits): the revisions of a schema-2 to -4 file as [`revisions_to_schema_5`] says, then
/// every document row of them all as [`docs_to_schema_6`] says. Returns the number of
/// revisions converted (none from schema 5, whose revisions are this schema's).
pub(crate) fn schema_2_to_5(
    txn: &WriteTransaction,
    from: u32,
    dimension: Option<usize>,
) -> Result<u64, MigrationError> {
    let converted = if from <= 4 {
        revisions_to_schema_5(txn, from, dimension)?
    } else {
        0
    };
    docs_to_schema_6(txn, from)?;
    txn.delete_table(DOC_KEYS_V3)?;
    stamp_schema_version(txn)?;
    Ok(converted)
}

/// Rewrites every document row of a schema-`from` file (2 to 5) as schema 6's: the same row
/// with the first 16 bytes of its content hash (the guard's [`ContentKey`]) in place of the
/// whole hash, 16 bytes shorter.
///
/// [`ContentKey`]: crate::policy::guard::ContentKey
fn docs_to_schema_6(txn: &WriteTransaction, from: u32) -> Result<(), MigrationError> {
    let mut docs = txn.open_table(DOCS)?;
    let mut rows: Vec<((String, String), Vec<u8>)> = Vec::new();
    for entry in docs.iter()? {
        let (key, value) = entry?;
        let (source, id) = key.value();
        let old = decode_doc_row_v5(from, source, id, value.value())?;
        let row = DocRow {
            internal_id: old.internal_id,
            version_kind: old.version_kind,
            version: old.version,
            generation: old.generation,
            chunk_count: old.chunk_count,
            content_key: content_key(&old.content_hash),
            deleted: old.deleted,
            meta: old.meta,
            next_slot: old.next_slot,
        };
        rows.push(((source.to_string(), id.to_string()), schema::encode(&row)));
    }
    for ((source, id), bytes) in rows {
        docs.insert((source.as_str(), id.as_str()), bytes.as_slice())?;
    }
    Ok(())
}

/// A schema-`from` (2 to 5) document row, or the corruption naming it.
fn decode_doc_row_v5(
    from: u32,
    source: &str,
    id: &str,
    bytes: &[u8],
) -> Result<DocRowV5, MigrationError> {
    schema::decode("document row", bytes).map_err(|c| {
        corrupted(
            &format!("schema-{from} document row"),
            format!("{source}/{id}: {}", c.detail),
        )
    })
}

/// Converts the revisions of a schema-2, -3 or -4 file (`from`) to schema 5's inside `txn`.
/// Each live revision's chunks row gains its document's version and key and each
/// chunk's vector slot (schema 4), loses its chunks' text hashes (schema 5), and is split
/// again beside its vectors (schema 3's spill: a schema-2 vectors row also gains its
/// dimension). Every id, vector and byte of
/// content of a live document stays. The live documents are read from the document rows;
/// chunks and vectors rows no live document claims (orphans the old build's `verify`
/// reported) are dropped, as schema 1's conversion drops its orphans, and the text index,
/// which may have indexed them, is rebuilt by this open. A live document's pair of rows is
/// checked first (both present, vectors of the store's `dimension`, a chunks row that
/// decodes, one chunk per vector, the document's generation), so a file that is not what
/// it says is refused rather than rewritten. Returns the number of revisions converted.
fn revisions_to_schema_5(
    txn: &WriteTransaction,
    from: u32,
    dimension: Option<usize>,
) -> Result<u64, MigrationError> {
    let mut chunks = txn.open_table(CHUNKS)?;
    let mut vectors = txn.open_table(VECTORS)?;
    let what = format!("schema-{from} rows");
    let mut live: HashMap<u64, LiveDoc> = HashMap::new();
    for entry in txn.open_table(DOCS)?.iter()? {
        let (key, value) = entry?;
        let (source, id) = key.value();
        let row = decode_doc_row_v5(from, source, id, value.value())?;
        if !row.deleted {
            live.insert(
                row.internal_id,
                LiveDoc {
                    source: source.to_string(),
                    id: id.to_string(),
                    version_kind: row.version_kind,
                    version: row.version,
                    generation: row.generation,
                },
            );
        }
    }
    let mut ids: BTreeSet<u64> = BTreeSet::new();
    for entry in vectors.iter()? {
        ids.insert(entry?.0.value());
    }
    for entry in chunks.iter()? {
        ids.insert(entry?.0.value());
    }
    let (mut converted, mut dropped) = (0u64, 0u64);
    for &id in &ids {
        let Some(doc) = live.get(&id) else {
            vectors.remove(id)?;
            chunks.remove(id)?;
            dropped += 1;
            continue;
        };
        let bad = |detail: String| {
            corrupted(
                &what,
                format!("{}/{} (internal id {id}): {detail}", doc.source, doc.id),
            )
        };
        let Some(old) = vectors.get(id)?.map(|b| b.value().to_vec()) else {
            return Err(bad("the vectors row is missing".to_string()));
        };
        // The slots and vectors, and (schema 3) the row itself, which carries the tail of the
        // chunks row.
        let (parsed, row_v3) = if from == 2 {
            (parse_vectors_row_v2(&old).map_err(|c| bad(c.detail))?, None)
        } else {
            let row = VectorsRow::parse(&old).map_err(|c| bad(c.detail))?;
            // Schemas 3 and 4 wrote raw rows only: a coded one is a damaged row.
            let parsed = row.raw_entries().map_err(|c| bad(c.detail))?;
            (parsed, Some(row))
        };
        let width = parsed.first().map_or(0, |(_, bytes)| bytes.len());
        if let Some(dimension) = dimension.filter(|_| width > 0) {
            if width != dimension * 4 {
                return Err(bad(format!(
                    "vectors of {width} bytes where the store's dimension is {dimension}"
                )));
            }
        }
        let entries: Vec<(u32, VectorData<'_>)> = parsed
            .iter()
            .map(|(slot, bytes)| (*slot, VectorData::Raw(bytes)))
            .collect();
        let Some(head) = chunks.get(id)?.map(|b| b.value().to_vec()) else {
            return Err(bad("the chunks row is missing".to_string()));
        };
        let joined = match &row_v3 {
            Some(row) => schema::join_chunk_bytes(&head, row),
            None => head,
        };
        let old_row = decode_old_chunks(from, &joined).map_err(|c| bad(c.detail))?;
        if old_row.chunks.len() != entries.len() {
            return Err(bad(format!(
                "{} vectors beside a chunks row of {} chunks",
                entries.len(),
                old_row.chunks.len()
            )));
        }
        if let Some(position) = old_row
            .chunks
            .iter()
            .zip(&entries)
            .position(|((stored, _, _), (slot, _))| stored.is_some_and(|s| s != *slot))
        {
            return Err(bad(format!(
                "chunk {position}'s slot is not its vector's in the vectors row"
            )));
        }
        if old_row.generation != doc.generation {
            return Err(bad(format!(
                "a chunks row of generation {} under a document of generation {}",
                old_row.generation, doc.generation
            )));
        }
        let row = ChunksRow {
            generation: old_row.generation,
            version_kind: doc.version_kind,
            version: doc.version,
            source: doc.source.clone(),
            id: doc.id.clone(),
            chunks: old_row
                .chunks
                .into_iter()
                .zip(&entries)
                .map(|((_, text, meta), (slot, _))| ChunkEntry {
                    slot: *slot,
                    text,
                    meta,
                })
                .collect(),
        };
        let bytes = schema::encode_chunks_row(&row, None);
        let len = bytes.len();
        if len > schema::MAX_ROW_BYTES {
            return Err(MigrationError::TooLarge(format!(
                "{}/{} holds {len} bytes of chunk text and metadata; one row holds at most {}",
                row.source,
                row.id,
                schema::MAX_ROW_BYTES
            )));
        }
        put_revision(&mut chunks, &mut vectors, id, &bytes, &entries)?;
        converted += 1;
    }
    drop((chunks, vectors));
    if dropped > 0 {
        // The text index may hold the dropped rows' chunks: no longer covering the file's
        // commit, it is rebuilt by this open (`text::prepare_on_open`).
        txn.open_table(LEGACY_TEXT_TOTALS)?
            .remove(text_key::LEGACY_COMMIT)?;
    }
    Ok(converted)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::redb::schema::VectorsRow;

    /// A schema-2 vectors row of `slots`, each vector `floats` long.
    fn row_v2(slots: &[u32], floats: usize) -> Vec<u8> {
        let mut bytes = (slots.len() as u32).to_le_bytes().to_vec();
        for slot in slots {
            bytes.extend_from_slice(&slot.to_le_bytes());
        }
        for (i, _) in slots.iter().enumerate() {
            for f in 0..floats {
                bytes.extend_from_slice(&((i * 100 + f) as f32).to_le_bytes());
            }
        }
        bytes
    }

    #[test]
    fn a_schema_2_vectors_row_parses_into_its_slots_and_vectors() {
        let bytes = row_v2(&[4, 9], 3);
        let parsed = parse_vectors_row_v2(&bytes).ok();
        assert_eq!(
            parsed
                .as_ref()
                .map(|p| p.iter().map(|(s, v)| (*s, v.len())).collect()),
            Some(vec![(4, 12), (9, 12)])
        );
        assert_eq!(
            parsed.and_then(|p| p.get(1).map(|(_, v)| v.to_vec())),
            Some(bytes[4 + 8 + 12..].to_vec())
        );
        assert_eq!(parse_vectors_row_v2(&row_v2(&[], 0)).ok(), Some(Vec::new()));
    }

    #[test]
    fn a_damaged_schema_2_vectors_row_is_corruption_not_a_panic() {
        let good = row_v2(&[1, 2, 3], 4);
        // Every cut: an error, or (where what is left still divides into three vectors) a
        // row of shorter vectors, which the conversion's dimension check refuses; never a
        // panic.
        for len in 0..good.len() {
            if let Ok(parsed) = parse_vectors_row_v2(&good[..len]) {
                assert!(parsed.iter().all(|(_, v)| v.len() < 16), "{len}");
            }
        }
        for bad in [
            vec![],
            vec![1, 0, 0],
            vec![0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0],
            vec![0, 0, 0, 0, 1],
            vec![1, 0, 0, 0, 7, 0, 0, 0],
            vec![2, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 1, 2, 3, 4, 5, 6],
        ] {
            assert!(parse_vectors_row_v2(&bad).is_err(), "{bad:?}");
        }
        // A schema-3 row of one vector read as schema 2: its dimension reads as a slot and
        // its vector one float too long, which the conversion's dimension check refuses.
        let v3 = VectorsRow::encode(&[(0, VectorData::Floats(&[1.0, 2.0]))], &[]);
        let misread = v3.as_deref().map(parse_vectors_row_v2);
        assert!(
            matches!(misread, Ok(Ok(ref p)) if p.len() == 1 && p[0].1.len() == 12),
            "{misread:?}"
        );
    }
}
