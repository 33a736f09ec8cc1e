//! Serialising a graph's links to byte blobs and back (the `index_snapshot` table).
//!
//! Only the links are written: the vectors are already in the file (the `vectors` rows,
//! loaded into the exact store at open), so a point's vector comes from there when the
//! snapshot is loaded. Each point carries a fingerprint of the vector it was inserted with
//! (formats 7 and 6: the CRC-32 of its bytes; formats 5 and 3: the first 8 bytes of its
//! blake3 hash), so a point whose id now has another vector is recognised and marked dead
//! (its id scored outside the graph), as is a point whose id is gone. A fingerprint decides
//! only that: a loaded point is given its id's current vector either way, so a replaced
//! vector a fingerprint failed to tell apart would leave a point whose links were chosen
//! for the old vector, never a wrong distance. That is why a fast checksum (CRC-32,
//! hardware-assisted, `crc32fast`) suffices where formats 5 and 3 hashed with blake3.
//!
//! ```text
//! blob 0: header (HEADER_LEN bytes, little-endian)
//!   0  magic "RATCHNSW"              8  format version u32 (7; 6, 5 and 3 are read too)
//!   12 metric u8 (0 cosine, 1 l2, 2 dot)
//!   13 slot width u8: format 7, in bits (the fewest that hold n - 1, at least 1);
//!      formats 5 and 6, in bytes; 0 in format 3
//!   14 reserved 2 bytes (0)
//!   16 dimension u64                24 number of points n u64
//!   32 M u32                        36 ef_construction u32
//!   40 entry slot u32 (u32::MAX: none)     44 number of payload parts u32
//!   48 payload bytes u64 (format 3: upper-layer words)   56 reserved u64 (0)
//!   64 blake3(header[0..64] ++ payload), 32 bytes
//! blob 1..: payload, cut into parts of at most MAX_PART_BYTES (one page with its leaf):
//!   format 7:
//!     ids: in slot order, each after the one before (the first: after 0), split into a
//!       high part (bits 24 and up: a store's document) and a low part (its slot): one
//!       varint (bincode's layout, `crate::varint`) of (zigzagged difference << 2) | tag: tag 0, the same high part
//!       and the difference of the low parts; tag 1, the difference of the high parts and
//!       a low part of 0; tag 2, the same followed by a varint of the low part (a
//!       document's next slot, and the next document's first, take one byte)
//!     fingerprints u32 x n (CRC-32), levels u8 x n,
//!     link counts, varints: the n layer-0 rows', then the upper rows' (per point of
//!       level L > 0, in slot order, L counts, layer 1 first),
//!     links, one bit stream (least significant bit first), the rows in the counts'
//!       order: a row's slots sorted ascending, the first in `w` bits (header byte 13);
//!       if it has more, a 6-bit width g, then each next slot's distance from the one
//!       before in g bits; the stream padded with zero bits to a whole byte
//!   formats 5 and 6 (earlier builds):
//!     ids u64 x n, fingerprints u64 x n (format 6: CRC-32 in the low 4 bytes),
//!     levels u8 x n, layer-0 link counts u16 x n, upper link counts u16 x (sum of
//!     levels), links: every row's used slots in the counts' order, w bytes each
//!   formats 6 and 7, last: the traversal's quantiser (see `quantize`): when present, its
//!     low then step values, f32 x dim each; then one byte: 2 if present (4-bit codes), 1
//!     if present but for the 8-bit codes of earlier builds, 0 if not
//!   format 3 (earlier builds): ids and fingerprints as in 5, levels u8 x n,
//!     layer 0 rows u32 x n x (2M + 1)  (count, then 2M neighbour slots),
//!     upper rows u32 x (upper-layer words): per point of level L > 0, in slot order,
//!     L rows of (count, then M neighbour slots)
//! ```
//!
//! Format 7 is format 6 written smaller (about 0.6 of its bytes on 10,000 MiniLM
//! vectors; `docs/design.md`, "The graph snapshot"). A row's slots are stored sorted: the
//! traversal's result does not depend on the order of a row (every candidate is ranked by
//! distance, then slot), so a reloaded graph answers every search as the saved one did.
//! Format 6 is format 5 with the quantiser at the end, so that a loaded graph codes its
//! vectors as the graph that was saved did; a format-5 snapshot, or one holding an 8-bit
//! quantiser (byte 1), loads with a quantiser fitted anew to the loaded vectors. Format 5
//! writes only the links a row has (format 3 wrote every row at its capacity, `2M` slots
//! of 4 bytes at layer 0, whether used or not).
//!
//! Each part fills one page with its leaf's header, so every page of the snapshot is a
//! single page, which compaction can move into any free page (compaction moves a run of
//! pages only into a free, aligned run of its size, so a run it cannot place stops it with
//! the free pages below). Parts of any size are read, as earlier builds wrote larger ones.
//!
//! Loading checks the lengths and the checksum before trusting any other field, then
//! every field the graph relies on (ids and counts that decode, counts within their rows,
//! neighbour slots below n, a link stream that ends where the payload does, levels, the
//! entry, unique ids); any failure is [`IndexError::Corrupted`]. A snapshot of another
//! format version (among them version 2, the `hnsw_rs` dump earlier builds wrote, and
//! version 4, the layout of a branch that was merged and reverted) is
//! [`IndexError::Incompatible`]: the store ignores it and rebuilds the graph.

use std::sync::atomic::{AtomicU32, Ordering};

use super::graph::{GraphParts, Hnsw, MAX_LEVEL};
use super::hnsw::Graph;
use super::membership::Membership;
use super::quantize::Quantizer;
use super::workers::{map_in_halves, PARALLEL_MIN};
use super::{IdSet, IndexError, Metric};
use crate::options::MAX_INDEX_EF_CONSTRUCTION;
use crate::sys::advise_huge_pages;
use crate::varint::{self, put as put_varint};

/// First bytes of a snapshot header.
pub(crate) const MAGIC: [u8; 8] = *b"RATCHNSW";
/// Version of the envelope and of the links layout it carries (written).
pub(crate) const FORMAT_VERSION: u32 = 7;
/// Fixed-width ids, fingerprints, counts and slots, with the quantiser (earlier builds):
/// still read.
const FIXED_WIDTH_VERSION: u32 = 6;
/// Format 6's links without the quantiser (earlier builds): still read.
const NO_QUANTIZER_VERSION: u32 = 5;
/// The fixed-width layout of earlier builds (every row at its capacity): still read.
const FIXED_ROWS_VERSION: u32 = 3;
/// The last version that held an `hnsw_rs` dump (recognised, never loaded).
const HNSW_RS_DUMP_VERSION: u32 = 2;
/// Length of blob 0.
pub(crate) const HEADER_LEN: usize = 96;
/// Largest payload part written: what one 4 KiB leaf page holds beside its header (4
/// bytes), the part's `u32` key and its value's end offset (4 bytes each), so that each part
/// is one page (a larger value takes a run of pages rounded up to a power of two, which
/// compaction cannot always move; see the module docs).
pub(crate) const MAX_PART_BYTES: usize = 4096 - 12;
/// Offset of the checksum in the header.
const CHECKSUM_AT: usize = 64;
/// Largest `M` a snapshot may announce: what `Options::index` allows (a larger one is no
/// store's, and would size every row's link words from a small payload).
const MAX_M: u32 = crate::options::MAX_INDEX_M as u32;

