//! `verify`: every invariant the rows can show, checked from one snapshot.
//!
//! Invariant I3 (completeness): a live document with `chunk_count = n` has one chunks row of
//! exactly `n` chunks, stamped with the document's generation, and one vectors row of exactly
//! `n` vectors under distinct slots it has allocated; a tombstone has neither, and no row
//! exists for a document that is not live. The persisted gauges agree with the rows. Every
//! violation names the document.

use crate::counters::name;
use crate::error::ReadError;
use crate::prepare::{content_hash, text_hash, PreparedChunk};
use crate::read::Snapshot;
use crate::schema::{
    self, seq_key, ChangelogRow, ChunksRow, DocRow, ListingRow, SkipRow, VectorsRow, CHANGELOG,
    CHUNKS, COUNTERS, DOCS, DOC_KEYS, LISTINGS, SKIP_LOG, VECTORS,
};
use crate::version::VersionKind;
use redb::{ReadableTable, ReadableTableMetadata};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;

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
    /// Live chunks checked.
    pub chunks: u64,
    /// Live vectors checked.
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
    ///
    /// Everything any read decodes is decoded here too: every document row and its metadata
    /// (tombstones included), every chunks and vectors row with every chunk's metadata and
    /// every vector, every listing, skip-log and changelog row. A store `verify` passes can be
    /// exported whole. What no row can show (a vector float or version number changed on
    /// disk) needs redb's page checksums: `ratchet verify --deep`.
    pub fn verify(&self) -> Result<VerifyReport, ReadError> {
        crate::contain::contain(ReadError::contained, || self.verify_uncontained())
    }

    fn verify_uncontained(&self) -> Result<VerifyReport, ReadError> {
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
        let docs = self.txn.open_table(DOCS).map_err(ReadError::storage)?;
        let doc_keys = self.txn.open_table(DOC_KEYS).map_err(ReadError::storage)?;
        let chunks = self.txn.open_table(CHUNKS).map_err(ReadError::storage)?;
        let vectors = self.txn.open_table(VECTORS).map_err(ReadError::storage)?;
        // Internal ids of live documents: the only ones that may have chunks and vectors rows.
        let mut live: HashSet<u64> = HashSet::new();
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
            if let Err(error) = serde_json::from_str::<serde_json::Value>(&row.meta) {
                report.doc(
                    source,
                    id,
                    format!("the document's metadata does not decode: {error}"),
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
            let chunks_row = chunks
                .get(row.internal_id)
                .map_err(ReadError::storage)?
                .map(|v| v.value().to_vec());
            let vectors_row = vectors
                .get(row.internal_id)
                .map_err(ReadError::storage)?
                .map(|v| v.value().to_vec());
            if row.deleted {
                report.tombstones += 1;
                if row.chunk_count != 0 || chunks_row.is_some() || vectors_row.is_some() {
                    report.doc(
                        source,
                        id,
                        format!(
                            "tombstone with chunk_count {}, a chunks row: {}, a vectors row: {}",
                            row.chunk_count,
                            chunks_row.is_some(),
                            vectors_row.is_some()
                        ),
                    );
                }
                continue;
            }
            report.documents += 1;
            live.insert(row.internal_id);
            if row.generation == 0 || row.generation >= next_generation.max(1) {
                report.doc(
                    source,
                    id,
                    format!("generation {} outside 1..{next_generation}", row.generation),
                );
            }
            // The vectors row first: it carries the chunks row's last bytes.
            let vectors = vectors_row.as_deref().map(VectorsRow::parse);
            match &vectors {
                None => report.doc(source, id, "the vectors row is missing"),
                Some(Err(c)) => report.doc(source, id, format!("vectors row: {}", c.detail)),
                Some(Ok(vectors)) => {
                    report.vectors += vectors.len() as u64;
                    self.check_vectors(&mut report, source, id, &row, vectors);
                }
            }
            let spill = match &vectors {
                Some(Ok(vectors)) => vectors.spill(),
                _ => &[],
            };
            let stored: ChunksRow = match chunks_row.map(|b| schema::decode_chunks(&b, spill)) {
                None => {
                    report.doc(source, id, "the chunks row is missing");
                    continue;
                }
                // Reported above: the chunks row's tail was in it.
                Some(Err(_)) if !matches!(vectors, Some(Ok(_))) => continue,
                Some(Err(c)) => {
                    report.doc(source, id, format!("undecodable chunks row: {}", c.detail));
                    continue;
                }
                Some(Ok(stored)) => stored,
            };
            report.chunks += stored.chunks.len() as u64;
            if stored.chunks.len() != row.chunk_count as usize {
                report.doc(
                    source,
                    id,
                    format!(
                        "chunk_count is {} but the chunks row holds {}",
                        row.chunk_count,
                        stored.chunks.len()
                    ),
                );
            }
            if stored.generation != row.generation {
                report.doc(
                    source,
                    id,
                    format!(
                        "the chunks have generation {} but the document has {}",
                        stored.generation, row.generation
                    ),
                );
            }
            for (position, chunk) in stored.chunks.iter().enumerate() {
                if chunk.text_hash != text_hash(&chunk.text) {
                    report.doc(
                        source,
                        id,
                        format!("chunk {position}: text hash does not match its text"),
                    );
                }
                if let Err(error) = serde_json::from_str::<serde_json::Value>(&chunk.meta) {
                    report.doc(
                        source,
                        id,
                        format!("chunk {position}: its metadata does not decode: {error}"),
                    );
                }
            }
            let prepared: Vec<PreparedChunk> = stored
                .chunks
                .into_iter()
                .map(|chunk| PreparedChunk {
                    text_hash: chunk.text_hash,
                    text: chunk.text,
                    meta: chunk.meta,
                    vector: None,
                })
                .collect();
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

        for (table, what) in [(&chunks, "chunks"), (&vectors, "vectors")] {
            for entry in table.iter().map_err(ReadError::storage)? {
                let (key, _) = entry.map_err(ReadError::storage)?;
                if !live.contains(&key.value()) {
                    report.store(format!(
                        "a {what} row for internal id {} belongs to no live document: orphaned {what}",
                        key.value()
                    ));
                }
            }
        }
        self.check_side_tables(&mut report)?;
        crate::text::verify(self, &mut report)?;
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

    /// Decodes every listing, skip-log and changelog row (what `stats`, `retain` and the index
    /// read).
    fn check_side_tables(&self, report: &mut VerifyReport) -> Result<(), ReadError> {
        let listings = self.txn.open_table(LISTINGS).map_err(ReadError::storage)?;
        for entry in listings.iter().map_err(ReadError::storage)? {
            let (key, value) = entry.map_err(ReadError::storage)?;
            let (source, version) = key.value();
            match schema::decode::<ListingRow>("listing row", value.value()) {
                Err(c) => report.store(format!(
                    "the listing of {source} at version {version} does not decode: {}",
                    c.detail
                )),
                Ok(row) if VersionKind::from_byte(row.version_kind).is_none() => {
                    report.store(format!(
                        "the listing of {source} at version {version} has unknown version kind {}",
                        row.version_kind
                    ))
                }
                Ok(_) => {}
            }
        }
        let skips = self.txn.open_table(SKIP_LOG).map_err(ReadError::storage)?;
        for entry in skips.iter().map_err(ReadError::storage)? {
            let (key, value) = entry.map_err(ReadError::storage)?;
            let seq = key.value();
            let problem = schema::decode::<SkipRow>("skip log row", value.value())
                .and_then(|row| row.reason().and(row.versions()))
                .err();
            if let Some(c) = problem {
                report.store(format!("skip log row {seq} does not decode: {}", c.detail));
            }
        }
        let changelog = self.txn.open_table(CHANGELOG).map_err(ReadError::storage)?;
        for entry in changelog.iter().map_err(ReadError::storage)? {
            let (key, value) = entry.map_err(ReadError::storage)?;
            if let Err(c) = schema::decode::<ChangelogRow>("changelog row", value.value()) {
                report.store(format!(
                    "changelog row {} does not decode: {}",
                    key.value(),
                    c.detail
                ));
            }
        }
        Ok(())
    }

    /// Checks a live document's vectors row against its document row.
    fn check_vectors(
        &self,
        report: &mut VerifyReport,
        source: &str,
        id: &str,
        row: &DocRow,
        vectors: &VectorsRow<'_>,
    ) {
        if vectors.len() != row.chunk_count as usize {
            report.doc(
                source,
                id,
                format!(
                    "chunk_count is {} but the vectors row holds {}",
                    row.chunk_count,
                    vectors.len()
                ),
            );
        }
        if let Some(dimension) = self.dimension.filter(|_| vectors.len() > 0) {
            if vectors.dimension() != dimension {
                report.doc(
                    source,
                    id,
                    format!(
                        "vectors have {} dimensions, the store {dimension}",
                        vectors.dimension()
                    ),
                );
            }
        }
        if u64::from(row.next_slot) > schema::SLOTS_PER_DOC {
            report.doc(
                source,
                id,
                format!(
                    "next slot {} is past the slot space ({})",
                    row.next_slot,
                    schema::SLOTS_PER_DOC
                ),
            );
        }
        let mut seen = HashSet::new();
        for (position, slot) in vectors.slots().enumerate() {
            if slot >= row.next_slot {
                report.doc(
                    source,
                    id,
                    format!(
                        "chunk {position}: vector slot {slot} is not below the document's next slot {}",
                        row.next_slot
                    ),
                );
            }
            if !seen.insert(slot) {
                report.doc(
                    source,
                    id,
                    format!("chunk {position}: vector slot {slot} is used twice"),
                );
            }
            let finite = vectors
                .vector_bytes(position)
                .unwrap_or(&[])
                .chunks_exact(4)
                .all(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]).is_finite());
            if !finite {
                report.doc(
                    source,
                    id,
                    format!("chunk {position}: vector has a non-finite value"),
                );
            }
        }
    }
}
