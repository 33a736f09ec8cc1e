//! `verify`: every invariant the rows can show, checked from one snapshot.
//!
//! Invariant I3 (completeness): a live document with `chunk_count = n` has one chunks row of
//! exactly `n` chunks, stamped with the document's generation, and one vectors row of exactly
//! `n` vectors under distinct slots it has allocated; a tombstone has neither, and no row
//! exists for a document that is not live. The persisted gauges agree with the rows. Every
//! violation names the document.

use crate::backend::redb::read::Snapshot;
use crate::backend::redb::schema::{
    self, seq_key, ChangelogRow, ChunksRow, DocRow, ListingRow, SkipRow, VectorsRow, CHANGELOG,
    CHUNKS, COUNTERS, DOCS, LISTINGS, SKIP_LOG, VECTORS,
};
use crate::error::ReadError;
use crate::policy::guard::content_key;
use crate::policy::prepare::stored_content_hash;
use crate::types::counters::name;
use crate::types::VerifyReport;
use crate::types::VersionKind;
use redb::ReadableTable;
use std::collections::HashSet;

impl Snapshot {
    /// Checks every invariant the rows can show; see [`VerifyReport`].
    ///
    /// Everything any read decodes is decoded here too: every document row and its metadata
    /// (tombstones included), every chunks and vectors row with every chunk's metadata and
    /// every vector, every listing, skip-log and changelog row. A store `verify` passes can be
    /// exported whole. What no row can show (a vector float or version number changed on
    /// disk) needs redb's page checksums: `ratchet verify --deep`.
    pub fn verify(&self) -> Result<VerifyReport, ReadError> {
        crate::backend::redb::contain::contain(ReadError::contained, || self.verify_uncontained())
    }

    fn verify_uncontained(&self) -> Result<VerifyReport, ReadError> {
        let mut report = VerifyReport::default();
        let tables = Tables::open(self)?;
        // Internal ids of live documents: the only ones that may have chunks and vectors rows.
        let mut live: HashSet<u64> = HashSet::new();
        // Internal ids of every document row, tombstones included: each names one document.
        let mut internal_ids: HashSet<u64> = HashSet::new();
        for entry in tables.docs.iter().map_err(ReadError::storage)? {
            let (key, value) = entry.map_err(ReadError::storage)?;
            let (source, id) = key.value();
            let mut doc = DocReport {
                report: &mut report,
                source,
                id,
            };
            let row: DocRow = match schema::decode("document row", value.value()) {
                Ok(row) => row,
                Err(c) => {
                    doc.add(format!("undecodable row: {}", c.detail));
                    continue;
                }
            };
            check_document_row(&mut doc, &row, tables.next_doc);
            if !internal_ids.insert(row.internal_id) {
                doc.add(format!(
                    "internal id {} is another document's too",
                    row.internal_id
                ));
            }
            let revision = tables.revision_rows(row.internal_id)?;
            if row.deleted {
                doc.report.tombstones += 1;
                check_tombstone(&mut doc, &row, &revision);
                continue;
            }
            doc.report.documents += 1;
            live.insert(row.internal_id);
            check_generation(&mut doc, &row, tables.next_generation);
            self.check_revision(&mut doc, &row, revision);
        }
        check_orphans(&mut report, &tables, &live)?;
        self.check_side_tables(&mut report)?;
        crate::backend::redb::text::verify(self, &mut report)?;
        check_gauges(&mut report, &tables)?;
        crate::backend::redb::spaces::verify(self, &mut report)?;
        Ok(report)
    }

    /// A live document's two revision rows: the vectors row (which carries the chunks row's
    /// last bytes), then the chunks row joined with it, its chunks and its content hash.
    fn check_revision(&self, doc: &mut DocReport<'_>, row: &DocRow, revision: RevisionBytes) {
        let vectors = revision.vectors.as_deref().map(VectorsRow::parse);
        match &vectors {
            None => doc.add("the vectors row is missing"),
            Some(Err(c)) => doc.add(format!("vectors row: {}", c.detail)),
            Some(Ok(vectors)) => {
                doc.report.vectors += vectors.len() as u64;
                self.check_vectors(doc, row, vectors);
            }
        }
        // Without a readable vectors row, the chunks row is decoded alone: whole if it
        // carried nothing, a reported corruption if it did.
        // A damaged codec row is reported once (`check_side_tables`); its texts are then
        // reported as texts without a codec. (An error reading the row fails the whole
        // verify there.)
        let codec = self.text_codec_for_reads().ok().flatten();
        let joined = revision.chunks.map(|b| match &vectors {
            Some(Ok(vectors)) => schema::join_chunks(&b, vectors, codec),
            _ => schema::decode_chunks_row("chunks row", &b, codec),
        });
        let stored: ChunksRow = match joined {
            None => return doc.add("the chunks row is missing"),
            // Reported above: the chunks row's tail was in it.
            Some(Err(_)) if !matches!(vectors, Some(Ok(_))) => return,
            Some(Err(c)) => return doc.add(format!("undecodable chunks row: {}", c.detail)),
            Some(Ok(stored)) => stored,
        };
        doc.report.chunks += stored.chunks.len() as u64;
        check_chunks(doc, row, &stored);
        if let Some(Ok(vectors)) = &vectors {
            check_slots(doc, &stored, vectors);
        }
        check_content_hash(doc, row, stored);
    }

