//! Keeping the text index in the write transaction: a revision's new chunks are indexed and
//! the chunks it drops un-indexed by the same [`TextWriter`] the batch opened on its
//! transaction, so the index rows commit with the chunk rows or not at all.
//!
//! Cost: one `text_docs` row per document ([`super::row`]), rewritten by a revision that
//! changes its chunks: the segments of the chunks it keeps (same text, same vector id) are
//! copied as they are, only the new chunks are analysed, and the row is replaced in one
//! insertion. The totals are summed in memory and written once per transaction
//! ([`TextWriter::finish`]), so a write touches no B-tree leaf per distinct term and no row
//! per chunk (docs/design.md gives the layouts this one replaced; `benches/upsert_paths.rs`,
//! group `text_index`, measures the index's cost).

use super::row;
use crate::backend::redb::schema::{
    self, meta_key, seq_key, text_key, vector_id, ChunksRow, DocRow, TextCodec, VectorsRow, CHUNKS,
    COUNTERS, DOCS, LEGACY_TEXT_CHUNKS, LEGACY_TEXT_TOTALS, META, TEXT_DOCS, VECTORS,
};
use crate::error::{Corruption, WriteError};
use crate::text::{Analyzer, WriteBuffers};
use redb::{ReadableTable, Table, WriteTransaction};
use std::sync::Arc;

/// The text tables of one write transaction, the batch's pending totals, and the buffers
/// the analysis and the row are made in (reused from revision to revision, and given back
/// to the analyzer for the next transaction when the writer is dropped).
pub(crate) struct TextWriter<'txn> {
    analyzer: Arc<Analyzer>,
    /// The store's text codec, which new segments' terms are compressed with (`None`: none
    /// yet, or its row does not read: terms are written raw).
    codec: Option<Arc<TextCodec>>,
    rows: Table<'txn, u64, &'static [u8]>,
    chunks_delta: i64,
    terms_delta: i64,
    buffers: WriteBuffers,
}

impl Drop for TextWriter<'_> {
    fn drop(&mut self) {
        self.analyzer.give_back(std::mem::take(&mut self.buffers));
    }
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

/// The chunks and terms of document `doc`'s old text row `bytes`, replaced or removed whole:
/// its slots must be exactly `slots` (sorted).
fn whole_row(bytes: Option<&[u8]>, doc: u64, slots: &[u32]) -> Result<(i64, i64), WriteError> {
    let segments = match bytes {
        Some(bytes) => row::segments(bytes)?,
        None => Vec::new(),
    };
    if !segments.iter().map(|s| s.slot).eq(slots.iter().copied()) {
        return Err(Corruption::new(
            "text index",
            format!(
                "document {doc}'s text row has {} chunks, not the {} it had",
                segments.len(),
                slots.len()
            ),
        )
        .into());
    }
    let terms = segments.iter().map(|s| i64::from(s.len)).sum();
    Ok((segments.len() as i64, terms))
}

fn not_indexed(doc: u64, slot: u32) -> WriteError {
    Corruption::new(
        "text index",
        format!("chunk {} has no text row", vector_id(doc, slot)),
    )
    .into()
}

