//! A budgeted index saved to byte parts and loaded back (the `budget_snapshot` table),
//! both streaming: the index is written part by part from its own arrays and read part by
//! part into arrays sized from the header, so neither holds a second copy of it (the
//! budget holds while saving and loading).
//!
//! Unlike the full index's snapshot (`persisted.rs`, links only, its vectors taken from the
//! file), this one is the whole index: the quantiser's centroids, each point's id, level,
//! live bit and code, and the links. It covers one commit (its stamp, in the header); a
//! store that loads it brings it up to date from the changelog, and rebuilds it from the
//! vectors rows when the changelog no longer reaches back to the stamp.
//!
//! ```text
//! part 0: header (HEADER_LEN bytes, little-endian)
//!   0  magic "RATCHBGT"        8  format version u32 (2)
//!   12 metric u8               13 entry level u8       14 reserved 2 bytes (0)
//!   16 dimension u64           24 points n u64          32 live points u64
//!   40 M u32                   44 ef_construction u32   48 code length u32
//!   52 entry slot u32 (u32::MAX: none)                  56 commit stamp u64
//!   64 budget planned for u64  72 payload parts u32     76 layer-0 links L0 u32
//!   80 payload bytes u64       88 reserved u64 (0)
//!   96 blake3(header[0..96] ++ payload), 32 bytes
//! parts 1..: the payload, cut into parts of at most MAX_PART_BYTES:
//!   centroids f32 x (256 x dimension), ids u64 x n, levels u8 x n,
//!   live bits u64 x ceil(n / 64), codes u8 x (n x code length),
//!   layer-0 rows u32 x (n x L0) (u32::MAX: no link),
//!   upper rows: per point of level L > 0, in slot order, u32 x (L x M), layer 1 first
//! ```
//!
//! The header is the last part written and the checksum covers everything: a torn or
//! damaged snapshot fails the checksum (or, first, a length) and is
//! [`IndexError::Corrupted`]; a snapshot of another format, dimension, metric, `M`, code
//! length or layer-0 links is [`IndexError::Incompatible`]. Format 1 (before the plan chose
//! layer 0's links: always `2 M`) is another format: rebuilt, never served. Every field the graph relies on is checked as it
//! is read (links below `n`, levels, the entry on the top level, one live point per id),
//! and the checksum at the end, before the index is returned.

use blake3::Hasher;

use super::{BudgetIndex, Inner, Plan, EMPTY, MAX_LEVEL};
use crate::index::persisted::MAX_PART_BYTES;
use crate::index::pq::{ProductQuantizer, CENTROIDS};
use crate::index::{IdMap, IndexError, Metric};

/// First bytes of a budgeted snapshot's header.
const MAGIC: [u8; 8] = *b"RATCHBGT";
/// The layout written and read (2: the header names the layer-0 links).
const FORMAT_VERSION: u32 = 2;
/// Length of part 0.
const HEADER_LEN: usize = 128;
/// Offset of the checksum in the header.
const CHECKSUM_AT: usize = 96;
/// Bytes converted at a time between the parts and typed arrays.
const STEP: usize = 4096;

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

/// A budgeted snapshot's header, checked for its own consistency (the payload is checked
/// as it loads).
#[derive(Clone, Debug)]
pub(crate) struct SavedHeader {
    /// The commit the snapshot covers.
    pub stamp: u64,
    /// Bytes of each code.
    pub code_len: usize,
    /// Points, live or dead.
    pub points: usize,
    /// Live points.
    pub live: usize,
    /// Links per upper layer.
    pub m: usize,
    /// Links per point in layer 0.
    pub links0: usize,
    dim: usize,
    entry: Option<(u32, u8)>,
    parts: usize,
    payload_len: usize,
    bytes: [u8; HEADER_LEN],
}

fn le_u32(bytes: &[u8], at: usize) -> u32 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&bytes[at..at + 4]);
    u32::from_le_bytes(b)
}

fn le_u64(bytes: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(b)
}

