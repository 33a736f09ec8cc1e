//! A live revision's vectors row, and the tail of its chunks row that rides in the slack
//! of the vectors row's pages (schema 3; for a row that shares its leaf, the whole chunks
//! row in the row's share of it, a layout every schema-7 build reads). This file alone knows how long that tail is, how
//! the two rows are split when written ([`RevisionRows`]) and joined when read
//! ([`join_chunks`]), and what it assumes of redb's allocator (`docs/design.md`, "the
//! spill"; `tests/storage/spilled_layout_uses_the_pages_it_promises.rs` measures it). It
//! also decides a vectors row's layout, raw or coded (schema 8, `vector_code.rs`), from the
//! same page arithmetic ([`Layout::for_entries`]), and reads either ([`VectorsRow`]).

use super::rows::{decode_chunk_of_slot, decode_chunks_row, ChunkAt, ChunksRow};
use super::text_code::TextCodec;
use super::vector_code::{self, Table};
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

    /// The floats' bit patterns.
    fn bits(&self) -> Bits<'_> {
        match self {
            VectorData::Floats(v) => Bits::Floats(v.iter()),
            VectorData::Raw(b) => Bits::Raw(b.chunks_exact(4)),
        }
    }
}

/// A [`VectorData`]'s floats' bit patterns.
enum Bits<'a> {
    Floats(std::slice::Iter<'a, f32>),
    Raw(std::slice::ChunksExact<'a, u8>),
}

impl Iterator for Bits<'_> {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        match self {
            Bits::Floats(i) => i.next().map(|x| x.to_bits()),
            Bits::Raw(c) => c
                .next()
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        }
    }
}

/// How a vectors row's floats are written: as they are, or coded (`vector_code.rs`) under a
/// table that escapes `escapes` of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Layout {
    /// Little-endian f32s.
    Raw,
    /// Coded under `table`, `escapes` floats escaped.
    Coded {
        /// The row's three commonest exponent values.
        table: Table,
        /// How many of the row's floats the table escapes.
        escapes: usize,
    },
}