fn corrupted(detail: impl Into<String>) -> IndexError {
    IndexError::Corrupted {
        detail: detail.into(),
    }
}

fn incompatible(detail: impl Into<String>) -> IndexError {
    IndexError::Incompatible {
        detail: detail.into(),
    }
}

/// Floats of a vector copied into one fingerprint update: one blake3 chunk (1 KiB).
const FINGERPRINT_FLOATS: usize = 256;

/// How a snapshot's points fingerprint their vectors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fingerprint {
    /// Format 6: the CRC-32 of the vector's little-endian bytes ([`fingerprint_crc32`]).
    Crc32,
    /// Formats 3 and 5: the first 8 bytes of blake3 over them ([`fingerprint_blake3`]).
    Blake3,
}

impl Fingerprint {
    /// The fingerprint of `vector` of this kind.
    pub(crate) fn of(self, vector: &[f32]) -> u64 {
        match self {
            Fingerprint::Crc32 => fingerprint_crc32(vector),
            Fingerprint::Blake3 => fingerprint_blake3(vector),
        }
    }
}

/// Feeds `vector`'s little-endian bytes to `update`, a blake3 chunk's worth at a time (an
/// update per float cost a quarter of a reopen at 384-d).
fn le_bytes_in_chunks(vector: &[f32], mut update: impl FnMut(&[u8])) {
    let mut bytes = [0u8; FINGERPRINT_FLOATS * 4];
    for floats in vector.chunks(FINGERPRINT_FLOATS) {
        for (out, x) in bytes.chunks_exact_mut(4).zip(floats) {
            out.copy_from_slice(&x.to_le_bytes());
        }
        update(&bytes[..floats.len() * 4]);
    }
}

/// Format 6's fingerprint of a vector: the CRC-32 of its little-endian bytes.
pub(crate) fn fingerprint_crc32(vector: &[f32]) -> u64 {
    let mut hasher = crc32fast::Hasher::new();
    le_bytes_in_chunks(vector, |bytes| hasher.update(bytes));
    u64::from(hasher.finalize())
}

/// Formats 3 and 5's fingerprint of a vector: the first 8 bytes of blake3 over its
/// little-endian bytes.
pub(crate) fn fingerprint_blake3(vector: &[f32]) -> u64 {
    let mut hasher = blake3::Hasher::new();
    le_bytes_in_chunks(vector, |bytes| {
        hasher.update(bytes);
    });
    let hash = hasher.finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&hash.as_bytes()[..8]);
    u64::from_le_bytes(first)
}

/// The fewest bytes that hold every slot below `n` (at least 1): formats 5 and 6.
#[cfg(any(test, feature = "testkit"))]
fn slot_width(n: usize) -> usize {
    slot_bits(n).div_ceil(8)
}

/// The fewest bits that hold every slot below `n` (at least 1): format 7's `w`.
fn slot_bits(n: usize) -> usize {
    let largest = n.saturating_sub(1) as u64;
    (64 - largest.leading_zeros() as usize).max(1)
}

/// The fewest bits that hold `value` (0 for 0).
fn bits_of(value: u32) -> usize {
    32 - value.leading_zeros() as usize
}

/// Bits of format 7's per-row width of the distances between sorted slots (it is at most
/// 32).
const GAP_WIDTH_BITS: usize = 6;

/// The varint at the start of `bytes` (`crate::varint`), and what follows it; `None` if it
/// does not read.
fn take_varint(bytes: &[u8]) -> Option<(u64, &[u8])> {
    varint::take(bytes).ok()
}

/// Where format 7 splits an id: a store's vector id keeps its document in the bits above
/// and the document's slot in the 24 below (`schema::SLOT_BITS`).
const ID_LOW_BITS: u32 = 24;
const ID_LOW_MASK: u64 = (1 << ID_LOW_BITS) - 1;

/// The two bits at the bottom of a format-7 id's varint: how the id follows the one before.
const SAME_HIGH: u64 = 0;
/// ... a new high part, the low part 0 (a new document's first slot).
const NEW_HIGH_LOW_ZERO: u64 = 1;
/// ... a new high part, the low part in a varint of its own.
const NEW_HIGH: u64 = 2;

fn zigzag(delta: i64) -> u64 {
    ((delta << 1) ^ (delta >> 63)) as u64
}

fn unzigzag(value: u64) -> i64 {
    ((value >> 1) as i64) ^ -((value & 1) as i64)
}

/// Format 7's bytes of `id` after `previous` (the ids of the points in slot order): split
/// at [`ID_LOW_BITS`], one varint of `(difference << 2) | tag`: the zigzagged difference of
/// the low parts when the high parts are equal ([`SAME_HIGH`]), else of the high parts
/// ([`NEW_HIGH_LOW_ZERO`], or [`NEW_HIGH`] followed by the low part's own varint). A
/// document's next slot, and the next document's first slot, take one byte each.
fn put_id(out: &mut Vec<u8>, previous: u64, id: u64) {
    let (high, low) = (id >> ID_LOW_BITS, id & ID_LOW_MASK);
    let (previous_high, previous_low) = (previous >> ID_LOW_BITS, previous & ID_LOW_MASK);
    // Both parts are below 2^40, so their differences and the shifted tags fit.
    if high == previous_high {
        put_varint(
            out,
            zigzag(low as i64 - previous_low as i64) << 2 | SAME_HIGH,
        );
    } else {
        let step = zigzag(high as i64 - previous_high as i64) << 2;
        if low == 0 {
            put_varint(out, step | NEW_HIGH_LOW_ZERO);
        } else {
            put_varint(out, step | NEW_HIGH);
            put_varint(out, low);
        }
    }
}

/// Reverses [`put_id`]: the id after `previous` at the start of `bytes`, and what follows;
/// `None` for bytes no id makes.
fn take_id(bytes: &[u8], previous: u64) -> Option<(u64, &[u8])> {
    let (value, rest) = take_varint(bytes)?;
    let (previous_high, previous_low) = (previous >> ID_LOW_BITS, previous & ID_LOW_MASK);
    let step = unzigzag(value >> 2);
    let part = |previous: u64, limit: u64| {
        i64::try_from(previous)
            .ok()?
            .checked_add(step)
            .and_then(|part| u64::try_from(part).ok())
            .filter(|&part| part <= limit)
    };
    match value & 3 {
        SAME_HIGH => {
            let low = part(previous_low, ID_LOW_MASK)?;
            Some(((previous_high << ID_LOW_BITS) | low, rest))
        }
        NEW_HIGH_LOW_ZERO => {
            let high = part(previous_high, u64::MAX >> ID_LOW_BITS)?;
            Some((high << ID_LOW_BITS, rest))
        }
        NEW_HIGH => {
            let high = part(previous_high, u64::MAX >> ID_LOW_BITS)?;
            let (low, rest) = take_varint(rest)?;
            (low <= ID_LOW_MASK).then_some(((high << ID_LOW_BITS) | low, rest))
        }
        _ => None,
    }
}

