//! A live revision's vectors row, and the tail of its chunks row that rides in the slack
//! of the vectors row's pages (schema 3; for a row that shares its leaf, the whole chunks
//! row in the row's share of it, a layout every schema-7 build reads). This file alone knows how long that tail is, how
//! the two rows are split when written ([`RevisionRows`]) and joined when read
//! ([`join_chunks`]), and what it assumes of redb's allocator (`docs/design.md`, "the
//! spill"; `tests/storage/spilled_layout_uses_the_pages_it_promises.rs` measures it).

use super::rows::{decode, decode_chunk_of_slot, ChunkAt, ChunksRow};
use crate::error::Corruption;

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
const REDB_PAGE: usize = 4096;

/// The bytes a leaf page needs beside a value alone in it under a u64 key: a 4-byte header,
/// the value's end offset and the key.
const LEAF_OVERHEAD: usize = 16;

/// A leaf page's header (redb's `RawLeafBuilder::required_bytes`: page type and pair count).
const LEAF_HEADER: usize = 4;

/// The bytes each entry of a leaf takes beside its value: its u64 key and its value's end
/// offset.
const LEAF_ENTRY: usize = 12;

/// Room a spill leaves free at the end of a vectors row's page run: the leaf's own
/// [`LEAF_OVERHEAD`] and a margin.
const LEAF_MARGIN: usize = 64;

/// Room a spill leaves free in a row's share of a leaf it shares with rows of its size.
const SHARE_MARGIN: usize = 16;

/// How many of a chunks row's `chunks_len` encoded bytes ride at the end of a vectors row
/// whose vectors take `vectors_len` bytes ([`VectorsRow::encoded_len`]).
///
/// A vectors row that fits a page shares its leaf with rows of its size: as many as fit
/// (`k`), each with a `1/k` share of the page of which the vectors leave some unused. The
/// whole chunks row rides in that share if it fits (less [`SHARE_MARGIN`]), so `k` rows
/// with their spills still fit a page and the chunks table keeps an empty row; otherwise
/// nothing rides (a part would save a few bytes and cost every read of the chunk a join).
/// A larger row is alone in a leaf that is a power-of-two run of pages, and its slack up to
/// the end of that run (less [`LEAF_MARGIN`]) is free: the spill never makes the run longer.
fn spill_len(vectors_len: usize, chunks_len: usize) -> usize {
    let alone = vectors_len.saturating_add(LEAF_OVERHEAD);
    if alone <= REDB_PAGE {
        let room = REDB_PAGE - LEAF_HEADER;
        let per_leaf = room / (vectors_len + LEAF_ENTRY);
        let share = (room / per_leaf).saturating_sub(LEAF_ENTRY + vectors_len + SHARE_MARGIN);
        return if chunks_len <= share { chunks_len } else { 0 };
    }
    let run = alone.checked_next_power_of_two().unwrap_or(alone);
    run.saturating_sub(vectors_len.saturating_add(LEAF_MARGIN))
        .min(chunks_len)
}

/// [`spill_len`] for the harness: the benches that write schema 3's layout straight into
/// redb take the split from here rather than from a copy of the formula.
#[cfg(any(test, feature = "testkit"))]
pub(crate) fn spill_len_for_harness(vectors_len: usize, chunks_len: usize) -> usize {
    spill_len(vectors_len, chunks_len)
}

/// A document's chunks row from its chunks row's bytes and the bytes its vectors row
/// carries (the encoded row's last [`spill_len`] bytes).
fn decode_chunks(rest: &[u8], spill: &[u8]) -> Result<ChunksRow, Corruption> {
    if spill.is_empty() {
        return decode("chunks row", rest);
    }
    if rest.is_empty() {
        return decode("chunks row", spill);
    }
    let mut bytes = Vec::with_capacity(rest.len() + spill.len());
    bytes.extend_from_slice(rest);
    bytes.extend_from_slice(spill);
    decode("chunks row", &bytes)
}