/// The payload's length for `n` points with levels summing to `upper_levels`.
fn payload_len(
    dim: usize,
    n: usize,
    code_len: usize,
    m: usize,
    links0: usize,
    upper_levels: usize,
) -> Option<usize> {
    let centroids = CENTROIDS.checked_mul(dim)?.checked_mul(4)?;
    let per_point = 8usize
        .checked_add(1)?
        .checked_add(code_len)?
        .checked_add(links0.checked_mul(4)?)?;
    let words = n.div_ceil(64).checked_mul(8)?;
    let upper = upper_levels.checked_mul(m)?.checked_mul(4)?;
    centroids
        .checked_add(n.checked_mul(per_point)?)?
        .checked_add(words)?
        .checked_add(upper)
}

/// Parses part 0 of a budgeted snapshot for an index of `dim` dimensions and `metric`.
pub(crate) fn read_header(
    bytes: &[u8],
    metric: Metric,
    dim: usize,
) -> Result<SavedHeader, IndexError> {
    if bytes.len() < 12 || bytes[..8] != MAGIC {
        return Err(corrupted("bad magic"));
    }
    let version = le_u32(bytes, 8);
    if version != FORMAT_VERSION {
        return Err(incompatible(format!(
            "budgeted snapshot format {version}, this build reads {FORMAT_VERSION}"
        )));
    }
    let Ok(header) = <[u8; HEADER_LEN]>::try_from(bytes) else {
        return Err(corrupted(format!(
            "header is {} bytes, expected {HEADER_LEN}",
            bytes.len()
        )));
    };
    let saved_metric = Metric::from_tag(header[12])
        .ok_or_else(|| corrupted(format!("unknown metric tag {}", header[12])))?;
    if saved_metric != metric {
        return Err(incompatible(format!(
            "snapshot metric {saved_metric:?}, index metric {metric:?}"
        )));
    }
    if le_u64(&header, 16) != dim as u64 {
        return Err(incompatible(format!(
            "snapshot dimension {}, index dimension {dim}",
            le_u64(&header, 16)
        )));
    }
    let too_large = || corrupted("snapshot too large for this platform");
    let points = usize::try_from(le_u64(&header, 24)).map_err(|_| too_large())?;
    let live = usize::try_from(le_u64(&header, 32)).map_err(|_| too_large())?;
    let m = le_u32(&header, 40) as usize;
    let code_len = le_u32(&header, 48) as usize;
    let links0 = le_u32(&header, 76) as usize;
    if !(2..=256).contains(&m)
        || !(m..=2 * m).contains(&links0)
        || !(1..=dim).contains(&code_len)
        || live > points
    {
        return Err(corrupted(format!(
            "M {m}, {links0} layer-0 links, code length {code_len}, {live} live of {points} \
             points"
        )));
    }
    if points >= EMPTY as usize {
        return Err(corrupted(format!("{points} points")));
    }
    let entry = match le_u32(&header, 52) {
        EMPTY if points == 0 => None,
        EMPTY => return Err(corrupted("no entry point in a non-empty graph")),
        slot if (slot as usize) < points && header[13] <= MAX_LEVEL => Some((slot, header[13])),
        slot => return Err(corrupted(format!("entry slot {slot} of {points}"))),
    };
    let parts = le_u32(&header, 72) as usize;
    let payload_len = usize::try_from(le_u64(&header, 80)).map_err(|_| too_large())?;
    if parts != payload_len.div_ceil(MAX_PART_BYTES) {
        return Err(corrupted(format!(
            "{parts} parts for a payload of {payload_len} bytes"
        )));
    }
    Ok(SavedHeader {
        stamp: le_u64(&header, 56),
        code_len,
        points,
        live,
        m,
        links0,
        dim,
        entry,
        parts,
        payload_len,
        bytes: header,
    })
}

/// The payload written part by part through `put`, hashed as it goes.
struct PartWriter<'p, E, P: FnMut(u32, &[u8]) -> Result<(), E>> {
    put: &'p mut P,
    buffer: Vec<u8>,
    next: u32,
    written: usize,
    hasher: Hasher,
}

