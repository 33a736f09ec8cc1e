//! The search's inner kernels, reachable from the benches so that a kernel and the one it
//! replaced are measured side by side in one process (`benches/search_kernels.rs`).

use crate::backend::redb::schema::{self, ChunkEntry, ChunksRow};
use crate::index::distance;
use crate::options::Metric;

/// The exact scan's distances, one row at a time through `distance` (the scan before
/// `scan_block`): calls `on_row(row, distance)` for each `query.len()`-float row.
pub fn scan_rows_one_by_one(
    metric: Metric,
    query: &[f32],
    rows: &[f32],
    mut on_row: impl FnMut(usize, f32),
) {
    if query.is_empty() {
        return;
    }
    for (i, row) in rows.chunks_exact(query.len()).enumerate() {
        on_row(i, distance::distance(metric, query, row));
    }
}

/// The exact scan's distances through `distance::scan_block` (the instruction set picked once per scan).
pub fn scan_rows_block(
    metric: Metric,
    query: &[f32],
    rows: &[f32],
    on_row: impl FnMut(usize, f32),
) {
    distance::scan_block(metric, query, rows, on_row)
}

/// An encoded chunks row of `texts` (each chunk's metadata `meta`), as the write path
/// encodes it; each chunk's vector slot is its position.
pub fn encode_chunks_row(generation: u64, texts: &[String], meta: &str) -> Vec<u8> {
    schema::encode_chunks_row(
        &ChunksRow {
            generation,
            version_kind: 0,
            version: generation,
            source: "bench".to_string(),
            id: format!("doc-{generation}"),
            chunks: (0u32..)
                .zip(texts)
                .map(|(slot, text)| ChunkEntry {
                    slot,
                    text: text.clone(),
                    meta: meta.to_string(),
                })
                .collect(),
        },
        None,
    )
}

/// The text of chunk `position`, as a search hit got it before: the whole row decoded.
pub fn chunk_text_whole_row(bytes: &[u8], position: usize) -> Option<String> {
    let row = schema::decode_chunks_row("chunks row", bytes, None).ok()?;
    row.chunks.into_iter().nth(position).map(|c| c.text)
}

/// The text of chunk `position` of a row from [`encode_chunks_row`], as a search hit gets
/// it now: only the chunk of that vector slot decoded (`schema::decode_chunk_of_slot`).
pub fn chunk_text_one_chunk(bytes: &[u8], position: usize) -> Option<String> {
    let at = schema::decode_chunk_of_slot(bytes, u32::try_from(position).ok()?, None).ok()?;
    at.chunk.map(|(_, c)| c.text.into_owned())
}

/// A vector index of `rows` (row-major, `dim` floats each; ids are row numbers), cosine,
/// without a graph: for timing the whole exact search (scan, top-k, thread split) without a
/// `Store`.
pub struct ExactScan(crate::index::VectorIndex);

impl ExactScan {
    /// The index of `rows`' whole rows.
    pub fn new(dim: usize, rows: &[f32]) -> Result<ExactScan, String> {
        let index =
            crate::index::VectorIndex::new(dim, Metric::Cosine).map_err(|e| e.to_string())?;
        let items: Vec<(u64, &[f32])> = rows
            .chunks_exact(dim.max(1))
            .enumerate()
            .map(|(id, row)| (id as u64, row))
            .collect();
        index.insert_batch(&items).map_err(|e| e.to_string())?;
        Ok(ExactScan(index))
    }

    /// The ids and scores of the `k` rows nearest to `query`, nearest first: the exact
    /// search a `Store` runs (on one thread below 32,768 rows, else on every core).
    pub fn search(&self, query: &[f32], k: usize) -> Result<Vec<(u64, f32)>, String> {
        self.0
            .search(query, k, crate::index::SearchMode::Exact, None)
            .map_err(|e| e.to_string())
    }
}

