//! The file format: every table, its key and its value encoding.
//!
//! Rows are encoded with bincode (standard configuration, serde) except vectors, which are raw
//! little-endian bytes behind a small header. Every decode returns a [`Corruption`] on bad
//! bytes; nothing here panics on the file's contents.
//!
//! A document's revision is three rows whatever its chunk count: its [`DocRow`], one
//! [`ChunksRow`] with every chunk's text in position order, and one vectors row with every
//! chunk's vector ([`VectorsRow`]). Fewer, larger rows are what redb writes fastest (the
//! `group_commit` bench measures the floor both ways). A vector's id is its document's
//! internal id and a per-document slot ([`vector_id`]): a slot is never reused within a
//! document, so an id names one vector for the life of the file, and the id alone says which
//! row holds it.
//!
//! redb gives a value larger than a page a run of pages of its own, a power of two long, so
//! a 12 KB vectors row takes 16 KiB. The encoded chunks row fills that slack: its last
//! [`spill_len`] bytes ride at the end of the vectors row and the rest is the chunks row
//! (schema 3). A document of eight 384-d chunks and 8 KB of text then writes 24 KiB of rows
//! instead of 32 KiB; a scan of the vectors still reads one row per document.

use crate::error::Corruption;
use crate::guard::{ContentHash, SkipReason, Stored};
use crate::version::{Version, VersionKind};
use redb::TableDefinition;
use serde::{de::DeserializeOwned, Deserialize, Serialize};

/// The schema version this build writes and the newest it reads.
pub(crate) const SCHEMA_VERSION: u32 = 3;

/// The marker stored under `meta["format"]`.
pub(crate) const FORMAT_MAGIC: &[u8] = b"ratchetdb";

/// name -> bytes: format marker, schema version, dimension, metric, model.
pub(crate) const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");
/// name -> u64: the sequences (internal doc id, generation, vector id, ticket high water,
/// commit sequence) and the persisted counters.
pub(crate) const COUNTERS: TableDefinition<&str, u64> = TableDefinition::new("counters");
/// (source, doc id) -> [`DocRow`].
pub(crate) const DOCS: TableDefinition<(&str, &str), &[u8]> = TableDefinition::new("docs");
/// internal doc id -> (source, doc id): resolves a chunk or vector back to its document.
pub(crate) const DOC_KEYS: TableDefinition<u64, (&str, &str)> = TableDefinition::new("doc_keys");
/// internal doc id -> the live revision's encoded [`ChunksRow`] but for the bytes its
/// vectors row carries ([`split_chunks`], [`decode_chunks`]).
pub(crate) const CHUNKS: TableDefinition<u64, &[u8]> = TableDefinition::new("doc_chunks");
/// internal doc id -> [`VectorsRow`] bytes: the live revision's vectors, in position order,
/// then the last bytes of its encoded chunks row.
pub(crate) const VECTORS: TableDefinition<u64, &[u8]> = TableDefinition::new("doc_vectors");
/// commit sequence -> [`ChangelogRow`]: vector ids added and removed by that commit.
pub(crate) const CHANGELOG: TableDefinition<u64, &[u8]> = TableDefinition::new("changelog");
/// skip sequence -> [`SkipRow`]: the most recent refusals, bounded.
pub(crate) const SKIP_LOG: TableDefinition<u64, &[u8]> = TableDefinition::new("skip_log");
/// (source, listing version value) -> [`ListingRow`].
pub(crate) const LISTINGS: TableDefinition<(&str, u64), &[u8]> = TableDefinition::new("listings");
/// (source, listing version value, doc id) -> (): the ids a listing says exist.
pub(crate) const LISTING_MEMBERS: TableDefinition<(&str, u64, &str), ()> =
    TableDefinition::new("listing_members");

/// part number -> bytes: the persisted ANN graph (see `index::snapshot`), written whole in
/// one transaction and checksummed, so it is either complete or ignored.
pub(crate) const INDEX_SNAPSHOT: TableDefinition<u32, &[u8]> =
    TableDefinition::new("index_snapshot");

/// vector id of a live chunk -> [`TextRow`]: the chunk's terms with their counts, and its
/// length: the full-text index's postings, chunk by chunk (`text/`). A chunk is named by
/// its vector id, which never changes while its text stays (see [`vector_id`]), and a
/// document's chunks are neighbours, so indexing or removing a revision touches one leaf or
/// two, not one per distinct term. Searches invert these rows in memory (`text/memory.rs`).
pub(crate) const TEXT_CHUNKS: TableDefinition<u64, &[u8]> = TableDefinition::new("text_chunks");
/// name -> u64: the text index's totals ([`text_key`]).
pub(crate) const TEXT_TOTALS: TableDefinition<&str, u64> = TableDefinition::new("text_totals");

