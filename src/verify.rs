//! `verify`: every invariant the rows can show, checked from one snapshot.
//!
//! Invariant I3 (completeness): a live document with `chunk_count = n` has exactly the chunk
//! rows `0..n`, each stamped with the document's generation, each pointing at a vector that
//! exists and is owned by it; no vector exists without its chunk. The persisted gauges agree
//! with the rows. Every violation names the document.

use crate::counters::name;
use crate::error::ReadError;
use crate::prepare::{content_hash, text_hash, PreparedChunk};
use crate::read::Snapshot;
use crate::schema::{
    self, seq_key, ChunkRow, DocRow, VectorRow, CHUNKS, COUNTERS, DOCS, DOC_KEYS, VECTORS,
};
use redb::{ReadableTable, ReadableTableMetadata};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// One broken invariant.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Violation {
    /// The document's source, when the problem belongs to one document.
    pub source: Option<String>,
    /// The document's id, when the problem belongs to one document.
    pub id: Option<String>,
    /// What is wrong.
    pub problem: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.source, &self.id) {
            (Some(source), Some(id)) => write!(f, "{source}/{id}: {}", self.problem),
            _ => f.write_str(&self.problem),
        }
    }
}

/// What `verify` checked and found.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerifyReport {
    /// Live documents checked.
    pub documents: u64,
    /// Tombstones checked.
    pub tombstones: u64,
    /// Chunk rows checked.
    pub chunks: u64,
    /// Vector rows checked.
    pub vectors: u64,
    /// Every violation found (empty when all invariants hold).
    pub violations: Vec<Violation>,
}

impl VerifyReport {
    /// Whether every invariant holds.
    pub fn is_ok(&self) -> bool {
        self.violations.is_empty()
    }

    fn doc(&mut self, source: &str, id: &str, problem: impl Into<String>) {
        self.violations.push(Violation {
            source: Some(source.to_string()),
            id: Some(id.to_string()),
            problem: problem.into(),
        });
    }

    fn store(&mut self, problem: impl Into<String>) {
        self.violations.push(Violation {
            source: None,
            id: None,
            problem: problem.into(),
        });
    }
}