impl<E, P: FnMut(u32, &[u8]) -> Result<(), E>> PartWriter<'_, E, P> {
    fn write(&mut self, mut bytes: &[u8]) -> Result<(), E> {
        self.hasher.update(bytes);
        self.written += bytes.len();
        while !bytes.is_empty() {
            let room = MAX_PART_BYTES - self.buffer.len();
            let (now, later) = bytes.split_at(room.min(bytes.len()));
            self.buffer.extend_from_slice(now);
            bytes = later;
            if self.buffer.len() == MAX_PART_BYTES {
                self.flush()?;
            }
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), E> {
        if !self.buffer.is_empty() {
            (self.put)(self.next, &self.buffer)?;
            self.next += 1;
            self.buffer.clear();
        }
        Ok(())
    }

    fn write_u32s(&mut self, values: &[u32]) -> Result<(), E> {
        let mut bytes = [0u8; STEP];
        for chunk in values.chunks(STEP / 4) {
            for (out, v) in bytes.chunks_exact_mut(4).zip(chunk) {
                out.copy_from_slice(&v.to_le_bytes());
            }
            self.write(&bytes[..chunk.len() * 4])?;
        }
        Ok(())
    }

    fn write_u64s(&mut self, values: &[u64]) -> Result<(), E> {
        let mut bytes = [0u8; STEP];
        for chunk in values.chunks(STEP / 8) {
            for (out, v) in bytes.chunks_exact_mut(8).zip(chunk) {
                out.copy_from_slice(&v.to_le_bytes());
            }
            self.write(&bytes[..chunk.len() * 8])?;
        }
        Ok(())
    }
}

/// The payload read part by part from `parts`, hashed as it goes.
struct PartReader<B, I: Iterator<Item = Result<B, IndexError>>> {
    parts: I,
    current: Option<B>,
    at: usize,
    seen: usize,
    read: usize,
    hasher: Hasher,
}

impl<B: AsRef<[u8]>, I: Iterator<Item = Result<B, IndexError>>> PartReader<B, I> {
    fn read(&mut self, mut out: &mut [u8]) -> Result<(), IndexError> {
        while !out.is_empty() {
            let available = self
                .current
                .as_ref()
                .map_or(0, |p| p.as_ref().len() - self.at);
            if available == 0 {
                let part = self
                    .parts
                    .next()
                    .ok_or_else(|| corrupted("the payload is cut short"))??;
                self.seen += 1;
                if part.as_ref().len() > MAX_PART_BYTES {
                    return Err(corrupted(format!(
                        "a part of {} bytes",
                        part.as_ref().len()
                    )));
                }
                self.current = Some(part);
                self.at = 0;
                continue;
            }
            let take = available.min(out.len());
            let (now, later) = std::mem::take(&mut out).split_at_mut(take);
            if let Some(part) = &self.current {
                let bytes = &part.as_ref()[self.at..self.at + take];
                now.copy_from_slice(bytes);
                self.hasher.update(bytes);
            }
            self.at += take;
            self.read += take;
            out = later;
        }
        Ok(())
    }

    fn read_u32s(&mut self, out: &mut [u32]) -> Result<(), IndexError> {
        let mut bytes = [0u8; STEP];
        for chunk in out.chunks_mut(STEP / 4) {
            let raw = &mut bytes[..chunk.len() * 4];
            self.read(raw)?;
            for (v, b) in chunk.iter_mut().zip(raw.chunks_exact(4)) {
                *v = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            }
        }
        Ok(())
    }

    fn read_u64s(&mut self, out: &mut [u64]) -> Result<(), IndexError> {
        let mut bytes = [0u8; STEP];
        for chunk in out.chunks_mut(STEP / 8) {
            let raw = &mut bytes[..chunk.len() * 8];
            self.read(raw)?;
            for (v, b) in chunk.iter_mut().zip(raw.chunks_exact(8)) {
                let mut word = [0u8; 8];
                word.copy_from_slice(b);
                *v = u64::from_le_bytes(word);
            }
        }
        Ok(())
    }