impl<'txn> TextWriter<'txn> {
    /// Opens the text tables of `txn`; new segments' terms are compressed with `codec` (the
    /// file's text codec, as the batch read it).
    pub(crate) fn open(
        txn: &'txn WriteTransaction,
        analyzer: Arc<Analyzer>,
        codec: Option<Arc<TextCodec>>,
    ) -> Result<TextWriter<'txn>, WriteError> {
        Ok(TextWriter {
            codec,
            rows: txn.open_table(TEXT_DOCS).map_err(WriteError::storage)?,
            chunks_delta: 0,
            terms_delta: 0,
            buffers: analyzer.take_buffers(),
            analyzer,
        })
    }

    /// From now on, compresses new segments' terms with `codec` (the table the batch just
    /// trained and recorded).
    pub(crate) fn compress_with(&mut self, codec: Arc<TextCodec>) {
        self.codec = Some(codec);
    }

    /// Re-indexes a revision of the document now under internal id `id`: the chunks at
    /// `removed` slots of the document's row under `from` (its previous internal id, or
    /// `id` itself; `None` for a document with no live revision) leave the index, and the
    /// `added` chunks (slot, text, by slot ascending) join it under `id`. `keeps` says
    /// whether the revision keeps any chunk of the old row (then the row is read, and the
    /// kept chunks' segments copied as they are); a revision keeping none, or moving the
    /// document to a new id (`from` other than `id`), replaces or removes the old row whole,
    /// and the old row's slots must be exactly `removed`.
    pub(crate) fn revise(
        &mut self,
        from: Option<u64>,
        removed: &[u32],
        id: u64,
        added: &[(u32, &str)],
        keeps: bool,
    ) -> Result<(), WriteError> {
        if removed.is_empty() && added.is_empty() {
            return Ok(());
        }
        let WriteBuffers { terms, row, slots } = &mut self.buffers;
        // The removed slots ascending, to compare with the row's ascending segments.
        slots.clear();
        slots.extend_from_slice(removed);
        slots.sort_unstable();
        row.clear();
        let whole = from.filter(|&old| old != id || !keeps);
        let mut last_kept: Option<u32> = None;
        if whole.is_none() {
            let mut wanted = slots.iter().copied().peekable();
            if let Some(bytes) = self.rows.get(id).map_err(WriteError::storage)? {
                for segment in row::segments(bytes.value())? {
                    if let Some(&slot) = wanted.peek().filter(|&&slot| slot < segment.slot) {
                        return Err(not_indexed(id, slot));
                    }
                    if wanted.peek() == Some(&segment.slot) {
                        wanted.next();
                        self.chunks_delta -= 1;
                        self.terms_delta -= i64::from(segment.len);
                    } else {
                        row.extend_from_slice(segment.raw);
                        last_kept = Some(segment.slot);
                    }
                }
            }
            if let Some(slot) = wanted.next() {
                return Err(not_indexed(id, slot));
            }
        }
        for &(slot, text) in added {
            // Fresh slots come after every slot the document has had: the row stays sorted.
            if last_kept.is_some_and(|last| slot <= last) {
                return Err(Corruption::new(
                    "text index",
                    format!("chunk {} is indexed already", vector_id(id, slot)),
                )
                .into());
            }
            terms.analyze(&self.analyzer, text);
            let len = terms.len();
            let (arena, spans) = terms.spans();
            row::put_segment(row, slot, len, arena, spans, self.codec.as_deref());
            last_kept = Some(slot);
            self.chunks_delta += 1;
            self.terms_delta += i64::from(len);
        }
        // One B-tree operation for the document's row; what it replaced is checked after
        // (an error fails the whole batch, so nothing of it commits).
        let replaced = if row.is_empty() {
            self.rows.remove(id)
        } else {
            self.rows.insert(id, row.as_slice())
        }
        .map_err(WriteError::storage)?;
        let Some(old) = whole else {
            return Ok(());
        };
        let (chunks, terms_len) = if old == id {
            whole_row(replaced.as_ref().map(|b| b.value()), old, slots)?
        } else {
            if replaced.is_some() {
                return Err(Corruption::new(
                    "text index",
                    format!("document {id} has a text row before its first revision there"),
                )
                .into());
            }
            drop(replaced);
            let gone = self.rows.remove(old).map_err(WriteError::storage)?;
            whole_row(gone.as_ref().map(|b| b.value()), old, slots)?
        };
        self.chunks_delta -= chunks;
        self.terms_delta -= terms_len;
        Ok(())
    }

    /// Writes the totals into `counters` (the batch's `counters` table), and stamps the
    /// index with `commit` (the batch's commit sequence, `advanced` by this batch or not).
    pub(crate) fn finish(
        self,
        counters: &mut Table<'_, &'static str, u64>,
        commit: u64,
        advanced: bool,
    ) -> Result<(), WriteError> {
        for (key, delta) in [
            (text_key::CHUNKS, self.chunks_delta),
            (text_key::TERMS, self.terms_delta),
        ] {
            if delta != 0 {
                let updated = apply_delta(key, read_total(counters, key)?, delta)?;
                counters.insert(key, updated).map_err(WriteError::storage)?;
            }
        }
        // A batch that moved the commit sequence stamps it in one insertion (reading the
        // stamp first cost a second lookup); any other (stale skips) writes it only if it
        // differs.
        if advanced || read_total(counters, text_key::COMMIT)? != commit {
            counters
                .insert(text_key::COMMIT, commit)
                .map_err(WriteError::storage)?;
        }
        Ok(())
    }
}

