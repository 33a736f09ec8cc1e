//! The rows stored with bincode (document, chunks, changelog, skip-log and listing rows),
//! their codec, and vector ids.

use super::text_code::{decode_text, TextCodec};
use crate::error::Corruption;
use crate::policy::guard::{ContentHash, ContentKey, Stored};
use crate::types::SkipReason;
use crate::types::{Version, VersionKind};
use serde::{de::DeserializeOwned, Deserialize, Serialize};
use std::fmt::Debug;

/// The largest row a decode will believe in: a corrupt length prefix cannot make a decode
/// allocate more than this.
pub(crate) const MAX_ROW_BYTES: usize = 64 * 1024 * 1024;

fn config() -> impl bincode::config::Config {
    bincode::config::standard().with_limit::<MAX_ROW_BYTES>()
}

/// Encodes a row. Debug builds check that the bytes decode back to the same row.
pub(crate) fn encode<T>(row: &T) -> Vec<u8>
where
    T: Serialize + DeserializeOwned + PartialEq + Debug,
{
    let bytes = encode_unchecked(row);
    debug_assert_eq!(
        decode::<T>("row being written", &bytes).as_ref().ok(),
        Some(row),
        "an encoded row does not decode back to itself"
    );
    bytes
}

/// Encodes a chunks row given by reference, each text as `codec` stores it (compressed
/// where that is shorter; raw without a codec: schema 8's bytes). Debug builds check that the
/// bytes decode to the [`ChunksRow`] holding the same fields.
pub(crate) fn encode_chunks(row: &ChunksRowRef<'_>, codec: Option<&TextCodec>) -> Vec<u8> {
    let wire = ChunksWireRef {
        generation: row.generation,
        version_kind: row.version_kind,
        version: row.version,
        source: row.source,
        id: row.id,
        chunks: row
            .chunks
            .iter()
            .map(|c| ChunkWireRef {
                slot: c.slot,
                text: TextBytes(match codec {
                    Some(codec) => codec.compress(c.text),
                    None => std::borrow::Cow::Borrowed(c.text.as_bytes()),
                }),
                meta: c.meta,
            })
            .collect(),
    };
    let bytes = encode_unchecked(&wire);
    // A row over the decode limit is refused by its writer (a conversion's `TooLarge`).
    debug_assert!(
        bytes.len() > MAX_ROW_BYTES
            || decode_chunks_row("chunks row being written", &bytes, codec).is_ok_and(|back| {
                back.generation == row.generation
                    && (back.version_kind, back.version) == (row.version_kind, row.version)
                    && (back.source.as_str(), back.id.as_str()) == (row.source, row.id)
                    && back.chunks.len() == row.chunks.len()
                    && back
                        .chunks
                        .iter()
                        .zip(&row.chunks)
                        .all(|(b, r)| b.slot == r.slot && b.text == r.text && b.meta == r.meta)
            }),
        "an encoded chunks row does not decode back to its chunks"
    );
    bytes
}

/// [`encode_chunks`] of an owned row.
pub(crate) fn encode_chunks_row(row: &ChunksRow, codec: Option<&TextCodec>) -> Vec<u8> {
    encode_chunks(&row.by_ref(), codec)
}

/// Decodes a chunks row (which must fill `bytes` exactly), its texts through `codec` (the
/// store's table; `None` where the file has none).
pub(crate) fn decode_chunks_row(
    what: &str,
    bytes: &[u8],
    codec: Option<&TextCodec>,
) -> Result<ChunksRow, Corruption> {
    let wire: ChunksWire = decode(what, bytes)?;
    let mut chunks = Vec::with_capacity(wire.chunks.len());
    for chunk in wire.chunks {
        // A raw text's bytes move into the String (checked once, without a copy); a
        // compressed one is decoded.
        let text = match String::from_utf8(chunk.text.0.into_owned()) {
            Ok(text) => text,
            Err(e) => decode_text(e.as_bytes(), codec)?.into_owned(),
        };
        chunks.push(ChunkEntry {
            slot: chunk.slot,
            text,
            meta: chunk.meta,
        });
    }
    Ok(ChunksRow {
        generation: wire.generation,
        version_kind: wire.version_kind,
        version: wire.version,
        source: wire.source,
        id: wire.id,
        chunks,
    })
}