    /// Decodes every listing, skip-log and changelog row (what `stats`, `retain` and the index
    /// read).
    fn check_side_tables(&self, report: &mut VerifyReport) -> Result<(), ReadError> {
        match self.text_codec() {
            Err(ReadError::Corrupted { detail, .. }) => {
                report.store(format!("the text codec does not read: {detail}"))
            }
            Err(e) => return Err(e),
            Ok(_) => {}
        }
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
    fn check_vectors(&self, doc: &mut DocReport<'_>, row: &DocRow, vectors: &VectorsRow<'_>) {
        if vectors.len() != row.chunk_count as usize {
            doc.add(format!(
                "chunk_count is {} but the vectors row holds {}",
                row.chunk_count,
                vectors.len()
            ));
        }
        if let Some(dimension) = self.dimension.filter(|_| vectors.len() > 0) {
            if vectors.dimension() != dimension {
                doc.add(format!(
                    "vectors have {} dimensions, the store {dimension}",
                    vectors.dimension()
                ));
            }
        }
        if u64::from(row.next_slot) > schema::SLOTS_PER_DOC {
            doc.add(format!(
                "next slot {} is past the slot space ({})",
                row.next_slot,
                schema::SLOTS_PER_DOC
            ));
        }
        let mut seen = HashSet::new();
        let mut floats = Vec::with_capacity(vectors.dimension());
        // One pass over the row's vectors: a coded row's vector is found by counting the
        // escapes of those before it, so asking for each position anew is quadratic.
        for (position, vector) in vectors.vectors().enumerate() {
            let slot = vector.slot();
            if slot >= row.next_slot {
                doc.add(format!(
                    "chunk {position}: vector slot {slot} is not below the document's next slot {}",
                    row.next_slot
                ));
            }
            if !seen.insert(slot) {
                doc.add(format!(
                    "chunk {position}: vector slot {slot} is used twice"
                ));
            }
            floats.clear();
            vector.extend_floats(&mut floats);
            let finite = floats.iter().all(|x| x.is_finite());
            if !finite {
                doc.add(format!("chunk {position}: vector has a non-finite value"));
            }
        }
    }
}

/// Where a document's violations go: the report, with the document's name.
struct DocReport<'a> {
    report: &'a mut VerifyReport,
    source: &'a str,
    id: &'a str,
}

impl DocReport<'_> {
    fn add(&mut self, problem: impl Into<String>) {
        self.report.doc(self.source, self.id, problem);
    }
}

/// The tables and sequences every document is checked against.
struct Tables {
    counters: redb::ReadOnlyTable<&'static str, u64>,
    docs: redb::ReadOnlyTable<(&'static str, &'static str), &'static [u8]>,
    chunks: redb::ReadOnlyTable<u64, &'static [u8]>,
    vectors: redb::ReadOnlyTable<u64, &'static [u8]>,
    next_doc: u64,
    next_generation: u64,
}

/// The bytes of a document's chunks and vectors rows, either absent.
struct RevisionBytes {
    chunks: Option<Vec<u8>>,
    vectors: Option<Vec<u8>>,
}

impl Tables {
    fn open(snapshot: &Snapshot) -> Result<Tables, ReadError> {
        let txn = &snapshot.txn;
        let mut tables = Tables {
            counters: txn.open_table(COUNTERS).map_err(ReadError::storage)?,
            docs: txn.open_table(DOCS).map_err(ReadError::storage)?,
            chunks: txn.open_table(CHUNKS).map_err(ReadError::storage)?,
            vectors: txn.open_table(VECTORS).map_err(ReadError::storage)?,
            next_doc: 0,
            next_generation: 0,
        };
        tables.next_doc = tables.counter(seq_key::NEXT_DOC)?;
        tables.next_generation = tables.counter(seq_key::NEXT_GENERATION)?;
        Ok(tables)
    }

    fn counter(&self, key: &str) -> Result<u64, ReadError> {
        Ok(self
            .counters
            .get(key)
            .map_err(ReadError::storage)?
            .map(|v| v.value())
            .unwrap_or(0))
    }

    fn revision_rows(&self, internal_id: u64) -> Result<RevisionBytes, ReadError> {
        let read = |table: &redb::ReadOnlyTable<u64, &'static [u8]>| {
            Ok::<_, ReadError>(
                table
                    .get(internal_id)
                    .map_err(ReadError::storage)?
                    .map(|v| v.value().to_vec()),
            )
        };
        Ok(RevisionBytes {
            chunks: read(&self.chunks)?,
            vectors: read(&self.vectors)?,
        })
    }
}