/// A row of [`TEXT_CHUNKS`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct TextRow {
    /// The chunk's length in terms.
    pub len: u32,
    /// Each distinct term and its count, sorted by term.
    pub terms: Vec<(String, u32)>,
}

/// Names in the `text_totals` table.
pub(crate) mod text_key {
    /// Live chunks indexed.
    pub(crate) const CHUNKS: &str = "chunks";
    /// The sum of their lengths in terms.
    pub(crate) const TERMS: &str = "terms";
    /// The commit sequence (`seq.commit`) the text index was last brought up to: a build
    /// that maintains the index writes it in every transaction that changes chunks, so a
    /// file another build wrote since shows a different commit and is re-indexed on open.
    pub(crate) const COMMIT: &str = "commit";
}

/// Names in the `meta` table.
pub(crate) mod meta_key {
    pub(crate) const FORMAT: &str = "format";
    pub(crate) const SCHEMA_VERSION: &str = "schema_version";
    pub(crate) const DIMENSION: &str = "dimension";
    pub(crate) const METRIC: &str = "metric";
    pub(crate) const MODEL: &str = "model";
    /// The commit sequence the persisted graph snapshot was taken at (u64 LE).
    pub(crate) const INDEX_SNAPSHOT_SEQ: &str = "index_snapshot_seq";
    /// JSON of the `TextOptions` the text index was built with; absent: no text index.
    pub(crate) const TEXT_ANALYZER: &str = "text_analyzer";
}

/// Names of the sequences in the `counters` table.
pub(crate) mod seq_key {
    pub(crate) const NEXT_DOC: &str = "seq.next_doc";
    pub(crate) const NEXT_GENERATION: &str = "seq.next_generation";
    pub(crate) const NEXT_SKIP: &str = "seq.next_skip";
    pub(crate) const COMMIT: &str = "seq.commit";
    pub(crate) const TICKET_HIGH_WATER: &str = "seq.ticket_high_water";
}

/// The largest row a decode will believe in: a corrupt length prefix cannot make a decode
/// allocate more than this.
pub(crate) const MAX_ROW_BYTES: usize = 64 * 1024 * 1024;

fn config() -> impl bincode::config::Config {
    bincode::config::standard().with_limit::<MAX_ROW_BYTES>()
}

pub(crate) fn encode<T: Serialize>(row: &T) -> Vec<u8> {
    // Encoding plain structs of integers, strings and byte arrays into a Vec cannot fail.
    bincode::serde::encode_to_vec(row, config()).unwrap_or_default()
}

/// The length of `row`'s encoding (counted, not written).
pub(crate) fn encoded_len<T: Serialize>(row: &T) -> usize {
    let mut size = bincode::enc::write::SizeWriter::default();
    // Counting cannot fail for the same reason encoding cannot.
    let _ = bincode::serde::encode_into_writer(row, &mut size, config());
    size.bytes_written
}

pub(crate) fn decode<T: DeserializeOwned>(what: &str, bytes: &[u8]) -> Result<T, Corruption> {
    match bincode::serde::decode_from_slice::<T, _>(bytes, config()) {
        Ok((row, used)) if used == bytes.len() => Ok(row),
        Ok((_, used)) => Err(Corruption::new(
            what,
            format!("{} trailing bytes after the row", bytes.len() - used),
        )),
        Err(e) => Err(Corruption::new(what, e.to_string())),
    }
}

/// A document's row.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct DocRow {
    pub internal_id: u64,
    pub version_kind: u8,
    pub version: u64,
    /// The generation stamped on every chunk of the current revision (0 for tombstones).
    pub generation: u64,
    pub chunk_count: u32,
    pub content_hash: ContentHash,
    pub deleted: bool,
    /// Canonical JSON of the document metadata.
    pub meta: String,
    /// The next vector slot of this document: slots are never reused, so a vector id is
    /// never reused (kept across tombstones; see [`vector_id`]).
    pub next_slot: u32,
}