fn encode_unchecked<T: Serialize>(row: &T) -> Vec<u8> {
    // Encoding plain structs of integers, strings and byte arrays into a Vec cannot fail.
    let bytes = bincode::serde::encode_to_vec(row, config()).unwrap_or_default();
    debug_assert_eq!(
        bytes.len(),
        encoded_len(row),
        "a row's length and its encoding"
    );
    bytes
}

/// The length of `row`'s encoding (counted, not written).
pub(crate) fn encoded_len<T: Serialize>(row: &T) -> usize {
    let mut size = bincode::enc::write::SizeWriter::default();
    // Counting cannot fail for the same reason encoding cannot.
    let _ = bincode::serde::encode_into_writer(row, &mut size, config());
    size.bytes_written
}

/// Decodes a row that must fill `bytes` exactly; `what` names the row in the error. Debug
/// builds check that the row re-encodes into no more bytes than it was read from (bincode's
/// varints may be read from a longer form than they are written in, never a shorter one).
pub(crate) fn decode<T>(what: &str, bytes: &[u8]) -> Result<T, Corruption>
where
    T: Serialize + DeserializeOwned,
{
    match bincode::serde::decode_from_slice::<T, _>(bytes, config()) {
        Ok((row, used)) if used == bytes.len() => {
            debug_assert!(
                encoded_len(&row) <= bytes.len(),
                "a decoded {what} re-encodes longer than it was read"
            );
            Ok(row)
        }
        Ok((_, used)) => Err(Corruption::new(
            what,
            format!("{} trailing bytes after the row", bytes.len() - used),
        )),
        Err(e) => Err(Corruption::new(what, decode_error_text(e))),
    }
}

/// What a bincode decode error says: a message of the row's own decoder (a compressed text
/// that does not decode) as it is, not wrapped in bincode's variant name.
fn decode_error_text(e: bincode::error::DecodeError) -> String {
    match e {
        bincode::error::DecodeError::OtherString(message) => message,
        e => e.to_string(),
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
    /// The first 16 bytes of the content hash, what the guard compares (schema 6; the
    /// whole hash is computed from the rows where it is shown).
    pub content_key: ContentKey,
    pub deleted: bool,
    /// Canonical JSON of the document metadata.
    pub meta: String,
    /// The next vector slot of this document: slots are never reused, so a vector id is
    /// never reused (kept across tombstones; see [`vector_id`]).
    pub next_slot: u32,
}

impl DocRow {
    pub(crate) fn version(&self) -> Result<Version, Corruption> {
        stored_version("document row", self.version_kind, self.version)
    }

    pub(crate) fn stored(&self) -> Result<Stored, Corruption> {
        Ok(Stored {
            version: self.version()?,
            deleted: self.deleted,
            content_key: self.content_key,
        })
    }
}

/// The version a row stores as its kind byte and value; an unknown kind is a corruption of
/// the row `what`.
fn stored_version(what: &str, kind: u8, value: u64) -> Result<Version, Corruption> {
    let kind = VersionKind::from_byte(kind)
        .ok_or_else(|| Corruption::new(what, format!("unknown version kind {kind}")))?;
    Ok(Version { kind, value })
}

/// Bits of a vector id that hold the slot within its document.
pub(crate) const SLOT_BITS: u32 = 24;
/// Slots per document: a document whose revisions have used them all is given a new
/// internal id (and so a fresh slot space) by its next revision.
pub(crate) const SLOTS_PER_DOC: u64 = 1 << SLOT_BITS;
// A revision's chunks each take a slot: the policy's ceiling of chunks per document.
const _: () = assert!(SLOTS_PER_DOC as usize == crate::policy::prepare::MAX_CHUNKS);
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

/// The chunks of a document's live revision, in position order, under one generation stamp,
/// with what a search hit reports of its document (schema 4): so a hit is resolved from this
/// row alone, not from the document row as well. The key also names the document of an
/// internal id (schema 3 kept a `doc_keys` table for that). Schema 5 dropped each chunk's
/// 32-byte text hash: a revision matches its chunks to the stored ones by their texts.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ChunksRow {
    /// The generation stamped on the revision's chunks; equals the document row's.
    pub generation: u64,
    /// The revision's version kind ([`VersionKind::to_byte`]); equals the document row's.
    pub version_kind: u8,
    /// The revision's version value; equals the document row's.
    pub version: u64,
    /// The document's source, as its key in the docs table.
    pub source: String,
    /// The document's id, as its key in the docs table.
    pub id: String,
    pub chunks: Vec<ChunkEntry>,
}

