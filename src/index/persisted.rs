//! Serialising a graph to byte blobs and back.
//!
//! `hnsw_rs` 0.3.5 can only dump to, and load from, files in a directory
//! (`<base>.hnsw.graph` + `<base>.hnsw.data`; its `DumpInit`/loader readers are not
//! public), so both directions go through a private temporary directory, removed when
//! done. The two files' bytes, and the ids of the points no search reaches (see
//! `Graph::unreachable_ids`, saved so that a load need not walk the graph again), are the
//! payload of our envelope:
//!
//! ```text
//! blob 0: header (HEADER_LEN bytes, little-endian)
//!   0  magic "RATCHNSW"            8  format version u32
//!   12 usize width in bytes u8     13 byte order u8 (1 little, 2 big)
//!   14 metric u8 (0 cosine, 1 l2)  15 reserved u8 (0)
//!   16 dimension u64               24 number of graph points u64
//!   32 graph file length u64       40 data file length u64
//!   48 number of payload parts u32 52 number of unreachable ids u32
//!   56 blake3(header[0..56] ++ payload), 32 bytes
//! blob 1..: payload = graph file ++ data file ++ unreachable ids (u64 each),
//!           cut into parts of <= 16 MiB
//! ```
//!
//! Safety of loading: `hnsw_rs`'s loader trusts its input. On malformed bytes it
//! panics (`unwrap`, `assert`, out-of-range indexing), calls `std::process::exit(1)`
//! (unknown format version), allocates whatever length it reads, and reads each vector
//! through an `unsafe` slice of `dimension` floats over a buffer whose length it took
//! from the file (an out-of-bounds read if they disagree). So nothing reaches it
//! unchecked:
//!
//! 1. the header is parsed and the blake3 checksum over header and payload is verified
//!    (a torn or bit-flipped snapshot stops here);
//! 2. the payload is then fully parsed by [`parse_dump`], which checks every field the
//!    loader relies on (magics, format v4, Full mode, 16 layers, dimension, distance and
//!    type names, each point's layer/rank, every neighbour reference, the entry point,
//!    vector lengths and finiteness, point counts, exact file lengths, unique ids);
//! 3. only then is `HnswIo::load_hnsw_with_dist` called, inside `catch_unwind` as a
//!    last resort (a panic becomes [`IndexError::Graph`]).
//!
//! The dump uses native byte order and `usize` width; the header records both, and a
//! snapshot from another platform is refused as incompatible (the store rebuilds).

use std::collections::HashSet;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use hnsw_rs::api::AnnT;
use hnsw_rs::hnswio::HnswIo;

use super::distance::KernelDistance;
use super::hnsw::{Graph, HnswCell};
use super::membership::Membership;
use super::panic_message;
use super::view::{GraphView, Slots, MAX_LAYER};
use super::{IndexError, Metric};

/// First bytes of a snapshot header.
pub(crate) const MAGIC: [u8; 8] = *b"RATCHNSW";
/// Version of the envelope and of the `hnsw_rs` dump layout it carries.
pub(crate) const FORMAT_VERSION: u32 = 2;
/// Length of blob 0.
pub(crate) const HEADER_LEN: usize = 88;
/// Largest payload part.
pub(crate) const MAX_PART_BYTES: usize = 16 << 20;
/// Offset of the checksum in the header.
const CHECKSUM_AT: usize = 56;
/// Basename of the dump files in the scratch directory.
const DUMP_BASENAME: &str = "graph";

// hnsw_rs 0.3.5 dump constants (src/hnswio.rs).
const MAGIC_DESCR_V4: u32 = 0x002a_6779;
const MAGIC_LAYER: u32 = 0x000a_676f;
const MAGIC_POINT: u32 = 0x000a_678f;
const MAGIC_DATA: u32 = 0xa67f_0000;
const DUMP_MODE_FULL: u8 = 1;
const MAX_NAME_LEN: usize = 256;