/// Vectors coded as the graph's traversal codes them (4 bits a dimension, a quantiser
/// fitted to the rows), for timing the traversal's code distances: the integer kernel it
/// uses against the `f32` one it used before (`benches/search_kernels.rs`, group
/// `code_distance`).
pub struct CodedRows {
    quantizer: crate::index::quantize::Quantizer,
    metric: Metric,
    code_len: usize,
    codes: Vec<u8>,
}

impl CodedRows {
    /// `rows` (row-major, `dim` floats each) coded as a graph of `metric` codes them;
    /// `None` without a whole row.
    pub fn new(dim: usize, rows: &[f32], metric: Metric) -> Option<CodedRows> {
        let count = rows.len() / dim.max(1);
        let quantizer = crate::index::quantize::Quantizer::fit(dim, count, |s| {
            rows.get(s * dim..(s + 1) * dim)
        })?
        .for_metric(metric);
        let mut codes = Vec::new();
        for row in rows.chunks_exact(dim) {
            quantizer.encode(row, &mut codes);
        }
        Some(CodedRows {
            code_len: quantizer.code_len(),
            quantizer,
            metric,
            codes,
        })
    }

    /// Calls `on_row(row, estimate)` with every row's estimate through the integer kernel
    /// (the traversal's).
    pub fn scan_integer(&self, query: &[f32], mut on_row: impl FnMut(usize, f32)) {
        let prepared = self.quantizer.query(self.metric, query);
        for (row, code) in self.codes.chunks_exact(self.code_len).enumerate() {
            on_row(row, prepared.distance(code));
        }
    }

    /// The same through the `f32` kernel (the traversal's before; cosine for every metric
    /// but L2).
    pub fn scan_f32(&self, query: &[f32], mut on_row: impl FnMut(usize, f32)) {
        let codes = self.codes.chunks_exact(self.code_len).enumerate();
        if self.metric == Metric::L2 {
            let estimate = self.quantizer.l2_estimate_f32(query);
            codes.for_each(|(row, code)| on_row(row, estimate(code)));
        } else {
            let estimate = self.quantizer.cosine_estimate_f32(query);
            codes.for_each(|(row, code)| on_row(row, estimate(code)));
        }
    }
}

/// A graph snapshot (format 7 blobs, as the `index_snapshot` table holds them) of `n`
/// MiniLM-like vectors of `dim` dimensions drawn from `seed`, their ids numbered as a store
/// numbers one-chunk documents (document `i + 1`, slot 0), the graph built on every core.
pub fn graph_snapshot(n: usize, dim: usize, seed: u64) -> Result<Vec<Vec<u8>>, String> {
    let index = crate::index::VectorIndex::new(dim, Metric::Cosine).map_err(|e| e.to_string())?;
    let mut rng = super::SplitMix64::new(seed);
    let vectors: Vec<Vec<f32>> = (0..n).map(|_| rng.minilm_like(dim)).collect();
    let items: Vec<(u64, &[f32])> = (1u64..)
        .map(|doc| doc << 24)
        .zip(vectors.iter().map(Vec::as_slice))
        .collect();
    index.insert_batch(&items).map_err(|e| e.to_string())?;
    index.build_graph().map_err(|e| e.to_string())?;
    index
        .snapshot_blobs()
        .map_err(|e| e.to_string())?
        .ok_or_else(|| "no graph to snapshot".to_string())
}

/// `blobs` (format 7, of `dim` dimensions) written again as format 6, the fixed-width layout
/// earlier builds wrote.
pub fn graph_snapshot_as_format_6(blobs: &[Vec<u8>], dim: usize) -> Result<Vec<Vec<u8>>, String> {
    crate::index::snapshot_as_format_6(blobs, Metric::Cosine, dim)
        .ok_or_else(|| "not a snapshot this build reads".to_string())
}

/// Checks and parses snapshot `blobs` of `dim` dimensions as a reopen does (before the
/// vectors are joined to the links); returns the number of points.
pub fn parse_graph_snapshot(blobs: &[Vec<u8>], dim: usize) -> Result<usize, String> {
    crate::index::parse_snapshot(blobs, Metric::Cosine, dim)
        .map(|parsed| parsed.point_count())
        .map_err(|e| e.to_string())
}
