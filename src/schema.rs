//! The file format: every table, its key and its value encoding.
//!
//! Rows are encoded with bincode (standard configuration, serde) except vectors, which are raw
//! little-endian bytes behind a fixed header. Every decode returns a [`Corruption`] on bad
//! bytes; nothing here panics on the file's contents.

use crate::error::Corruption;
use crate::guard::{ContentHash, SkipReason, Stored};
use crate::version::{Version, VersionKind};
use redb::TableDefinition;
use serde::{de::DeserializeOwned, Deserialize, Serialize};

/// The schema version this build writes and the newest it reads.
pub(crate) const SCHEMA_VERSION: u32 = 1;

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
/// (internal doc id, position) -> [`ChunkRow`].
pub(crate) const CHUNKS: TableDefinition<(u64, u32), &[u8]> = TableDefinition::new("chunks");
/// vector id -> [`VectorRow`] bytes: owner (doc, position) and the raw f32 vector.
pub(crate) const VECTORS: TableDefinition<u64, &[u8]> = TableDefinition::new("vectors");
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

/// Names in the `meta` table.
pub(crate) mod meta_key {
    pub const FORMAT: &str = "format";
    pub const SCHEMA_VERSION: &str = "schema_version";
    pub const DIMENSION: &str = "dimension";
    pub const METRIC: &str = "metric";
    pub const MODEL: &str = "model";
    /// The commit sequence the persisted graph snapshot was taken at (u64 LE).
    pub const INDEX_SNAPSHOT_SEQ: &str = "index_snapshot_seq";
}

/// Names of the sequences in the `counters` table.
pub(crate) mod seq_key {
    pub const NEXT_DOC: &str = "seq.next_doc";
    pub const NEXT_GENERATION: &str = "seq.next_generation";
    pub const NEXT_VECTOR: &str = "seq.next_vector";
    pub const NEXT_SKIP: &str = "seq.next_skip";
    pub const COMMIT: &str = "seq.commit";
    pub const TICKET_HIGH_WATER: &str = "seq.ticket_high_water";
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
}

impl DocRow {
    pub fn version(&self) -> Result<Version, Corruption> {
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

    pub fn stored(&self) -> Result<Stored, Corruption> {
        Ok(Stored {
            version: self.version()?,
            deleted: self.deleted,
            content_hash: self.content_hash,
        })
    }
}

/// A chunk's row.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct ChunkRow {
    pub generation: u64,
    pub text_hash: ContentHash,
    pub vector_id: u64,
    pub text: String,
    /// Canonical JSON of the chunk metadata.
    pub meta: String,
}

/// [`ChunkRow`] by reference, for encoding without copying the text: the same fields in the
/// same order, so the bytes are identical (a unit test holds the two together).
#[derive(Serialize)]
pub(crate) struct ChunkRowRef<'a> {
    pub generation: u64,
    pub text_hash: &'a ContentHash,
    pub vector_id: u64,
    pub text: &'a str,
    pub meta: &'a str,
}

/// A vector's row: `owner_doc u64 LE | position u32 LE | f32 LE * dimension`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct VectorRow {
    pub owner_doc: u64,
    pub position: u32,
    pub vector: Vec<f32>,
}

const VECTOR_HEADER: usize = 12;

impl VectorRow {
    pub fn encode(owner_doc: u64, position: u32, vector: &[f32]) -> Vec<u8> {
        let mut bytes = vec![0u8; VECTOR_HEADER + vector.len() * 4];
        bytes[0..8].copy_from_slice(&owner_doc.to_le_bytes());
        bytes[8..12].copy_from_slice(&position.to_le_bytes());
        // Fixed-size chunks into a preallocated buffer: compiles to a plain copy on
        // little-endian targets (pushing four bytes at a time did not).
        for (out, x) in bytes[VECTOR_HEADER..].chunks_exact_mut(4).zip(vector) {
            out.copy_from_slice(&x.to_le_bytes());
        }
        bytes
    }

    /// Decodes the owner only (cheap: no vector copy).
    pub fn decode_owner(bytes: &[u8]) -> Result<(u64, u32), Corruption> {
        if bytes.len() < VECTOR_HEADER || !(bytes.len() - VECTOR_HEADER).is_multiple_of(4) {
            return Err(Corruption::new(
                "vector row",
                format!(
                    "{} bytes is not a 12-byte header plus whole f32s",
                    bytes.len()
                ),
            ));
        }
        let mut doc = [0u8; 8];
        doc.copy_from_slice(&bytes[0..8]);
        let mut pos = [0u8; 4];
        pos.copy_from_slice(&bytes[8..12]);
        Ok((u64::from_le_bytes(doc), u32::from_le_bytes(pos)))
    }

    pub fn decode(bytes: &[u8]) -> Result<VectorRow, Corruption> {
        let (owner_doc, position) = VectorRow::decode_owner(bytes)?;
        let vector = bytes[VECTOR_HEADER..]
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        Ok(VectorRow {
            owner_doc,
            position,
            vector,
        })
    }

    /// The raw vector bytes (for comparing two vectors without decoding them).
    pub fn vector_bytes(bytes: &[u8]) -> &[u8] {
        bytes.get(VECTOR_HEADER..).unwrap_or(&[])
    }
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
    pub fn reason(&self) -> Result<SkipReason, Corruption> {
        SkipReason::from_byte(self.reason).ok_or_else(|| {
            Corruption::new("skip log row", format!("unknown reason {}", self.reason))
        })
    }

    pub fn versions(&self) -> Result<(Version, Version), Corruption> {
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
        };
        let bytes = encode(&doc);
        assert_eq!(decode::<DocRow>("doc", &bytes).ok(), Some(doc));
        let vector = VectorRow::encode(3, 4, &[1.0, -2.5, 0.0]);
        let row = VectorRow::decode(&vector).ok();
        assert_eq!(
            row,
            Some(VectorRow {
                owner_doc: 3,
                position: 4,
                vector: vec![1.0, -2.5, 0.0]
            })
        );
    }

    #[test]
    fn chunk_row_ref_encodes_like_chunk_row() {
        let row = ChunkRow {
            generation: 9,
            text_hash: [3; 32],
            vector_id: 77,
            text: "héllo".into(),
            meta: "{}".into(),
        };
        let by_ref = ChunkRowRef {
            generation: row.generation,
            text_hash: &row.text_hash,
            vector_id: row.vector_id,
            text: &row.text,
            meta: &row.meta,
        };
        assert_eq!(encode(&row), encode(&by_ref));
    }

    #[test]
    fn bad_bytes_are_corruption_not_panics() {
        for len in 0..40 {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 37 + 11) as u8).collect();
            let _ = decode::<DocRow>("doc", &bytes);
            let _ = decode::<ChunkRow>("chunk", &bytes);
            let _ = VectorRow::decode(&bytes);
        }
        assert!(VectorRow::decode(&[0; 13]).is_err());
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