const USIZE: usize = std::mem::size_of::<usize>();
/// Smallest possible graph record of one point: magic, origin id, layer, rank, and a
/// neighbour count per layer.
const MIN_POINT_GRAPH_BYTES: usize = 4 + USIZE + 1 + 4 + MAX_LAYER * USIZE;
/// One neighbour record: origin id, layer, rank, distance.
const NEIGHBOUR_BYTES: usize = USIZE + 1 + 4 + 4;

fn byte_order_tag() -> u8 {
    if cfg!(target_endian = "little") {
        1
    } else {
        2
    }
}

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

fn scratch_dir(parent: Option<&Path>) -> Result<tempfile::TempDir, IndexError> {
    let mut builder = tempfile::Builder::new();
    builder.prefix("ratchetdb-hnsw-");
    Ok(match parent {
        Some(dir) => builder.tempdir_in(dir)?,
        None => builder.tempdir()?,
    })
}

/// Serialises `graph` into blobs (header first). The caller must keep inserts into
/// `graph` from running meanwhile (the dump and its unreachable set must be one state).
pub(crate) fn to_blobs(graph: &Graph, scratch: Option<&Path>) -> Result<Vec<Vec<u8>>, IndexError> {
    let point_count = graph.with_hnsw(|hnsw| hnsw.get_nb_point());
    let (graph_bytes, data_bytes) = if point_count == 0 {
        // `hnsw_rs` cannot dump a graph without an entry point.
        (Vec::new(), Vec::new())
    } else {
        let dir = scratch_dir(scratch)?;
        let dumped = catch_unwind(AssertUnwindSafe(|| {
            graph.with_hnsw(|hnsw| hnsw.file_dump(dir.path(), DUMP_BASENAME))
        }));
        let basename = match dumped {
            Ok(Ok(basename)) => basename,
            Ok(Err(e)) => {
                return Err(IndexError::Graph {
                    detail: format!("dump failed: {e:#}"),
                })
            }
            Err(payload) => {
                return Err(IndexError::Graph {
                    detail: format!("dump panicked: {}", panic_message(payload.as_ref())),
                })
            }
        };
        let graph_bytes = std::fs::read(dir.path().join(format!("{basename}.hnsw.graph")))?;
        let data_bytes = std::fs::read(dir.path().join(format!("{basename}.hnsw.data")))?;
        (graph_bytes, data_bytes)
    };
    // Check what we are about to persist with the same parser that guards loading:
    // a snapshot that would not load is an error now, not at the next open.
    let summary = if point_count == 0 {
        DumpSummary::default()
    } else {
        parse_dump(&graph_bytes, &data_bytes, graph.dim())?
    };
    if summary.ids.len() != point_count {
        return Err(IndexError::Graph {
            detail: format!(
                "dump has {} points, graph reports {point_count}",
                summary.ids.len()
            ),
        });
    }

    let unreachable = if point_count == 0 {
        Vec::new()
    } else {
        graph.unreachable_ids()
    };
    let unreachable_count = u32::try_from(unreachable.len()).map_err(|_| IndexError::Graph {
        detail: format!("{} unreachable points", unreachable.len()),
    })?;
    let payload_len = graph_bytes.len() + data_bytes.len() + unreachable.len() * 8;
    let part_count = payload_len.div_ceil(MAX_PART_BYTES);
    let mut header = Vec::with_capacity(HEADER_LEN);
    header.extend_from_slice(&MAGIC);
    header.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    header.push(USIZE as u8);
    header.push(byte_order_tag());
    header.push(graph.metric().tag());
    header.push(0);
    header.extend_from_slice(&(graph.dim() as u64).to_le_bytes());
    header.extend_from_slice(&(point_count as u64).to_le_bytes());
    header.extend_from_slice(&(graph_bytes.len() as u64).to_le_bytes());
    header.extend_from_slice(&(data_bytes.len() as u64).to_le_bytes());
    header.extend_from_slice(&u32::try_from(part_count).unwrap_or(u32::MAX).to_le_bytes());
    header.extend_from_slice(&unreachable_count.to_le_bytes());
    debug_assert_eq!(header.len(), CHECKSUM_AT);

    let mut payload = graph_bytes;
    payload.extend_from_slice(&data_bytes);
    drop(data_bytes);
    for id in &unreachable {
        payload.extend_from_slice(&id.to_le_bytes());
    }
    let mut hasher = blake3::Hasher::new();
    hasher.update(&header);
    hasher.update(&payload);
    header.extend_from_slice(hasher.finalize().as_bytes());
    debug_assert_eq!(header.len(), HEADER_LEN);

    let mut blobs = Vec::with_capacity(1 + part_count);
    blobs.push(header);
    blobs.extend(payload.chunks(MAX_PART_BYTES).map(<[u8]>::to_vec));
    Ok(blobs)
}