/// One chunk in a [`ChunksRow`].
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ChunkEntry {
    /// The slot of the chunk's vector: the vectors row's slot at the same position.
    pub slot: u32,
    pub text: String,
    /// Canonical JSON of the chunk metadata.
    pub meta: String,
}

/// [`ChunksRow`] by reference, for encoding without copying the texts ([`encode_chunks`]).
pub(crate) struct ChunksRowRef<'a> {
    pub generation: u64,
    pub version_kind: u8,
    pub version: u64,
    pub source: &'a str,
    pub id: &'a str,
    pub chunks: Vec<ChunkEntryRef<'a>>,
}

/// [`ChunkEntry`] by reference.
pub(crate) struct ChunkEntryRef<'a> {
    pub slot: u32,
    pub text: &'a str,
    pub meta: &'a str,
}

impl ChunksRow {
    /// The row by reference, for [`encode_chunks`].
    pub(crate) fn by_ref(&self) -> ChunksRowRef<'_> {
        ChunksRowRef {
            generation: self.generation,
            version_kind: self.version_kind,
            version: self.version,
            source: &self.source,
            id: &self.id,
            chunks: self
                .chunks
                .iter()
                .map(|c| ChunkEntryRef {
                    slot: c.slot,
                    text: &c.text,
                    meta: &c.meta,
                })
                .collect(),
        }
    }
}

/// A chunks row as encoded: its fields in this order, each text as stored (raw UTF-8, or
/// compressed: `text_code.rs`). bincode writes a byte string as it writes a string (its
/// length, then its bytes), so a row of raw texts is schema 8's row byte for byte.
#[derive(Serialize, Deserialize)]
struct ChunksWire {
    generation: u64,
    version_kind: u8,
    version: u64,
    source: String,
    id: String,
    chunks: Vec<ChunkWire>,
}

#[derive(Serialize, Deserialize)]
struct ChunkWire {
    slot: u32,
    text: TextBytes<'static>,
    meta: String,
}

/// [`ChunksWire`] by reference.
#[derive(Serialize)]
struct ChunksWireRef<'a> {
    generation: u64,
    version_kind: u8,
    version: u64,
    source: &'a str,
    id: &'a str,
    chunks: Vec<ChunkWireRef<'a>>,
}

#[derive(Serialize)]
struct ChunkWireRef<'a> {
    slot: u32,
    text: TextBytes<'a>,
    meta: &'a str,
}

/// A stored text's bytes, encoded as a byte string.
struct TextBytes<'a>(std::borrow::Cow<'a, [u8]>);

impl Serialize for TextBytes<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(&self.0)
    }
}

impl<'de> Deserialize<'de> for TextBytes<'static> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Bytes;
        impl serde::de::Visitor<'_> for Bytes {
            type Value = TextBytes<'static>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a chunk's text")
            }
            fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<Self::Value, E> {
                Ok(TextBytes(std::borrow::Cow::Owned(v.to_vec())))
            }
            fn visit_byte_buf<E: serde::de::Error>(self, v: Vec<u8>) -> Result<Self::Value, E> {
                Ok(TextBytes(std::borrow::Cow::Owned(v)))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
                self.visit_bytes(v.as_bytes())
            }
        }
        d.deserialize_byte_buf(Bytes)
    }
}

