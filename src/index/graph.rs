//! The project's own HNSW graph: links as `u32` point slots in flat arrays, built in
//! parallel with per-point locks, searched in place.
//!
//! Layout, as hnswlib's: a point is a slot `0..len`; per slot its vector id, its vector
//! (`dim` floats, slot-major in one `Vec<f32>`) and its level (geometric, multiplier
//! `1 / ln M`). Layer 0 is ONE array of `len * (2M + 1)` words: a slot's row holds its link
//! count, then up to `2M` neighbour slots. The few points above layer 0 (about `1 / M` of
//! them) have a second row array of `level * (M + 1)` words each, held apart. Links are
//! `AtomicU32`s (same size as `u32`): searches read them while inserts rewrite other
//! points' rows, each row rewritten only under its point's lock.
//!
//! Insertion is hnswlib's `addPoint`: a greedy descent from the entry point down to the new
//! point's level, then per layer a beam search of width `ef_construction`, neighbour
//! selection with hnswlib's heuristic (a candidate is kept only if it is nearer to the new
//! point than to every neighbour kept so far), and the reverse links, a neighbour's row
//! pruned by the same heuristic once full. Points are first *allocated* (id, vector,
//! level appended under the graph's write lock, in one step per batch), then linked in
//! parallel under the read lock: rayon over the batch, so a build uses every core of the
//! pool it runs in.
//!
//! The search is HNSW's: a greedy descent through the upper layers, then a beam of width
//! `ef` in layer 0 with per-thread visited marks, an admission test applied inside the
//! traversal (dead points and filters route the beam but never enter the results), and a
//! budget of distances ([`Hnsw::search_admitting`]).
//!
//! Vectors: the graph holds each point's vector once, contiguous by slot, next to its links.
//! The exact store does not copy the vectors of live points: it reads them here
//! ([`Hnsw::vectors`]) and keeps its own rows only for vectors the graph lacks (see
//! `exact` and `docs/design.md`).

use std::cmp::{Ordering as CmpOrdering, Reverse};
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

use parking_lot::{Mutex, RwLock, RwLockReadGuard};
use rayon::prelude::*;

use super::candidates::IdFilter;
use super::distance::distance;
use super::quantize::Quantizer;
use super::workers::{join_threads, PARALLEL_MIN};
use super::Metric;
use crate::simd::prefetch_lines;
use crate::sys::advise_huge_pages;

/// Highest level a point may get (levels are `0..=MAX_LEVEL`).
pub(crate) const MAX_LEVEL: usize = 15;

/// Cache lines of neighbours' vectors a layer-0 expansion keeps prefetched ahead of the
/// distance it computes.
const PREFETCH_LINES: usize = 16;

/// Cache lines of a vector [`Hnsw::prefetch`] asks for (the first ones).
const PREFETCH_VECTOR_LINES: usize = 4;

/// Cache lines of a code [`Hnsw::prefetch_code`] asks for (the first ones): every line of
/// a code of up to 960 dimensions, wherever it starts (a 384-d code spans 3 or 4). A code's bytes are an eighth
/// of its vector's, so asking for all of them does not fill the line-fill buffers (the
/// choice is measured in docs/benchmarks.md).
const PREFETCH_CODE_LINES: usize = 8;

/// Adds `candidate` to `best`, a traversal's `ef` nearest points so far (a max-heap), keeping
/// at most `ef`: once full, the farthest is replaced in place if `candidate` is nearer (one
/// sift down) rather than `candidate` pushed and the farthest popped (a sift up and a sift
/// down). The same points are kept either way.
#[inline]
fn keep_best(best: &mut BinaryHeap<Near>, candidate: Near, ef: usize) {
    if best.len() < ef {
        best.push(candidate);
    } else if let Some(mut worst) = best.peek_mut() {
        if candidate < *worst {
            *worst = candidate;
        }
    }
}

/// A graph's links taken over from persisted parts (see [`Hnsw::from_parts`]).
struct Links {
    layer0: Vec<AtomicU32>,
    upper_at: Vec<u32>,
    upper: Vec<Box<[AtomicU32]>>,
    entry: Option<usize>,
    /// Per slot: reached from the entry (see [`reached_slots`]).
    reached: Vec<bool>,
}

/// Checks a persisted row (count, then `cap` slots) of a graph of `n` points in place, its
/// unused places zeroed; `None` if its count exceeds `cap` or a link names no slot.
fn kept_in_place(row: &mut [u32], cap: usize, n: usize) -> Option<()> {
    let (&mut count, slots) = row.split_first_mut()?;
    let count = count as usize;
    if count > cap || slots.len() != cap {
        return None;
    }
    if slots[..count].iter().any(|&s| s as usize >= n) {
        return None;
    }
    slots[count..].fill(0);
    Some(())
}

/// Appends a persisted row (count, then `cap` slots) to `out` as the graph keeps it: the
/// links to slots without a vector (`present`) dropped, and a slot without one left
/// without links (its row checked all the same); unused places zero. `None` if the row is
/// malformed.
fn keep_row(
    out: &mut Vec<AtomicU32>,
    row: &[u32],
    cap: usize,
    owner: usize,
    present: &[bool],
) -> Option<()> {
    let n = present.len();
    let (&count, slots) = row.split_first()?;
    let count = count as usize;
    if count > cap || slots.len() != cap {
        return None;
    }
    let start = out.len();
    out.push(AtomicU32::new(0));
    if *present.get(owner)? {
        for &s in &slots[..count] {
            if *present.get(s as usize)? {
                out.push(AtomicU32::new(s));
            }
        }
    } else if slots[..count].iter().any(|&s| s as usize >= n) {
        return None;
    }
    let kept = out.len() - start - 1;
    *out[start].get_mut() = kept as u32;
    out.extend(std::iter::repeat_with(|| AtomicU32::new(0)).take(cap - kept));
    Some(())
}

/// Per slot the index of its upper-layer rows in the second vector (`u32::MAX`: layer 0
/// only), and the rows of each point above layer 0.
type UpperRows = (Vec<u32>, Vec<Box<[AtomicU32]>>);

/// The upper-layer rows of persisted `words` (`M` + 1 words a row, `level` rows a point)
/// as the graph keeps them (see [`keep_row`]): per slot the index of its rows in the
/// second vector (`u32::MAX` for a point of layer 0 only).
fn upper_rows(levels: &[u8], words: &[u32], m: usize, present: &[bool]) -> Option<UpperRows> {
    let mut upper_at = Vec::with_capacity(levels.len());
    let mut upper = Vec::new();
    let mut at = 0usize;
    for (slot, &level) in levels.iter().enumerate() {
        let level = usize::from(level);
        if level > MAX_LEVEL {
            return None;
        }
        if level == 0 {
            upper_at.push(u32::MAX);
            continue;
        }
        let count = level * (m + 1);
        let rows = words.get(at..at.checked_add(count)?)?;
        at += count;
        let mut kept = Vec::with_capacity(count);
        for row in rows.chunks_exact(m + 1) {
            keep_row(&mut kept, row, m, slot, present)?;
        }
        upper_at.push(u32::try_from(upper.len()).ok()?);
        upper.push(kept.into_boxed_slice());
    }
    (at == words.len()).then_some((upper_at, upper))
}