/// A checked and parsed snapshot: the dump files written to a scratch directory for
/// `hnsw_rs` to load ([`ParsedSnapshot::load_graph`], the slow part), a [`GraphView`] of
/// the same graph that can serve searches meanwhile, and the vectors its points hold, so
/// that the caller can compare them with the live vectors before trusting any point.
pub(crate) struct ParsedSnapshot {
    metric: Metric,
    dim: usize,
    /// The scratch directory with the dump files; `None` for an empty graph.
    dir: Option<tempfile::TempDir>,
    view: Option<GraphView>,
    /// Ids of the points no search reaches, as saved (see `Graph::unreachable_ids`).
    unreachable: Vec<u64>,
    /// The dump's data file (native-endian f32 vectors at `summary.vector_offsets`).
    data: Vec<u8>,
    summary: DumpSummary,
}

impl ParsedSnapshot {
    /// Number of points in the graph.
    pub(crate) fn point_count(&self) -> usize {
        self.summary.ids.len()
    }

    /// The ids of the graph's points no search reaches.
    pub(crate) fn unreachable(&self) -> &[u64] {
        &self.unreachable
    }

    /// The view of the graph, for searches before [`Self::load_graph`] is done.
    pub(crate) fn take_view(&mut self) -> Option<GraphView> {
        self.view.take()
    }

    /// The graph's membership given the live vectors: a point is live iff `current`
    /// returns a bit-identical vector for its id; a live id whose vector differs, and a
    /// live id of `live_ids` with no point at all, is scored outside the graph (exactly,
    /// until the absorber inserts the latter). Unreachable points are not applied yet.
    /// Frees the saved vectors.
    pub(crate) fn membership<'a>(
        &mut self,
        live_ids: &[u64],
        current: impl Fn(u64) -> Option<&'a [f32]>,
    ) -> Membership {
        let width = std::mem::size_of::<f32>();
        let mut dead = Vec::new();
        let mut outside = Vec::new();
        for (&id, &offset) in self.summary.ids.iter().zip(&self.summary.vector_offsets) {
            // (Absent only if called twice: every point is then distrusted.)
            let saved = self.data.get(offset..offset + self.dim * width);
            match current(id) {
                Some(vector) => {
                    let same = saved.is_some_and(|saved| {
                        saved
                            .chunks_exact(width)
                            .zip(vector)
                            .all(|(bytes, x)| bytes == x.to_ne_bytes())
                    });
                    if !same {
                        dead.push(id);
                        outside.push(id);
                    }
                }
                None => dead.push(id),
            }
        }
        self.data = Vec::new();
        let in_graph: HashSet<u64> = self.summary.ids.iter().copied().collect();
        outside.extend(live_ids.iter().copied().filter(|id| !in_graph.contains(id)));
        Membership::loaded(&self.summary.ids, &dead, outside)
    }

    /// Loads the graph with `hnsw_rs` (its membership is left empty for the caller to
    /// set) and removes the scratch files.
    pub(crate) fn load_graph(self) -> Result<Graph, IndexError> {
        let Some(dir) = self.dir else {
            return Ok(Graph::new(self.metric, self.dim, 0, Default::default()));
        };
        let metric = self.metric;
        let loader = HnswIo::new(dir.path(), DUMP_BASENAME);
        let loaded = catch_unwind(AssertUnwindSafe(|| {
            HnswCell::try_new(loader, |io| {
                io.load_hnsw_with_dist(KernelDistance { metric })
                    .map_err(|e| format!("{e:#}"))
            })
        }));
        let cell = match loaded {
            Ok(Ok(cell)) => cell,
            Ok(Err(e)) => {
                return Err(IndexError::Graph {
                    detail: format!("load failed: {e}"),
                })
            }
            Err(payload) => {
                return Err(IndexError::Graph {
                    detail: format!("load panicked: {}", panic_message(payload.as_ref())),
                })
            }
        };
        // Mmap is off (the default `ReloadOptions`): the points own copies of their vectors,
        // so the files may go now.
        drop(dir);
        let loaded_count = cell.with_dependent(|_, hnsw| hnsw.get_nb_point());
        if loaded_count != self.summary.ids.len() {
            return Err(IndexError::Graph {
                detail: format!(
                    "loaded {loaded_count} points, dump has {}",
                    self.summary.ids.len()
                ),
            });
        }
        Ok(Graph::from_cell(
            self.metric,
            self.dim,
            cell,
            Membership::default(),
        ))
    }
}