/// A document row's own fields: a known version kind, metadata that decodes, an internal id
/// the sequence has handed out.
fn check_document_row(doc: &mut DocReport<'_>, row: &DocRow, next_doc: u64) {
    if row.version().is_err() {
        doc.add(format!("unknown version kind {}", row.version_kind));
    }
    if let Err(error) = serde_json::from_str::<serde_json::Value>(&row.meta) {
        doc.add(format!("the document's metadata does not decode: {error}"));
    }
    if row.internal_id >= next_doc {
        doc.add(format!(
            "internal id {} is not below the sequence {next_doc}",
            row.internal_id
        ));
    }
}

/// A tombstone has no chunks and neither a chunks nor a vectors row.
fn check_tombstone(doc: &mut DocReport<'_>, row: &DocRow, revision: &RevisionBytes) {
    let (chunks, vectors) = (revision.chunks.is_some(), revision.vectors.is_some());
    if row.chunk_count != 0 || chunks || vectors {
        doc.add(format!(
            "tombstone with chunk_count {}, a chunks row: {chunks}, a vectors row: {vectors}",
            row.chunk_count
        ));
    }
}

/// A live document's generation was handed out by the sequence (and is never 0).
fn check_generation(doc: &mut DocReport<'_>, row: &DocRow, next_generation: u64) {
    if row.generation == 0 || row.generation >= next_generation.max(1) {
        doc.add(format!(
            "generation {} outside 1..{next_generation}",
            row.generation
        ));
    }
}

/// The chunks row holds the document's chunk count, under its generation, each chunk's text
/// hash matching its text and its metadata decoding.
fn check_chunks(doc: &mut DocReport<'_>, row: &DocRow, stored: &ChunksRow) {
    if stored.chunks.len() != row.chunk_count as usize {
        doc.add(format!(
            "chunk_count is {} but the chunks row holds {}",
            row.chunk_count,
            stored.chunks.len()
        ));
    }
    if stored.generation != row.generation {
        doc.add(format!(
            "the chunks have generation {} but the document has {}",
            stored.generation, row.generation
        ));
    }
    // What a search hit reports of its document is read from the chunks row.
    if (stored.version_kind, stored.version) != (row.version_kind, row.version) {
        doc.add(format!(
            "the chunks row has version {}:{} but the document {}:{}",
            stored.version_kind, stored.version, row.version_kind, row.version
        ));
    }
    if (stored.source.as_str(), stored.id.as_str()) != (doc.source, doc.id) {
        doc.add(format!(
            "the chunks row names the document {}/{}",
            stored.source, stored.id
        ));
    }
    for (position, chunk) in stored.chunks.iter().enumerate() {
        if let Err(error) = serde_json::from_str::<serde_json::Value>(&chunk.meta) {
            doc.add(format!(
                "chunk {position}: its metadata does not decode: {error}"
            ));
        }
    }
}

/// Each chunk's slot is its vector's: the vectors row's slot at the same position (a search
/// hit finds its chunk by slot in the chunks row alone).
fn check_slots(doc: &mut DocReport<'_>, stored: &ChunksRow, vectors: &VectorsRow<'_>) {
    if stored.chunks.len() != vectors.len() {
        // Reported against the chunk count.
        return;
    }
    for (position, (chunk, slot)) in stored.chunks.iter().zip(vectors.slots()).enumerate() {
        if chunk.slot != slot {
            doc.add(format!(
                "chunk {position}: the chunks row has slot {} but the vectors row {slot}",
                chunk.slot
            ));
        }
    }
}

/// The document row's content key is that of the hash of its metadata and chunks (checked
/// only when the chunk count agrees; a disagreement is reported by [`check_chunks`]).
fn check_content_hash(doc: &mut DocReport<'_>, row: &DocRow, stored: ChunksRow) {
    let chunks = stored
        .chunks
        .iter()
        .map(|c| (c.text.as_str(), c.meta.as_str()));
    if stored.chunks.len() == row.chunk_count as usize
        && content_key(&stored_content_hash(&row.meta, chunks)) != row.content_key
    {
        doc.add("content hash does not match the chunks and metadata");
    }
}

/// Every chunks and vectors row belongs to a live document.
fn check_orphans(
    report: &mut VerifyReport,
    tables: &Tables,
    live: &HashSet<u64>,
) -> Result<(), ReadError> {
    for (table, what) in [(&tables.chunks, "chunks"), (&tables.vectors, "vectors")] {
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
    Ok(())
}

/// The persisted gauges agree with what the rows hold.
fn check_gauges(report: &mut VerifyReport, tables: &Tables) -> Result<(), ReadError> {
    for (gauge, actual) in [
        (name::LIVE_DOCUMENTS, report.documents),
        (name::LIVE_TOMBSTONES, report.tombstones),
        (name::LIVE_CHUNKS, report.chunks),
        (name::LIVE_VECTORS, report.vectors),
    ] {
        let recorded = tables.counter(gauge)?;
        if recorded != actual {
            report.store(format!(
                "counter {gauge} says {recorded}, the rows say {actual}"
            ));
        }
    }
    Ok(())
}