/// What a search hit needs of an encoded [`ChunksRow`], borrowed from the row's bytes: its
/// header and the one chunk of the asked vector slot, without decoding, or allocating for,
/// the row's other chunks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ChunkAt<'a> {
    /// The row's generation stamp.
    pub generation: u64,
    /// The revision's version kind byte.
    pub version_kind: u8,
    /// The revision's version value.
    pub version: u64,
    /// The document's source.
    pub source: &'a str,
    /// The document's id.
    pub id: &'a str,
    /// How many chunks the row holds.
    pub count: usize,
    /// The position of the chunk of the asked slot and the chunk (`None`: no chunk of the
    /// row has that slot).
    pub chunk: Option<(u32, ChunkView<'a>)>,
}

impl ChunkAt<'_> {
    /// The revision's version.
    pub(crate) fn version(&self) -> Result<Version, Corruption> {
        stored_version("chunks row", self.version_kind, self.version)
    }
}

/// A chunk's text and canonical metadata JSON, from an encoded chunks row: borrowed from it,
/// but for a compressed text, decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ChunkView<'a> {
    pub text: std::borrow::Cow<'a, str>,
    pub meta: &'a str,
}

/// The first bytes of an encoded [`ChunksRow`] (`head`: the row, or what the chunks table
/// keeps of it) with the header's version replaced by `version_kind` and `version`, when
/// the new version encodes in as many bytes as the old one: the row's length, and so how it
/// is split with its vectors row, stays. `None` if it would not, or if `head` is too short
/// to hold the header's generation and version.
pub(crate) fn restamp_head(head: &[u8], version_kind: u8, version: u64) -> Option<Vec<u8>> {
    let (_, generation_len) = bincode::decode_from_slice::<u64, _>(head, config()).ok()?;
    let version_at = generation_len.checked_add(1)?;
    let (_, old_len) =
        bincode::decode_from_slice::<u64, _>(head.get(version_at..)?, config()).ok()?;
    let new = bincode::encode_to_vec(version, config()).ok()?;
    if new.len() != old_len {
        return None;
    }
    let mut out = head.to_vec();
    *out.get_mut(generation_len)? = version_kind;
    out.get_mut(version_at..version_at + old_len)?
        .copy_from_slice(&new);
    Some(out)
}