/// Checks and parses blobs made by [`to_blobs`] for an index of `dim` and `metric`, and
/// writes the dump files for [`ParsedSnapshot::load_graph`]. Any damage or mismatch is
/// an error; no byte reaches `hnsw_rs` before the checksum and the structural parse have
/// passed.
pub(crate) fn from_blobs<B: AsRef<[u8]>>(
    blobs: &[B],
    metric: Metric,
    dim: usize,
    scratch: Option<&Path>,
) -> Result<ParsedSnapshot, IndexError> {
    let (header, parts) = blobs
        .split_first()
        .ok_or_else(|| corrupted("no header blob"))?;
    let header = check_header(header.as_ref(), parts, metric, dim)?;
    let (graph_bytes, data, unreachable) = split_sections(parts, &header)?;
    if header.point_count == 0 {
        if !graph_bytes.is_empty() || !data.is_empty() {
            return Err(corrupted("empty graph with a payload"));
        }
        return Ok(ParsedSnapshot {
            metric,
            dim,
            dir: None,
            view: None,
            unreachable,
            data,
            summary: DumpSummary::default(),
        });
    }
    // The scratch files are written while the dump is parsed; nothing reads them unless
    // the parse passes (and the directory goes with them if it does not).
    let dir = scratch_dir(scratch)?;
    let (summary, written) = std::thread::scope(|scope| {
        let writer = scope.spawn(|| -> std::io::Result<()> {
            std::fs::write(
                dir.path().join(format!("{DUMP_BASENAME}.hnsw.graph")),
                &graph_bytes,
            )?;
            std::fs::write(dir.path().join(format!("{DUMP_BASENAME}.hnsw.data")), &data)
        });
        let summary = parse_dump(&graph_bytes, &data, dim);
        let written = writer
            .join()
            .unwrap_or_else(|_| Err(std::io::Error::other("scratch writer panicked")));
        (summary, written)
    });
    let summary = summary?;
    written?;
    if summary.ids.len() as u64 != header.point_count {
        return Err(corrupted(format!(
            "dump has {} points, header announces {}",
            summary.ids.len(),
            header.point_count
        )));
    }
    let view = build_view(&graph_bytes, &data, &summary, metric, dim)?;
    drop(graph_bytes);
    Ok(ParsedSnapshot {
        metric,
        dim,
        dir: Some(dir),
        view: Some(view),
        unreachable,
        data,
        summary,
    })
}

/// What a checked header announces.
struct Header {
    graph_len: usize,
    data_len: usize,
    unreachable_len: usize,
    point_count: u64,
}