impl Layout {
    /// The coded layout for `entries` (every float of the row), with its table.
    fn coded_for(entries: &[(u32, VectorData<'_>)]) -> Layout {
        let (table, escapes) = Table::for_floats(entries.iter().flat_map(|(_, v)| v.bits()));
        Layout::Coded { table, escapes }
    }

    /// The layout a writer gives `entries`: coded when that is shorter and takes fewer page
    /// bytes ([`page_share`]), raw otherwise (a coded row costs a decode on every read, so
    /// it is written only where it saves pages).
    fn for_entries(entries: &[(u32, VectorData<'_>)]) -> Layout {
        let raw = VectorsRow::encoded_len(entries, Layout::Raw);
        let least = VectorsRow::encoded_len(
            entries,
            Layout::Coded {
                table: Table([0, 1, 2]),
                escapes: 0,
            },
        );
        // Not even a row without escapes would save a page byte: skip the count.
        if entries.is_empty() || !saves_pages(least, raw) {
            return Layout::Raw;
        }
        let coded = Layout::coded_for(entries);
        if saves_pages(VectorsRow::encoded_len(entries, coded), raw) {
            coded
        } else {
            Layout::Raw
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

/// The page bytes a vectors row of `vectors_len` bytes (its spill aside) takes, as
/// [`spill_len`] reckons them: a row that fits a page its `1/k` share of a leaf it shares
/// with rows of its size; a larger one its leaf's power-of-two run of pages.
fn page_share(vectors_len: usize) -> usize {
    let alone = vectors_len.saturating_add(LEAF_OVERHEAD);
    if alone <= REDB_PAGE {
        let room = REDB_PAGE - LEAF_HEADER;
        return room / (room / (vectors_len + LEAF_ENTRY));
    }
    alone.checked_next_power_of_two().unwrap_or(usize::MAX)
}

/// Whether a vectors row of `coded` bytes (coded) takes fewer page bytes than the same row
/// of `raw` bytes ([`page_share`]): more rows to a leaf, or a shorter page run. The spill
/// is then reckoned from the coded length, so the coded row with its spill keeps its share
/// (its leaf never holds fewer rows than its vectors alone allow).
fn saves_pages(coded: usize, raw: usize) -> bool {
    coded < raw && page_share(coded) < page_share(raw)
}

/// [`spill_len`] for the harness: the benches that write schema 3's layout straight into
/// redb take the split from here rather than from a copy of the formula.
#[cfg(any(test, feature = "testkit"))]
pub(crate) fn spill_len_for_harness(vectors_len: usize, chunks_len: usize) -> usize {
    spill_len(vectors_len, chunks_len)
}

/// A document's chunks row from its chunks row's bytes and the bytes its vectors row
/// carries (the encoded row's last [`spill_len`] bytes), its texts decoded with `codec`.
fn decode_chunks(
    rest: &[u8],
    spill: &[u8],
    codec: Option<&TextCodec>,
) -> Result<ChunksRow, Corruption> {
    if spill.is_empty() {
        return decode_chunks_row("chunks row", rest, codec);
    }
    if rest.is_empty() {
        return decode_chunks_row("chunks row", spill, codec);
    }
    let mut bytes = Vec::with_capacity(rest.len() + spill.len());
    bytes.extend_from_slice(rest);
    bytes.extend_from_slice(spill);
    decode_chunks_row("chunks row", &bytes, codec)
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
/// joined with the bytes its vectors row carries after its vectors, its texts decoded with
/// `codec` (the store's table). Every reader of a chunks row (reads, search, `verify`, the
/// next revision's write) goes through this.
pub(crate) fn join_chunks(
    chunks_row: &[u8],
    vectors: &VectorsRow<'_>,
    codec: Option<&TextCodec>,
) -> Result<ChunksRow, Corruption> {
    decode_chunks(chunks_row, vectors.spill(), codec)
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
    codec: Option<&TextCodec>,
    read: impl FnOnce(ChunkAt<'_>) -> R,
) -> Result<R, Corruption> {
    let spill = vectors.spill();
    if spill.is_empty() {
        return decode_chunk_of_slot(chunks_row, slot, codec).map(read);
    }
    if chunks_row.is_empty() {
        return decode_chunk_of_slot(spill, slot, codec).map(read);
    }
    let mut bytes = Vec::with_capacity(chunks_row.len() + spill.len());
    bytes.extend_from_slice(chunks_row);
    bytes.extend_from_slice(spill);
    decode_chunk_of_slot(&bytes, slot, codec).map(read)
}

/// A revision's two rows as they are written: the encoded chunks row split between the
/// chunks table and the end of the vectors row, and the vectors row's [`Layout`]. Every
/// writer of a revision (a write, a schema conversion) goes through this, so the split and
/// the layout are decided in one place.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RevisionRows<'a> {
    /// What the chunks table keeps: the encoded chunks row but for its spilled tail.
    chunks_row: &'a [u8],
    /// The encoded chunks row's tail, carried after the vectors.
    spill: &'a [u8],
    /// The vectors row's length without the spill.
    vectors_len: usize,
    /// How the vectors row's floats are written.
    layout: Layout,
}

impl<'a> RevisionRows<'a> {
    /// Splits `chunks_bytes` (an encoded [`ChunksRow`]; empty for a vectors row without a
    /// chunks row, which carries nothing) beside the vectors `entries`, in the layout
    /// [`Layout::for_entries`] gives them.
    pub(crate) fn split(chunks_bytes: &'a [u8], entries: &[(u32, VectorData<'_>)]) -> Self {
        RevisionRows::split_in(chunks_bytes, entries, Layout::for_entries(entries))
    }

    /// [`RevisionRows::split`] in the raw layout, as a schema-7 build splits the rows (the
    /// harness writes such files).
    #[cfg(any(test, feature = "testkit"))]
    pub(crate) fn split_raw(chunks_bytes: &'a [u8], entries: &[(u32, VectorData<'_>)]) -> Self {
        RevisionRows::split_in(chunks_bytes, entries, Layout::Raw)
    }

    fn split_in(chunks_bytes: &'a [u8], entries: &[(u32, VectorData<'_>)], layout: Layout) -> Self {
        let vectors_len = VectorsRow::encoded_len(entries, layout);
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
            layout,
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
        debug_assert_eq!(
            VectorsRow::encoded_len(entries, self.layout),
            self.vectors_len
        );
        VectorsRow::encode_into(entries, self.layout, self.spill, out)
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
    /// already carries this revision's spill, so it need not be rewritten (whatever its
    /// layout: both decode to the same floats).
    pub(crate) fn spill_matches(&self, old: &VectorsRow<'_>) -> bool {
        old.spill() == self.spill
    }
}

/// A document's vectors row, read in place, in either layout ([`Layout`]), vectors in
/// position order, then the last [`spill_len`] bytes of the document's encoded chunks row:
///
/// - raw (every schema since 3): `count u32 LE | dimension u32 LE | slot u32 LE * count |
///   f32 LE * dimension * count | spill`;
/// - coded (schema 8; the dimension word's top bit, [`CODED`], set): `count u32 LE |
///   dimension | CODED u32 LE | slot u32 LE * count | table (3 bytes) | block * count |
///   escaped values (a byte each, in vector order) | spill`, each block and the table as
///   `vector_code.rs` lays them out.
#[derive(Clone, Copy, Debug)]
pub(crate) struct VectorsRow<'a> {
    bytes: &'a [u8],
    count: usize,
    dimension: usize,
    /// A coded row's table.
    table: Option<Table>,
    /// Where the vectors end and the spill starts.
    end: usize,
}

/// The bytes before a vectors row's slots: its count and dimension.
const VECTORS_HEAD: usize = 8;

/// The bit of a vectors row's dimension word that marks a coded row.
const CODED: u32 = 1 << 31;

impl<'a> VectorsRow<'a> {
    /// Checks the layout: a count, a dimension, that many slots and whole vectors of that
    /// dimension (a dimension of 0 only for an empty row, which is raw); a coded row's
    /// table, blocks and escaped values as `vector_code.rs` requires them. What follows is
    /// the spill.
    pub(crate) fn parse(bytes: &'a [u8]) -> Result<VectorsRow<'a>, Corruption> {
        let bad = |detail: String| Corruption::new("vectors row", detail);
        let Some(head) = bytes.get(0..VECTORS_HEAD) else {
            return Err(bad(format!(
                "{} bytes is shorter than its count and dimension",
                bytes.len()
            )));
        };
        let count = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize;
        let word = u32::from_le_bytes([head[4], head[5], head[6], head[7]]);
        let coded = word & CODED != 0;
        let dimension = (word & !CODED) as usize;
        if (count == 0) != (dimension == 0) || (coded && count == 0) {
            return Err(bad(format!(
                "{count} vectors of dimension {dimension}{}",
                if coded { ", coded" } else { "" }
            )));
        }
        let cannot_hold = || {
            bad(format!(
                "{} bytes cannot hold {count} vectors of dimension {dimension}",
                bytes.len()
            ))
        };
        if !coded {
            let end = dimension
                .checked_add(1)
                .and_then(|per| per.checked_mul(4))
                .and_then(|per| per.checked_mul(count))
                .and_then(|n| n.checked_add(VECTORS_HEAD))
                .filter(|n| *n <= bytes.len())
                .ok_or_else(cannot_hold)?;
            return Ok(VectorsRow {
                bytes,
                count,
                dimension,
                table: None,
                end,
            });
        }
        let block = vector_code::block_len(dimension).ok_or_else(cannot_hold)?;
        let table_at = count
            .checked_mul(4)
            .and_then(|n| n.checked_add(VECTORS_HEAD))
            .ok_or_else(cannot_hold)?;
        let blocks_at = table_at
            .checked_add(vector_code::TABLE_LEN)
            .ok_or_else(cannot_hold)?;
        let escapes_at = block
            .checked_mul(count)
            .and_then(|n| n.checked_add(blocks_at))
            .filter(|n| *n <= bytes.len())
            .ok_or_else(cannot_hold)?;
        let table = Table::parse(&bytes[table_at..blocks_at])
            .ok_or_else(|| bad("a coded row's table is malformed".to_string()))?;
        let mut escapes = 0usize;
        for position in 0..count {
            let at = blocks_at + position * block;
            let taken = vector_code::check_block(
                &bytes[at..at + block],
                dimension,
                &table,
                bytes.get(escapes_at + escapes..).unwrap_or_default(),
            )
            .ok_or_else(|| bad(format!("coded vector {position} is malformed")))?;
            escapes += taken;
        }
        Ok(VectorsRow {
            bytes,
            count,
            dimension,
            table: Some(table),
            end: escapes_at + escapes,
        })
    }

    /// Encodes `(slot, vector)` pairs in position order (every vector has the same, nonzero
    /// length) in `layout`, then `spill`. Writers go through [`RevisionRows`]; the test
    /// harness builds rows with any tail.
    #[cfg(any(test, feature = "testkit"))]
    pub(crate) fn encode_as(
        entries: &[(u32, VectorData<'_>)],
        layout: Layout,
        spill: &[u8],
    ) -> Result<Vec<u8>, Corruption> {
        let mut bytes = vec![0u8; VectorsRow::encoded_len(entries, layout) + spill.len()];
        VectorsRow::encode_into(entries, layout, spill, &mut bytes)?;
        Ok(bytes)
    }

    /// [`VectorsRow::encode_as`] raw.
    #[cfg(any(test, feature = "testkit"))]
    pub(crate) fn encode(
        entries: &[(u32, VectorData<'_>)],
        spill: &[u8],
    ) -> Result<Vec<u8>, Corruption> {
        VectorsRow::encode_as(entries, Layout::Raw, spill)
    }

    /// [`VectorsRow::encode_as`] coded, under the table of `entries`' commonest values.
    #[cfg(any(test, feature = "testkit"))]
    pub(crate) fn encode_coded(
        entries: &[(u32, VectorData<'_>)],
        spill: &[u8],
    ) -> Result<Vec<u8>, Corruption> {
        VectorsRow::encode_as(entries, Layout::coded_for(entries), spill)
    }

    /// The length of the row's vectors in `layout` (its count, dimension, slots and floats,
    /// and a coded row's table and escaped values): the row's length without its spill.
    pub(crate) fn encoded_len(entries: &[(u32, VectorData<'_>)], layout: Layout) -> usize {
        let vector_bytes = entries.first().map_or(0, |(_, v)| v.byte_len());
        let slots = VECTORS_HEAD + entries.len() * 4;
        match layout {
            Layout::Raw => slots + entries.len() * vector_bytes,
            Layout::Coded { escapes, .. } => vector_code::block_len(vector_bytes / 4)
                .and_then(|block| block.checked_mul(entries.len()))
                .map_or(usize::MAX, |blocks| {
                    blocks.saturating_add(slots + vector_code::TABLE_LEN + escapes)
                }),
        }
    }

    /// Encodes into `bytes`, which is exactly [`VectorsRow::encoded_len`] plus `spill` long
    /// (a value reserved in place in a redb page, whose bytes may be anything).
    fn encode_into(
        entries: &[(u32, VectorData<'_>)],
        layout: Layout,
        spill: &[u8],
        bytes: &mut [u8],
    ) -> Result<(), Corruption> {
        let vector_bytes = entries.first().map_or(0, |(_, v)| v.byte_len());
        let dimension = vector_bytes / 4;
        let head = VECTORS_HEAD + entries.len() * 4;
        let vectors_len = VectorsRow::encoded_len(entries, layout);
        let refused = |detail: &str| Err(Corruption::new("vectors row", detail));
        if vectors_len.checked_add(spill.len()) != Some(bytes.len())
            || entries
                .iter()
                .any(|(_, v)| v.byte_len() != vector_bytes || v.byte_len() % 4 != 0)
            || (!entries.is_empty() && vector_bytes == 0)
            || !u32::try_from(dimension).is_ok_and(|d| d & CODED == 0)
        {
            return refused(
                "empty vectors, vectors of different lengths, or a buffer of another size",
            );
        }
        bytes[0..4].copy_from_slice(&(entries.len() as u32).to_le_bytes());
        let word = match layout {
            Layout::Raw => dimension as u32,
            Layout::Coded { .. } if entries.is_empty() => {
                return refused("a coded row without vectors")
            }
            Layout::Coded { .. } => dimension as u32 | CODED,
        };
        bytes[4..8].copy_from_slice(&word.to_le_bytes());
        for (i, (slot, _)) in entries.iter().enumerate() {
            bytes[VECTORS_HEAD + i * 4..VECTORS_HEAD + 4 + i * 4]
                .copy_from_slice(&slot.to_le_bytes());
        }
        match layout {
            Layout::Raw => {
                for (i, (_, vector)) in entries.iter().enumerate() {
                    let out = &mut bytes[head + i * vector_bytes..head + (i + 1) * vector_bytes];
                    match vector {
                        // Fixed-size chunks into a preallocated buffer: compiles to a plain
                        // copy on little-endian targets.
                        VectorData::Floats(v) => {
                            for (o, x) in out.chunks_exact_mut(4).zip(v.iter()) {
                                o.copy_from_slice(&x.to_le_bytes());
                            }
                        }
                        VectorData::Raw(b) => out.copy_from_slice(b),
                    }
                }
            }
            Layout::Coded { table, escapes } => {
                let block = vector_code::block_len(dimension).unwrap_or(0);
                let blocks_at = head + vector_code::TABLE_LEN;
                let escapes_at = blocks_at + entries.len() * block;
                bytes[head..blocks_at].copy_from_slice(&table.0);
                bytes[blocks_at..escapes_at].fill(0);
                let mut escaped = Vec::with_capacity(escapes);
                for (i, (_, vector)) in entries.iter().enumerate() {
                    let at = blocks_at + i * block;
                    vector_code::encode_block(
                        vector.bits(),
                        dimension,
                        &table,
                        &mut bytes[at..at + block],
                        &mut escaped,
                    );
                }
                if escaped.len() != escapes {
                    return refused("a coded row's escape count disagrees with its vectors");
                }
                bytes[escapes_at..vectors_len].copy_from_slice(&escaped);
            }
        }
        bytes[vectors_len..].copy_from_slice(spill);
        debug_assert!(
            VectorsRow::parse(bytes).is_ok_and(|row| row.len() == entries.len()
                && row.layout() == layout
                && row.slots().eq(entries.iter().map(|(slot, _)| *slot))
                && row.spill() == spill),
            "an encoded vectors row does not parse back to its slots, layout and spill"
        );
        Ok(())
    }

    /// The row's layout (a coded row's table, and how many floats it escapes).
    pub(crate) fn layout(&self) -> Layout {
        match self.table {
            None => Layout::Raw,
            Some(table) => Layout::Coded {
                table,
                escapes: self.end - self.escapes_at(),
            },
        }
    }

    /// Where a coded row's blocks start.
    fn blocks_at(&self) -> usize {
        VECTORS_HEAD + self.count * 4 + vector_code::TABLE_LEN
    }

    /// Where a coded row's escaped values start.
    fn escapes_at(&self) -> usize {
        self.blocks_at() + self.count * vector_code::block_len(self.dimension).unwrap_or(0)
    }

    /// Whether the row carries the last bytes of its document's chunks row.
    pub(crate) fn has_spill(&self) -> bool {
        !self.spill().is_empty()
    }

    /// The last bytes of the document's encoded chunks row, carried after the vectors.
    fn spill(&self) -> &'a [u8] {
        self.bytes.get(self.end..).unwrap_or_default()
    }

    /// This row encoded again, in its own layout, its vectors and the bytes it carries (the
    /// harness checks that a parsed row round-trips).
    #[cfg(any(test, feature = "testkit"))]
    pub(crate) fn reencode(&self) -> Result<Vec<u8>, Corruption> {
        let mut copies = Vec::with_capacity(self.count);
        for vector in self.vectors() {
            let mut scratch = Vec::new();
            copies.push((vector.slot(), vector.le_bytes(&mut scratch).to_vec()));
        }
        let entries: Vec<(u32, VectorData<'_>)> = copies
            .iter()
            .map(|(slot, bytes)| (*slot, VectorData::Raw(bytes)))
            .collect();
        if entries.len() != self.count {
            return Err(Corruption::new("vectors row", "a position is unreadable"));
        }
        VectorsRow::encode_as(&entries, self.layout(), self.spill())
    }

    /// The row in the raw layout, its spill kept: itself when it is raw, its vectors
    /// decoded when it is coded (a rewrite of the revision copies its vectors from it).
    pub(crate) fn to_raw(self) -> std::borrow::Cow<'a, [u8]> {
        if self.table.is_none() {
            return std::borrow::Cow::Borrowed(self.bytes);
        }
        let spill = self.spill();
        let mut out =
            Vec::with_capacity(VECTORS_HEAD + self.count * (4 + self.dimension * 4) + spill.len());
        out.extend_from_slice(&(self.count as u32).to_le_bytes());
        out.extend_from_slice(&(self.dimension as u32).to_le_bytes());
        out.extend_from_slice(&self.bytes[VECTORS_HEAD..VECTORS_HEAD + self.count * 4]);
        for vector in self.vectors() {
            vector.for_each_bits(|b| out.extend_from_slice(&b.to_le_bytes()));
        }
        out.extend_from_slice(spill);
        std::borrow::Cow::Owned(out)
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

    /// The vectors in position order, each decoded when asked ([`RowVector`]).
    pub(crate) fn vectors(&self) -> RowVectors<'a> {
        RowVectors {
            row: *self,
            position: 0,
            escape_at: 0,
        }
    }

    /// The vector at `position` (a coded row counts the escapes of the vectors before it, so
    /// readers of every vector go through [`VectorsRow::vectors`]).
    #[cfg(any(test, feature = "testkit"))]
    pub(crate) fn vector_at(&self, position: usize) -> Option<RowVector<'a>> {
        self.vectors().nth(position)
    }

    /// The vector at `position`, decoded (readers of every vector go through
    /// [`VectorsRow::vectors`]).
    #[cfg(any(test, feature = "testkit"))]
    pub(crate) fn vector(&self, position: usize) -> Option<Vec<f32>> {
        let vector = self.vector_at(position)?;
        let mut out = Vec::with_capacity(self.dimension);
        vector.extend_floats(&mut out);
        Some(out)
    }

    /// Whether the vector at `position` is bit-identical to `vector` (the harness's check).
    #[cfg(any(test, feature = "testkit"))]
    pub(crate) fn same_vector(&self, position: usize, vector: &[f32]) -> bool {
        self.vector_at(position).is_some_and(|stored| {
            let mut scratch = Vec::new();
            same_vector(stored.le_bytes(&mut scratch), vector)
        })
    }

    /// Every `(slot, vector bytes)` in position order, of a raw row ([`VectorsRow::to_raw`]
    /// gives one); a coded row's floats are not stored as bytes to borrow.
    pub(crate) fn raw_entries(&self) -> Result<Vec<(u32, &'a [u8])>, Corruption> {
        self.vectors()
            .map(|v| {
                v.raw().map(|bytes| (v.slot(), bytes)).ok_or_else(|| {
                    Corruption::new("vectors row", "a coded row's vectors read as raw bytes")
                })
            })
            .collect()
    }
}

/// A [`VectorsRow`]'s vectors in position order.
#[derive(Clone, Debug)]
pub(crate) struct RowVectors<'a> {
    row: VectorsRow<'a>,
    position: usize,
    /// The escaped values of a coded row's vectors before `position`.
    escape_at: usize,
}

impl<'a> Iterator for RowVectors<'a> {
    type Item = RowVector<'a>;

    fn next(&mut self) -> Option<RowVector<'a>> {
        let slot = self.row.slot(self.position)?;
        let vector = RowVector {
            row: self.row,
            slot,
            position: self.position,
            escape_at: self.escape_at,
        };
        if self.row.table.is_some() {
            self.escape_at +=
                vector_code::count_escapes(vector.block(), self.row.dimension).unwrap_or(0);
        }
        self.position += 1;
        Some(vector)
    }
}

/// One vector of a parsed [`VectorsRow`]: borrowed bytes in a raw row, decoded when read in
/// a coded one.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RowVector<'a> {
    row: VectorsRow<'a>,
    slot: u32,
    position: usize,
    /// Where its escaped values start among the row's (a coded row).
    escape_at: usize,
}

impl<'a> RowVector<'a> {
    /// Its slot.
    pub(crate) fn slot(&self) -> u32 {
        self.slot
    }

    /// Its bytes in the row: little-endian floats in a raw row, a block in a coded one.
    fn block(&self) -> &'a [u8] {
        let row = &self.row;
        let (at, width) = match row.table {
            None => (
                VECTORS_HEAD + row.count * 4 + self.position * row.dimension * 4,
                row.dimension * 4,
            ),
            Some(_) => {
                let block = vector_code::block_len(row.dimension).unwrap_or(0);
                (row.blocks_at() + self.position * block, block)
            }
        };
        row.bytes.get(at..at + width).unwrap_or_default()
    }

    /// Its little-endian floats as the row stores them, if the row is raw.
    pub(crate) fn raw(&self) -> Option<&'a [u8]> {
        self.row.table.is_none().then(|| self.block())
    }

    /// Hands each float's bit pattern to `put`, in order.
    pub(crate) fn for_each_bits(&self, mut put: impl FnMut(u32)) {
        match self.raw() {
            Some(bytes) => {
                for c in bytes.chunks_exact(4) {
                    put(u32::from_le_bytes([c[0], c[1], c[2], c[3]]));
                }
            }
            None => {
                let mut floats = vec![0.0f32; self.row.dimension];
                self.decode_into(&mut floats);
                floats.iter().for_each(|x| put(x.to_bits()));
            }
        }
    }

    /// Appends its floats to `out`.
    pub(crate) fn extend_floats(&self, out: &mut Vec<f32>) {
        match self.raw() {
            Some(bytes) => extend_floats(bytes, out),
            None => {
                let start = out.len();
                out.resize(start + self.row.dimension, 0.0);
                self.decode_into(&mut out[start..]);
            }
        }
    }

    /// Writes its floats over `out`, which is as long as the vector (`false`, and `out`
    /// untouched, when it is not or the vector's bytes cannot hold it).
    pub(crate) fn decode_into(&self, out: &mut [f32]) -> bool {
        if out.len() != self.row.dimension {
            return false;
        }
        match self.row.table {
            None => {
                let block = self.block();
                if block.len() != out.len() * 4 {
                    return false;
                }
                for (o, c) in out.iter_mut().zip(block.chunks_exact(4)) {
                    *o = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
                }
                true
            }
            Some(table) => {
                let escapes = self
                    .row
                    .bytes
                    .get(self.row.escapes_at() + self.escape_at..self.row.end)
                    .unwrap_or_default();
                vector_code::decode_block(self.block(), self.row.dimension, &table, escapes, out)
            }
        }
    }

    /// Its little-endian floats: borrowed from a raw row, decoded into `scratch` from a
    /// coded one.
    #[cfg(any(test, feature = "testkit"))]
    pub(crate) fn le_bytes<'b>(&self, scratch: &'b mut Vec<u8>) -> &'b [u8]
    where
        'a: 'b,
    {
        if let Some(bytes) = self.raw() {
            return bytes;
        }
        scratch.clear();
        scratch.reserve(self.row.dimension * 4);
        self.for_each_bits(|b| scratch.extend_from_slice(&b.to_le_bytes()));
        scratch
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

/// Little-endian f32 bytes to floats appended to `out` (a trailing partial float is
/// ignored; the index load decodes every vector into one reused buffer).
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
    use crate::backend::redb::schema::ChunkEntry;

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
        let bytes = super::super::rows::encode_chunks_row(&row, None);
        for at in [0, 1, 40, bytes.len() - 1, bytes.len()] {
            let (rest, spill) = bytes.split_at(at);
            assert_eq!(
                decode_chunks(rest, spill, None).ok().as_ref(),
                Some(&row),
                "{at}"
            );
        }
        // A row with its spill missing is a corruption, not a panic.
        assert!(decode_chunks(&bytes[..100], &[], None).is_err());
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
        let bytes = super::super::rows::encode_chunks_row(&row, None);
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
                let text = join_chunk_of_slot(rest, &parsed, chunk.slot, None, |at| {
                    (
                        at.generation,
                        at.count,
                        at.chunk.map(|(p, c)| (p, c.text.into_owned())),
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
        let one = VectorsRow::encoded_len(&[(0, VectorData::Raw(&[0; 1536]))], Layout::Raw);
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
        let vectors =
            VectorsRow::encoded_len(&vec![(0, VectorData::Raw(&[0; 1536])); 8], Layout::Raw);
        assert_eq!(vectors, 8 + 8 * (4 + 1536));
        let spill = spill_len(vectors, 8_400);
        assert_eq!(vectors + spill + LEAF_MARGIN, 4 * REDB_PAGE);
        // Never more than the chunks row has.
        assert_eq!(spill_len(vectors, 10), 10);
        assert_eq!(spill_len(usize::MAX - 10, 10), 0);
    }

    /// A normalised vector of `dimension` gaussian floats (a MiniLM-like embedding), from
    /// a small deterministic generator.
    fn embedding(seed: u64, dimension: usize) -> Vec<f32> {
        let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        let mut uniform = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            ((state >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        };
        let v: Vec<f64> = (0..dimension)
            .map(|_| (-2.0 * uniform().ln()).sqrt() * (std::f64::consts::TAU * uniform()).cos())
            .collect();
        let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
        v.iter().map(|x| (x / norm) as f32).collect()
    }

    #[test]
    fn coded_rows_round_trip_bit_for_bit() {
        let a = embedding(1, 384);
        let mut b = embedding(2, 384);
        b[0] = -0.0;
        b[1] = f32::MIN_POSITIVE / 5.0;
        b[2] = f32::from_bits(0x7fc1_2345);
        b[3] = f32::NEG_INFINITY;
        let raw: Vec<u8> = a.iter().flat_map(|x| x.to_le_bytes()).collect();
        let entries = [(4, VectorData::Raw(&raw)), (9, VectorData::Floats(&b))];
        let bytes = VectorsRow::encode_coded(&entries, b"spilled").unwrap_or_default();
        let Ok(row) = VectorsRow::parse(&bytes) else {
            panic!("a coded row parses");
        };
        assert!(matches!(row.layout(), Layout::Coded { .. }));
        assert_eq!(
            bytes.len(),
            VectorsRow::encoded_len(&entries, row.layout()) + 7
        );
        assert!(bytes.len() < VectorsRow::encoded_len(&entries, Layout::Raw));
        assert_eq!(row.slots().collect::<Vec<_>>(), vec![4, 9]);
        assert_eq!(row.spill(), b"spilled");
        for (position, expected) in [&a, &b].into_iter().enumerate() {
            let back = row.vector(position).unwrap_or_default();
            assert_eq!(
                back.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                expected.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                "{position}"
            );
            assert!(row.same_vector(position, expected));
        }
        assert_eq!(row.reencode().ok().as_ref(), Some(&bytes));
        // Its raw layout: the same slots, floats and spill.
        let raw_row = row.to_raw();
        let Ok(back) = VectorsRow::parse(&raw_row) else {
            panic!("the raw layout parses");
        };
        assert_eq!(back.layout(), Layout::Raw);
        assert_eq!(back.spill(), b"spilled");
        assert!(back.same_vector(0, &a) && back.same_vector(1, &b));
        assert!(row.raw_entries().is_err());
        assert_eq!(back.raw_entries().map(|e| e.len()).ok(), Some(2));
    }

    #[test]
    fn a_row_is_coded_only_where_it_saves_page_bytes() {
        // A 384-d embedding: 1,548 bytes raw, two to a leaf; coded, three.
        let v = embedding(7, 384);
        let one = [(0, VectorData::Floats(&v))];
        let layout = Layout::for_entries(&one);
        assert!(matches!(layout, Layout::Coded { .. }), "{layout:?}");
        let coded = VectorsRow::encoded_len(&one, layout);
        assert!(coded <= 1352, "{coded}");
        assert_eq!(page_share(1548), (REDB_PAGE - LEAF_HEADER) / 2);
        assert_eq!(page_share(coded), (REDB_PAGE - LEAF_HEADER) / 3);
        // Its spill is reckoned from the coded length: three rows with their spills still
        // fit a leaf.
        let spill = (0..REDB_PAGE)
            .rev()
            .find(|&c| spill_len(coded, c) == c)
            .unwrap_or(0);
        assert!(LEAF_HEADER + 3 * (LEAF_ENTRY + coded + spill) <= REDB_PAGE);
        let rows = RevisionRows::split(&[7u8; 3], &one);
        assert_eq!(rows.vectors_row_len(), coded + 3);
        let bytes = rows.vectors_row(&one).unwrap_or_default();
        assert!(VectorsRow::parse(&bytes).is_ok_and(|r| r.same_vector(0, &v)));
        // Eight of them: a 16 KiB run raw or coded, so raw (no decode where nothing is saved).
        let eight = vec![(0, VectorData::Floats(&v)); 8];
        assert_eq!(Layout::for_entries(&eight), Layout::Raw);
        // Floats whose exponents are all over the place code no shorter: raw.
        let wild: Vec<f32> = (0..384u32)
            .map(|i| f32::from_bits(i.wrapping_mul(0x9e37_79b9)))
            .collect();
        assert_eq!(
            Layout::for_entries(&[(0, VectorData::Floats(&wild))]),
            Layout::Raw
        );
        // An empty row is raw.
        assert_eq!(Layout::for_entries(&[]), Layout::Raw);
        // Page shares: a leaf's share down to a page, then power-of-two runs.
        assert!(!saves_pages(1400, 1548) && saves_pages(1352, 1548));
        assert!(!saves_pages(10_411, 12_328) && saves_pages(8_000, 8_200));
    }

    #[test]
    fn corrupt_coded_rows_are_corruption_not_panics() {
        let v = embedding(3, 20);
        let w = embedding(4, 20);
        let bytes = VectorsRow::encode_coded(
            &[(0, VectorData::Floats(&v)), (1, VectorData::Floats(&w))],
            b"tail",
        )
        .unwrap_or_default();
        assert!(VectorsRow::parse(&bytes).is_ok());
        // Every truncation and every single-byte change parses or is refused, never
        // panics; what parses reads back.
        for cut in 0..bytes.len() {
            let _ = VectorsRow::parse(&bytes[..cut]).map(|r| r.vector(1));
        }
        for at in 0..bytes.len() {
            for x in [0x01u8, 0x80, 0xff] {
                let mut bad = bytes.clone();
                bad[at] ^= x;
                if let Ok(row) = VectorsRow::parse(&bad) {
                    let _ = (row.vector(0), row.vector(1), row.to_raw());
                    assert_eq!(row.reencode().ok().as_ref(), Some(&bad), "{at} {x}");
                }
            }
        }
        // A coded row without vectors; a table with a repeated value.
        assert!(VectorsRow::parse(&[0, 0, 0, 0, 0, 0, 0, 0x80]).is_err());
        let table_at = VECTORS_HEAD + 2 * 4;
        let mut repeated = bytes.clone();
        repeated[table_at + 1] = repeated[table_at];
        assert!(VectorsRow::parse(&repeated).is_err());
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