impl DocRow {
    pub(crate) fn version(&self) -> Result<Version, Corruption> {
        let kind = VersionKind::from_byte(self.version_kind).ok_or_else(|| {
            Corruption::new(
                "document row",
                format!("unknown version kind {}", self.version_kind),
            )
        })?;
        Ok(Version {
            kind,
            value: self.version,
        })
    }

    pub(crate) fn stored(&self) -> Result<Stored, Corruption> {
        Ok(Stored {
            version: self.version()?,
            deleted: self.deleted,
            content_hash: self.content_hash,
        })
    }
}

/// Bits of a vector id that hold the slot within its document.
pub(crate) const SLOT_BITS: u32 = 24;
/// Slots per document: a document whose revisions have used them all is given a new
/// internal id (and so a fresh slot space) by its next revision.
pub(crate) const SLOTS_PER_DOC: u64 = 1 << SLOT_BITS;
/// The largest internal document id a vector id can carry.
pub(crate) const MAX_INTERNAL_ID: u64 = (u64::MAX >> SLOT_BITS) - 1;

/// The vector id of `slot` of internal document `doc` (`doc <= MAX_INTERNAL_ID`).
pub(crate) fn vector_id(doc: u64, slot: u32) -> u64 {
    (doc << SLOT_BITS) | (u64::from(slot) & (SLOTS_PER_DOC - 1))
}

/// The internal document id and slot a vector id names.
pub(crate) fn split_vector_id(id: u64) -> (u64, u32) {
    // The mask keeps the value below 2^24, so the cast cannot truncate.
    (id >> SLOT_BITS, (id & (SLOTS_PER_DOC - 1)) as u32)
}

/// The chunks of a document's live revision, in position order, under one generation stamp.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct ChunksRow {
    /// The generation stamped on the revision's chunks; equals the document row's.
    pub generation: u64,
    pub chunks: Vec<ChunkEntry>,
}

/// One chunk in a [`ChunksRow`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct ChunkEntry {
    pub text_hash: ContentHash,
    pub text: String,
    /// Canonical JSON of the chunk metadata.
    pub meta: String,
}

/// [`ChunksRow`] by reference, for encoding without copying the texts: the same fields in
/// the same order, so the bytes are identical (a unit test holds the two together).
#[derive(Serialize)]
pub(crate) struct ChunksRowRef<'a> {
    pub generation: u64,
    pub chunks: Vec<ChunkEntryRef<'a>>,
}

/// [`ChunkEntry`] by reference.
#[derive(Serialize)]
pub(crate) struct ChunkEntryRef<'a> {
    pub text_hash: &'a ContentHash,
    pub text: &'a str,
    pub meta: &'a str,
}

/// Where a vector's floats come from when a vectors row is encoded.
#[derive(Clone, Copy, Debug)]
pub(crate) enum VectorData<'a> {
    /// An incoming vector.
    Floats(&'a [f32]),
    /// A stored vector's bytes (little-endian f32s), copied as they are.
    Raw(&'a [u8]),
}

impl VectorData<'_> {
    fn byte_len(&self) -> usize {
        match self {
            VectorData::Floats(v) => v.len() * 4,
            VectorData::Raw(b) => b.len(),
        }
    }
}

/// redb's page size (fixed at 4 KiB outside redb's own tests).
pub(crate) const REDB_PAGE: usize = 4096;

/// The bytes a leaf page needs beside a value alone in it under a u64 key: a 4-byte header,
/// the value's end offset and the key.
const LEAF_OVERHEAD: usize = 16;

/// Room a spill leaves free at the end of a vectors row's page run: the leaf's own
/// [`LEAF_OVERHEAD`] and a margin.
const LEAF_MARGIN: usize = 64;

/// How many of a chunks row's `chunks_len` encoded bytes ride at the end of a vectors row
/// whose vectors take `vectors_len` bytes ([`VectorsRow::encoded_len`]).
///
/// A vectors row that fits a page shares its leaf with other rows and carries nothing: a
/// spill would not save a page, and scans of the vectors would read text. A larger one is
/// alone in a leaf that is a power-of-two run of pages, and its slack up to the end of that
/// run (less [`LEAF_MARGIN`]) is free: the spill never makes the run longer.
pub(crate) fn spill_len(vectors_len: usize, chunks_len: usize) -> usize {
    let alone = vectors_len.saturating_add(LEAF_OVERHEAD);
    if alone <= REDB_PAGE {
        return 0;
    }
    let run = alone.checked_next_power_of_two().unwrap_or(alone);
    run.saturating_sub(vectors_len.saturating_add(LEAF_MARGIN))
        .min(chunks_len)
}