/// A bit stream written least significant bit first (format 7's links).
struct BitWriter {
    bytes: Vec<u8>,
    pending: u64,
    pending_bits: usize,
}

impl BitWriter {
    fn new() -> BitWriter {
        BitWriter {
            bytes: Vec::new(),
            pending: 0,
            pending_bits: 0,
        }
    }

    /// Appends the low `bits` (at most 32) of `value`.
    fn put(&mut self, value: u32, bits: usize) {
        debug_assert!(bits <= 32 && (bits == 32 || value >> bits == 0));
        self.pending |= u64::from(value) << self.pending_bits;
        self.pending_bits += bits;
        while self.pending_bits >= 8 {
            self.bytes.push(self.pending as u8);
            self.pending >>= 8;
            self.pending_bits -= 8;
        }
    }

    /// The stream, padded with zero bits to a whole byte.
    fn finish(mut self) -> Vec<u8> {
        if self.pending_bits > 0 {
            self.bytes.push(self.pending as u8);
        }
        self.bytes
    }
}

/// Reads a [`BitWriter`]'s stream.
struct BitReader<'a> {
    bytes: &'a [u8],
    next: usize,
    pending: u64,
    pending_bits: usize,
}

impl<'a> BitReader<'a> {
    fn new(bytes: &'a [u8]) -> BitReader<'a> {
        BitReader {
            bytes,
            next: 0,
            pending: 0,
            pending_bits: 0,
        }
    }

    /// The next `bits` (at most 32) bits; `None` past the stream's end.
    fn take(&mut self, bits: usize) -> Option<u32> {
        if self.pending_bits < bits {
            // Four bytes at a time where the stream has them (fewer than 32 bits pending,
            // so they fit), else byte by byte.
            match self.bytes.get(self.next..self.next + 4) {
                Some(&[a, b, c, d]) => {
                    self.pending |=
                        u64::from(u32::from_le_bytes([a, b, c, d])) << self.pending_bits;
                    self.pending_bits += 32;
                    self.next += 4;
                }
                _ => {
                    while self.pending_bits < bits {
                        let byte = *self.bytes.get(self.next)?;
                        self.next += 1;
                        self.pending |= u64::from(byte) << self.pending_bits;
                        self.pending_bits += 8;
                    }
                }
            }
        }
        let value = (self.pending & ((1u64 << bits) - 1)) as u32;
        self.pending >>= bits;
        self.pending_bits -= bits;
        Some(value)
    }

    /// Whether the stream ended here: every byte read, and what is left of the last one
    /// zero padding.
    fn at_end(&self) -> bool {
        self.next == self.bytes.len() && self.pending_bits < 8 && self.pending == 0
    }
}

/// A row of links (a count, then `cap` slots), in format 7: its count appended to
/// `counts`, and its used slots, sorted (in `scratch`), to `links` (`bits`: format 7's
/// `w`). Returns `false`, writing nothing, for a row linking to a slot `bits` cannot hold
/// (no graph has one: the snapshot is refused rather than written unreadable).
fn encode_row(
    row: &[AtomicU32],
    cap: usize,
    bits: usize,
    scratch: &mut Vec<u32>,
    counts: &mut Vec<u8>,
    links: &mut BitWriter,
) -> bool {
    let Some((count, slots)) = row.split_first() else {
        return true;
    };
    let count = (count.load(Ordering::Relaxed) as usize)
        .min(cap)
        .min(slots.len());
    scratch.clear();
    scratch.extend(slots[..count].iter().map(|s| s.load(Ordering::Relaxed)));
    scratch.sort_unstable();
    if scratch
        .last()
        .is_some_and(|&slot| bits < 32 && slot >> bits != 0)
    {
        return false;
    }
    put_varint(counts, scratch.len() as u64);
    let Some((&first, more)) = scratch.split_first() else {
        return true;
    };
    links.put(first, bits);
    if more.is_empty() {
        return true;
    }
    let widest = scratch
        .windows(2)
        .map(|pair| pair[1] - pair[0])
        .max()
        .unwrap_or(0);
    let gap_bits = bits_of(widest);
    links.put(gap_bits as u32, GAP_WIDTH_BITS);
    for pair in scratch.windows(2) {
        links.put(pair[1] - pair[0], gap_bits);
    }
    true
}

/// Serialises `graph`'s links into blobs (header first), in format [`FORMAT_VERSION`]. The
/// caller must keep inserts into `graph` from running meanwhile (the blobs must be one
/// state).
pub(crate) fn to_blobs(graph: &Graph) -> Result<Vec<Vec<u8>>, IndexError> {
    let links = graph.links();
    let GraphParts {
        m,
        ef_construction,
        ids,
        levels,
        entry,
        quant,
        ..
    } = links.parts_without_links();
    let mut fingerprints = Vec::with_capacity(ids.len());
    links.for_each_vector(|_, vector| fingerprints.push(fingerprint_crc32(vector)));
    let n = ids.len();
    let too_large = |what: &str| IndexError::Graph {
        detail: format!("{what} does not fit the snapshot format"),
    };
    // A row holds at most 2 * MAX_M links.
    if m > MAX_M as usize {
        return Err(too_large("M"));
    }
    let bits = slot_bits(n);
    let mut id_bytes = Vec::with_capacity(n * 2);
    let mut previous = 0;
    for &id in &ids {
        put_id(&mut id_bytes, previous, id);
        previous = id;
    }
    let mut counts = Vec::with_capacity(n);
    let mut stream = BitWriter::new();
    let mut scratch = Vec::with_capacity(2 * m);
    // Encoded from the graph's rows in place (a plain copy of every link first was 53 MB
    // of a 400k build's peak).
    let mut fits = true;
    links.for_each_row(|row, cap| {
        fits &= encode_row(row, cap, bits, &mut scratch, &mut counts, &mut stream);
    });
    if !fits {
        return Err(IndexError::Graph {
            detail: format!("a link past the graph's {n} points"),
        });
    }
    let link_bytes = stream.finish();
    let mut quant_bytes = Vec::new();
    match &quant {
        Some(quant) => {
            quant.to_bytes(&mut quant_bytes);
            quant_bytes.push(QUANTIZER_4_BIT);
        }
        None => quant_bytes.push(0),
    }
    let payload_len = id_bytes.len() + n * 5 + counts.len() + link_bytes.len() + quant_bytes.len();
    let part_count = payload_len.div_ceil(MAX_PART_BYTES);
    let mut header = Vec::with_capacity(HEADER_LEN);
    header.extend_from_slice(&MAGIC);
    header.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    header.push(graph.metric().tag());
    header.push(bits as u8);
    header.extend_from_slice(&[0, 0]);
    header.extend_from_slice(&(graph.dim() as u64).to_le_bytes());
    header.extend_from_slice(&(n as u64).to_le_bytes());
    header.extend_from_slice(&u32::try_from(m).map_err(|_| too_large("M"))?.to_le_bytes());
    header.extend_from_slice(
        &u32::try_from(ef_construction)
            .map_err(|_| too_large("ef_construction"))?
            .to_le_bytes(),
    );
    header.extend_from_slice(&entry.unwrap_or(u32::MAX).to_le_bytes());
    header.extend_from_slice(
        &u32::try_from(part_count)
            .map_err(|_| too_large("the part count"))?
            .to_le_bytes(),
    );
    header.extend_from_slice(&(payload_len as u64).to_le_bytes());
    header.extend_from_slice(&0u64.to_le_bytes());
    debug_assert_eq!(header.len(), CHECKSUM_AT);
    // The payload is written straight into its parts (never whole in one buffer, then
    // copied into them), hashed as it goes.
    let mut parts = Parts::new(&header, payload_len);
    parts.write(&id_bytes);
    drop(id_bytes);
    for &fp in &fingerprints {
        // CRC-32s: the high half is zero.
        parts.write(&(fp as u32).to_le_bytes());
    }
    parts.write(&levels);
    parts.write(&counts);
    drop(counts);
    parts.write(&link_bytes);
    drop(link_bytes);
    parts.write(&quant_bytes);
    let (checksum, payload, written) = parts.finish();
    if written != payload_len {
        // The header announces `payload_len`: a snapshot that says otherwise would only be
        // refused on load; refuse to write it.
        return Err(IndexError::Graph {
            detail: format!("a snapshot payload of {written} bytes announced as {payload_len}"),
        });
    }
    header.extend_from_slice(checksum.as_bytes());
    debug_assert_eq!(header.len(), HEADER_LEN);
    let mut blobs = Vec::with_capacity(1 + payload.len());
    blobs.push(header);
    blobs.extend(payload);
    Ok(blobs)
}

/// A snapshot's payload cut into parts of [`MAX_PART_BYTES`] as it is written, and its
/// checksum (blake3 of the header, then of the payload).
struct Parts {
    parts: Vec<Vec<u8>>,
    hasher: blake3::Hasher,
    written: usize,
    /// The payload's announced length (each part is allocated at the size it will have).
    total: usize,
}

impl Parts {
    fn new(header: &[u8], total: usize) -> Parts {
        let mut hasher = blake3::Hasher::new();
        hasher.update(header);
        Parts {
            parts: Vec::with_capacity(total.div_ceil(MAX_PART_BYTES)),
            hasher,
            written: 0,
            total,
        }
    }