/// Decodes the header of an encoded [`ChunksRow`] (which must fill `bytes` exactly, as for
/// [`decode`]) and the chunk whose vector has `slot`, skipping the other chunks in place:
/// their strings are read as bytes (no allocation and no UTF-8 check; `verify` and
/// whole-row reads still check every chunk). The chunk's text is decoded with `codec`.
///
/// A strict prefix of an encoded row never decodes (bincode reads a row front to back and
/// the whole row reads to its last byte), so bytes that decode here are a whole row.
pub(crate) fn decode_chunk_of_slot<'a>(
    bytes: &'a [u8],
    slot: u32,
    codec: Option<&TextCodec>,
) -> Result<ChunkAt<'a>, Corruption> {
    use serde::de::{DeserializeSeed, SeqAccess, Visitor};
    use std::fmt;

    /// The row: its header, then the chunks (through [`Chunks`]).
    struct Row<'c>(u32, Option<&'c TextCodec>);
    /// The chunks sequence: keeps the one of the slot and its position, counts all.
    struct Chunks<'c>(u32, Option<&'c TextCodec>);
    /// One chunk: its view if it has the slot, else skipped.
    struct Entry<'c>(u32, Option<&'c TextCodec>);

    fn next<'de, A: SeqAccess<'de>, T: serde::Deserialize<'de>>(
        seq: &mut A,
        index: usize,
        expected: &dyn serde::de::Expected,
    ) -> Result<T, A::Error> {
        use serde::de::Error;
        seq.next_element()?
            .ok_or_else(|| A::Error::invalid_length(index, expected))
    }

    impl<'de> DeserializeSeed<'de> for Row<'_> {
        type Value = ChunkAt<'de>;
        fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_struct(
                "ChunksRow",
                &[
                    "generation",
                    "version_kind",
                    "version",
                    "source",
                    "id",
                    "chunks",
                ],
                self,
            )
        }
    }

    impl<'de> Visitor<'de> for Row<'_> {
        type Value = ChunkAt<'de>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a chunks row")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            use serde::de::Error;
            let generation: u64 = next(&mut seq, 0, &self)?;
            let version_kind: u8 = next(&mut seq, 1, &self)?;
            let version: u64 = next(&mut seq, 2, &self)?;
            let source: &str = next(&mut seq, 3, &self)?;
            let id: &str = next(&mut seq, 4, &self)?;
            let (count, chunk) = seq
                .next_element_seed(Chunks(self.0, self.1))?
                .ok_or_else(|| A::Error::invalid_length(5, &self))?;
            Ok(ChunkAt {
                generation,
                version_kind,
                version,
                source,
                id,
                count,
                chunk,
            })
        }
    }

    impl<'de> DeserializeSeed<'de> for Chunks<'_> {
        type Value = (usize, Option<(u32, ChunkView<'de>)>);
        fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_seq(self)
        }
    }

    impl<'de> Visitor<'de> for Chunks<'_> {
        type Value = (usize, Option<(u32, ChunkView<'de>)>);
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("the chunks of a chunks row")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            use serde::de::Error;
            let mut count = 0u32;
            let mut chunk = None;
            while let Some(view) = seq.next_element_seed(Entry(self.0, self.1))? {
                if let Some(view) = view {
                    if chunk.is_some() {
                        return Err(A::Error::custom(format!(
                            "two chunks have vector slot {}",
                            self.0
                        )));
                    }
                    chunk = Some((count, view));
                }
                count = count
                    .checked_add(1)
                    .ok_or_else(|| A::Error::custom("more chunks than a u32 counts"))?;
            }
            Ok((count as usize, chunk))
        }
    }

    impl<'de> DeserializeSeed<'de> for Entry<'_> {
        type Value = Option<ChunkView<'de>>;
        fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_struct("ChunkEntry", &["slot", "text", "meta"], self)
        }
    }

    impl<'de> Visitor<'de> for Entry<'_> {
        type Value = Option<ChunkView<'de>>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a chunk of a chunks row")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            use serde::de::Error;
            let slot: u32 = next(&mut seq, 0, &self)?;
            if slot == self.0 {
                let text: &[u8] = next(&mut seq, 1, &self)?;
                let text = decode_text(text, self.1).map_err(|c| A::Error::custom(c.detail))?;
                let meta: &str = next(&mut seq, 2, &self)?;
                Ok(Some(ChunkView { text, meta }))
            } else {
                let _text: &[u8] = next(&mut seq, 1, &self)?;
                let _meta: &[u8] = next(&mut seq, 2, &self)?;
                Ok(None)
            }
        }
    }

    match bincode::serde::seed_decode_from_slice(Row(slot, codec), bytes, config()) {
        Ok((row, used)) if used == bytes.len() => Ok(row),
        Ok((_, used)) => Err(Corruption::new(
            "chunks row",
            format!("{} trailing bytes after the row", bytes.len() - used),
        )),
        Err(e) => Err(Corruption::new("chunks row", decode_error_text(e))),
    }
}

/// One vector space other than the default (schema 7), under its name in `spaces`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct SpaceRow {
    /// Its id: the first part of its rows' keys in `space_vectors`; never reused.
    pub id: u32,
    /// The embedding model's name.
    pub model: String,
    /// Every vector's length.
    pub dimension: u32,
    /// The commit sequence it was added at.
    pub created_commit: u64,
    /// Its rows in `space_vectors` (each a live chunk's vector).
    pub vectors: u64,
}