/// The entry of a loaded graph: the saved one if it has its vector, else the highest
/// point that does. `Some(None)`: no point to enter by (an empty graph, or no point has
/// its vector); `None`: a non-empty graph saved without an entry, or an entry that names
/// no slot (malformed).
fn entry_of(saved: Option<u32>, levels: &[u8], present: &[bool]) -> Option<Option<usize>> {
    match saved {
        Some(e) if *present.get(e as usize)? => Some(Some(e as usize)),
        Some(_) => Some(
            (0..present.len())
                .filter(|&s| present[s])
                .max_by_key(|&s| (levels[s], Reverse(s))),
        ),
        None if present.is_empty() => Some(None),
        None => None,
    }
}

/// [`reached_slots`] from a loaded graph's entry (`None`: an empty graph, or none of its
/// points has a vector: nothing is reached).
fn reached_from(layer0: &[AtomicU32], m0: usize, levels: &[u8], entry: Option<usize>) -> Vec<bool> {
    match entry.filter(|&e| e < levels.len()) {
        Some(entry) => reached_slots(layer0, m0, levels.len(), entry as u32),
        None => vec![false; levels.len()],
    }
}

/// Which slots every search wide enough to visit all it can reaches: everything linked in
/// layer 0 (`m0` + 1 words a row) from `entry`. A search widens in layer 0 from where its
/// descent ended and from `entry` as well (`Hnsw::search_admitting`), so what `entry`'s
/// links lead to is visited whatever the query. (Not from every point of the top level: a
/// search may start from none of them.)
///
/// Invariant: a search whose walk visits every point it can reach misses no slot marked
/// reached.
fn reached_slots(layer0: &[AtomicU32], m0: usize, n: usize, entry: u32) -> Vec<bool> {
    let row = |slot: u32| {
        let at = slot as usize * (m0 + 1);
        layer0.get(at..at + m0 + 1).unwrap_or(&[])
    };
    let reached = super::reach::reached(n, [entry], row, Hnsw::neighbours);
    (0..n as u32).map(|slot| reached.contains(slot)).collect()
}

/// A graph quantises its vectors for the traversal ([`super::quantize`]) once it holds this
/// many points: the quantiser is fitted to them then, and every later point is coded with
/// it. Below, a traversal reads the vectors themselves (a small graph stays in cache).
pub(crate) const QUANTIZE_AT: usize = 1024;

/// Only graphs of at least this many dimensions are quantised. Below, the vectors of the
/// graphs this store is built for stay in the CPU's caches and the codes only add work
/// (the threshold is measured on low- and high-dimension sets in docs/benchmarks.md).
pub(crate) const QUANTIZE_MIN_DIM: usize = 128;

/// A quantised graph refits its quantiser and codes its vectors again
/// ([`Hnsw::refit_codes_if_due`]) once more than this share of its coded values lie outside
/// the quantiser's range (clamped: data that drifted away from what it was fitted to) ...
pub(crate) const REFIT_CLAMPED_SHARE: f64 = 1.0 / 64.0;

/// ... or once it holds this many times the points it was fitted to (data that narrowed
/// inside the range loses resolution without being clamped). Refits at each doubling code
/// each vector about twice in all.
const REFIT_GROWTH: usize = 2;

/// Whether a graph of `n` points of `dim` dimensions without a quantiser gets one now
/// ([`QUANTIZE_AT`], [`QUANTIZE_MIN_DIM`]).
fn due_for_quantizer(n: usize, dim: usize) -> bool {
    n >= QUANTIZE_AT && dim >= QUANTIZE_MIN_DIM
}

/// Whether a graph of `dim` dimensions may be traversed on codes, so that its `f32`
/// vectors are read only for the few points each search ends with (and are not worth
/// huge pages, see [`advise_huge_pages`]).
fn reads_codes(dim: usize) -> bool {
    dim >= QUANTIZE_MIN_DIM
}

/// Below this many points a batch is linked on the calling thread (no rayon).
const PARALLEL_INSERT_MIN: usize = 64;

/// How a graph is built: `Options::index` (whose docs give the defaults and why).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct GraphParams {
    /// Links per point per upper layer (layer 0 keeps twice as many).
    pub(crate) m: usize,
    /// Candidate list width while inserting.
    pub(crate) ef_construction: usize,
}

impl Default for GraphParams {
    fn default() -> Self {
        GraphParams {
            m: crate::options::DEFAULT_INDEX_M,
            ef_construction: crate::options::DEFAULT_INDEX_EF_CONSTRUCTION,
        }
    }
}

/// How a [`Hnsw::search_admitting`] traversal ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ending {
    /// HNSW's stop: `ef` admitted points, all nearer than every candidate left.
    Converged,
    /// No candidate left: every point reachable from the entry was expanded, so the
    /// admitted points found are all the reachable ones (possibly fewer than `ef`).
    Drained,
    /// The distance budget ran out first: the results are incomplete.
    OverBudget,
}

/// A distance ordered for the heaps (NaN never occurs: the kernel maps it to +inf).
#[derive(Clone, Copy, PartialEq)]
struct Near(f32, u32);

impl Eq for Near {}

impl PartialOrd for Near {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}

impl Ord for Near {
    fn cmp(&self, other: &Self) -> CmpOrdering {
        self.0.total_cmp(&other.0).then(self.1.cmp(&other.1))
    }
}

/// The visited marks of a traversal, kept per thread between traversals: a slot is
/// visited in this traversal when its mark equals the traversal's, so a traversal starts
/// by bumping the mark instead of clearing (or allocating) one entry per point. Marks are
/// 16-bit, as hnswlib's: half the bytes of a 32-bit mark, so more of them stay in the
/// cache (a traversal reads them at scattered slots), for a clearing once every 65,535
/// traversals.
struct Visited {
    marks: Vec<u16>,
    current: u16,
    /// The unvisited neighbours of the point being expanded (reused between expansions).
    fresh: Vec<u32>,
}

impl Visited {
    /// A fresh mark for a traversal over `n` slots.
    fn start(&mut self, n: usize) -> u16 {
        if self.marks.len() < n {
            self.marks.reserve(n - self.marks.len());
            advise_huge_pages(self.marks.as_ptr(), self.marks.capacity());
            self.marks.resize(n, 0);
        }
        self.current = self.current.wrapping_add(1);
        if self.current == 0 {
            // Wrapped: old marks could collide with the new ones.
            self.marks.fill(0);
            self.current = 1;
        }
        self.current
    }
}

thread_local! {
    static VISITED: std::cell::RefCell<Visited> = const {
        std::cell::RefCell::new(Visited { marks: Vec::new(), current: 0, fresh: Vec::new() })
    };
}

/// Distances computed by graph searches on this thread (descent and layer 0), for the
/// benches' per-query counts (`testkit::graph_search_distances`).
#[cfg(any(test, feature = "testkit"))]
pub(crate) mod counted {
    thread_local! {
        pub(crate) static DISTANCES: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    }

    /// Distances computed by graph searches on this thread so far.
    pub(crate) fn distances() -> u64 {
        DISTANCES.with(std::cell::Cell::get)
    }

    pub(super) fn add(n: usize) {
        DISTANCES.with(|d| d.set(d.get() + n as u64));
    }
}

/// No entry point yet (an empty graph).
const NO_ENTRY: u64 = u64::MAX;

