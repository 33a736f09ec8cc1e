//! Keeping the text index in the write transaction: a revision's new chunks are indexed and
//! the chunks it drops un-indexed by the same [`TextWriter`] the batch opened on its
//! transaction, so the index rows commit with the chunk rows or not at all.
//!
//! Cost: one [`TextDocRow`](crate::schema::TextDocRow) per document, replaced whole by each
//! revision (one insert, as the chunks row is; a tombstone removes it). Only the chunks under
//! a new vector id are analysed; a chunk kept under its vector id (same text) has its bytes
//! copied from the old row. The totals are summed in memory and written once per
//! transaction ([`TextWriter::finish`]). (Tried before: a table keyed by term touched a leaf
//! per distinct term of every write, 11× to 200× the cost of the write without it; one row
//! per chunk removed and inserted 8 rows of about 720 bytes for a revision of 8 chunks of
//! prose, 2.4–2.7× without fsync.)

use super::analyze::{Analyzer, Terms};
use super::row::{self, Segment};
use crate::error::{Corruption, WriteError};
use crate::schema::{
    self, meta_key, seq_key, text_key, ChunksRow, DocRow, TextDocRow, TextRow, VectorsRow, CHUNKS,
    COUNTERS, DOCS, LEGACY_TEXT_CHUNKS, META, TEXT_DOCS, TEXT_TOTALS, VECTORS,
};
use redb::{ReadableTable, Table, WriteTransaction};
use std::sync::Arc;

/// The text row of `text`.
pub(crate) fn text_row(analyzer: &Analyzer, text: &str) -> TextRow {
    let mut terms = Terms::default();
    terms.analyze(analyzer, text);
    TextRow {
        len: terms.len(),
        terms: terms.counts().map(|(t, c)| (t.to_string(), c)).collect(),
    }
}

/// Where a chunk of a revision being indexed comes from.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Source<'a> {
    /// Kept under its vector id: its segment is copied from the old row.
    Kept,
    /// New (a fresh vector id): its text is analysed.
    Fresh(&'a str),
}

/// The text tables of one write transaction, the batch's pending totals, and the buffers
/// a revision's analysis and row are made in (reused from revision to revision).
pub(crate) struct TextWriter<'txn> {
    analyzer: Arc<Analyzer>,
    rows: Table<'txn, u64, &'static [u8]>,
    totals: Table<'txn, &'static str, u64>,
    chunks_delta: i64,
    terms_delta: i64,
    terms: Terms,
    /// The row being written.
    row: Vec<u8>,
    /// The old row's bytes and segments.
    old: Vec<u8>,
    old_segments: Vec<Segment>,
    /// The revision's chunks by slot.
    order: Vec<(u32, usize)>,
}

fn read_total(table: &Table<'_, &'static str, u64>, key: &str) -> Result<u64, WriteError> {
    Ok(table
        .get(key)
        .map_err(WriteError::storage)?
        .map(|v| v.value())
        .unwrap_or(0))
}

fn apply_delta(what: &str, current: u64, delta: i64) -> Result<u64, WriteError> {
    current.checked_add_signed(delta).ok_or_else(|| {
        Corruption::new(
            "text index",
            format!("{what} = {current} cannot change by {delta}"),
        )
        .into()
    })
}