/// Splits an encoded chunks row into what the chunks row keeps and what rides at the end of
/// a vectors row of `vectors_len` bytes. The spill is the encoded row's tail: a revision
/// that changes only the document's metadata changes only the row's head (its generation),
/// so its vectors row, spill included, stays as it was and is not rewritten — unless the
/// whole chunks row rides in the vectors row (a small document sharing its leaf), whose
/// head then changes with the spill and is rewritten (one leaf, as the chunks row's was).
fn split_chunks(chunks_bytes: &[u8], vectors_len: usize) -> (&[u8], &[u8]) {
    let spill = spill_len(vectors_len, chunks_bytes.len());
    chunks_bytes.split_at(chunks_bytes.len() - spill)
}

/// A live document's chunks row, read back: the chunks table's bytes for the document
/// joined with the bytes its vectors row carries after its vectors. Every reader of a
/// chunks row (reads, search, `verify`, the next revision's write) goes through this.
pub(crate) fn join_chunks(
    chunks_row: &[u8],
    vectors: &VectorsRow<'_>,
) -> Result<ChunksRow, Corruption> {
    decode_chunks(chunks_row, vectors.spill())
}

/// A live document's encoded chunks row, joined as [`join_chunks`] joins it but not
/// decoded: for a conversion that decodes it as an older schema's row.
pub(crate) fn join_chunk_bytes(chunks_row: &[u8], vectors: &VectorsRow<'_>) -> Vec<u8> {
    [chunks_row, vectors.spill()].concat()
}

/// The chunk of vector `slot` of a live document's chunks row, joined as [`join_chunks`]
/// joins the whole row, handed to `read` with the row's header, borrowed: the other chunks
/// are skipped in place, so a search hit costs the bytes of one chunk's text, not its
/// document's. A row kept whole in either table is read where redb holds it; one split
/// between the two is joined into one buffer first.
pub(crate) fn join_chunk_of_slot<R>(
    chunks_row: &[u8],
    vectors: &VectorsRow<'_>,
    slot: u32,
    read: impl FnOnce(ChunkAt<'_>) -> R,
) -> Result<R, Corruption> {
    let spill = vectors.spill();
    if spill.is_empty() {
        return decode_chunk_of_slot(chunks_row, slot).map(read);
    }
    if chunks_row.is_empty() {
        return decode_chunk_of_slot(spill, slot).map(read);
    }
    let mut bytes = Vec::with_capacity(chunks_row.len() + spill.len());
    bytes.extend_from_slice(chunks_row);
    bytes.extend_from_slice(spill);
    decode_chunk_of_slot(&bytes, slot).map(read)
}

/// A revision's two rows as they are written: the encoded chunks row split between the
/// chunks table and the end of the vectors row. Every writer of a revision (a write, a
/// schema conversion) goes through this, so the split is decided in one place.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RevisionRows<'a> {
    /// What the chunks table keeps: the encoded chunks row but for its spilled tail.
    chunks_row: &'a [u8],
    /// The encoded chunks row's tail, carried after the vectors.
    spill: &'a [u8],
    /// The vectors row's length without the spill.
    vectors_len: usize,
}