/// The arrays of a graph (see the module docs); grown under the write lock only.
struct Points {
    /// Slot -> vector id.
    ids: Vec<u64>,
    /// Slot-major vectors, `dim` floats each.
    vectors: Vec<f32>,
    /// Slot -> level.
    levels: Vec<u8>,
    /// Layer 0: per slot a count then `2M` neighbour slots.
    layer0: Vec<AtomicU32>,
    /// Slot -> index into `upper` (`u32::MAX`: level 0 only).
    upper_at: Vec<u32>,
    /// Upper-layer rows of the points above layer 0: per layer `1..=level`, a count then
    /// `M` neighbour slots.
    upper: Vec<Box<[AtomicU32]>>,
    /// One lock per slot, held while its rows are rewritten.
    locks: Vec<Mutex<()>>,
    /// The traversal's quantiser, once the graph has [`QUANTIZE_AT`] points (of at least
    /// [`QUANTIZE_MIN_DIM`] dimensions).
    quant: Option<Quantizer>,
    /// Slot-major codes of the vectors under `quant` (`code_len` bytes each), or empty.
    codes: Vec<u8>,
    /// `quant`'s [`Quantizer::code_len`] (0 without one): set with it, so that the codes are
    /// read at the stride they were written at.
    code_len: usize,
    /// How many values of `codes` were clamped ([`Quantizer::encode_into`]).
    clamped: usize,
    /// Points the graph held when `quant` was fitted (or loaded).
    fitted_at: usize,
}

/// Codes every `dim`-float row of `vectors` with `quant` (in parallel, blocks of 4,096
/// rows, in one allocation filled in place: pieces joined afterwards left a second copy's
/// worth in the threads' malloc arenas); returns the codes and how many values were clamped.
fn code_rows(quant: &Quantizer, vectors: &[f32], dim: usize) -> (Vec<u8>, usize) {
    let len = quant.code_len();
    let mut codes = vec![0u8; vectors.len() / dim * len];
    advise_huge_pages(codes.as_ptr(), codes.capacity());
    let clamped = codes
        .par_chunks_mut(len * 4096)
        .zip(vectors.par_chunks(dim * 4096))
        .map(|(codes, vectors)| {
            codes
                .chunks_exact_mut(len)
                .zip(vectors.chunks_exact(dim))
                .map(|(code, vector)| quant.encode_into(vector, code))
                .sum::<usize>()
        })
        .sum();
    (codes, clamped)
}

impl Points {
    /// Fits the quantiser to the vectors held and codes them all.
    fn quantize(&mut self, dim: usize, metric: Metric) {
        let n = self.ids.len();
        let vectors = &self.vectors;
        let quant = Quantizer::fit(dim, n, |slot| vectors.get(slot * dim..(slot + 1) * dim))
            .map(|quant| quant.for_metric(metric));
        self.quantize_with(dim, quant);
    }

    /// Codes every vector held with `quant` (none: no codes).
    fn quantize_with(&mut self, dim: usize, quant: Option<Quantizer>) {
        self.code_len = quant.as_ref().map_or(0, Quantizer::code_len);
        self.quant = quant;
        self.codes = Vec::new();
        self.clamped = 0;
        self.fitted_at = self.ids.len();
        let (Some(quant), Some(dim)) = (&self.quant, std::num::NonZeroUsize::new(dim)) else {
            return;
        };
        (self.codes, self.clamped) = code_rows(quant, &self.vectors, dim.get());
    }

    /// Whether the codes of these `dim`-dimensional vectors no longer track them
    /// ([`REFIT_CLAMPED_SHARE`], [`REFIT_GROWTH`]).
    fn refit_due(&self, dim: usize) -> bool {
        let values = self.vectors.len().min(self.ids.len().saturating_mul(dim));
        self.quant.is_some()
            && (self.clamped as f64 > values as f64 * REFIT_CLAMPED_SHARE
                || self.ids.len() >= self.fitted_at.max(1).saturating_mul(REFIT_GROWTH))
    }
}

/// A read-locked view of a graph's point ids and vectors (see [`Hnsw::vectors`]): the
/// vectors are slot-major in one contiguous array, so a run of slots is one block of rows.
pub(crate) struct VectorsRead<'a> {
    points: RwLockReadGuard<'a, Points>,
    dim: usize,
}

impl VectorsRead<'_> {
    /// Number of points (slots), linked or being linked.
    pub(crate) fn len(&self) -> usize {
        self.points.ids.len()
    }

    /// The vector id of each slot.
    pub(crate) fn ids(&self) -> &[u64] {
        &self.points.ids
    }

    /// The vector of `slot` (empty for an unknown slot).
    #[inline]
    pub(crate) fn row(&self, slot: u32) -> &[f32] {
        let at = slot as usize * self.dim;
        self.points.vectors.get(at..at + self.dim).unwrap_or(&[])
    }

    /// The vectors of the slots of `slots`, one contiguous block of rows (empty if the
    /// range is out of bounds).
    #[inline]
    pub(crate) fn rows(&self, slots: std::ops::Range<usize>) -> &[f32] {
        self.points
            .vectors
            .get(slots.start * self.dim..slots.end * self.dim)
            .unwrap_or(&[])
    }
}

/// The links of a graph as plain words, for persisting and loading (see `persisted`).
pub(crate) struct GraphParts {
    /// `M`.
    pub(crate) m: usize,
    /// `ef_construction` the graph was built with.
    pub(crate) ef_construction: usize,
    /// Slot -> vector id.
    pub(crate) ids: Vec<u64>,
    /// Slot -> level.
    pub(crate) levels: Vec<u8>,
    /// Layer 0 rows (`ids.len() * (2M + 1)` words).
    pub(crate) layer0: Vec<u32>,
    /// The upper rows of every point with level > 0, in slot order, `level * (M + 1)`
    /// words each.
    pub(crate) upper: Vec<u32>,
    /// The entry slot (`None`: empty graph).
    pub(crate) entry: Option<u32>,
    /// The traversal's quantiser (`None`: not quantised yet, or a snapshot of an earlier
    /// format, which the load fits anew).
    pub(crate) quant: Option<Quantizer>,
}