    fn write(&mut self, mut bytes: &[u8]) {
        self.hasher.update(bytes);
        self.written += bytes.len();
        while !bytes.is_empty() {
            let room = match self.parts.last() {
                Some(part) if part.len() < MAX_PART_BYTES => MAX_PART_BYTES - part.len(),
                _ => {
                    // (A capacity only: a payload longer than announced still fits.)
                    let done = self.parts.len() * MAX_PART_BYTES;
                    let size = self.total.saturating_sub(done).min(MAX_PART_BYTES);
                    self.parts.push(Vec::with_capacity(size));
                    MAX_PART_BYTES
                }
            };
            let (now, later) = bytes.split_at(room.min(bytes.len()));
            if let Some(part) = self.parts.last_mut() {
                part.extend_from_slice(now);
            }
            bytes = later;
        }
    }

    fn finish(self) -> (blake3::Hash, Vec<Vec<u8>>, usize) {
        (self.hasher.finalize(), self.parts, self.written)
    }
}

/// A checked and parsed snapshot: the links and each point's vector fingerprint, waiting
/// for the live vectors ([`ParsedSnapshot::into_graph`]).
pub(crate) struct ParsedSnapshot {
    metric: Metric,
    dim: usize,
    parts: GraphParts,
    fingerprints: Vec<u64>,
    kind: Fingerprint,
}

impl ParsedSnapshot {
    /// Number of points in the graph.
    pub(crate) fn point_count(&self) -> usize {
        self.parts.ids.len()
    }

    /// The graph, its points' vectors taken from the live vectors (`current`), and its
    /// membership: a point is live iff `current` has a vector for its id with the
    /// fingerprint it was inserted with; a live id whose vector differs, and a live id of
    /// `live_ids` with no point at all, is scored outside the graph (exactly, until the
    /// absorber inserts the latter). A point whose id is gone keeps no vector and no
    /// links (no traversal reaches it). Also returns the ids of the points no search
    /// reaches, not applied yet (see `Hnsw::unreachable_ids`).
    pub(crate) fn into_graph<'a>(
        self,
        live_ids: &[u64],
        current: impl Fn(u64) -> Option<&'a [f32]> + Sync,
    ) -> Result<(Graph, Vec<u64>), IndexError> {
        let ParsedSnapshot {
            metric,
            dim,
            parts,
            fingerprints,
            kind,
        } = self;
        // (Called under the exact store's read lock: plain threads, see `map_in_halves`.)
        let matches: Vec<Option<bool>> = map_in_halves(parts.ids.len(), PARALLEL_MIN, |slot| {
            let (&id, &saved) = (parts.ids.get(slot)?, fingerprints.get(slot)?);
            current(id).map(|v| kind.of(v) == saved)
        });
        let mut dead = Vec::new();
        let mut outside = Vec::new();
        for (&id, state) in parts.ids.iter().zip(&matches) {
            match state {
                Some(true) => {}
                Some(false) => {
                    dead.push(id);
                    outside.push(id);
                }
                None => dead.push(id),
            }
        }
        let in_graph: IdSet = parts.ids.iter().copied().collect();
        outside.extend(live_ids.iter().copied().filter(|id| !in_graph.contains(id)));
        let membership = Membership::loaded(&parts.ids, &dead, outside);
        let ids = parts.ids.clone();
        let (links, unreachable) = Hnsw::from_parts(metric, dim, parts, |slot| {
            ids.get(slot).and_then(|&id| current(id))
        })
        .ok_or_else(|| corrupted("links do not fit together"))?;
        let unreachable = unreachable
            .into_iter()
            .filter_map(|slot| ids.get(slot as usize).copied())
            .collect();
        Ok((
            Graph::from_links(metric, dim, links, membership),
            unreachable,
        ))
    }
}