impl Snapshot {
    /// Checks every invariant the rows can show; see [`VerifyReport`].
    pub fn verify(&self) -> Result<VerifyReport, ReadError> {
        let mut report = VerifyReport::default();
        let counters = self.txn.open_table(COUNTERS).map_err(ReadError::storage)?;
        let counter = |key: &str| -> Result<u64, ReadError> {
            Ok(counters
                .get(key)
                .map_err(ReadError::storage)?
                .map(|v| v.value())
                .unwrap_or(0))
        };
        let next_doc = counter(seq_key::NEXT_DOC)?;
        let next_generation = counter(seq_key::NEXT_GENERATION)?;
        let next_vector = counter(seq_key::NEXT_VECTOR)?;
        let docs = self.txn.open_table(DOCS).map_err(ReadError::storage)?;
        let doc_keys = self.txn.open_table(DOC_KEYS).map_err(ReadError::storage)?;
        let chunks = self.txn.open_table(CHUNKS).map_err(ReadError::storage)?;
        let vectors = self.txn.open_table(VECTORS).map_err(ReadError::storage)?;
        // vector id -> (doc internal id, position) of the chunk that points at it.
        let mut referenced: HashMap<u64, (u64, u32)> = HashMap::new();
        let mut doc_count = 0u64;

        for entry in docs.iter().map_err(ReadError::storage)? {
            let (key, value) = entry.map_err(ReadError::storage)?;
            let (source, id) = key.value();
            doc_count += 1;
            let row: DocRow = match schema::decode("document row", value.value()) {
                Ok(row) => row,
                Err(c) => {
                    report.doc(source, id, format!("undecodable row: {}", c.detail));
                    continue;
                }
            };
            if row.version().is_err() {
                report.doc(
                    source,
                    id,
                    format!("unknown version kind {}", row.version_kind),
                );
            }
            if row.internal_id >= next_doc {
                report.doc(
                    source,
                    id,
                    format!(
                        "internal id {} is not below the sequence {next_doc}",
                        row.internal_id
                    ),
                );
            }
            match doc_keys.get(row.internal_id).map_err(ReadError::storage)? {
                Some(k) if k.value() == (source, id) => {}
                Some(k) => {
                    let (s, i) = k.value();
                    report.doc(
                        source,
                        id,
                        format!("internal id {} maps back to {s}/{i}", row.internal_id),
                    );
                }
                None => report.doc(
                    source,
                    id,
                    format!("internal id {} has no reverse entry", row.internal_id),
                ),
            }
            let rows: Vec<(u32, Vec<u8>)> = chunks
                .range((row.internal_id, 0u32)..=(row.internal_id, u32::MAX))
                .map_err(ReadError::storage)?
                .map(|e| e.map(|(k, v)| (k.value().1, v.value().to_vec())))
                .collect::<Result<_, _>>()
                .map_err(ReadError::storage)?;
            if row.deleted {
                report.tombstones += 1;
                if row.chunk_count != 0 || !rows.is_empty() {
                    report.doc(
                        source,
                        id,
                        format!(
                            "tombstone with chunk_count {} and {} chunk rows",
                            row.chunk_count,
                            rows.len()
                        ),
                    );
                }
                continue;
            }
            report.documents += 1;
            if row.generation == 0 || row.generation >= next_generation.max(1) {
                report.doc(
                    source,
                    id,
                    format!("generation {} outside 1..{next_generation}", row.generation),
                );
            }
            let positions: Vec<u32> = rows.iter().map(|(p, _)| *p).collect();
            let expected: Vec<u32> = (0..row.chunk_count).collect();
            if positions != expected {
                report.doc(
                    source,
                    id,
                    format!(
                        "chunk_count is {} but the chunk rows are at positions {positions:?}",
                        row.chunk_count
                    ),
                );
            }
            let mut prepared = Vec::with_capacity(rows.len());
            for (position, bytes) in rows {
                report.chunks += 1;
                let chunk: ChunkRow = match schema::decode("chunk row", &bytes) {
                    Ok(c) => c,
                    Err(c) => {
                        report.doc(
                            source,
                            id,
                            format!("chunk {position}: undecodable: {}", c.detail),
                        );
                        continue;
                    }
                };
                if chunk.generation != row.generation {
                    report.doc(
                        source,
                        id,
                        format!(
                            "chunk {position} has generation {} but the document has {}",
                            chunk.generation, row.generation
                        ),
                    );
                }
                if chunk.text_hash != text_hash(&chunk.text) {
                    report.doc(
                        source,
                        id,
                        format!("chunk {position}: text hash does not match its text"),
                    );
                }
                if chunk.vector_id >= next_vector {
                    report.doc(source, id, format!("chunk {position}: vector id {} is not below the sequence {next_vector}", chunk.vector_id));
                }
                if let Some((other_doc, other_position)) =
                    referenced.insert(chunk.vector_id, (row.internal_id, position))
                {
                    report.doc(
                        source,
                        id,
                        format!("chunk {position}: vector {} is also used by document {other_doc} chunk {other_position}", chunk.vector_id),
                    );
                }
                match vectors.get(chunk.vector_id).map_err(ReadError::storage)? {
                    None => report.doc(
                        source,
                        id,
                        format!("chunk {position}: vector {} is missing", chunk.vector_id),
                    ),
                    Some(bytes) => match VectorRow::decode(bytes.value()) {
                        Err(c) => report.doc(
                            source,
                            id,
                            format!("chunk {position}: vector {}: {}", chunk.vector_id, c.detail),
                        ),
                        Ok(vector) => {
                            if (vector.owner_doc, vector.position) != (row.internal_id, position) {
                                report.doc(
                                    source,
                                    id,
                                    format!(
                                        "chunk {position}: vector {} says it belongs to document {} chunk {}",
                                        chunk.vector_id, vector.owner_doc, vector.position
                                    ),
                                );
                            }
                            if let Some(dimension) = self.dimension {
                                if vector.vector.len() != dimension {
                                    report.doc(
                                        source,
                                        id,
                                        format!("chunk {position}: vector has {} dimensions, the store {dimension}", vector.vector.len()),
                                    );
                                }
                            }
                            if vector.vector.iter().any(|x| !x.is_finite()) {
                                report.doc(
                                    source,
                                    id,
                                    format!("chunk {position}: vector has a non-finite value"),
                                );
                            }
                        }
                    },
                }
                prepared.push(PreparedChunk {
                    text_hash: chunk.text_hash,
                    text: chunk.text,
                    meta: chunk.meta,
                    vector: None,
                });
            }
            if prepared.len() == row.chunk_count as usize
                && content_hash(&row.meta, &prepared) != row.content_hash
            {
                report.doc(
                    source,
                    id,
                    "content hash does not match the chunks and metadata",
                );
            }
        }

        let chunk_rows = chunks.len().map_err(ReadError::storage)?;
        if chunk_rows != report.chunks {
            report.store(format!(
                "{} chunk rows exist but documents account for {}: orphaned chunks",
                chunk_rows, report.chunks
            ));
        }
        for entry in vectors.iter().map_err(ReadError::storage)? {
            let (key, _) = entry.map_err(ReadError::storage)?;
            report.vectors += 1;
            if !referenced.contains_key(&key.value()) {
                report.store(format!("vector {} belongs to no chunk", key.value()));
            }
        }
        let key_rows = doc_keys.len().map_err(ReadError::storage)?;
        if key_rows != doc_count {
            report.store(format!(
                "{key_rows} reverse entries for {doc_count} documents"
            ));
        }
        for (gauge, actual) in [
            (name::LIVE_DOCUMENTS, report.documents),
            (name::LIVE_TOMBSTONES, report.tombstones),
            (name::LIVE_CHUNKS, report.chunks),
            (name::LIVE_VECTORS, report.vectors),
        ] {
            let recorded = counter(gauge)?;
            if recorded != actual {
                report.store(format!(
                    "counter {gauge} says {recorded}, the rows say {actual}"
                ));
            }
        }
        Ok(report)
    }
}