/// Calls `f(internal id, chunks)` for every live document in `txn`'s tables, with its
/// chunks as (slot, text) sorted by slot.
fn for_each_live_document<D, C, V>(
    docs: &D,
    chunks: &C,
    vectors: &V,
    codec: Option<&crate::backend::redb::schema::TextCodec>,
    mut f: impl FnMut(u64, &[(u32, &str)]) -> Result<(), WriteError>,
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
        let row_chunks: ChunksRow = schema::join_chunks(chunk_bytes.value(), &parsed, codec)?;
        let mut slotted = Vec::with_capacity(row_chunks.chunks.len());
        for (position, chunk) in row_chunks.chunks.iter().enumerate() {
            let Some(slot) = parsed.slot(position) else {
                return Err(Corruption::new(
                    "vector table",
                    format!("document {id} has fewer vectors than chunks"),
                )
                .into());
            };
            slotted.push((slot, chunk.text.as_str()));
        }
        slotted.sort_unstable_by_key(|&(slot, _)| slot);
        f(id, &slotted)?;
    }
    Ok(())
}

/// (Re)builds the text index of `txn` from its live chunks with `analyzer`, and records the
/// analysis in `meta`: the whole index in this one transaction. The tables of the earlier
/// row-per-chunk format, if the file has them, are removed.
pub(crate) fn rebuild(txn: &WriteTransaction, analyzer: Arc<Analyzer>) -> Result<(), WriteError> {
    delete_tables(txn)?;
    let json = serde_json::to_vec(analyzer.options()).unwrap_or_default();
    let codec = {
        let meta = txn.open_table(META).map_err(WriteError::storage)?;
        crate::backend::redb::read::stored_text_codec(&meta).map_err(WriteError::storage)??
    }
    .map(Arc::new);
    let mut writer = TextWriter::open(txn, analyzer, codec.clone())?;
    {
        let docs = txn.open_table(DOCS).map_err(WriteError::storage)?;
        let chunks = txn.open_table(CHUNKS).map_err(WriteError::storage)?;
        let vectors = txn.open_table(VECTORS).map_err(WriteError::storage)?;
        for_each_live_document(&docs, &chunks, &vectors, codec.as_deref(), |id, chunks| {
            writer.revise(None, &[], id, chunks, false)
        })?;
    }
    let mut counters = txn.open_table(COUNTERS).map_err(WriteError::storage)?;
    let commit = read_total(&counters, seq_key::COMMIT)?;
    writer.finish(&mut counters, commit, false)?;
    let mut meta = txn.open_table(META).map_err(WriteError::storage)?;
    meta.insert(meta_key::TEXT_INDEX, json.as_slice())
        .map_err(WriteError::storage)?;
    Ok(())
}

/// Deletes the text index's table, totals and recorded analysis, of this format and the
/// earlier one.
fn delete_tables(txn: &WriteTransaction) -> Result<(), WriteError> {
    txn.delete_table(TEXT_DOCS).map_err(WriteError::storage)?;
    let mut counters = txn.open_table(COUNTERS).map_err(WriteError::storage)?;
    for key in [text_key::CHUNKS, text_key::TERMS, text_key::COMMIT] {
        counters.remove(key).map_err(WriteError::storage)?;
    }
    drop(counters);
    txn.delete_table(LEGACY_TEXT_TOTALS)
        .map_err(WriteError::storage)?;
    txn.delete_table(LEGACY_TEXT_CHUNKS)
        .map_err(WriteError::storage)?;
    let mut meta = txn.open_table(META).map_err(WriteError::storage)?;
    for key in [meta_key::TEXT_INDEX, meta_key::LEGACY_TEXT_ANALYZER] {
        meta.remove(key).map_err(WriteError::storage)?;
    }
    Ok(())
}

/// Removes the text index from `txn` (a store opened without one).
pub(crate) fn drop_index(txn: &WriteTransaction) -> Result<(), WriteError> {
    delete_tables(txn)?;
    super::create_tables(txn).map_err(WriteError::storage)?;
    Ok(())
}