/// Space `name`'s row from its bytes; one that does not decode is a [`Corruption`] of
/// `space row` naming the space (a damaged space: see `spaces.rs`).
pub(crate) fn decode_row(name: &str, bytes: &[u8]) -> Result<SpaceRow, Corruption> {
    decode("space row", bytes).map_err(|c| {
        Corruption::new(
            "space row",
            format!(
                "space {name:?}: {} (Store::verify reports it; Store::drop_space removes it)",
                c.detail
            ),
        )
    })
}

/// The space vectors one commit added, `(space id, vector id)`, for the spaces' derived
/// indexes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct SpaceChangeRow {
    pub added: Vec<(u32, u64)>,
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

/// Stored metadata (a document's or a chunk's canonical JSON), decoded. Every reader of
/// metadata (reads, search, the filter index) goes through this, so metadata that does not
/// decode is a corruption everywhere.
pub(crate) fn decode_meta(json: &str) -> Result<serde_json::Value, Corruption> {
    serde_json::from_str(json).map_err(|e| Corruption::new("metadata", e.to_string()))
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
            content_key: [9; 16],
            deleted: false,
            meta: "{\"a\":1}".into(),
            next_slot: 11,
        };
        let bytes = encode(&doc);
        assert_eq!(decode::<DocRow>("doc", &bytes).ok(), Some(doc));
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

    /// A chunks row of `n` chunks, slots 10, 13, 16, ... (not their positions).
    fn chunks_row(n: usize) -> ChunksRow {
        ChunksRow {
            generation: 40 + n as u64,
            version_kind: 1,
            version: 7 + n as u64,
            source: "notes".into(),
            id: format!("doc-{n}"),
            chunks: (0..n)
                .map(|i| ChunkEntry {
                    slot: 10 + 3 * i as u32,
                    text: "é".repeat(i * 70),
                    meta: format!("{{\"i\":{i}}}"),
                })
                .collect(),
        }
    }

    /// Schema 8's chunks row, texts as strings: a row of raw texts is still its bytes.
    #[derive(Serialize)]
    struct ChunksRowV8<'a> {
        generation: u64,
        version_kind: u8,
        version: u64,
        source: &'a str,
        id: &'a str,
        chunks: Vec<(u32, &'a str, &'a str)>,
    }

    fn codec() -> TextCodec {
        let texts: Vec<String> = (0..300)
            .map(|i| format!("Chunk {i} of the notes: the store refuses a stale revision."))
            .collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        TextCodec::train(&refs)
    }

    #[test]
    fn a_row_of_raw_texts_is_schema_8s_row_byte_for_byte() {
        let row = chunks_row(3);
        let v8 = ChunksRowV8 {
            generation: row.generation,
            version_kind: row.version_kind,
            version: row.version,
            source: &row.source,
            id: &row.id,
            chunks: row
                .chunks
                .iter()
                .map(|c| (c.slot, c.text.as_str(), c.meta.as_str()))
                .collect(),
        };
        assert_eq!(encode_chunks_row(&row, None), encode_unchecked(&v8));
        assert_eq!(
            decode_chunks_row("row", &encode_unchecked(&v8), None).ok(),
            Some(row)
        );
    }

    #[test]
    fn compressed_texts_read_back_whole_and_one_chunk_at_a_time() {
        let codec = codec();
        let mut row = chunks_row(4);
        for (i, chunk) in row.chunks.iter_mut().enumerate() {
            chunk.text = format!("Chunk {i} of the notes: the store refuses a stale revision.");
        }
        let bytes = encode_chunks_row(&row, Some(&codec));
        assert!(bytes.len() < encode_chunks_row(&row, None).len());
        assert_eq!(
            decode_chunks_row("row", &bytes, Some(&codec)).ok(),
            Some(row.clone())
        );
        for chunk in &row.chunks {
            let at = decode_chunk_of_slot(&bytes, chunk.slot, Some(&codec)).unwrap();
            assert_eq!(
                at.chunk.map(|(_, c)| c.text.into_owned()),
                Some(chunk.text.clone())
            );
        }
        // Without the table, a compressed text is a corruption, never a wrong text.
        assert!(decode_chunks_row("row", &bytes, None).is_err());
        assert!(decode_chunk_of_slot(&bytes, row.chunks[0].slot, None).is_err());
    }

    #[test]
    fn a_restamped_head_is_the_row_under_the_new_version() {
        for (old, new) in [(7u64, 9u64), (3, 250), (300, 65_000), (1 << 40, 1 << 41)] {
            let mut row = chunks_row(3);
            row.version = old;
            let bytes = encode_chunks_row(&row, None);
            for cut in [bytes.len(), 40, 20] {
                let patched = restamp_head(&bytes[..cut], 2, new);
                let mut whole = patched.clone().unwrap_or_default();
                whole.extend_from_slice(&bytes[cut..]);
                let back = decode_chunks_row("row", &whole, None).ok();
                let mut want = row.clone();
                (want.version_kind, want.version) = (2, new);
                assert_eq!(back, Some(want), "{old} -> {new}, head of {cut}");
            }
        }
        // Another length of the version's encoding, or a head too short: no patch.
        let bytes = encode_chunks_row(&chunks_row(2), None);
        assert_eq!(restamp_head(&bytes, 1, 1 << 20), None);
        assert_eq!(restamp_head(&bytes[..2], 1, 5), None);
        assert_eq!(restamp_head(&[], 1, 5), None);
    }

    #[test]
    fn the_chunk_of_a_slot_decodes_as_the_whole_row_has_it() {
        let codec = codec();
        for (n, codec) in (0..6usize).flat_map(|n| [(n, None), (n, Some(&codec))]) {
            let row = chunks_row(n);
            let bytes = encode_chunks_row(&row, codec);
            for slot in 0..40u32 {
                let at = decode_chunk_of_slot(&bytes, slot, codec);
                let at = at.as_ref().ok();
                assert_eq!(
                    at.map(|a| (
                        a.generation,
                        a.version_kind,
                        a.version,
                        a.source,
                        a.id,
                        a.count
                    )),
                    Some((
                        row.generation,
                        row.version_kind,
                        row.version,
                        row.source.as_str(),
                        row.id.as_str(),
                        n
                    ))
                );
                let want = row.chunks.iter().position(|c| c.slot == slot).map(|p| {
                    (
                        p as u32,
                        row.chunks[p].text.as_str(),
                        row.chunks[p].meta.as_str(),
                    )
                });
                assert_eq!(
                    at.and_then(|a| a.chunk.as_ref())
                        .map(|(p, c)| (*p, c.text.as_ref(), c.meta)),
                    want
                );
            }
            // Trailing bytes and every truncation (a spilled row's head) are corruption,
            // never a panic and never a row.
            let mut longer = bytes.clone();
            longer.push(0);
            assert!(decode_chunk_of_slot(&longer, 10, codec).is_err());
            for cut in 0..bytes.len() {
                assert!(
                    decode_chunk_of_slot(&bytes[..cut], 10, codec).is_err(),
                    "{n} {cut}"
                );
            }
        }
        // The asked chunk's text must be UTF-8.
        let mut row = chunks_row(1);
        row.chunks[0].text = "ab".into();
        row.chunks[0].meta = "{}".into();
        let mut bytes = encode_chunks_row(&row, None);
        let at = bytes.len() - 4;
        bytes[at] = 0xc3;
        assert!(decode_chunk_of_slot(&bytes, 10, None).is_err());
        // Two chunks of one slot: corruption.
        let mut row = chunks_row(2);
        row.chunks[1].slot = row.chunks[0].slot;
        let bytes = encode_chunks_row(&row, None);
        assert!(decode_chunk_of_slot(&bytes, row.chunks[0].slot, None).is_err());
    }

    #[test]
    fn bad_bytes_are_corruption_not_panics() {
        for len in 0..40 {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 37 + 11) as u8).collect();
            let _ = decode::<DocRow>("doc", &bytes);
            let _ = decode_chunks_row("chunks", &bytes, None);
        }
        assert!(decode::<DocRow>("doc", &[]).is_err());
    }
}