/// A document's chunks row from its chunks row's bytes and the bytes its vectors row
/// carries (the encoded row's last [`spill_len`] bytes).
pub(crate) fn decode_chunks(rest: &[u8], spill: &[u8]) -> Result<ChunksRow, Corruption> {
    if spill.is_empty() {
        return decode("chunks row", rest);
    }
    let mut bytes = Vec::with_capacity(rest.len() + spill.len());
    bytes.extend_from_slice(rest);
    bytes.extend_from_slice(spill);
    decode("chunks row", &bytes)
}

/// Splits an encoded chunks row into what the chunks row keeps and what rides at the end of
/// a vectors row of `vectors_len` bytes. The spill is the encoded row's tail: a revision
/// that changes only the document's metadata changes only the row's head (its generation),
/// so its vectors row, spill included, stays as it was and is not rewritten.
pub(crate) fn split_chunks(chunks_bytes: &[u8], vectors_len: usize) -> (&[u8], &[u8]) {
    let spill = spill_len(vectors_len, chunks_bytes.len());
    chunks_bytes.split_at(chunks_bytes.len() - spill)
}

/// A document's vectors row, read in place: `count u32 LE | dimension u32 LE | slot u32 LE *
/// count | f32 LE * dimension * count | spill`, vectors in position order, then the last
/// [`spill_len`] bytes of the document's encoded chunks row.
#[derive(Clone, Copy, Debug)]
pub(crate) struct VectorsRow<'a> {
    bytes: &'a [u8],
    count: usize,
    dimension: usize,
}

/// The bytes before a vectors row's slots: its count and dimension.
const VECTORS_HEAD: usize = 8;