    /// Every part read to its end, as many as announced, and the checksum matching.
    fn finish(mut self, header: &SavedHeader) -> Result<(), IndexError> {
        let left = self
            .current
            .as_ref()
            .map_or(0, |p| p.as_ref().len() - self.at);
        if left > 0 || self.parts.next().is_some() || self.read != header.payload_len {
            return Err(corrupted("the payload is longer than its header says"));
        }
        if self.seen != header.parts {
            return Err(corrupted(format!(
                "{} parts, header announces {}",
                self.seen, header.parts
            )));
        }
        if self.hasher.finalize().as_bytes()[..] != header.bytes[CHECKSUM_AT..] {
            return Err(corrupted("checksum mismatch"));
        }
        Ok(())
    }
}

/// A vector of `len` zeroes, or `Corrupted` when it does not fit in memory.
fn zeroed<T: Clone + Default>(len: usize, what: &str) -> Result<Vec<T>, IndexError> {
    let mut v = Vec::new();
    v.try_reserve_exact(len)
        .map_err(|_| corrupted(format!("{len} {what} do not fit in memory")))?;
    v.resize(len, T::default());
    Ok(v)
}

impl BudgetIndex {
    /// Writes the index through `put(part number, bytes)`, the payload's parts first
    /// (numbered from 1) and the header (part 0) last, stamped as covering commit `stamp`. Inserts wait
    /// meanwhile (the parts are one state). `Ok(None)` (nothing written) while the codes are
    /// untrained: such an index is small and loads from the vectors rows at once; otherwise
    /// the points written.
    ///
    /// The caller reads `stamp` (the commit its index covers) before calling: the index
    /// then holds at least that commit's changes, perhaps part of later ones, which
    /// applying the changelog after `stamp` again leaves as they are (an id added again
    /// is kept, one removed again is already gone).
    pub(crate) fn save<E>(
        &self,
        stamp: u64,
        mut put: impl FnMut(u32, &[u8]) -> Result<(), E>,
    ) -> Result<Option<usize>, E> {
        let inner = self.inner.read();
        let Some(quantizer) = &inner.quantizer else {
            return Ok(None);
        };
        if !inner.pending.is_empty() {
            return Ok(None);
        }
        let n = inner.ids.len();
        let code_len = self.plan.code_len;
        let upper_levels: usize = inner.levels.iter().map(|&l| usize::from(l)).sum();
        let Some(total) = payload_len(self.dim, n, code_len, self.m, self.m0, upper_levels) else {
            return Ok(None);
        };
        let mut header = Vec::with_capacity(HEADER_LEN);
        header.extend_from_slice(&MAGIC);
        header.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        header.push(self.metric.tag());
        header.push(inner.entry.map_or(0, |e| e.1));
        header.extend_from_slice(&[0, 0]);
        header.extend_from_slice(&(self.dim as u64).to_le_bytes());
        header.extend_from_slice(&(n as u64).to_le_bytes());
        header.extend_from_slice(&(inner.slot_of.len() as u64).to_le_bytes());
        header.extend_from_slice(&(self.m as u32).to_le_bytes());
        header
            .extend_from_slice(&(self.ef_construction.min(u32::MAX as usize) as u32).to_le_bytes());
        header.extend_from_slice(&(code_len as u32).to_le_bytes());
        header.extend_from_slice(&inner.entry.map_or(EMPTY, |e| e.0).to_le_bytes());
        header.extend_from_slice(&stamp.to_le_bytes());
        header.extend_from_slice(&self.plan.budget.to_le_bytes());
        let parts = total.div_ceil(MAX_PART_BYTES);
        header.extend_from_slice(&(parts.min(u32::MAX as usize) as u32).to_le_bytes());
        header.extend_from_slice(&(self.m0 as u32).to_le_bytes());
        header.extend_from_slice(&(total as u64).to_le_bytes());
        header.extend_from_slice(&0u64.to_le_bytes());
        debug_assert_eq!(header.len(), CHECKSUM_AT);
        let mut hasher = Hasher::new();
        hasher.update(&header);
        let mut out = PartWriter {
            put: &mut put,
            buffer: Vec::with_capacity(MAX_PART_BYTES),
            next: 1,
            written: 0,
            hasher,
        };
        let mut floats = [0u8; STEP];
        for chunk in quantizer.centroids().chunks(STEP / 4) {
            for (b, x) in floats.chunks_exact_mut(4).zip(chunk) {
                b.copy_from_slice(&x.to_le_bytes());
            }
            out.write(&floats[..chunk.len() * 4])?;
        }
        out.write_u64s(&inner.ids)?;
        out.write(&inner.levels)?;
        let words = n.div_ceil(64);
        let mut live: Vec<u64> = inner.live.iter().copied().take(words).collect();
        live.resize(words, 0);
        out.write_u64s(&live)?;
        drop(live);
        out.write(&inner.codes[..n * code_len])?;
        out.write_u32s(&inner.layer0[..n * self.m0])?;
        let empty = vec![EMPTY; usize::from(MAX_LEVEL) * self.m];
        for (slot, &level) in inner.levels.iter().enumerate() {
            if level == 0 {
                continue;
            }
            let len = usize::from(level) * self.m;
            match inner.upper.get(&(slot as u64)) {
                Some(rows) if rows.len() == len => out.write_u32s(rows)?,
                _ => out.write_u32s(&empty[..len])?,
            }
        }
        out.flush()?;
        debug_assert_eq!(out.written, total);
        header.extend_from_slice(out.hasher.finalize().as_bytes());
        debug_assert_eq!(header.len(), HEADER_LEN);
        put(0, &header)?;
        Ok(Some(n))
    }