/// Checks and parses blobs made by [`to_blobs`] (or by earlier builds, in format
/// [`FIXED_ROWS_VERSION`]) for an index of `dim` and `metric`. Any damage or mismatch is an
/// error.
pub(crate) fn from_blobs<B: AsRef<[u8]>>(
    blobs: &[B],
    metric: Metric,
    dim: usize,
) -> Result<ParsedSnapshot, IndexError> {
    let (header, parts) = blobs
        .split_first()
        .ok_or_else(|| corrupted("no header blob"))?;
    let header = header.as_ref();
    if header.len() < 12 || header[0..8] != MAGIC {
        return Err(corrupted("bad magic"));
    }
    let le_u32 = |at: usize| {
        u32::from_le_bytes([header[at], header[at + 1], header[at + 2], header[at + 3]])
    };
    let version = le_u32(8);
    if version == HNSW_RS_DUMP_VERSION {
        return Err(incompatible(
            "format version 2 (an hnsw_rs dump of an earlier build): rebuilt",
        ));
    }
    if ![
        FORMAT_VERSION,
        FIXED_WIDTH_VERSION,
        NO_QUANTIZER_VERSION,
        FIXED_ROWS_VERSION,
    ]
    .contains(&version)
    {
        return Err(incompatible(format!(
            "format version {version}, this build reads {FIXED_ROWS_VERSION}, \
             {NO_QUANTIZER_VERSION}, {FIXED_WIDTH_VERSION} and {FORMAT_VERSION}"
        )));
    }
    let counted = version != FIXED_ROWS_VERSION;
    if header.len() != HEADER_LEN {
        return Err(corrupted(format!(
            "header is {} bytes, expected {HEADER_LEN}",
            header.len()
        )));
    }
    let le_u64 = |at: usize| {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(&header[at..at + 8]);
        u64::from_le_bytes(bytes)
    };
    // Lengths and checksum first: every later field is trusted only once they match.
    if le_u32(44) as usize != parts.len() {
        return Err(corrupted(format!(
            "{} payload parts, header announces {}",
            parts.len(),
            le_u32(44)
        )));
    }
    let mut hasher = blake3::Hasher::new();
    hasher.update(&header[..CHECKSUM_AT]);
    for part in parts {
        hasher.update(part.as_ref());
    }
    if hasher.finalize().as_bytes()[..] != header[CHECKSUM_AT..] {
        return Err(corrupted("checksum mismatch"));
    }
    let saved_metric = Metric::from_tag(header[12])
        .ok_or_else(|| incompatible(format!("unknown metric tag {}", header[12])))?;
    if saved_metric != metric {
        return Err(incompatible(format!(
            "snapshot metric {saved_metric:?}, index metric {metric:?}"
        )));
    }
    if le_u64(16) != dim as u64 {
        return Err(incompatible(format!(
            "snapshot dimension {}, index dimension {dim}",
            le_u64(16)
        )));
    }
    let m = le_u32(32);
    if !(2..=MAX_M).contains(&m) {
        return Err(corrupted(format!("M {m}")));
    }
    let m = m as usize;
    let too_large = || corrupted("snapshot too large for this platform");
    let n = usize::try_from(le_u64(24)).map_err(|_| too_large())?;
    // Formats 5 and 6: the payload's length; format 3: the number of upper-layer words.
    let announced = usize::try_from(le_u64(48)).map_err(|_| too_large())?;
    let payload_len: usize = parts.iter().map(|p| p.as_ref().len()).sum();
    if counted && payload_len != announced {
        return Err(corrupted(format!(
            "payload is {payload_len} bytes, header announces {announced}"
        )));
    }
    let mut payload = Vec::with_capacity(payload_len);
    for part in parts {
        payload.extend_from_slice(part.as_ref());
    }
    let width = usize::from(header[13]);
    let Sections {
        ids,
        fingerprints,
        levels,
        layer0,
        upper,
        quant,
    } = match version {
        FORMAT_VERSION => sorted_sections(&payload, n, m, dim, width)?,
        _ => fixed_sections(&payload, n, m, dim, version, width, announced)?,
    };
    let distinct: IdSet = ids.iter().copied().collect();
    if distinct.len() != n {
        return Err(corrupted("an id has two points"));
    }
    let check_rows = |rows: &[u32], cap: usize| -> Result<(), IndexError> {
        for row in rows.chunks_exact(cap + 1) {
            let count = row[0] as usize;
            if count > cap {
                return Err(corrupted(format!("a row of {count} links, at most {cap}")));
            }
            if let Some(slot) = row[1..=count].iter().find(|&&s| s as usize >= n) {
                return Err(corrupted(format!("link to slot {slot} of {n}")));
            }
        }
        Ok(())
    };
    check_rows(&layer0, 2 * m)?;
    check_rows(&upper, m)?;
    let entry = match le_u32(40) {
        u32::MAX if n == 0 => None,
        u32::MAX => return Err(corrupted("no entry point in a non-empty graph")),
        slot if (slot as usize) < n => Some(slot),
        slot => return Err(corrupted(format!("entry slot {slot} of {n}"))),
    };
    if let Some(entry) = entry {
        let top = levels.iter().copied().max().unwrap_or(0);
        if levels[entry as usize] != top {
            return Err(corrupted("the entry point is not on the top level"));
        }
    }
    // The graph keeps building with the snapshot's ef_construction, which sizes each
    // insert's candidate heap: a value no store option could have written is damage.
    let ef_construction = le_u32(36) as usize;
    if !(1..=MAX_INDEX_EF_CONSTRUCTION).contains(&ef_construction) {
        return Err(corrupted(format!("ef_construction {ef_construction}")));
    }
    Ok(ParsedSnapshot {
        metric,
        dim,
        parts: GraphParts {
            m,
            ef_construction,
            ids,
            levels,
            layer0,
            upper,
            entry,
            quant,
        },
        fingerprints,
        kind: if version == FORMAT_VERSION || version == FIXED_WIDTH_VERSION {
            Fingerprint::Crc32
        } else {
            Fingerprint::Blake3
        },
    })
}

/// A payload's fields, parsed (the links expanded into rows at their capacity: count,
/// then the slots, zero-padded, as the graph holds them).
struct Sections {
    ids: Vec<u64>,
    fingerprints: Vec<u64>,
    levels: Vec<u8>,
    layer0: Vec<u32>,
    upper: Vec<u32>,
    quant: Option<Quantizer>,
}

/// The number of upper rows `levels` (of `n` points) ask for, if they are levels a graph
/// can have.
fn upper_rows_of(levels: &[u8], n: usize) -> Result<usize, IndexError> {
    if let Some(level) = levels.iter().find(|&&l| usize::from(l) > MAX_LEVEL) {
        return Err(corrupted(format!("level {level} above {MAX_LEVEL}")));
    }
    let upper_rows: usize = levels.iter().map(|&l| usize::from(l)).sum();
    // A point's level is at least L with probability M^-L, so the levels of n points sum
    // to about n / (M - 1), at most n: a sum far above that is no graph's, and (a count
    // of a byte or two a row) it would make a small payload expand into rows of
    // gigabytes.
    if upper_rows > n.saturating_mul(2).saturating_add(MAX_LEVEL) {
        return Err(corrupted(format!(
            "levels of {n} points sum to {upper_rows}"
        )));
    }
    Ok(upper_rows)
}

/// Room for `words` link words, or `Corrupted` if it cannot be had; layer 0's become the
/// graph's own (`Hnsw::from_parts`): huge pages from their first touch, as the graph's
/// arrays have.
fn link_words(words: usize) -> Result<Vec<u32>, IndexError> {
    let mut rows = Vec::new();
    rows.try_reserve_exact(words)
        .map_err(|_| corrupted(format!("{words} link words do not fit in memory")))?;
    advise_huge_pages(rows.as_ptr(), rows.capacity());
    Ok(rows)
}