impl<'txn> TextWriter<'txn> {
    /// Opens the text tables of `txn`.
    pub(crate) fn open(
        txn: &'txn WriteTransaction,
        analyzer: Arc<Analyzer>,
    ) -> Result<TextWriter<'txn>, WriteError> {
        Ok(TextWriter {
            analyzer,
            rows: txn.open_table(TEXT_DOCS).map_err(WriteError::storage)?,
            totals: txn.open_table(TEXT_TOTALS).map_err(WriteError::storage)?,
            chunks_delta: 0,
            terms_delta: 0,
            terms: Terms::default(),
            row: Vec::new(),
            old: Vec::new(),
            old_segments: Vec::new(),
            order: Vec::new(),
        })
    }

    /// Removes the text row of the document `doc`, which must hold `expected` chunks
    /// (`expected` 0: there must be no row), and takes its chunks off the totals. The old
    /// row's bytes and segments stay in the writer's buffers.
    fn take_old(&mut self, doc: u64, expected: usize) -> Result<(), WriteError> {
        self.old.clear();
        self.old_segments.clear();
        let removed = self.rows.remove(doc).map_err(WriteError::storage)?;
        match removed {
            Some(bytes) => self.old.extend_from_slice(bytes.value()),
            None if expected == 0 => return Ok(()),
            None => {
                return Err(Corruption::new(
                    "text index",
                    format!("document {doc} of {expected} chunks has no text row"),
                )
                .into())
            }
        }
        row::segments(&self.old, &mut self.old_segments)?;
        if self.old_segments.len() != expected {
            return Err(Corruption::new(
                "text index",
                format!(
                    "document {doc} has {expected} chunks but a text row of {}",
                    self.old_segments.len()
                ),
            )
            .into());
        }
        self.chunks_delta -= expected as i64;
        self.terms_delta -= self
            .old_segments
            .iter()
            .map(|s| i64::from(s.len))
            .sum::<i64>();
        Ok(())
    }

    /// Indexes a revision: the document `old` (internal id, live chunks; `None`: none was
    /// live) loses its row, and the document `doc` gets one of `chunks` (slot and where the
    /// chunk comes from; a [`Source::Kept`] slot must be in `old`'s row, so `old` is `doc`
    /// then). No chunks: no row. A revision that keeps every chunk writes nothing.
    pub(crate) fn revise(
        &mut self,
        old: Option<(u64, usize)>,
        doc: u64,
        chunks: &[(u32, Source<'_>)],
    ) -> Result<(), WriteError> {
        if old == Some((doc, chunks.len()))
            && chunks
                .iter()
                .all(|(_, source)| matches!(source, Source::Kept))
        {
            // Every chunk kept under its id (a metadata-only revision): the row, in slot
            // order, would be written back byte for byte.
            return Ok(());
        }
        if let Some((old_doc, expected)) = old {
            self.take_old(old_doc, expected)?;
        } else {
            self.old.clear();
            self.old_segments.clear();
        }
        if chunks.is_empty() {
            return Ok(());
        }
        // Slot order: the inverted index's postings then come in vector-id order.
        self.order.clear();
        self.order
            .extend(chunks.iter().enumerate().map(|(i, (slot, _))| (*slot, i)));
        self.order.sort_unstable();
        self.row.clear();
        row::put_varint(&mut self.row, chunks.len() as u64);
        for &(slot, i) in &self.order {
            row::put_varint(&mut self.row, u64::from(slot));
            match chunks[i].1 {
                Source::Kept => {
                    let Some(segment) = self.old_segments.iter().find(|s| s.slot == slot) else {
                        return Err(Corruption::new(
                            "text index",
                            format!("document {doc} keeps slot {slot}, which its text row lacks"),
                        )
                        .into());
                    };
                    self.row.extend_from_slice(&self.old[segment.bytes.clone()]);
                    self.terms_delta += i64::from(segment.len);
                }
                Source::Fresh(text) => {
                    self.terms.analyze(&self.analyzer, text);
                    row::put_segment(
                        &mut self.row,
                        self.terms.len(),
                        self.terms.distinct(),
                        self.terms.counts(),
                    );
                    self.terms_delta += i64::from(self.terms.len());
                }
            }
        }
        self.chunks_delta += chunks.len() as i64;
        debug_assert!(
            schema::decode::<TextDocRow>("text row being written", &self.row)
                .is_ok_and(|back| back.chunks.len() == chunks.len()),
            "a text row does not decode"
        );
        self.rows
            .insert(doc, self.row.as_slice())
            .map_err(WriteError::storage)?;
        Ok(())
    }

    /// Removes the document `doc`'s row (a tombstone over a live revision of `chunks`
    /// chunks).
    pub(crate) fn remove(&mut self, doc: u64, chunks: usize) -> Result<(), WriteError> {
        self.take_old(doc, chunks)
    }

    /// Writes the totals, and stamps the index with `commit` (the batch's commit sequence).
    pub(crate) fn finish(mut self, commit: u64) -> Result<(), WriteError> {
        for (key, delta) in [
            (text_key::CHUNKS, self.chunks_delta),
            (text_key::TERMS, self.terms_delta),
        ] {
            if delta != 0 {
                let updated = apply_delta(key, read_total(&self.totals, key)?, delta)?;
                self.totals
                    .insert(key, updated)
                    .map_err(WriteError::storage)?;
            }
        }
        if read_total(&self.totals, text_key::COMMIT)? != commit {
            self.totals
                .insert(text_key::COMMIT, commit)
                .map_err(WriteError::storage)?;
        }
        Ok(())
    }
}

/// Calls `f(document row, [(slot, text)])` for every live document in `txn`'s tables, its
/// chunks in position order.
pub(crate) fn for_each_live_document<D, C, V>(
    docs: &D,
    chunks: &C,
    vectors: &V,
    mut f: impl FnMut(&DocRow, &[(u32, &str)]) -> Result<(), WriteError>,
) -> Result<(), WriteError>
where
    D: ReadableTable<(&'static str, &'static str), &'static [u8]>,
    C: ReadableTable<u64, &'static [u8]>,
    V: ReadableTable<u64, &'static [u8]>,
{
    for entry in docs.iter().map_err(WriteError::storage)? {
        let (_, value) = entry.map_err(WriteError::storage)?;
        let row: DocRow = schema::decode("document row", value.value())?;
        if row.deleted {
            continue;
        }
        let id = row.internal_id;
        let Some(vectors_bytes) = vectors.get(id).map_err(WriteError::storage)? else {
            return Err(Corruption::new(
                "vector table",
                format!("document {id} has no vectors row"),
            )
            .into());
        };
        let parsed = VectorsRow::parse(vectors_bytes.value())?;
        let Some(chunk_bytes) = chunks.get(id).map_err(WriteError::storage)? else {
            return Err(
                Corruption::new("chunk table", format!("document {id} has no chunks row")).into(),
            );
        };
        let row_chunks: ChunksRow = schema::join_chunks(chunk_bytes.value(), &parsed)?;
        let mut texts = Vec::with_capacity(row_chunks.chunks.len());
        for (position, chunk) in row_chunks.chunks.iter().enumerate() {
            let Some(slot) = parsed.slot(position) else {
                return Err(Corruption::new(
                    "vector table",
                    format!("document {id} has fewer vectors than chunks"),
                )
                .into());
            };
            texts.push((slot, chunk.text.as_str()));
        }
        f(&row, &texts)?;
    }
    Ok(())
}

/// (Re)builds the text index of `txn` from its live chunks with `analyzer`, and records the
/// analysis in `meta`: the whole index in this one transaction.
pub(crate) fn rebuild(txn: &WriteTransaction, analyzer: Arc<Analyzer>) -> Result<(), WriteError> {
    delete_tables(txn)?;
    let commit = {
        let counters = txn.open_table(COUNTERS).map_err(WriteError::storage)?;
        read_total(&counters, seq_key::COMMIT)?
    };
    let json = serde_json::to_vec(analyzer.options()).unwrap_or_default();
    let mut writer = TextWriter::open(txn, analyzer)?;
    {
        let docs = txn.open_table(DOCS).map_err(WriteError::storage)?;
        let chunks = txn.open_table(CHUNKS).map_err(WriteError::storage)?;
        let vectors = txn.open_table(VECTORS).map_err(WriteError::storage)?;
        for_each_live_document(&docs, &chunks, &vectors, |row, texts| {
            let fresh: Vec<(u32, Source<'_>)> = texts
                .iter()
                .map(|&(slot, text)| (slot, Source::Fresh(text)))
                .collect();
            writer.revise(None, row.internal_id, &fresh)
        })?;
    }
    writer.finish(commit)?;
    let mut meta = txn.open_table(META).map_err(WriteError::storage)?;
    meta.insert(meta_key::TEXT_ANALYZER, json.as_slice())
        .map_err(WriteError::storage)?;
    Ok(())
}

/// Removes the text index from `txn` (a store opened without one).
pub(crate) fn drop_index(txn: &WriteTransaction) -> Result<(), WriteError> {
    delete_tables(txn)?;
    super::create_tables(txn).map_err(WriteError::storage)?;
    let mut meta = txn.open_table(META).map_err(WriteError::storage)?;
    meta.remove(meta_key::TEXT_ANALYZER)
        .map_err(WriteError::storage)?;
    Ok(())
}

/// Deletes the text tables of `txn`, the per-chunk layout's too.
fn delete_tables(txn: &WriteTransaction) -> Result<(), WriteError> {
    txn.delete_table(TEXT_TOTALS).map_err(WriteError::storage)?;
    txn.delete_table(TEXT_DOCS).map_err(WriteError::storage)?;
    txn.delete_table(LEGACY_TEXT_CHUNKS)
        .map_err(WriteError::storage)?;
    Ok(())
}