impl<'a> VectorsRow<'a> {
    /// Checks the layout: a count, a dimension, that many slots and whole vectors of that
    /// dimension (a dimension of 0 only for an empty row); what follows is the spill.
    pub(crate) fn parse(bytes: &'a [u8]) -> Result<VectorsRow<'a>, Corruption> {
        let bad = |detail: String| Corruption::new("vectors row", detail);
        let Some(head) = bytes.get(0..VECTORS_HEAD) else {
            return Err(bad(format!(
                "{} bytes is shorter than its count and dimension",
                bytes.len()
            )));
        };
        let count = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize;
        let dimension = u32::from_le_bytes([head[4], head[5], head[6], head[7]]) as usize;
        if (count == 0) != (dimension == 0) {
            return Err(bad(format!("{count} vectors of dimension {dimension}")));
        }
        let fits = dimension
            .checked_add(1)
            .and_then(|per| per.checked_mul(4))
            .and_then(|per| per.checked_mul(count))
            .and_then(|n| n.checked_add(VECTORS_HEAD))
            .is_some_and(|n| n <= bytes.len());
        if !fits {
            return Err(bad(format!(
                "{} bytes cannot hold {count} vectors of dimension {dimension}",
                bytes.len()
            )));
        }
        Ok(VectorsRow {
            bytes,
            count,
            dimension,
        })
    }

    /// Encodes `(slot, vector)` pairs in position order (every vector has the same, nonzero
    /// length), then `spill`.
    pub(crate) fn encode(
        entries: &[(u32, VectorData<'_>)],
        spill: &[u8],
    ) -> Result<Vec<u8>, Corruption> {
        let mut bytes = vec![0u8; VectorsRow::encoded_len(entries) + spill.len()];
        VectorsRow::encode_into(entries, spill, &mut bytes)?;
        Ok(bytes)
    }

    /// The length of the row's vectors (its count, dimension, slots and floats): the row's
    /// length without its spill.
    pub(crate) fn encoded_len(entries: &[(u32, VectorData<'_>)]) -> usize {
        let vector_bytes = entries.first().map_or(0, |(_, v)| v.byte_len());
        VECTORS_HEAD + entries.len() * (4 + vector_bytes)
    }

    /// Encodes into `bytes`, which is exactly [`VectorsRow::encoded_len`] plus `spill` long
    /// (a value reserved in place in a redb page).
    pub(crate) fn encode_into(
        entries: &[(u32, VectorData<'_>)],
        spill: &[u8],
        bytes: &mut [u8],
    ) -> Result<(), Corruption> {
        let vector_bytes = entries.first().map_or(0, |(_, v)| v.byte_len());
        let head = VECTORS_HEAD + entries.len() * 4;
        let vectors_len = VectorsRow::encoded_len(entries);
        if bytes.len() != vectors_len + spill.len()
            || entries
                .iter()
                .any(|(_, v)| v.byte_len() != vector_bytes || v.byte_len() % 4 != 0)
            || (!entries.is_empty() && vector_bytes == 0)
        {
            return Err(Corruption::new(
                "vectors row",
                "empty vectors, vectors of different lengths, or a buffer of another size",
            ));
        }
        bytes[0..4].copy_from_slice(&(entries.len() as u32).to_le_bytes());
        bytes[4..8].copy_from_slice(&((vector_bytes / 4) as u32).to_le_bytes());
        for (i, (slot, vector)) in entries.iter().enumerate() {
            bytes[VECTORS_HEAD + i * 4..VECTORS_HEAD + 4 + i * 4]
                .copy_from_slice(&slot.to_le_bytes());
            let out = &mut bytes[head + i * vector_bytes..head + (i + 1) * vector_bytes];
            match vector {
                // Fixed-size chunks into a preallocated buffer: compiles to a plain copy on
                // little-endian targets.
                VectorData::Floats(v) => {
                    for (o, x) in out.chunks_exact_mut(4).zip(v.iter()) {
                        o.copy_from_slice(&x.to_le_bytes());
                    }
                }
                VectorData::Raw(b) => out.copy_from_slice(b),
            }
        }
        bytes[vectors_len..].copy_from_slice(spill);
        Ok(())
    }

    /// The last bytes of the document's encoded chunks row, carried after the vectors.
    pub(crate) fn spill(&self) -> &'a [u8] {
        let end = VECTORS_HEAD + self.count * (4 + self.dimension * 4);
        self.bytes.get(end..).unwrap_or_default()
    }

    /// The number of vectors (the revision's chunk count).
    pub(crate) fn len(&self) -> usize {
        self.count
    }

    /// The vectors' dimension (0 for an empty row).
    pub(crate) fn dimension(&self) -> usize {
        self.dimension
    }

    /// The slot of the vector at `position`.
    pub(crate) fn slot(&self, position: usize) -> Option<u32> {
        if position >= self.count {
            return None;
        }
        let at = VECTORS_HEAD + position * 4;
        let b = self.bytes.get(at..at + 4)?;
        Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// The slots in position order.
    pub(crate) fn slots(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.count).filter_map(|p| self.slot(p))
    }

    /// The position holding `slot`, if any.
    pub(crate) fn position_of(&self, slot: u32) -> Option<usize> {
        (0..self.count).find(|&p| self.slot(p) == Some(slot))
    }

    /// The raw little-endian bytes of the vector at `position`.
    pub(crate) fn vector_bytes(&self, position: usize) -> Option<&'a [u8]> {
        if position >= self.count {
            return None;
        }
        let width = self.dimension * 4;
        let at = VECTORS_HEAD + self.count * 4 + position * width;
        self.bytes.get(at..at + width)
    }

    /// The vector at `position`, decoded.
    pub(crate) fn vector(&self, position: usize) -> Option<Vec<f32>> {
        Some(decode_floats(self.vector_bytes(position)?))
    }

    /// Whether the vector at `position` is bit-identical to `vector`.
    pub(crate) fn same_vector(&self, position: usize, vector: &[f32]) -> bool {
        self.vector_bytes(position).is_some_and(|stored| {
            stored.len() == vector.len() * 4
                && stored
                    .chunks_exact(4)
                    .zip(vector)
                    .all(|(b, x)| b == x.to_le_bytes())
        })
    }
}

/// Little-endian f32 bytes to floats (a trailing partial float is ignored).
pub(crate) fn decode_floats(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// What one commit did to the set of vectors, for replaying into the derived index.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct ChangelogRow {
    pub added: Vec<u64>,
    pub removed: Vec<u64>,
}

/// One refused write, kept in the bounded skip log.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct SkipRow {
    pub source: String,
    pub id: String,
    pub reason: u8,
    pub stored_kind: u8,
    pub stored_value: u64,
    pub incoming_kind: u8,
    pub incoming_value: u64,
}

impl SkipRow {
    pub(crate) fn reason(&self) -> Result<SkipReason, Corruption> {
        SkipReason::from_byte(self.reason).ok_or_else(|| {
            Corruption::new("skip log row", format!("unknown reason {}", self.reason))
        })
    }

    pub(crate) fn versions(&self) -> Result<(Version, Version), Corruption> {
        let kind = |b: u8| {
            VersionKind::from_byte(b)
                .ok_or_else(|| Corruption::new("skip log row", format!("unknown version kind {b}")))
        };
        Ok((
            Version {
                kind: kind(self.stored_kind)?,
                value: self.stored_value,
            },
            Version {
                kind: kind(self.incoming_kind)?,
                value: self.incoming_value,
            },
        ))
    }
}

/// A recorded listing of one source.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct ListingRow {
    pub version_kind: u8,
    pub present_count: u64,
    /// blake3 over the sorted present ids, to tell a redelivery from a conflicting listing.
    pub members_hash: ContentHash,
}

/// Canonical JSON: object keys sorted at every depth, whatever map type serde_json was built
/// with (so the content hash does not depend on a cargo feature of a dependency).
pub(crate) fn canonical_json(value: &serde_json::Value) -> String {
    fn write(value: &serde_json::Value, out: &mut String) {
        match value {
            serde_json::Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                out.push('{');
                for (i, key) in keys.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&serde_json::Value::String(key.clone()).to_string());
                    out.push(':');
                    if let Some(v) = map.get(key) {
                        write(v, out);
                    }
                }
                out.push('}');
            }
            serde_json::Value::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write(item, out);
                }
                out.push(']');
            }
            scalar => out.push_str(&scalar.to_string()),
        }
    }
    let mut out = String::new();
    write(value, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_round_trip() {
        let doc = DocRow {
            internal_id: 7,
            version_kind: 1,
            version: 1_700_000_000_000_000,
            generation: 42,
            chunk_count: 3,
            content_hash: [9; 32],
            deleted: false,
            meta: "{\"a\":1}".into(),
            next_slot: 11,
        };
        let bytes = encode(&doc);
        assert_eq!(decode::<DocRow>("doc", &bytes).ok(), Some(doc));
        let raw: Vec<u8> = [4.0f32, 5.0, 6.0]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let bytes = VectorsRow::encode(
            &[
                (9, VectorData::Floats(&[1.0, -2.5, 0.0])),
                (2, VectorData::Raw(&raw)),
            ],
            b"spilled",
        )
        .unwrap_or_default();
        let row = VectorsRow::parse(&bytes).ok();
        let row = row.as_ref();
        assert_eq!(row.map(VectorsRow::len), Some(2));
        assert_eq!(row.map(VectorsRow::dimension), Some(3));
        assert_eq!(row.map(|r| r.slots().collect::<Vec<_>>()), Some(vec![9, 2]));
        assert_eq!(row.and_then(|r| r.position_of(2)), Some(1));
        assert_eq!(row.and_then(|r| r.position_of(3)), None);
        assert_eq!(row.and_then(|r| r.vector(0)), Some(vec![1.0, -2.5, 0.0]));
        assert_eq!(row.and_then(|r| r.vector(1)), Some(vec![4.0, 5.0, 6.0]));
        assert_eq!(row.and_then(|r| r.vector(2)), None);
        assert!(row.is_some_and(|r| r.same_vector(1, &[4.0, 5.0, 6.0])));
        assert!(row.is_some_and(|r| !r.same_vector(1, &[4.0, 5.0])));
        assert_eq!(row.map(VectorsRow::spill), Some(&b"spilled"[..]));
        let empty = VectorsRow::encode(&[], &[]).unwrap_or_default();
        // Vectors of different lengths, or of none, are refused.
        assert!(VectorsRow::encode(
            &[
                (0, VectorData::Floats(&[1.0])),
                (1, VectorData::Floats(&[]))
            ],
            &[]
        )
        .is_err());
        assert!(VectorsRow::encode(&[(0, VectorData::Floats(&[]))], &[]).is_err());
        assert_eq!(VectorsRow::parse(&empty).map(|r| r.len()).ok(), Some(0));
        assert_eq!(
            VectorsRow::parse(&empty).map(|r| r.spill().len()).ok(),
            Some(0)
        );
    }

    #[test]
    fn a_chunks_row_split_across_two_rows_decodes_whole() {
        let row = ChunksRow {
            generation: 3,
            chunks: vec![ChunkEntry {
                text_hash: [1; 32],
                text: "x".repeat(5000),
                meta: "{}".into(),
            }],
        };
        let bytes = encode(&row);
        for at in [0, 1, 40, bytes.len() - 1, bytes.len()] {
            let (rest, spill) = bytes.split_at(at);
            assert_eq!(decode_chunks(rest, spill).ok().as_ref(), Some(&row), "{at}");
        }
        // A row with its spill missing is a corruption, not a panic.
        assert!(decode_chunks(&bytes[..100], &[]).is_err());
        // The split keeps the tail for the vectors row.
        let (rest, spill) = split_chunks(&bytes, 12_328);
        assert_eq!(spill.len(), spill_len(12_328, bytes.len()));
        assert!(!spill.is_empty() && bytes.ends_with(spill) && bytes.starts_with(rest));
    }

    #[test]
    fn the_spill_fills_the_vectors_rows_page_run_and_no_more() {
        // A row that fits a page carries nothing.
        assert_eq!(spill_len(100, 5000), 0);
        assert_eq!(spill_len(REDB_PAGE - LEAF_OVERHEAD, 5000), 0);
        // The page run a lone value of `len` bytes takes.
        let run = |len: usize| (len + LEAF_OVERHEAD).next_power_of_two().max(REDB_PAGE);
        for vectors in 0..70_000 {
            let spill = spill_len(vectors, usize::MAX);
            assert_eq!(run(vectors + spill), run(vectors), "{vectors}");
            if spill > 0 {
                assert_eq!(vectors + spill + LEAF_MARGIN, run(vectors), "{vectors}");
            }
        }
        // Eight 384-d vectors: 12,328 bytes in a 16 KiB run.
        let vectors = VectorsRow::encoded_len(&vec![(0, VectorData::Raw(&[0; 1536])); 8]);
        assert_eq!(vectors, 8 + 8 * (4 + 1536));
        let spill = spill_len(vectors, 8_400);
        assert_eq!(vectors + spill + LEAF_MARGIN, 4 * REDB_PAGE);
        // Never more than the chunks row has.
        assert_eq!(spill_len(vectors, 10), 10);
        assert_eq!(spill_len(usize::MAX - 10, 10), 0);
    }

    #[test]
    fn vector_ids_carry_document_and_slot() {
        for (doc, slot) in [
            (0, 0),
            (1, 0),
            (7, 5),
            (MAX_INTERNAL_ID, (SLOTS_PER_DOC - 1) as u32),
        ] {
            assert_eq!(split_vector_id(vector_id(doc, slot)), (doc, slot));
        }
        assert_ne!(vector_id(1, 0), vector_id(0, 1));
    }

    #[test]
    fn chunks_row_ref_encodes_like_chunks_row() {
        let row = ChunksRow {
            generation: 9,
            chunks: vec![ChunkEntry {
                text_hash: [3; 32],
                text: "héllo".into(),
                meta: "{}".into(),
            }],
        };
        let by_ref = ChunksRowRef {
            generation: row.generation,
            chunks: row
                .chunks
                .iter()
                .map(|c| ChunkEntryRef {
                    text_hash: &c.text_hash,
                    text: &c.text,
                    meta: &c.meta,
                })
                .collect(),
        };
        assert_eq!(encode(&row), encode(&by_ref));
    }

    #[test]
    fn bad_bytes_are_corruption_not_panics() {
        for len in 0..40 {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 37 + 11) as u8).collect();
            let _ = decode::<DocRow>("doc", &bytes);
            let _ = decode::<ChunksRow>("chunks", &bytes);
            let _ = VectorsRow::parse(&bytes);
        }
        // A count of 1 with 3 bytes of vector; a count larger than the row; bytes after an
        // empty row.
        assert!(VectorsRow::parse(&[1, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3]).is_err());
        assert!(VectorsRow::parse(&[0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]).is_err());
        assert!(VectorsRow::parse(&[0, 0, 0, 0, 1]).is_err());
        assert!(VectorsRow::parse(&[1, 0, 0, 0, 0, 0, 0, 0]).is_err());
        assert!(decode::<DocRow>("doc", &[]).is_err());
    }

    #[test]
    fn canonical_json_sorts_keys() {
        let value: serde_json::Value =
            serde_json::from_str(r#"{"b":[1,{"z":1,"a":2}],"a":"x\"y"}"#).unwrap_or_default();
        assert_eq!(
            canonical_json(&value),
            r#"{"a":"x\"y","b":[1,{"a":2,"z":1}]}"#
        );
    }
}