    /// The index saved with `header` ([`read_header`]), its payload read from `parts` (in
    /// part order, from part 1), to serve under `plan` with `m` links per upper layer and
    /// insertion width `ef_construction`. `Incompatible` when the snapshot was made with
    /// another `M`, code length or layer-0 links than `plan`'s, or its points (live and dead) would take
    /// more than the budget leaves the index; `Corrupted` on any damage.
    pub(crate) fn load<B: AsRef<[u8]>>(
        header: &SavedHeader,
        metric: Metric,
        m: usize,
        ef_construction: usize,
        plan: Plan,
        parts: impl Iterator<Item = Result<B, IndexError>>,
    ) -> Result<BudgetIndex, IndexError> {
        let index = BudgetIndex::new(header.dim, metric, m, ef_construction, plan)?;
        if header.m != index.m || header.code_len != plan.code_len || header.links0 != index.m0 {
            return Err(incompatible(format!(
                "saved with M {}, codes of {} bytes and {} layer-0 links, planned for M {}, {} \
                 and {}",
                header.m, header.code_len, header.links0, index.m, plan.code_len, index.m0
            )));
        }
        let n = header.points;
        let (dim, code_len, m, m0) = (header.dim, header.code_len, index.m, index.m0);
        let bytes = (n as u64)
            .saturating_mul(code_len as u64 + super::point_overhead(m, m0))
            .saturating_add(super::fixed_bytes(dim));
        if bytes > plan.budget.saturating_sub(plan.cache_bytes) {
            return Err(incompatible(format!(
                "{n} points take about {bytes} bytes, more than the budget leaves the index"
            )));
        }
        let mut reader = PartReader {
            parts,
            current: None,
            at: 0,
            seen: 0,
            read: 0,
            hasher: {
                let mut h = Hasher::new();
                h.update(&header.bytes[..CHECKSUM_AT]);
                h
            },
        };
        let mut centroid_bytes = zeroed::<u8>(CENTROIDS * dim * 4, "centroid bytes")?;
        reader.read(&mut centroid_bytes)?;
        let centroids: Vec<f32> = centroid_bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        drop(centroid_bytes);
        let quantizer = ProductQuantizer::from_centroids(dim, code_len, metric, centroids)
            .ok_or_else(|| corrupted("centroids that no training makes"))?;
        let mut ids = zeroed::<u64>(n, "ids")?;
        reader.read_u64s(&mut ids)?;
        let mut levels = zeroed::<u8>(n, "levels")?;
        reader.read(&mut levels)?;
        if let Some(level) = levels.iter().find(|&&l| l > MAX_LEVEL) {
            return Err(corrupted(format!("level {level} above {MAX_LEVEL}")));
        }
        let upper_levels: usize = levels.iter().map(|&l| usize::from(l)).sum();
        // Points reach level L with probability M^-L: levels summing far past `n` are no
        // graph's (and would size the upper rows from damage).
        if upper_levels > n.saturating_mul(2).saturating_add(usize::from(MAX_LEVEL)) {
            return Err(corrupted(format!(
                "levels of {n} points sum to {upper_levels}"
            )));
        }
        if payload_len(dim, n, code_len, m, m0, upper_levels) != Some(header.payload_len) {
            return Err(corrupted("the payload's length does not fit its points"));
        }
        let mut live = zeroed::<u64>(n.div_ceil(64), "live bits")?;
        reader.read_u64s(&mut live)?;
        if !n.is_multiple_of(64) && live.last().is_some_and(|w| w >> (n % 64) != 0) {
            return Err(corrupted("a live bit past the last point"));
        }
        let mut codes = zeroed::<u8>(n * code_len, "code bytes")?;
        reader.read(&mut codes)?;
        let mut layer0 = zeroed::<u32>(n * m0, "links")?;
        reader.read_u32s(&mut layer0)?;
        let bad_link = |l: &u32| *l != EMPTY && *l as usize >= n;
        if let Some(link) = layer0.iter().find(|l| bad_link(l)) {
            return Err(corrupted(format!("link to slot {link} of {n}")));
        }
        let mut upper: IdMap<Vec<u32>> = IdMap::default();
        for (slot, &level) in levels.iter().enumerate() {
            if level == 0 {
                continue;
            }
            let mut rows = zeroed::<u32>(usize::from(level) * m, "links")?;
            reader.read_u32s(&mut rows)?;
            if let Some(link) = rows.iter().find(|l| bad_link(l)) {
                return Err(corrupted(format!("link to slot {link} of {n}")));
            }
            upper.insert(slot as u64, rows);
        }
        reader.finish(header)?;
        if let Some((slot, level)) = header.entry {
            let top = levels.iter().copied().max().unwrap_or(0);
            if levels.get(slot as usize) != Some(&level) || level != top {
                return Err(corrupted("the entry point is not on the top level"));
            }
        }
        let mut slot_of: IdMap<u32> = IdMap::default();
        slot_of.reserve(header.live);
        for (word_at, &word) in live.iter().enumerate() {
            let mut bits = word;
            while bits != 0 {
                let slot = word_at * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                if slot_of.insert(ids[slot], slot as u32).is_some() {
                    return Err(corrupted(format!("id {} has two live points", ids[slot])));
                }
            }
        }
        if slot_of.len() != header.live {
            return Err(corrupted(format!(
                "{} live points, header says {}",
                slot_of.len(),
                header.live
            )));
        }
        {
            let mut inner = index.inner.write();
            *inner = Inner {
                quantizer: Some(quantizer),
                pending: Vec::new(),
                pending_at: IdMap::default(),
                ids,
                codes,
                levels,
                layer0,
                upper,
                live,
                live_count: slot_of.len(),
                slot_of,
                entry: header.entry,
                rng: super::mix(0x5EED ^ header.stamp ^ n as u64),
                unreached: Vec::new(),
                walked: 0,
                suspects: Vec::new(),
                loading: false,
            };
            // What no walk from the entry reaches is not saved: found again.
            inner.walk(index.m0);
        }
        index.note_loaded();
        Ok(index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::test_support::low_rank_vectors;

    fn plan() -> Plan {
        Plan {
            code_len: 8,
            links0: 16,
            capacity: 10_000,
            train_at: 512,
            cache_bytes: 1 << 20,
            budget: 64 << 20,
            planned: 0,
        }
    }

    fn saved(index: &BudgetIndex, stamp: u64) -> Vec<Vec<u8>> {
        let mut parts: Vec<Vec<u8>> = Vec::new();
        index
            .save(stamp, |part, bytes| -> Result<(), ()> {
                let part = part as usize;
                if parts.len() <= part {
                    parts.resize(part + 1, Vec::new());
                }
                parts[part] = bytes.to_vec();
                Ok(())
            })
            .expect("saved")
            .expect("trained");
        parts
    }

    fn loaded(parts: &[Vec<u8>]) -> Result<BudgetIndex, IndexError> {
        let header = read_header(&parts[0], Metric::Cosine, 32)?;
        BudgetIndex::load(
            &header,
            Metric::Cosine,
            8,
            50,
            plan(),
            parts[1..].iter().map(|p| Ok(p.as_slice())),
        )
    }

    #[test]
    fn a_saved_index_loads_and_answers_as_it_did() {
        let data = low_rank_vectors(11, 3000, 32);
        let index = BudgetIndex::new(32, Metric::Cosine, 8, 50, plan()).expect("index");
        let items: Vec<(u64, &[f32])> = data
            .iter()
            .enumerate()
            .map(|(i, v)| (i as u64 * 3, v.as_slice()))
            .collect();
        index.insert_batch(&items).expect("insert");
        for id in (0..300u64).map(|i| i * 9) {
            index.remove(id);
        }
        let parts = saved(&index, 42);
        let header = read_header(&parts[0], Metric::Cosine, 32).expect("header");
        assert_eq!((header.stamp, header.points, header.live), (42, 3000, 2700));
        let back = loaded(&parts).expect("loaded");
        back.verify().expect("verify");
        assert_eq!(back.live_ids(), index.live_ids());
        // A load ends with a walk from the entry (what it does not reach is not saved):
        // the index saved, walked too, seeds its searches with the same points.
        index.walk();
        assert_eq!(back.inner.read().unreached, index.inner.read().unreached);
        for query in &data[..30] {
            assert_eq!(
                back.search(query, 10, 40, None).expect("search"),
                index.search(query, 10, 40, None).expect("search")
            );
        }
    }

    #[test]
    fn a_damaged_or_mismatched_snapshot_is_refused() {
        let data = low_rank_vectors(12, 1500, 32);
        let index = BudgetIndex::new(32, Metric::Cosine, 8, 50, plan()).expect("index");
        let items: Vec<(u64, &[f32])> = data
            .iter()
            .enumerate()
            .map(|(i, v)| (i as u64, v.as_slice()))
            .collect();
        index.insert_batch(&items).expect("insert");
        let parts = saved(&index, 7);
        let last = parts.len() - 1;
        for at in [1, last / 2, last] {
            let mut damaged = parts.clone();
            let byte = damaged[at].len() / 3;
            damaged[at][byte] ^= 1;
            assert!(
                matches!(loaded(&damaged), Err(IndexError::Corrupted { .. })),
                "a flipped byte in part {at}"
            );
        }
        let mut short = parts.clone();
        short.pop();
        assert!(matches!(loaded(&short), Err(IndexError::Corrupted { .. })));
        let mut longer = parts.clone();
        longer.push(vec![0; 10]);
        assert!(matches!(loaded(&longer), Err(IndexError::Corrupted { .. })));
        assert!(matches!(
            read_header(&parts[0], Metric::L2, 32),
            Err(IndexError::Incompatible { .. })
        ));
        assert!(matches!(
            read_header(&parts[0], Metric::Cosine, 33),
            Err(IndexError::Incompatible { .. })
        ));
        let header = read_header(&parts[0], Metric::Cosine, 32).expect("header");
        // Another code length, or another number of layer-0 links, than today's plan.
        for other in [
            Plan {
                code_len: 4,
                ..plan()
            },
            Plan {
                links0: 12,
                ..plan()
            },
        ] {
            assert!(matches!(
                BudgetIndex::load(
                    &header,
                    Metric::Cosine,
                    8,
                    50,
                    other,
                    parts[1..].iter().map(|p| Ok(p.as_slice())),
                ),
                Err(IndexError::Incompatible { .. })
            ));
        }
        // Format 1 (layer 0 always `2 M`, no links in the header) is not read.
        let mut old = parts[0].clone();
        old[8..12].copy_from_slice(&1u32.to_le_bytes());
        assert!(matches!(
            read_header(&old, Metric::Cosine, 32),
            Err(IndexError::Incompatible { .. })
        ));
    }
}