/// Checks the header blob against the payload parts (lengths, then the checksum, before
/// any other field is trusted) and against the index (format version, platform, metric,
/// dimension).
fn check_header<B: AsRef<[u8]>>(
    header: &[u8],
    parts: &[B],
    metric: Metric,
    dim: usize,
) -> Result<Header, IndexError> {
    if header.len() != HEADER_LEN {
        return Err(corrupted(format!(
            "header is {} bytes, expected {HEADER_LEN}",
            header.len()
        )));
    }
    if header[0..8] != MAGIC {
        return Err(corrupted("bad magic"));
    }
    let le_u32 = |at: usize| {
        u32::from_le_bytes([header[at], header[at + 1], header[at + 2], header[at + 3]])
    };
    let le_u64 = |at: usize| {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(&header[at..at + 8]);
        u64::from_le_bytes(bytes)
    };
    // Checksum first: every later field is trusted only once it matches.
    let payload_len: u64 = parts.iter().map(|p| p.as_ref().len() as u64).sum();
    let graph_len = le_u64(32);
    let data_len = le_u64(40);
    let unreachable_len = u64::from(le_u32(52)) * 8;
    if Some(payload_len)
        != graph_len
            .checked_add(data_len)
            .and_then(|n| n.checked_add(unreachable_len))
    {
        return Err(corrupted(format!(
            "payload is {payload_len} bytes, header announces {graph_len} + {data_len} + {unreachable_len}"
        )));
    }
    if le_u32(48) as usize != parts.len() {
        return Err(corrupted(format!(
            "{} payload parts, header announces {}",
            parts.len(),
            le_u32(48)
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
    check_compatible(header, le_u32(8), le_u64(16), metric, dim)?;
    let too_large = || corrupted("snapshot too large for this platform");
    Ok(Header {
        graph_len: usize::try_from(graph_len).map_err(|_| too_large())?,
        data_len: usize::try_from(data_len).map_err(|_| too_large())?,
        unreachable_len: usize::try_from(unreachable_len).map_err(|_| too_large())?,
        point_count: le_u64(24),
    })
}

/// A checksummed header written by this format version, on this platform, for this
/// index's metric and dimension.
fn check_compatible(
    header: &[u8],
    version: u32,
    saved_dim: u64,
    metric: Metric,
    dim: usize,
) -> Result<(), IndexError> {
    if version != FORMAT_VERSION {
        return Err(incompatible(format!(
            "format version {version}, this build reads {FORMAT_VERSION}"
        )));
    }
    if header[12] as usize != USIZE || header[13] != byte_order_tag() {
        return Err(incompatible(
            "written on a platform with another usize width or byte order",
        ));
    }
    let saved_metric = Metric::from_tag(header[14])
        .ok_or_else(|| incompatible(format!("unknown metric tag {}", header[14])))?;
    if saved_metric != metric {
        return Err(incompatible(format!(
            "snapshot metric {saved_metric:?}, index metric {metric:?}"
        )));
    }
    if saved_dim != dim as u64 {
        return Err(incompatible(format!(
            "snapshot dimension {saved_dim}, index dimension {dim}"
        )));
    }
    Ok(())
}

/// One copy of each section (graph, data, unreachable ids), straight from the parts (a
/// section may span parts).
#[allow(clippy::type_complexity)]
fn split_sections<B: AsRef<[u8]>>(
    parts: &[B],
    header: &Header,
) -> Result<(Vec<u8>, Vec<u8>, Vec<u64>), IndexError> {
    let mut graph_bytes = Vec::with_capacity(header.graph_len);
    let mut data = Vec::with_capacity(header.data_len);
    let mut unreachable_bytes = Vec::with_capacity(header.unreachable_len);
    for part in parts {
        let mut part = part.as_ref();
        for (section, len) in [
            (&mut graph_bytes, header.graph_len),
            (&mut data, header.data_len),
            (&mut unreachable_bytes, header.unreachable_len),
        ] {
            let take = (len - section.len()).min(part.len());
            section.extend_from_slice(&part[..take]);
            part = &part[take..];
        }
    }
    let unreachable: Vec<u64> = unreachable_bytes
        .chunks_exact(8)
        .map(|b| u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
        .collect();
    Ok((graph_bytes, data, unreachable))
}

/// The [`GraphView`] of a dump [`parse_dump`] has accepted: every point's links by slot
/// (a point's slot is its layer's offset plus its rank), and its vector.
fn build_view(
    graph: &[u8],
    data: &[u8],
    summary: &DumpSummary,
    metric: Metric,
    dim: usize,
) -> Result<GraphView, IndexError> {
    let n = summary.ids.len();
    let slots = Slots::new(|layer| summary.layer_sizes.get(layer).copied().unwrap_or(0));
    let slot_of = |layer: u8, rank: i32| slots.of(usize::from(layer), i64::from(rank));
    let mut g = Cursor::new(graph, "graph dump");
    g.take(summary.links_at)?;
    let mut row_start: Vec<u32> = Vec::with_capacity(n * MAX_LAYER + 1);
    row_start.push(0);
    let mut links: Vec<u32> = Vec::new();
    for layer in 0..MAX_LAYER {
        g.take(4 + USIZE)?;
        for _ in 0..summary.layer_sizes.get(layer).copied().unwrap_or(0) {
            g.take(4 + USIZE + 1 + 4)?;
            for _ in 0..MAX_LAYER {
                let count = g.usize()?;
                for _ in 0..count {
                    g.usize()?;
                    let (n_layer, n_rank) = (g.u8()?, g.i32()?);
                    g.f32()?;
                    links.push(
                        slot_of(n_layer, n_rank)
                            .ok_or_else(|| corrupted("bad neighbour reference"))?,
                    );
                }
                row_start
                    .push(u32::try_from(links.len()).map_err(|_| corrupted("too many links"))?);
            }
        }
    }
    let width = std::mem::size_of::<f32>();
    let mut vectors = Vec::with_capacity(n * dim);
    for &offset in &summary.vector_offsets {
        let bytes = data
            .get(offset..offset + dim * width)
            .ok_or_else(|| corrupted("vector outside the data dump"))?;
        vectors.extend(
            bytes
                .chunks_exact(width)
                .map(|b| f32::from_ne_bytes([b[0], b[1], b[2], b[3]])),
        );
    }
    let (entry_layer, entry_rank) = summary.entry;
    let entry = slot_of(entry_layer, entry_rank)
        .ok_or_else(|| corrupted("entry point does not resolve"))?;
    GraphView::new(
        metric,
        dim,
        summary.ids.clone(),
        vectors,
        row_start,
        links,
        entry,
        usize::from(entry_layer),
    )
    .ok_or_else(|| corrupted("the graph's links do not fit together"))
}

/// What [`parse_dump`] learned from a well-formed dump.
#[derive(Debug, Default)]
pub(crate) struct DumpSummary {
    /// Every point's id, in dump order.
    pub(crate) ids: Vec<u64>,
    /// Byte offset of each point's vector in the data file.
    pub(crate) vector_offsets: Vec<usize>,
    /// Number of points in each layer.
    pub(crate) layer_sizes: Vec<usize>,
    /// Offset in the graph file of the first layer's record.
    pub(crate) links_at: usize,
    /// The entry point's layer and rank.
    pub(crate) entry: (u8, i32),
}

/// A bounds-checked cursor over native-endian dump bytes.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
    what: &'static str,
}

impl<'a> Cursor<'a> {
    fn new(bytes: &'a [u8], what: &'static str) -> Self {
        Cursor { bytes, at: 0, what }
    }

    fn remaining(&self) -> usize {
        self.bytes.len() - self.at
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], IndexError> {
        if n > self.remaining() {
            return Err(corrupted(format!(
                "{} truncated at byte {} (wanted {n} more)",
                self.what, self.at
            )));
        }
        let slice = &self.bytes[self.at..self.at + n];
        self.at += n;
        Ok(slice)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], IndexError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    fn u8(&mut self) -> Result<u8, IndexError> {
        Ok(self.array::<1>()?[0])
    }
    fn u32(&mut self) -> Result<u32, IndexError> {
        Ok(u32::from_ne_bytes(self.array()?))
    }
    fn i32(&mut self) -> Result<i32, IndexError> {
        Ok(i32::from_ne_bytes(self.array()?))
    }
    fn u64(&mut self) -> Result<u64, IndexError> {
        Ok(u64::from_ne_bytes(self.array()?))
    }
    fn usize(&mut self) -> Result<usize, IndexError> {
        Ok(usize::from_ne_bytes(self.array()?))
    }
    fn f32(&mut self) -> Result<f32, IndexError> {
        Ok(f32::from_ne_bytes(self.array()?))
    }
    fn f64(&mut self) -> Result<f64, IndexError> {
        Ok(f64::from_ne_bytes(self.array()?))
    }

    fn expect_u32(&mut self, want: u32, field: &str) -> Result<(), IndexError> {
        let got = self.u32()?;
        if got != want {
            return Err(corrupted(format!(
                "{}: bad {field} {got:#x} at byte {}",
                self.what,
                self.at - 4
            )));
        }
        Ok(())
    }

    fn name(&mut self) -> Result<&'a str, IndexError> {
        let len = self.usize()?;
        if len > MAX_NAME_LEN {
            return Err(corrupted(format!("{}: name of {len} bytes", self.what)));
        }
        std::str::from_utf8(self.take(len)?).map_err(|_| corrupted("name is not UTF-8"))
    }

    fn finish(&self) -> Result<(), IndexError> {
        if self.remaining() != 0 {
            return Err(corrupted(format!(
                "{} has {} trailing bytes",
                self.what,
                self.remaining()
            )));
        }
        Ok(())
    }
}

/// Parses an `hnsw_rs` 0.3.5 Full dump (graph file + data file) completely, checking
/// everything its loader assumes, for vectors of `dim` f32 and our distance type.
pub(crate) fn parse_dump(graph: &[u8], data: &[u8], dim: usize) -> Result<DumpSummary, IndexError> {
    let vector_bytes = dim
        .checked_mul(std::mem::size_of::<f32>())
        .ok_or_else(|| corrupted("dimension overflows"))?;
    let mut g = Cursor::new(graph, "graph dump");
    let nb_point = check_description(&mut g, dim)?;
    let after_description = g.at;

    let mut d = Cursor::new(data, "data dump");
    d.expect_u32(MAGIC_DATA, "data magic")?;
    if d.usize()? != dim {
        return Err(incompatible("data dump dimension differs"));
    }

    // Pass 1: layers, points, vectors. Records each layer's origin ids so that pass 2
    // can check neighbour references (which may point to later layers).
    if g.u8()? as usize != MAX_LAYER {
        return Err(incompatible("point indexation layer count is not 16"));
    }
    let mut summary = DumpSummary::default();
    let layers = read_points(&mut g, &mut d, vector_bytes, &mut summary)?;
    let entry_origin = g.usize()? as u64;
    let entry_layer = g.u8()?;
    let entry_rank = g.i32()?;
    g.finish()?;
    d.finish()?;
    if summary.ids.len() != nb_point || nb_point == 0 {
        return Err(corrupted(format!(
            "{} points in layers, description says {nb_point}",
            summary.ids.len()
        )));
    }
    if !resolves(&layers, entry_layer, entry_rank, entry_origin) {
        return Err(corrupted("entry point does not resolve"));
    }
    summary.layer_sizes = layers.iter().map(Vec::len).collect();
    summary.links_at = after_description + 1;
    summary.entry = (entry_layer, entry_rank);
    check_links(graph, after_description, &layers)?;
    Ok(summary)
}

/// Whether (`layer`, `rank`) names the point `origin` in `layers`.
fn resolves(layers: &[Vec<u64>], layer: u8, rank: i32, origin: u64) -> bool {
    usize::try_from(rank).ok().and_then(|rank| {
        layers
            .get(layer as usize)
            .and_then(|points| points.get(rank))
    }) == Some(&origin)
}

/// The dump's description: an hnsw_rs v4 Full dump of this dimension, distance and element
/// type. Returns the point count it announces.
fn check_description(g: &mut Cursor<'_>, dim: usize) -> Result<usize, IndexError> {
    if g.u32()? != MAGIC_DESCR_V4 {
        return Err(incompatible("not an hnsw_rs v4 dump"));
    }
    if g.u8()? != DUMP_MODE_FULL {
        return Err(incompatible("not an hnsw_rs Full dump"));
    }
    if g.u8()? == 0 {
        return Err(corrupted("max_nb_connection is 0"));
    }
    let level_scale = g.f64()?;
    if !(level_scale.is_finite() && level_scale > 0.0) {
        return Err(corrupted("level scale is not a positive number"));
    }
    if g.u8()? as usize != MAX_LAYER {
        return Err(incompatible("layer count is not 16"));
    }
    let _ef_construction = g.usize()?;
    let nb_point = g.usize()?;
    if g.usize()? != dim {
        return Err(incompatible("dump dimension differs"));
    }
    let distance_name = g.name()?;
    if distance_name != std::any::type_name::<KernelDistance>() {
        return Err(incompatible(format!(
            "dump distance {distance_name:?}, expected {:?}",
            std::any::type_name::<KernelDistance>()
        )));
    }
    if g.name()? != std::any::type_name::<f32>() {
        return Err(incompatible("dump vectors are not f32"));
    }
    Ok(nb_point)
}

/// Pass 1 over the points of every layer (graph and data dumps in step): positions,
/// neighbour counts, vectors (finite, of the right length), ids (each once). Returns each
/// layer's ids by rank.
fn read_points(
    g: &mut Cursor<'_>,
    d: &mut Cursor<'_>,
    vector_bytes: usize,
    summary: &mut DumpSummary,
) -> Result<Vec<Vec<u64>>, IndexError> {
    let mut layers: Vec<Vec<u64>> = Vec::with_capacity(MAX_LAYER);
    let mut seen = HashSet::new();
    for layer in 0..MAX_LAYER {
        g.expect_u32(MAGIC_LAYER, "layer magic")?;
        let count = g.usize()?;
        if count > g.remaining() / MIN_POINT_GRAPH_BYTES {
            return Err(corrupted(format!("layer {layer} announces {count} points")));
        }
        let mut origins = Vec::with_capacity(count);
        for rank in 0..count {
            g.expect_u32(MAGIC_POINT, "point magic")?;
            let origin = g.usize()? as u64;
            if g.u8()? as usize != layer || usize::try_from(g.i32()?).ok() != Some(rank) {
                return Err(corrupted(format!("point {origin} has a wrong position")));
            }
            for _ in 0..MAX_LAYER {
                let neighbours = g.usize()?;
                if neighbours > g.remaining() / NEIGHBOUR_BYTES {
                    return Err(corrupted("neighbour count exceeds the dump"));
                }
                g.take(neighbours * NEIGHBOUR_BYTES)?;
            }
            d.expect_u32(MAGIC_DATA, "vector magic")?;
            if d.u64()? != origin {
                return Err(corrupted(format!(
                    "data and graph disagree at point {origin}"
                )));
            }
            if d.u64()? != vector_bytes as u64 {
                return Err(corrupted(format!("vector {origin} has a wrong length")));
            }
            summary.vector_offsets.push(d.at);
            let vector = d.take(vector_bytes)?;
            let all_finite = vector
                .chunks_exact(4)
                .all(|b| f32::from_ne_bytes([b[0], b[1], b[2], b[3]]).is_finite());
            if !all_finite {
                return Err(corrupted(format!("vector {origin} is not finite")));
            }
            if !seen.insert(origin) {
                return Err(corrupted(format!("id {origin} appears twice")));
            }
            summary.ids.push(origin);
            origins.push(origin);
        }
        layers.push(origins);
    }
    Ok(layers)
}

/// Pass 2: every neighbour must name an existing point with a non-NaN distance (the loader
/// indexes its layer table with them and sorts by distance).
fn check_links(
    graph: &[u8],
    after_description: usize,
    layers: &[Vec<u64>],
) -> Result<(), IndexError> {
    let mut g = Cursor::new(graph, "graph dump");
    g.take(after_description + 1)?;
    for layer in layers {
        g.take(4 + USIZE)?;
        for _ in layer {
            g.take(4 + USIZE + 1 + 4)?;
            for _ in 0..MAX_LAYER {
                let neighbours = g.usize()?;
                for _ in 0..neighbours {
                    let origin = g.usize()? as u64;
                    let n_layer = g.u8()?;
                    let n_rank = g.i32()?;
                    let distance = g.f32()?;
                    if !resolves(layers, n_layer, n_rank, origin) || distance.is_nan() {
                        return Err(corrupted(format!("bad neighbour reference to {origin}")));
                    }
                }
            }
        }
    }
    Ok(())
}