/// An HNSW graph over the vectors it holds (see the module docs).
pub(crate) struct Hnsw {
    metric: Metric,
    dim: usize,
    m: usize,
    m0: usize,
    ef_construction: usize,
    level_mult: f64,
    points: RwLock<Points>,
    /// Entry slot << 8 | its level, or [`NO_ENTRY`].
    entry: AtomicU64,
    /// Held by an insertion whose point rises above the current top level (rare), for the
    /// whole insertion, as hnswlib's global lock.
    top: Mutex<()>,
    /// Points whose insertion finished (linked; allocated points may be fewer linked).
    linked: AtomicUsize,
    /// State of the level generator (SplitMix64).
    seed: AtomicU64,
}

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Hnsw {
    /// An empty graph of `dim`-dimensional vectors built with `params` (`m >= 2`).
    pub(crate) fn new(metric: Metric, dim: usize, params: GraphParams) -> Hnsw {
        let m = params.m.max(2);
        Hnsw {
            metric,
            dim,
            m,
            m0: 2 * m,
            ef_construction: params.ef_construction.max(m),
            level_mult: 1.0 / (m as f64).ln(),
            points: RwLock::new(Points {
                ids: Vec::new(),
                vectors: Vec::new(),
                levels: Vec::new(),
                layer0: Vec::new(),
                upper_at: Vec::new(),
                upper: Vec::new(),
                locks: Vec::new(),
                quant: None,
                codes: Vec::new(),
                code_len: 0,
                clamped: 0,
                fitted_at: 0,
            }),
            entry: AtomicU64::new(NO_ENTRY),
            top: Mutex::new(()),
            linked: AtomicUsize::new(0),
            seed: AtomicU64::new(0x005E_ED0F_6A7A_B1E5),
        }
    }

    /// Whether the traversal reads codes (the graph reached [`QUANTIZE_AT`] points, or
    /// was loaded with a quantiser).
    #[cfg(test)]
    pub(crate) fn is_quantized(&self) -> bool {
        self.points.read().quant.is_some()
    }

    /// Number of points whose insertion finished (tests: a failed batch leaves fewer
    /// linked than allocated).
    #[cfg(test)]
    pub(crate) fn linked_count(&self) -> usize {
        self.linked.load(Ordering::SeqCst)
    }

    /// The vector id of each slot.
    pub(crate) fn ids(&self) -> Vec<u64> {
        self.points.read().ids.clone()
    }

    /// The layer-0 neighbours of `slot` (empty for an unknown slot).
    #[cfg(test)]
    pub(crate) fn links0(&self, slot: u32) -> Vec<u32> {
        let points = self.points.read();
        self.row_copy(&points, slot, 0)
    }

    fn random_level(&self) -> u8 {
        let state = self
            .seed
            .fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed)
            .wrapping_add(0x9E37_79B9_7F4A_7C15);
        // Uniform in (0, 1]: never ln(0).
        let uniform = ((mix(state) >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
        let level = (-uniform.ln() * self.level_mult).floor();
        level.min(MAX_LEVEL as f64) as u8
    }

    /// Row of `slot` in `layer` (count first): layer 0 in the flat array, upper layers in
    /// the point's own rows.
    fn row<'a>(&self, points: &'a Points, slot: u32, layer: usize) -> &'a [AtomicU32] {
        let slot = slot as usize;
        if layer == 0 {
            let at = slot * (self.m0 + 1);
            return points.layer0.get(at..at + self.m0 + 1).unwrap_or(&[]);
        }
        let Some(&at) = points.upper_at.get(slot) else {
            return &[];
        };
        let Some(rows) = points.upper.get(at as usize) else {
            return &[];
        };
        let start = (layer - 1) * (self.m + 1);
        rows.get(start..start + self.m + 1).unwrap_or(&[])
    }

    /// The neighbours in `row`, read without a lock (a concurrent rewrite may show a mix of
    /// the old and new row; every word is a valid slot either way).
    #[inline]
    fn neighbours(row: &[AtomicU32]) -> impl Iterator<Item = u32> + '_ {
        let count = row
            .first()
            .map_or(0, |c| c.load(Ordering::Relaxed) as usize);
        row.iter()
            .skip(1)
            .take(count)
            .map(|slot| slot.load(Ordering::Relaxed))
    }

    fn row_copy(&self, points: &Points, slot: u32, layer: usize) -> Vec<u32> {
        Self::neighbours(self.row(points, slot, layer)).collect()
    }

    /// The neighbours of `slot` in `layer` into `out`, read under the point's lock (an
    /// insertion sees each row whole).
    fn copy_row(&self, points: &Points, slot: u32, layer: usize, out: &mut Vec<u32>) {
        out.clear();
        let _lock = points.locks[slot as usize].lock();
        out.extend(Self::neighbours(self.row(points, slot, layer)));
    }

    fn write_row(row: &[AtomicU32], neighbours: &[u32]) {
        let Some((count, slots)) = row.split_first() else {
            return;
        };
        let n = neighbours.len().min(slots.len());
        for (cell, &slot) in slots.iter().zip(&neighbours[..n]) {
            cell.store(slot, Ordering::Relaxed);
        }
        count.store(n as u32, Ordering::Release);
    }

    #[inline]
    fn vector<'a>(&self, points: &'a Points, slot: u32) -> &'a [f32] {
        let at = slot as usize * self.dim;
        &points.vectors[at..at + self.dim]
    }

    /// Asks the CPU to start loading `slot`'s vector into the cache, so that computing its
    /// distance next does not wait on memory: a traversal reaches points scattered over the
    /// whole vector array, and every vector it reaches is a cache
    /// miss otherwise. A hint only: it changes no result. Only the first
    /// [`PREFETCH_VECTOR_LINES`] cache lines are asked for: the kernel reads the vector in
    /// order, which the hardware prefetcher follows, and a prefetch instruction waits when
    /// the CPU's line-fill buffers are full (asking for all 24 lines of each 384-d vector
    /// took a fifth of a search's time there). hnswlib asks for the first line only.
    #[inline(always)]
    fn prefetch(&self, points: &Points, slot: u32) {
        prefetch_lines(self.vector(points, slot), PREFETCH_VECTOR_LINES);
    }

    /// The code of `slot`'s vector (empty before the graph is quantised).
    #[inline]
    fn code<'a>(&self, points: &'a Points, slot: u32) -> &'a [u8] {
        let len = points.code_len;
        let at = slot as usize * len;
        points.codes.get(at..at + len).unwrap_or(&[])
    }

    /// [`Self::prefetch`] for the code of `slot`'s vector: up to [`PREFETCH_CODE_LINES`]
    /// lines, every line of a 384-d one.
    #[inline(always)]
    fn prefetch_code(&self, points: &Points, slot: u32) {
        prefetch_lines(self.code(points, slot), PREFETCH_CODE_LINES);
    }

    /// Asks the CPU to start loading `slot`'s layer-0 row (see [`Self::prefetch`]).
    #[inline(always)]
    fn prefetch_row(&self, points: &Points, slot: u32) {
        prefetch_lines(self.row(points, slot, 0), usize::MAX);
    }

    #[inline]
    fn dist_slots(&self, points: &Points, a: u32, b: u32) -> f32 {
        distance(self.metric, self.vector(points, a), self.vector(points, b))
    }

    fn entry(&self) -> Option<(u32, usize)> {
        let packed = self.entry.load(Ordering::Acquire);
        (packed != NO_ENTRY).then_some(((packed >> 8) as u32, (packed & 0xFF) as usize))
    }

    fn set_entry(&self, slot: u32, level: usize) {
        self.entry
            .store((u64::from(slot) << 8) | level as u64, Ordering::Release);
    }

    /// Makes room for `additional` more points at once, so that a build of a known size
    /// grows no array by doubling: each doubling copied an array and left the old one to
    /// the allocator of the pool thread that grew it, freed but not returned to the system.
    pub(crate) fn reserve(&self, additional: usize) {
        let mut points = self.points.write();
        points.ids.reserve_exact(additional);
        points
            .vectors
            .reserve_exact(additional.saturating_mul(self.dim));
        if !reads_codes(self.dim) {
            advise_huge_pages(points.vectors.as_ptr(), points.vectors.capacity());
        }
        points.levels.reserve_exact(additional);
        points
            .layer0
            .reserve_exact(additional.saturating_mul(self.m0 + 1));
        advise_huge_pages(points.layer0.as_ptr(), points.layer0.capacity());
        points.upper_at.reserve_exact(additional);
        points.locks.reserve_exact(additional);
    }

    /// Appends points for `items` (unlinked) and returns their slots; the caller links
    /// them with [`Self::link`]. `None` when the graph would exceed `u32` slots.
    fn allocate(&self, items: &[(u64, &[f32])]) -> Option<std::ops::Range<u32>> {
        let mut points = self.points.write();
        let first = points.ids.len();
        let end = first.checked_add(items.len())?;
        let first_slot = u32::try_from(first).ok()?;
        let end_slot = u32::try_from(end).ok()?;
        points.ids.reserve(items.len());
        points.vectors.reserve(items.len() * self.dim);
        if !reads_codes(self.dim) {
            advise_huge_pages(points.vectors.as_ptr(), points.vectors.capacity());
        }
        points.levels.reserve(items.len());
        points.layer0.reserve(items.len() * (self.m0 + 1));
        advise_huge_pages(points.layer0.as_ptr(), points.layer0.capacity());
        points.upper_at.reserve(items.len());
        points.locks.reserve(items.len());
        for &(id, vector) in items {
            let level = self.random_level();
            points.ids.push(id);
            points.vectors.extend_from_slice(vector);
            points.levels.push(level);
            points
                .layer0
                .extend((0..=self.m0).map(|_| AtomicU32::new(0)));
            if level > 0 {
                let at = u32::try_from(points.upper.len()).unwrap_or(u32::MAX);
                let words = usize::from(level) * (self.m + 1);
                points
                    .upper
                    .push((0..words).map(|_| AtomicU32::new(0)).collect());
                points.upper_at.push(at);
            } else {
                points.upper_at.push(u32::MAX);
            }
            points.locks.push(Mutex::new(()));
        }
        let Points {
            quant,
            codes,
            clamped,
            ..
        } = &mut *points;
        match quant {
            Some(quant) => {
                codes.reserve(items.len() * quant.code_len());
                advise_huge_pages(codes.as_ptr(), codes.capacity());
                for &(_, vector) in items {
                    *clamped += quant.encode(vector, codes);
                }
            }
            None if due_for_quantizer(end, self.dim) => points.quantize(self.dim, self.metric),
            None => {}
        }
        Some(first_slot..end_slot)
    }

    /// Inserts `items` (vector ids with their vectors, each `dim` long) as new points:
    /// allocated in one step, then linked, in parallel (rayon, in whatever pool the caller
    /// runs in) for large batches. `before_each` runs before each point is linked (tests
    /// inject panics there). Returns the slots given to `items`, in order; `None` if the
    /// graph cannot take that many points.
    pub(crate) fn insert(
        &self,
        items: &[(u64, &[f32])],
        before_each: impl Fn() + Sync,
    ) -> Option<std::ops::Range<u32>> {
        let slots = self.allocate(items)?;
        {
            let points = self.points.read();
            if slots.len() >= PARALLEL_INSERT_MIN {
                slots.clone().into_par_iter().for_each(|slot| {
                    before_each();
                    self.link(&points, slot);
                });
            } else {
                for slot in slots.clone() {
                    before_each();
                    self.link(&points, slot);
                }
            }
        }
        self.refit_codes_if_due();
        Some(slots)
    }

    /// Fits the quantiser anew to the vectors held and codes them all again, if the codes
    /// no longer track them (see [`Points::refit_due`]). The new codes are computed beside
    /// the old ones under the arrays' read lock (searches go on with the old quantiser and
    /// codes; only allocations wait), then the points allocated meanwhile are coded and the
    /// quantiser and codes swapped together under the write lock: a traversal reads one
    /// quantiser with its own codes, never a mix. Runs in the inserting thread, which is
    /// a background build's or the absorber's.
    pub(crate) fn refit_codes_if_due(&self) {
        let dim = self.dim;
        let (quant, mut codes, mut clamped, fitted) = {
            let points = self.points.read();
            if !points.refit_due(dim) {
                return;
            }
            let n = points.ids.len();
            let vectors = points.vectors.get(..n * dim).unwrap_or(&[]);
            let Some(quant) =
                Quantizer::fit(dim, n, |slot| vectors.get(slot * dim..(slot + 1) * dim))
            else {
                return;
            };
            let quant = quant.for_metric(self.metric);
            let (codes, clamped) = code_rows(&quant, vectors, dim);
            (quant, codes, clamped, n)
        };
        let mut points = self.points.write();
        let tail = points.vectors.get(fitted * dim..).unwrap_or(&[]);
        codes.reserve(tail.len() / dim.max(1) * quant.code_len());
        advise_huge_pages(codes.as_ptr(), codes.capacity());
        for vector in tail.chunks_exact(dim) {
            clamped += quant.encode(vector, &mut codes);
        }
        points.code_len = quant.code_len();
        points.quant = Some(quant);
        points.codes = codes;
        points.clamped = clamped;
        points.fitted_at = points.ids.len();
    }

    /// Read access to the points' ids and vectors, for the exact store, which scores the
    /// live vectors the graph holds in place instead of keeping copies (see
    /// [`VectorsRead`]). Holds the arrays' read lock: points cannot be allocated meanwhile.
    pub(crate) fn vectors(&self) -> VectorsRead<'_> {
        VectorsRead {
            points: self.points.read(),
            dim: self.dim,
        }
    }

    /// hnswlib's `addPoint` for an allocated point.
    fn link(&self, points: &Points, slot: u32) {
        let level = usize::from(points.levels[slot as usize]);
        let mut top_guard = None;
        let Some((mut current, mut top)) = self.entry() else {
            // The first point: it becomes the entry (under the lock, re-checked).
            let _top = self.top.lock();
            if self.entry().is_none() {
                self.set_entry(slot, level);
                self.linked.fetch_add(1, Ordering::SeqCst);
                return;
            }
            drop(_top);
            return self.link(points, slot);
        };
        if level > top {
            top_guard = Some(self.top.lock());
            // Re-read under the lock: another point may have risen meanwhile.
            if let Some((c, t)) = self.entry() {
                current = c;
                top = t;
            }
            if level <= top {
                top_guard = None;
            }
        }
        let query = self.vector(points, slot);
        let mut current_dist = distance(self.metric, query, self.vector(points, current));
        let mut row = Vec::with_capacity(self.m0);
        for layer in ((level + 1)..=top).rev() {
            loop {
                let mut moved = false;
                self.copy_row(points, current, layer, &mut row);
                for &next in &row {
                    let d = distance(self.metric, query, self.vector(points, next));
                    // Ranked as the searches rank (distance, then slot), so the descent
                    // ends where it does whatever the order of the row (a snapshot stores
                    // rows sorted by slot).
                    if Near(d, next) < Near(current_dist, current) {
                        current_dist = d;
                        current = next;
                        moved = true;
                    }
                }
                if !moved {
                    break;
                }
            }
        }
        for layer in (0..=level.min(top)).rev() {
            let mut candidates =
                self.search_layer(points, query, Near(current_dist, current), layer);
            // A concurrent insertion may already have linked back to this point.
            candidates.retain(|n| n.1 != slot);
            let cap = if layer == 0 { self.m0 } else { self.m };
            let selected = self.select(points, candidates, self.m);
            if let Some(&nearest) = selected.first() {
                current = nearest.1;
                current_dist = nearest.0;
            }
            {
                let _lock = points.locks[slot as usize].lock();
                let ids: Vec<u32> = selected.iter().map(|n| n.1).collect();
                Self::write_row(self.row(points, slot, layer), &ids);
            }
            for neighbour in selected {
                if neighbour.1 == slot {
                    continue;
                }
                self.add_reverse(points, neighbour.1, slot, neighbour.0, layer, cap);
            }
        }
        if level > top {
            self.set_entry(slot, level);
        }
        drop(top_guard);
        self.linked.fetch_add(1, Ordering::SeqCst);
    }

    /// Links `from` -> `to` in `layer`, pruning `from`'s row with the heuristic when full.
    fn add_reverse(&self, points: &Points, from: u32, to: u32, d: f32, layer: usize, cap: usize) {
        let _lock = points.locks[from as usize].lock();
        let row = self.row(points, from, layer);
        let mut current = self.row_copy(points, from, layer);
        if current.contains(&to) {
            return;
        }
        if current.len() < cap {
            current.push(to);
            Self::write_row(row, &current);
            return;
        }
        let mut candidates: Vec<Near> = current
            .iter()
            .map(|&s| Near(self.dist_slots(points, from, s), s))
            .collect();
        candidates.push(Near(d, to));
        candidates.sort_unstable();
        // The heuristic's choice, topped up with the nearest of the candidates it passed
        // over while the row has room: a full row of layer-0 links keeps far fewer points
        // without any incoming link (unreachable by any search) than the heuristic alone.
        let kept = self.select_sorted(points, &candidates, cap);
        let mut ids: Vec<u32> = kept.iter().map(|n| n.1).collect();
        for candidate in &candidates {
            if ids.len() >= cap {
                break;
            }
            if !ids.contains(&candidate.1) {
                ids.push(candidate.1);
            }
        }
        Self::write_row(row, &ids);
    }

    /// hnswlib's `getNeighborsByHeuristic2` over a max-heap of candidates.
    fn select(&self, points: &Points, candidates: BinaryHeap<Near>, m: usize) -> Vec<Near> {
        let sorted = candidates.into_sorted_vec();
        self.select_sorted(points, &sorted, m)
    }

    /// The heuristic over candidates sorted nearest first: a candidate is kept only if it
    /// is nearer to the base point than to every one kept before it.
    fn select_sorted(&self, points: &Points, sorted: &[Near], m: usize) -> Vec<Near> {
        if sorted.len() <= m {
            return sorted.to_vec();
        }
        let mut kept: Vec<Near> = Vec::with_capacity(m);
        for &candidate in sorted {
            if kept.len() >= m {
                break;
            }
            let diverse = kept
                .iter()
                .all(|k| self.dist_slots(points, candidate.1, k.1) >= candidate.0);
            if diverse {
                kept.push(candidate);
            }
        }
        kept
    }

    /// hnswlib's `searchBaseLayer`: the `ef_construction` nearest found in `layer` from
    /// `start`, as a max-heap (farthest on top).
    fn search_layer(
        &self,
        points: &Points,
        query: &[f32],
        start: Near,
        layer: usize,
    ) -> BinaryHeap<Near> {
        let ef = self.ef_construction;
        VISITED.with(|cell| {
            let mut visited = cell.borrow_mut();
            let mark = visited.start(points.ids.len());
            visited.marks[start.1 as usize] = mark;
            let mut frontier = BinaryHeap::from([Reverse(start)]);
            let mut best = BinaryHeap::with_capacity(ef + 1);
            best.push(start);
            let mut row = Vec::with_capacity(self.m0);
            while let Some(Reverse(nearest)) = frontier.pop() {
                if best.len() >= ef && best.peek().is_some_and(|worst: &Near| nearest > *worst) {
                    break;
                }
                self.copy_row(points, nearest.1, layer, &mut row);
                for &next in &row {
                    let Some(mark_of) = visited.marks.get_mut(next as usize) else {
                        continue;
                    };
                    if std::mem::replace(mark_of, mark) == mark {
                        continue;
                    }
                    let candidate = Near(
                        distance(self.metric, query, self.vector(points, next)),
                        next,
                    );
                    if best.len() < ef || best.peek().is_some_and(|worst| candidate < *worst) {
                        frontier.push(Reverse(candidate));
                        keep_best(&mut best, candidate, ef);
                    }
                }
            }
            best
        })
    }

    /// The `knbn` nearest points (id, distance) found by a search of width `ef`,
    /// nearest first.
    pub(crate) fn search(&self, query: &[f32], knbn: usize, ef: usize) -> Vec<(u64, f32)> {
        self.search_admitting(query, knbn, ef, usize::MAX, |_| true, None)
            .0
    }

    /// The `knbn` nearest points (id, distance) admitted, found by a search of width `ef`
    /// that applies the admission test inside the traversal (as hnswlib's filtered search
    /// does): a point is admitted when `live` accepts its slot and `filter` (if any) its
    /// id. Every point reached routes the beam, but only admitted ones enter the result
    /// set, and the search stops only once `ef` admitted points are nearer than everything
    /// left to expand. So the fewer points pass, the further the traversal widens, and a
    /// filter passing 1 point in 100 costs about 100 times the reached points instead of a
    /// post-filter's collapse in recall. `live` is asked first and by slot, so a search
    /// without a filter never reads the points' ids (as hnswlib reads its deleted flag
    /// from the point's own row).
    ///
    /// The second value says how the traversal ended ([`Ending`]): it may run out of
    /// points to expand before holding `ef` admitted ones, or compute more than
    /// `max_distances` distances in layer 0 (a filter so selective that the traversal
    /// would walk much of the graph: the exact scan is then cheaper and exact).
    pub(crate) fn search_admitting(
        &self,
        query: &[f32],
        knbn: usize,
        ef: usize,
        max_distances: usize,
        live: impl Fn(u32) -> bool,
        filter: IdFilter<'_>,
    ) -> (Vec<(u64, f32)>, Ending) {
        let points = self.points.read();
        let Some((entry, top)) = self.entry() else {
            return (Vec::new(), Ending::Drained);
        };
        let kernel = super::distance::kernel(self.metric);
        let exact = |slot: u32| kernel(query, self.vector(&points, slot));
        // A quantised graph is traversed on the codes, and its results scored again
        // exactly at the end (see `quantize`).
        let coded = points.quant.as_ref().map(|q| q.query(self.metric, query));
        let dist = |slot: u32| match &coded {
            Some(coded) => coded.distance(self.code(&points, slot)),
            None => exact(slot),
        };
        let start = Near(dist(entry), entry);
        let mut current = start;
        #[cfg(any(test, feature = "testkit"))]
        let mut descent = 1usize;
        for layer in (1..=top).rev() {
            loop {
                let mut moved = false;
                for next in Self::neighbours(self.row(&points, current.1, layer)) {
                    #[cfg(any(test, feature = "testkit"))]
                    {
                        descent += 1;
                    }
                    let candidate = Near(dist(next), next);
                    if candidate < current {
                        current = candidate;
                        moved = true;
                    }
                }
                if !moved {
                    break;
                }
            }
        }
        let ef = ef.max(knbn).max(1);
        let admitted =
            |slot: u32| live(slot) && filter.is_none_or(|admit| admit(points.ids[slot as usize]));
        let (found, ending) = VISITED.with(|cell| {
            let mut visited = cell.borrow_mut();
            let mark = visited.start(points.ids.len());
            visited.marks[current.1 as usize] = mark;
            // Room for the usual frontier (grown from one, it was reallocated several times
            // in every search) and the beam; neither ever holds more than the graph's
            // points, whatever `ef` a caller's raised `Limits::max_k` allows.
            let points_len = points.ids.len();
            let mut frontier =
                BinaryHeap::with_capacity(ef.saturating_mul(2).min(points_len).max(1));
            frontier.push(Reverse(current));
            let mut best = BinaryHeap::with_capacity(ef.min(points_len).saturating_add(1));
            if admitted(current.1) {
                best.push(current);
            }
            // The entry widens the walk too (its distance is known): a search wide enough
            // then visits all that layer 0 links lead to from the entry, wherever its
            // descent ended, which is what `reached_slots` counts on. A narrow search expands
            // it only if it is among the nearest found (it is usually far from the query).
            if start.1 != current.1 {
                if let Some(mark_of) = visited.marks.get_mut(start.1 as usize) {
                    *mark_of = mark;
                    frontier.push(Reverse(start));
                    if admitted(start.1) {
                        keep_best(&mut best, start, ef);
                    }
                }
            }
            let mut ending = Ending::Drained;
            let mut distances = 0usize;
            // About `PREFETCH_LINES` cache lines asked for at a time.
            let (item_bytes, item_lines) = if coded.is_some() {
                (points.code_len, PREFETCH_CODE_LINES)
            } else {
                (self.dim * 4, PREFETCH_VECTOR_LINES)
            };
            let ahead = (PREFETCH_LINES / item_bytes.div_ceil(64).min(item_lines)).max(1);
            let prefetch = |slot: u32| {
                if coded.is_some() {
                    self.prefetch_code(&points, slot);
                } else {
                    self.prefetch(&points, slot);
                }
            };
            while let Some(Reverse(nearest)) = frontier.pop() {
                if best.len() >= ef && best.peek().is_some_and(|worst| nearest > *worst) {
                    ending = Ending::Converged;
                    break;
                }
                if distances > max_distances {
                    ending = Ending::OverBudget;
                    break;
                }
                // The unvisited neighbours are collected first so that their vectors are
                // prefetched a window ahead of the distances computed.
                let Visited { marks, fresh, .. } = &mut *visited;
                fresh.clear();
                for next in Self::neighbours(self.row(&points, nearest.1, 0)) {
                    let Some(mark_of) = marks.get_mut(next as usize) else {
                        continue;
                    };
                    if std::mem::replace(mark_of, mark) != mark {
                        fresh.push(next);
                    }
                }
                // Prefetched `ahead` vectors ahead of the distance computed.
                for &next in fresh.iter().take(ahead) {
                    prefetch(next);
                }
                if let Some(Reverse(then)) = frontier.peek() {
                    self.prefetch_row(&points, then.1);
                }
                for (i, &next) in fresh.iter().enumerate() {
                    if let Some(&later) = fresh.get(i + ahead) {
                        prefetch(later);
                    }
                    distances += 1;
                    let candidate = Near(dist(next), next);
                    if best.len() < ef || best.peek().is_some_and(|worst| candidate < *worst) {
                        if frontier.peek().is_none_or(|Reverse(top)| candidate < *top) {
                            // The next point expanded unless a nearer one comes: its row
                            // is asked for now, the rest of this row's distances ahead.
                            self.prefetch_row(&points, next);
                        }
                        frontier.push(Reverse(candidate));
                        if admitted(next) {
                            keep_best(&mut best, candidate, ef);
                        }
                    }
                }
            }
            let found = if coded.is_some() {
                // The beam's points scored exactly, so a hit's distance is the exact scan's.
                let mut found = best.into_vec();
                for near in &found {
                    self.prefetch(&points, near.1);
                }
                for near in &mut found {
                    near.0 = exact(near.1);
                }
                #[cfg(any(test, feature = "testkit"))]
                {
                    distances += found.len();
                }
                found.sort_unstable();
                found
            } else {
                best.into_sorted_vec()
            };
            #[cfg(any(test, feature = "testkit"))]
            counted::add(descent + distances);
            (found, ending)
        });
        let mut found = found;
        found.truncate(knbn);
        let found = found
            .into_iter()
            .map(|Near(d, slot)| (points.ids[slot as usize], d))
            .collect();
        (found, ending)
    }

    /// Ids of the points some search would miss however wide: not linked through layer 0
    /// from the entry point ([`reached_slots`]). The heuristic drops a point from a
    /// neighbour's row when closer, more diverse points fill it, so an outlier can be left
    /// with no incoming layer-0 link at all, and a batch linked in parallel only among
    /// itself and outward. One pass over the layer-0 rows the entry's links lead to.
    pub(crate) fn unreachable_ids(&self) -> Vec<u64> {
        let points = self.points.read();
        let Some((entry, _)) = self.entry() else {
            return points.ids.clone();
        };
        let reached = reached_slots(&points.layer0, self.m0, points.ids.len(), entry);
        points
            .ids
            .iter()
            .zip(reached)
            .filter(|(_, reached)| !reached)
            .map(|(&id, _)| id)
            .collect()
    }

    /// The graph's parts (see [`GraphParts`]) without its links: `layer0` and `upper` are
    /// empty; [`Self::for_each_row`] gives the rows. Call with inserts excluded.
    pub(crate) fn parts_without_links(&self) -> GraphParts {
        let points = self.points.read();
        GraphParts {
            m: self.m,
            ef_construction: self.ef_construction,
            ids: points.ids.clone(),
            levels: points.levels.clone(),
            layer0: Vec::new(),
            upper: Vec::new(),
            entry: self.entry().map(|(slot, _)| slot),
            quant: points.quant.clone(),
        }
    }

    /// Calls `f` with every row of links and its capacity, in [`GraphParts`]' order: layer
    /// 0's rows (`2M`) in slot order, then the upper rows (`M`) of each point above layer 0,
    /// in slot order. The rows are read in place, never copied whole. Call with inserts
    /// excluded.
    pub(crate) fn for_each_row(&self, mut f: impl FnMut(&[AtomicU32], usize)) {
        let points = self.points.read();
        for row in points.layer0.chunks_exact(self.m0 + 1) {
            f(row, self.m0);
        }
        for &at in &points.upper_at {
            if let Some(rows) = points.upper.get(at as usize) {
                for row in rows.chunks_exact(self.m + 1) {
                    f(row, self.m);
                }
            }
        }
    }

    /// A graph from persisted `parts` (checked by the caller: see `persisted`) and each
    /// slot's vector (`vector(slot)`; `None` when the id is no longer stored), with the
    /// slots no search reaches (see [`Self::unreachable_ids`]). A slot without a vector
    /// keeps a zero vector and no links, and every link to it is dropped, so no traversal
    /// ever reaches it (its id is dead in the membership). Returns `None` if the parts do
    /// not fit together.
    ///
    /// The vectors are gathered into the graph's array on one thread while the other
    /// takes the links over and walks them; when every slot has its vector (a reopen after
    /// a clean close), layer 0 is the parsed words themselves, not a copy, so a reopen
    /// touches no fresh pages for it.
    pub(crate) fn from_parts<'a>(
        metric: Metric,
        dim: usize,
        parts: GraphParts,
        vector: impl Fn(usize) -> Option<&'a [f32]> + Sync,
    ) -> Option<(Hnsw, Vec<u32>)> {
        let graph = Hnsw::new(
            metric,
            dim,
            GraphParams {
                m: parts.m,
                ef_construction: parts.ef_construction,
            },
        );
        if graph.m != parts.m {
            return None;
        }
        let n = parts.ids.len();
        let (m, m0) = (graph.m, graph.m0);
        if parts.levels.len() != n || parts.layer0.len() != n.checked_mul(m0 + 1)? {
            return None;
        }
        let GraphParts {
            ids,
            levels,
            layer0: words0,
            upper: upper_words,
            entry: saved_entry,
            quant,
            ..
        } = parts;
        let floats = n.checked_mul(dim)?;
        let gather = || {
            let mut vectors = Vec::with_capacity(floats);
            if !reads_codes(dim) {
                advise_huge_pages(vectors.as_ptr(), vectors.capacity());
            }
            let mut present = Vec::with_capacity(n);
            for slot in 0..n {
                match vector(slot) {
                    Some(v) if v.len() == dim => {
                        vectors.extend_from_slice(v);
                        present.push(true);
                    }
                    _ => {
                        vectors.extend(std::iter::repeat_n(0.0, dim));
                        present.push(false);
                    }
                }
            }
            (vectors, present)
        };
        // Optimistic: every slot has its vector, so every row is kept as it is (checked:
        // counts within capacity, links to slots that exist; unused places zeroed).
        let every_present_links = || -> Option<Links> {
            let mut words = words0;
            for row in words.chunks_exact_mut(m0 + 1) {
                kept_in_place(row, m0, n)?;
            }
            let layer0: Vec<AtomicU32> = words.into_iter().map(AtomicU32::new).collect();
            advise_huge_pages(layer0.as_ptr(), layer0.capacity());
            let all = vec![true; n];
            let (upper_at, upper) = upper_rows(&levels, &upper_words, m, &all)?;
            let entry = entry_of(saved_entry, &levels, &all)?;
            let reached = reached_from(&layer0, m0, &levels, entry);
            Some(Links {
                layer0,
                upper_at,
                upper,
                entry,
                reached,
            })
        };
        // (Under the exact store's read lock: plain threads, not a rayon pool; see
        // `join_threads`.)
        let ((vectors, present), optimistic) = if n >= PARALLEL_MIN {
            join_threads(gather, every_present_links)
        } else {
            (gather(), every_present_links())
        };
        let links = if present.iter().all(|&p| p) {
            optimistic?
        } else {
            // Some ids are no longer stored: their rows emptied, links to them dropped.
            let Links { layer0, .. } = optimistic?;
            let words: Vec<u32> = layer0.into_iter().map(AtomicU32::into_inner).collect();
            let mut layer0 = Vec::with_capacity(words.len());
            for (slot, row) in words.chunks_exact(m0 + 1).enumerate() {
                keep_row(&mut layer0, row, m0, slot, &present)?;
            }
            let (upper_at, upper) = upper_rows(&levels, &upper_words, m, &present)?;
            let entry = entry_of(saved_entry, &levels, &present)?;
            let reached = reached_from(&layer0, m0, &levels, entry);
            Links {
                layer0,
                upper_at,
                upper,
                entry,
                reached,
            }
        };
        // A saved quantiser must stand for the vectors it codes: one that does not (its
        // range far from theirs, or too coarse) was never fitted to them, and a traversal
        // on its codes would wander (all-clamped codes made every search miss): damage.
        if let Some(quant) = &quant {
            let row = |slot: usize| {
                present
                    .get(slot)
                    .copied()
                    .unwrap_or(false)
                    .then(|| vectors.get(slot * dim..(slot + 1) * dim))
                    .flatten()
            };
            if !quant.represents(dim, n, row) {
                return None;
            }
        }
        let unreachable: Vec<u32> = (0..n as u32)
            .filter(|&slot| !links.reached.get(slot as usize).copied().unwrap_or(false))
            .collect();
        {
            let mut points = graph.points.write();
            points.locks = (0..n).map(|_| Mutex::new(())).collect();
            points.ids = ids;
            points.vectors = vectors;
            points.levels = levels;
            points.layer0 = links.layer0;
            points.upper_at = links.upper_at;
            points.upper = links.upper;
            // The saved quantiser (checked above), so that the codes are those the graph was
            // searched with before it was saved; a snapshot of an earlier format has none:
            // fitted anew.
            match quant {
                Some(quant) => points.quantize_with(dim, Some(quant.for_metric(metric))),
                None if due_for_quantizer(n, dim) => points.quantize(dim, metric),
                None => {}
            }
            if let Some(entry) = links.entry {
                graph.set_entry(entry as u32, usize::from(points.levels[entry]));
            }
        }
        graph.linked.store(n, Ordering::SeqCst);
        // Levels drawn after a load continue from a state of its own.
        graph.seed.store(mix(n as u64), Ordering::SeqCst);
        Some((graph, unreachable))
    }

    /// Runs `f` over every slot's id and vector, in slot order (the persisted
    /// fingerprints). Call with inserts excluded.
    pub(crate) fn for_each_vector(&self, mut f: impl FnMut(u64, &[f32])) {
        let points = self.points.read();
        for (slot, &id) in points.ids.iter().enumerate() {
            f(id, &points.vectors[slot * self.dim..(slot + 1) * self.dim]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{reached_slots, GraphParts, Hnsw, Visited};
    use crate::index::Metric;
    use std::sync::atomic::AtomicU32;

    /// Rows of `m0` = 4 slots: a count, then the links, then unused zeros.
    fn words(rows: &[&[u32]]) -> Vec<u32> {
        rows.iter()
            .flat_map(|links| {
                assert!(links.len() <= 4);
                let mut row = vec![links.len() as u32];
                row.extend_from_slice(links);
                row.resize(5, 0);
                row
            })
            .collect()
    }

    /// Layer 0: 0 (the entry) <-> 1 <-> 2; an island 3 <-> 4 linked neither to nor from
    /// the rest (a batch whose own rows hold only each other: duplicates, say). Layer 1:
    /// 0 <-> 3.
    const LAYER0: [&[u32]; 5] = [&[1], &[0, 2], &[1], &[4], &[3]];
    const LEVELS: [u8; 5] = [1, 0, 0, 1, 0];

    // Regression (a CI rehearsal, `outliers_pruned_out_of_the_graph_are_still_found`: 25
    // points of one batch linked in parallel were found by no search at full width, yet
    // not scored outside): the count took a point as reached when layer-0 links led to it
    // from the entry or from any point of the top level, and a search widened only from
    // where its descent ended. Here the island's point on the top level made it count.
    #[test]
    fn an_island_holding_a_top_level_point_is_not_reached() {
        let layer0: Vec<AtomicU32> = words(&LAYER0).into_iter().map(AtomicU32::new).collect();
        let reached = reached_slots(&layer0, 4, LEVELS.len(), 0);
        assert_eq!(reached, [true, true, true, false, false]);
    }

    // A search whose descent ends in the island (the query sits there) still visits what
    // the entry's links lead to when it is wide enough: every point counted reached is
    // found, and the island (counted unreached, scored outside by the store) as well.
    #[test]
    fn a_wide_search_whose_descent_ends_in_an_island_finds_what_the_entry_reaches() {
        let parts = GraphParts {
            m: 2,
            ef_construction: 8,
            ids: (10..15).collect(),
            levels: LEVELS.to_vec(),
            layer0: words(&LAYER0),
            // Slot 0's layer-1 row, then slot 3's (`M` = 2).
            upper: vec![1, 3, 0, 1, 0, 0],
            entry: Some(0),
            quant: None,
        };
        let vectors: [[f32; 1]; 5] = [[0.0], [1.0], [2.0], [100.0], [101.0]];
        let (graph, unreached) = Hnsw::from_parts(Metric::L2, 1, parts, |slot| {
            vectors.get(slot).map(|v| &v[..])
        })
        .expect("parts fit");
        assert_eq!(unreached, [3, 4]);
        let mut found: Vec<u64> = graph.search(&[100.0], 5, 5).iter().map(|h| h.0).collect();
        found.sort_unstable();
        assert_eq!(found, [10, 11, 12, 13, 14]);
        // A narrow search stays where its descent led.
        let near: Vec<u64> = graph.search(&[100.0], 1, 1).iter().map(|h| h.0).collect();
        assert_eq!(near, [13]);
    }

    // The marks are 16-bit: they wrap every 65,535 traversals, and a mark reused from
    // before the wrap would report a slot unvisited in this traversal as visited.
    #[test]
    fn a_fresh_mark_is_never_already_on_a_slot_across_the_wrap() {
        let mut visited = Visited {
            marks: Vec::new(),
            current: 0,
            fresh: Vec::new(),
        };
        for traversal in 0..3 * usize::from(u16::MAX) {
            let mark = visited.start(5);
            assert!(
                visited.marks.iter().all(|&m| m != mark),
                "traversal {traversal}: mark {mark} already on a slot: {:?}",
                visited.marks
            );
            // This traversal visits two slots.
            visited.marks[traversal % 5] = mark;
            visited.marks[(traversal * 3 + 1) % 5] = mark;
        }
    }
}