impl<'a> RevisionRows<'a> {
    /// Splits `chunks_bytes` (an encoded [`ChunksRow`]; empty for a vectors row without a
    /// chunks row, which carries nothing) beside the vectors `entries`.
    pub(crate) fn split(chunks_bytes: &'a [u8], entries: &[(u32, VectorData<'_>)]) -> Self {
        let vectors_len = VectorsRow::encoded_len(entries);
        let (chunks_row, spill) = split_chunks(chunks_bytes, vectors_len);
        debug_assert_eq!(
            [chunks_row, spill].concat(),
            chunks_bytes,
            "a split chunks row joins back whole"
        );
        RevisionRows {
            chunks_row,
            spill,
            vectors_len,
        }
    }

    /// The bytes the chunks table keeps for the revision.
    pub(crate) fn chunks_row(&self) -> &'a [u8] {
        self.chunks_row
    }

    /// The vectors row's whole length: its vectors and the spill after them.
    pub(crate) fn vectors_row_len(&self) -> usize {
        self.vectors_len + self.spill.len()
    }

    /// Encodes the vectors row (the same `entries` the rows were split beside) into `out`,
    /// exactly [`RevisionRows::vectors_row_len`] long (a value reserved in place in a redb
    /// page).
    pub(crate) fn write_vectors_row(
        &self,
        entries: &[(u32, VectorData<'_>)],
        out: &mut [u8],
    ) -> Result<(), Corruption> {
        debug_assert_eq!(VectorsRow::encoded_len(entries), self.vectors_len);
        VectorsRow::encode_into(entries, self.spill, out)
    }

    /// The vectors row (the same `entries` the rows were split beside), encoded.
    pub(crate) fn vectors_row(
        &self,
        entries: &[(u32, VectorData<'_>)],
    ) -> Result<Vec<u8>, Corruption> {
        let mut bytes = vec![0u8; self.vectors_row_len()];
        self.write_vectors_row(entries, &mut bytes)?;
        Ok(bytes)
    }

    /// Whether `old` (a stored vectors row holding the same vectors in the same slots)
    /// already carries this revision's spill, so it need not be rewritten.
    pub(crate) fn spill_matches(&self, old: &VectorsRow<'_>) -> bool {
        old.spill() == self.spill
    }
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
    /// length), then `spill`. Writers go through [`RevisionRows`]; the test harness builds
    /// rows with any tail.
    #[cfg(any(test, feature = "testkit"))]
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
    fn encode_into(
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
        debug_assert!(
            VectorsRow::parse(bytes).is_ok_and(|row| row.len() == entries.len()
                && row.slots().eq(entries.iter().map(|(slot, _)| *slot))
                && row.spill() == spill),
            "an encoded vectors row does not parse back to its slots and spill"
        );
        Ok(())
    }

    /// Whether the row carries the last bytes of its document's chunks row.
    pub(crate) fn has_spill(&self) -> bool {
        !self.spill().is_empty()
    }

    /// The last bytes of the document's encoded chunks row, carried after the vectors.
    fn spill(&self) -> &'a [u8] {
        let end = VECTORS_HEAD + self.count * (4 + self.dimension * 4);
        self.bytes.get(end..).unwrap_or_default()
    }

    /// This row encoded again, its vectors and the bytes it carries (the harness checks that
    /// a parsed row round-trips).
    #[cfg(any(test, feature = "testkit"))]
    pub(crate) fn reencode(&self) -> Result<Vec<u8>, Corruption> {
        let mut entries = Vec::with_capacity(self.count);
        for position in 0..self.count {
            let (Some(slot), Some(bytes)) = (self.slot(position), self.vector_bytes(position))
            else {
                return Err(Corruption::new("vectors row", "a position is unreadable"));
            };
            entries.push((slot, VectorData::Raw(bytes)));
        }
        VectorsRow::encode(&entries, self.spill())
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

    /// Whether the vector at `position` is bit-identical to `vector` (the harness's check).
    #[cfg(any(test, feature = "testkit"))]
    pub(crate) fn same_vector(&self, position: usize, vector: &[f32]) -> bool {
        self.vector_bytes(position)
            .is_some_and(|stored| same_vector(stored, vector))
    }

    /// Every `(slot, vector bytes)` in position order.
    pub(crate) fn entries(&self) -> impl Iterator<Item = (u32, &'a [u8])> + '_ {
        (0..self.count).filter_map(|p| Some((self.slot(p)?, self.vector_bytes(p)?)))
    }
}

/// Whether a stored vector's bytes (little-endian f32s) are bit-identical to `vector`.
#[cfg(any(test, feature = "testkit"))]
fn same_vector(stored: &[u8], vector: &[f32]) -> bool {
    stored.len() == vector.len() * 4
        && stored
            .chunks_exact(4)
            .zip(vector)
            .all(|(b, x)| b == x.to_le_bytes())
}

/// Little-endian f32 bytes to floats (a trailing partial float is ignored).
pub(crate) fn decode_floats(bytes: &[u8]) -> Vec<f32> {
    let mut out = Vec::with_capacity(bytes.len() / 4);
    extend_floats(bytes, &mut out);
    out
}

/// [`decode_floats`], appending to `out` (the index load decodes every vector into one
/// reused buffer).
pub(crate) fn extend_floats(bytes: &[u8], out: &mut Vec<f32>) {
    out.extend(
        bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::redb::schema::{encode, ChunkEntry};

    #[test]
    fn vectors_rows_round_trip() {
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
            version_kind: 1,
            version: 9,
            source: "s".into(),
            id: "d".into(),
            chunks: vec![ChunkEntry {
                slot: 0,
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
    fn one_chunk_of_a_split_row_is_the_joined_rows_chunk() {
        let row = ChunksRow {
            generation: 5,
            version_kind: 1,
            version: 9,
            source: "s".into(),
            id: "d".into(),
            chunks: (0u8..3)
                .map(|i| ChunkEntry {
                    slot: u32::from(i) + 7,
                    text: format!("{i}").repeat(900),
                    meta: "{}".into(),
                })
                .collect(),
        };
        let bytes = encode(&row);
        let floats = [1.0; 1100];
        let vectors: Vec<(u32, VectorData<'_>)> = row
            .chunks
            .iter()
            .map(|c| (c.slot, VectorData::Floats(&floats[..])))
            .collect();
        for at in [0, 1, 900, bytes.len() - 1, bytes.len()] {
            let (rest, spill) = bytes.split_at(at);
            let encoded = VectorsRow::encode(&vectors, spill).unwrap_or_default();
            let Ok(parsed) = VectorsRow::parse(&encoded) else {
                panic!("vectors row");
            };
            for (position, chunk) in row.chunks.iter().enumerate() {
                let text = join_chunk_of_slot(rest, &parsed, chunk.slot, |at| {
                    (
                        at.generation,
                        at.count,
                        at.chunk.map(|(p, c)| (p, c.text.to_owned())),
                    )
                });
                assert_eq!(
                    text.ok(),
                    Some((5, 3, Some((position as u32, chunk.text.clone())))),
                    "{at} {position}"
                );
            }
        }
    }

    #[test]
    fn the_spill_fills_the_vectors_rows_page_run_and_no_more() {
        // A row that fits a page carries its chunks row whole or nothing.
        assert_eq!(spill_len(100, 5000), 0);
        assert_eq!(spill_len(REDB_PAGE - LEAF_OVERHEAD, 5000), 0);
        assert_eq!(spill_len(REDB_PAGE - LEAF_OVERHEAD, 0), 0);
        // The most one row may carry so that as many rows as fit a page without it still
        // fit with it.
        let fits = |vectors: usize, spill: usize| {
            let per_leaf = (REDB_PAGE - LEAF_HEADER) / (vectors + LEAF_ENTRY);
            LEAF_HEADER + per_leaf * (LEAF_ENTRY + vectors + spill) <= REDB_PAGE
        };
        for vectors in 0..=REDB_PAGE - LEAF_OVERHEAD {
            let most = (0..=REDB_PAGE)
                .rev()
                .find(|&c| spill_len(vectors, c) == c)
                .unwrap_or(0);
            assert!(fits(vectors, most), "{vectors}");
            assert_eq!(spill_len(vectors, most + 1), 0, "{vectors}");
        }
        // One 384-d vector: 1,548 bytes, two to a leaf, each with 486 bytes of its half
        // unused, of which the spill takes up to 470.
        let one = VectorsRow::encoded_len(&[(0, VectorData::Raw(&[0; 1536]))]);
        assert_eq!(one, 1548);
        assert_eq!(spill_len(one, 470), 470);
        assert_eq!(spill_len(one, 471), 0);
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
    fn bad_bytes_are_corruption_not_panics() {
        for len in 0..40 {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 37 + 11) as u8).collect();
            let _ = VectorsRow::parse(&bytes);
        }
        // A count of 1 with 3 bytes of vector; a count larger than the row; bytes after an
        // empty row.
        assert!(VectorsRow::parse(&[1, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3]).is_err());
        assert!(VectorsRow::parse(&[0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]).is_err());
        assert!(VectorsRow::parse(&[0, 0, 0, 0, 1]).is_err());
        assert!(VectorsRow::parse(&[1, 0, 0, 0, 0, 0, 0, 0]).is_err());
    }
}