/// Format 7's payload (see the module docs) of `n` points.
fn sorted_sections(
    payload: &[u8],
    n: usize,
    m: usize,
    dim: usize,
    bits: usize,
) -> Result<Sections, IndexError> {
    if bits != slot_bits(n) {
        return Err(corrupted(format!("slot width {bits} bits for {n} points")));
    }
    let (rest, quant) = quantizer_at_end(payload, dim)?;
    let too_large = || corrupted("snapshot too large for this platform");
    let head = n.checked_mul(6).ok_or_else(too_large)?;
    if rest.len() < head {
        return Err(corrupted(format!(
            "payload is {} bytes, {n} points need at least {head}",
            payload.len()
        )));
    }
    let mut ids = Vec::with_capacity(n);
    let mut rest = rest;
    let mut previous = 0;
    for _ in 0..n {
        let (id, after) =
            take_id(rest, previous).ok_or_else(|| corrupted("an id does not decode"))?;
        ids.push(id);
        previous = id;
        rest = after;
    }
    if rest.len() < n * 5 {
        return Err(corrupted("the fingerprints and levels are cut short"));
    }
    let (fp_bytes, rest) = rest.split_at(n * 4);
    let fingerprints = fp_bytes
        .chunks_exact(4)
        .map(|b| u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])))
        .collect();
    let (levels, mut rest) = rest.split_at(n);
    let upper_rows = upper_rows_of(levels, n)?;
    let rows = n.checked_add(upper_rows).ok_or_else(too_large)?;
    let mut counts = Vec::with_capacity(rows);
    for row in 0..rows {
        let cap = if row < n { 2 * m } else { m };
        let (count, after) =
            take_varint(rest).ok_or_else(|| corrupted("a link count does not decode"))?;
        let count = usize::try_from(count).unwrap_or(usize::MAX);
        if count > cap {
            return Err(corrupted(format!("a row of {count} links, at most {cap}")));
        }
        counts.push(count);
        rest = after;
    }
    let mut stream = BitReader::new(rest);
    let cut_short = || corrupted("the links are cut short");
    let mut expand = |counts: &[usize], cap: usize| -> Result<Vec<u32>, IndexError> {
        let words = counts.len().checked_mul(cap + 1).ok_or_else(too_large)?;
        let mut rows = link_words(words)?;
        for &count in counts {
            rows.push(count as u32);
            if count > 0 {
                let mut slot = stream.take(bits).ok_or_else(cut_short)?;
                let gap_bits = if count > 1 {
                    stream.take(GAP_WIDTH_BITS).ok_or_else(cut_short)? as usize
                } else {
                    0
                };
                if gap_bits > 32 {
                    return Err(corrupted(format!("a gap width of {gap_bits} bits")));
                }
                for i in 0..count {
                    if i > 0 {
                        let gap = stream.take(gap_bits).ok_or_else(cut_short)?;
                        slot = slot
                            .checked_add(gap)
                            .ok_or_else(|| corrupted("a link past the last slot"))?;
                    }
                    if slot as usize >= n {
                        return Err(corrupted(format!("link to slot {slot} of {n}")));
                    }
                    rows.push(slot);
                }
            }
            rows.resize(rows.len() + cap - count, 0);
        }
        Ok(rows)
    };
    let (layer0_counts, upper_counts) = counts.split_at(n);
    let layer0 = expand(layer0_counts, 2 * m)?;
    let upper = expand(upper_counts, m)?;
    if !stream.at_end() {
        return Err(corrupted("the links do not end where the payload does"));
    }
    Ok(Sections {
        ids,
        fingerprints,
        levels: levels.to_vec(),
        layer0,
        upper,
        quant,
    })
}

/// The payload of formats 3, 5 and 6 (see the module docs) of `n` points; `width` and
/// `announced` are header bytes 13 and 48.
fn fixed_sections(
    payload: &[u8],
    n: usize,
    m: usize,
    dim: usize,
    version: u32,
    width: usize,
    announced: usize,
) -> Result<Sections, IndexError> {
    let too_large = || corrupted("snapshot too large for this platform");
    let head = n.checked_mul(17).ok_or_else(too_large)?;
    if payload.len() < head {
        return Err(corrupted(format!(
            "payload is {} bytes, {n} points need at least {head}",
            payload.len()
        )));
    }
    let (id_bytes, rest) = payload.split_at(n * 8);
    let (fp_bytes, rest) = rest.split_at(n * 8);
    let (levels, rest) = rest.split_at(n);
    let upper_rows = upper_rows_of(levels, n)?;
    let (rest, quant) = if version == FIXED_WIDTH_VERSION {
        quantizer_at_end(rest, dim)?
    } else {
        (rest, None)
    };
    let (layer0, upper) = if version == FIXED_ROWS_VERSION {
        fixed_rows(rest, n, m, upper_rows, announced)?
    } else {
        counted_rows(rest, n, m, upper_rows, width)?
    };
    let u64s = |bytes: &[u8]| -> Vec<u64> {
        bytes
            .chunks_exact(8)
            .map(|b| u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
            .collect()
    };
    Ok(Sections {
        ids: u64s(id_bytes),
        fingerprints: u64s(fp_bytes),
        levels: levels.to_vec(),
        layer0,
        upper,
        quant,
    })
}

/// Format 6's last byte when the quantiser that precedes it codes 4 bits a value.
const QUANTIZER_4_BIT: u8 = 2;
/// ... when it codes 8 (earlier builds): its bytes are checked and skipped, and the graph
/// loads with a quantiser fitted anew (the 4-bit codes need their own steps).
const QUANTIZER_8_BIT: u8 = 1;

/// Format 6's quantiser, at the end of `rest`: the links before it, and the quantiser if
/// the snapshot has one this build codes with.
fn quantizer_at_end(rest: &[u8], dim: usize) -> Result<(&[u8], Option<Quantizer>), IndexError> {
    let Some((&flag, rest)) = rest.split_last() else {
        return Err(corrupted("no quantiser byte"));
    };
    match flag {
        0 => Ok((rest, None)),
        QUANTIZER_8_BIT | QUANTIZER_4_BIT => {
            let len = dim
                .checked_mul(8)
                .filter(|&len| len <= rest.len())
                .ok_or_else(|| corrupted("the quantiser is cut short"))?;
            let (rest, bytes) = rest.split_at(rest.len() - len);
            let quant = Quantizer::from_bytes(dim, bytes)
                .ok_or_else(|| corrupted("the quantiser holds values no fit makes"))?;
            Ok((rest, (flag == QUANTIZER_4_BIT).then_some(quant)))
        }
        other => Err(corrupted(format!("quantiser byte {other}"))),
    }
}

/// Format 3's links (`rest`, after the levels): the layer-0 rows and the `upper_words`
/// words of the upper rows, every row at its capacity.
fn fixed_rows(
    rest: &[u8],
    n: usize,
    m: usize,
    upper_rows: usize,
    upper_words: usize,
) -> Result<(Vec<u32>, Vec<u32>), IndexError> {
    let too_large = || corrupted("snapshot too large for this platform");
    let layer0_words = n.checked_mul(2 * m + 1).ok_or_else(too_large)?;
    let expected = layer0_words
        .checked_add(upper_words)
        .and_then(|w| w.checked_mul(4))
        .ok_or_else(too_large)?;
    if rest.len() != expected {
        return Err(corrupted(format!(
            "links are {} bytes, header announces {expected}",
            rest.len()
        )));
    }
    if upper_rows.checked_mul(m + 1) != Some(upper_words) {
        return Err(corrupted(format!(
            "levels need {upper_rows} upper rows, header announces {upper_words} words"
        )));
    }
    let words: Vec<u32> = rest
        .chunks_exact(4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    let (layer0, upper) = words.split_at(layer0_words);
    Ok((layer0.to_vec(), upper.to_vec()))
}

/// Format 5's links (`rest`, after the levels): the `n` layer-0 counts and `upper_rows`
/// upper counts, then the used slots of every row, `width` bytes each; expanded into rows
/// at their capacity (count, then the slots, zero-padded), as the graph holds them.
fn counted_rows(
    rest: &[u8],
    n: usize,
    m: usize,
    upper_rows: usize,
    width: usize,
) -> Result<(Vec<u32>, Vec<u32>), IndexError> {
    if !(1..=4).contains(&width) {
        return Err(corrupted(format!("slot width {width}")));
    }
    let too_large = || corrupted("snapshot too large for this platform");
    let rows = n.checked_add(upper_rows).ok_or_else(too_large)?;
    let counts_len = rows.checked_mul(2).ok_or_else(too_large)?;
    if rest.len() < counts_len {
        return Err(corrupted(format!(
            "{} bytes after the levels, {rows} link counts need {counts_len}",
            rest.len()
        )));
    }
    let (counts, mut links) = rest.split_at(counts_len);
    let counts: Vec<usize> = counts
        .chunks_exact(2)
        .map(|b| usize::from(u16::from_le_bytes([b[0], b[1]])))
        .collect();
    let total: usize = counts.iter().sum();
    if Some(links.len()) != total.checked_mul(width) {
        return Err(corrupted(format!(
            "links are {} bytes, their counts need {total} of {width} bytes",
            links.len()
        )));
    }
    let mut expand = |counts: &[usize], cap: usize| -> Result<Vec<u32>, IndexError> {
        let words = counts.len().checked_mul(cap + 1).ok_or_else(too_large)?;
        let mut rows = link_words(words)?;
        for &count in counts {
            if count > cap {
                return Err(corrupted(format!("a row of {count} links, at most {cap}")));
            }
            let (row, after) = links.split_at(count * width);
            links = after;
            rows.push(count as u32);
            rows.extend(row.chunks_exact(width).map(|b| {
                let mut le = [0u8; 4];
                le[..width].copy_from_slice(b);
                u32::from_le_bytes(le)
            }));
            rows.resize(rows.len() + cap - count, 0);
        }
        Ok(rows)
    };
    let (layer0_counts, upper_counts) = counts.split_at(n);
    let layer0 = expand(layer0_counts, 2 * m)?;
    let upper = expand(upper_counts, m)?;
    Ok((layer0, upper))
}

/// Test support: `blobs` (format 7) written again as format 3, the layout of earlier
/// builds (every row at its capacity; `header[48]` the number of upper-layer words).
#[cfg(test)]
pub(crate) fn as_fixed_rows<B: AsRef<[u8]>>(
    blobs: &[B],
    metric: Metric,
    dim: usize,
    vector_of: impl Fn(u64) -> Vec<f32>,
) -> Vec<Vec<u8>> {
    let parsed = from_blobs(blobs, metric, dim).expect("a format-7 snapshot");
    let parts = &parsed.parts;
    let mut payload = Vec::new();
    for id in &parts.ids {
        payload.extend_from_slice(&id.to_le_bytes());
    }
    // Format 3's fingerprints are blake3's (format 6's are CRC-32s).
    for &id in &parts.ids {
        payload.extend_from_slice(&fingerprint_blake3(&vector_of(id)).to_le_bytes());
    }
    payload.extend_from_slice(&parts.levels);
    for word in parts.layer0.iter().chain(&parts.upper) {
        payload.extend_from_slice(&word.to_le_bytes());
    }
    let mut header = blobs[0].as_ref()[..CHECKSUM_AT].to_vec();
    header[8..12].copy_from_slice(&FIXED_ROWS_VERSION.to_le_bytes());
    header[13] = 0;
    header[44..48].copy_from_slice(&1u32.to_le_bytes());
    header[48..56].copy_from_slice(&(parts.upper.len() as u64).to_le_bytes());
    let mut hasher = blake3::Hasher::new();
    hasher.update(&header);
    hasher.update(&payload);
    header.extend_from_slice(hasher.finalize().as_bytes());
    vec![header, payload]
}

/// Test and fuzz support: `payload` under a well-formed format-7 header of `n` points, `M`
/// `m`, `dim` dimensions, the cosine metric and the `entry` slot (none if `n` is 0), the
/// checksum matching: what a bug in the writer would produce, for the parser to refuse or
/// load consistently.
#[cfg(any(test, feature = "testkit"))]
pub(crate) fn sealed(payload: &[u8], n: usize, m: u32, dim: usize, entry: u32) -> Vec<Vec<u8>> {
    let mut header = Vec::with_capacity(HEADER_LEN);
    header.extend_from_slice(&MAGIC);
    header.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    header.push(Metric::Cosine.tag());
    header.push(slot_bits(n) as u8);
    header.extend_from_slice(&[0, 0]);
    header.extend_from_slice(&(dim as u64).to_le_bytes());
    header.extend_from_slice(&(n as u64).to_le_bytes());
    header.extend_from_slice(&m.to_le_bytes());
    header.extend_from_slice(&100u32.to_le_bytes());
    header.extend_from_slice(&(if n == 0 { u32::MAX } else { entry }).to_le_bytes());
    header.extend_from_slice(&1u32.to_le_bytes());
    header.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    header.extend_from_slice(&0u64.to_le_bytes());
    let mut hasher = blake3::Hasher::new();
    hasher.update(&header);
    hasher.update(payload);
    header.extend_from_slice(hasher.finalize().as_bytes());
    vec![header, payload.to_vec()]
}

/// Test support: where a format-7 payload (its parts joined) of `n` points keeps its
/// levels (after the ids and fingerprints).
#[cfg(test)]
pub(crate) fn levels_at(payload: &[u8], n: usize) -> std::ops::Range<usize> {
    let mut rest = payload;
    let mut previous = 0;
    for _ in 0..n {
        let (id, after) = take_id(rest, previous).expect("an id");
        previous = id;
        rest = after;
    }
    let start = payload.len() - rest.len() + 4 * n;
    start..start + n
}

/// Test and bench support: `blobs` (format 7) written again as format 6, the layout of
/// earlier builds (ids and fingerprints in 8 bytes, counts in 2, each slot in the fewest
/// bytes, every row in the graph's order as loaded); `None` if `blobs` do not parse.
#[cfg(any(test, feature = "testkit"))]
pub(crate) fn as_format_6<B: AsRef<[u8]>>(
    blobs: &[B],
    metric: Metric,
    dim: usize,
) -> Option<Vec<Vec<u8>>> {
    let parsed = from_blobs(blobs, metric, dim).ok()?;
    let parts = &parsed.parts;
    let n = parts.ids.len();
    let width = slot_width(n);
    let mut payload = Vec::new();
    for id in &parts.ids {
        payload.extend_from_slice(&id.to_le_bytes());
    }
    for fp in &parsed.fingerprints {
        payload.extend_from_slice(&fp.to_le_bytes());
    }
    payload.extend_from_slice(&parts.levels);
    let rows = || {
        parts
            .layer0
            .chunks_exact(2 * parts.m + 1)
            .chain(parts.upper.chunks_exact(parts.m + 1))
    };
    for row in rows() {
        payload.extend_from_slice(&(row[0] as u16).to_le_bytes());
    }
    for row in rows() {
        for slot in &row[1..=row[0] as usize] {
            payload.extend_from_slice(&slot.to_le_bytes()[..width]);
        }
    }
    match &parts.quant {
        Some(quant) => {
            quant.to_bytes(&mut payload);
            payload.push(QUANTIZER_4_BIT);
        }
        None => payload.push(0),
    }
    let mut header = blobs[0].as_ref()[..CHECKSUM_AT].to_vec();
    header[8..12].copy_from_slice(&FIXED_WIDTH_VERSION.to_le_bytes());
    header[13] = width as u8;
    header[44..48].copy_from_slice(&1u32.to_le_bytes());
    header[48..56].copy_from_slice(&(payload.len() as u64).to_le_bytes());
    let mut hasher = blake3::Hasher::new();
    hasher.update(&header);
    hasher.update(&payload);
    header.extend_from_slice(hasher.finalize().as_bytes());
    Some(vec![header, payload])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_takes_the_fewest_bytes_that_hold_every_slot() {
        for (n, width) in [
            (0, 1),
            (1, 1),
            (256, 1),
            (257, 2),
            (65_536, 2),
            (65_537, 3),
            (1 << 24, 3),
            ((1 << 24) + 1, 4),
        ] {
            assert_eq!(slot_width(n), width, "{n} points");
        }
    }

    /// Format 7's ids: split at bit 24, each written as the difference from the one before
    /// (of the low parts within a high part, else of the high parts, with the low part),
    /// so ids in any order come back as they were, and the steps a store's vector ids take
    /// (a document's next slot; the next document's first) take one byte whatever the
    /// documents' sizes.
    #[test]
    fn ids_round_trip_and_a_store_s_steps_take_one_byte() {
        let doc = |d: u64, slot: u64| (d << 24) | slot;
        let ids = [
            0,
            1,
            2,
            doc(1, 0),
            doc(2, 0),
            doc(2, 1),
            7,
            u64::MAX,
            0,
            u64::MAX / 3,
            1 << 63,
            (1 << 63) - 1,
            doc(5, 9),
            doc(3, (1 << 24) - 1),
            doc(3, 0),
        ];
        let mut bytes = Vec::new();
        let mut previous = 0;
        for &id in &ids {
            put_id(&mut bytes, previous, id);
            previous = id;
        }
        let mut rest = &bytes[..];
        let mut previous = 0;
        for &id in &ids {
            let (got, after) = take_id(rest, previous).expect("decodes");
            assert_eq!(got, id);
            previous = got;
            rest = after;
        }
        assert!(rest.is_empty());
        // Documents of 1, 2, 3 and 10 chunks, one after another: one byte an id.
        for chunks in [1, 2, 3, 10] {
            let ids: Vec<u64> = (1..=50)
                .flat_map(|d| (0..chunks).map(move |slot| doc(d, slot)))
                .collect();
            let mut bytes = Vec::new();
            let mut previous = 0;
            for &id in &ids {
                put_id(&mut bytes, previous, id);
                previous = id;
            }
            assert_eq!(bytes.len(), ids.len(), "{chunks} chunks a document");
        }
    }

    /// An id whose parts would leave their ranges, or whose varint is cut short or has no
    /// marker, does not decode (the varints themselves: `crate::varint`).
    #[test]
    fn an_id_out_of_range_or_cut_does_not_decode() {
        assert_eq!(take_id(&[], 0), None);
        assert_eq!(take_id(&[254], 0), None);
        // A slot past 2^24 - 1 after a new high part.
        let mut bytes = Vec::new();
        put_varint(&mut bytes, zigzag(1) << 2 | NEW_HIGH);
        put_varint(&mut bytes, ID_LOW_MASK + 1);
        assert_eq!(take_id(&bytes, 0), None);
        // The low part below 0, past 2^24, or a high part past 2^40; tag 3.
        bytes.clear();
        put_varint(&mut bytes, zigzag(-1) << 2 | SAME_HIGH);
        assert_eq!(take_id(&bytes, 0), None);
        bytes.clear();
        put_varint(&mut bytes, zigzag(1) << 2 | SAME_HIGH);
        assert_eq!(take_id(&bytes, ID_LOW_MASK), None);
        bytes.clear();
        put_varint(&mut bytes, zigzag(1) << 2 | NEW_HIGH_LOW_ZERO);
        assert_eq!(take_id(&bytes, u64::MAX), None);
        assert_eq!(take_id(&[3], 0), None);
        // A new high part whose low part is cut short.
        bytes.clear();
        put_varint(&mut bytes, zigzag(1) << 2 | NEW_HIGH);
        assert_eq!(take_id(&bytes, 0), None);
    }

    /// The bit stream gives back what was put, at every width, and ends only where it was
    /// finished with zero padding.
    #[test]
    fn the_bit_stream_round_trips_and_ends_where_written() {
        let values: Vec<(u32, usize)> = (0..200u32)
            .map(|i| {
                let bits = (i as usize * 7) % 33;
                let value = if bits == 0 {
                    0
                } else {
                    i.wrapping_mul(2_654_435_761) >> (32 - bits)
                };
                (value, bits)
            })
            .collect();
        let mut writer = BitWriter::new();
        for &(value, bits) in &values {
            writer.put(value, bits);
        }
        let bytes = writer.finish();
        let mut reader = BitReader::new(&bytes);
        for &(value, bits) in &values {
            assert_eq!(reader.take(bits), Some(value));
        }
        assert!(reader.at_end());
        assert_eq!(reader.take(8), None);
        let mut longer = bytes.clone();
        longer.push(0);
        let mut reader = BitReader::new(&longer);
        for &(_, bits) in &values {
            reader.take(bits);
        }
        assert!(!reader.at_end(), "a byte left over");
    }

    /// The fingerprints are blake3 (formats 3 and 5, which earlier builds wrote) and CRC-32
    /// (format 6) over the vector's little-endian bytes, however long the vector.
    #[test]
    fn fingerprints_are_blake3_and_crc32_of_the_little_endian_bytes() {
        for dim in [0usize, 1, 50, 255, 256, 257, 384, 768, 1536] {
            let vector: Vec<f32> = (0..dim).map(|i| i as f32 * 0.37 - 11.0).collect();
            let bytes: Vec<u8> = vector.iter().flat_map(|x| x.to_le_bytes()).collect();
            let hash = blake3::hash(&bytes);
            let mut first = [0u8; 8];
            first.copy_from_slice(&hash.as_bytes()[..8]);
            assert_eq!(
                fingerprint_blake3(&vector),
                u64::from_le_bytes(first),
                "{dim}"
            );
            let crc = u64::from(crc32fast::hash(&bytes));
            assert_eq!(fingerprint_crc32(&vector), crc, "{dim}");
            assert_eq!(Fingerprint::Crc32.of(&vector), crc);
        }
    }
}
