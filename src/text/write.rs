//! Keeping the text index in the write transaction: a revision's new chunks are indexed and
//! the chunks it drops un-indexed by the same [`TextWriter`] the batch opened on its
//! transaction, so the index rows commit with the chunk rows or not at all.
//!
//! Cost: one [`TextRow`] inserted per chunk under a new vector id and one removed per chunk
//! whose id goes; a chunk kept under its vector id (same text) is not touched. A document's
//! rows are neighbours (vector ids share the document's internal id), so a revision touches a
//! leaf or two of the table. The totals are summed in memory and written once per
//! transaction ([`TextWriter::finish`]). (A table keyed by term, tried first, touched a leaf
//! per distinct term of every write: 11× to 200× the cost of the write without it.)

use super::analyze::{Analyzer, Terms, WriteBuffers};
use super::row;
use crate::error::{Corruption, WriteError};
use crate::schema::{
    self, meta_key, seq_key, text_key, vector_id, ChunksRow, DocRow, TextRow, VectorsRow, CHUNKS,
    COUNTERS, DOCS, META, TEXT_CHUNKS, TEXT_TOTALS, VECTORS,
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

/// The text tables of one write transaction, the batch's pending totals, and the buffers
/// one chunk's analysis and row are made in (reused from chunk to chunk, and given back to
/// the analyzer for the next transaction when the writer is dropped).
pub(crate) struct TextWriter<'txn> {
    analyzer: Arc<Analyzer>,
    rows: Table<'txn, u64, &'static [u8]>,
    totals: Table<'txn, &'static str, u64>,
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

impl<'txn> TextWriter<'txn> {
    /// Opens the text tables of `txn`.
    pub(crate) fn open(
        txn: &'txn WriteTransaction,
        analyzer: Arc<Analyzer>,
    ) -> Result<TextWriter<'txn>, WriteError> {
        Ok(TextWriter {
            rows: txn.open_table(TEXT_CHUNKS).map_err(WriteError::storage)?,
            totals: txn.open_table(TEXT_TOTALS).map_err(WriteError::storage)?,
            chunks_delta: 0,
            terms_delta: 0,
            buffers: analyzer.take_buffers(),
            analyzer,
        })
    }

    /// Indexes the chunk `id` (a vector id no live chunk has) with `text`.
    pub(crate) fn index(&mut self, id: u64, text: &str) -> Result<(), WriteError> {
        let WriteBuffers { terms, row } = &mut self.buffers;
        terms.analyze(&self.analyzer, text);
        let len = terms.len();
        row::encode_row(row, len, terms.distinct(), terms.counts());
        debug_assert!(
            schema::decode::<TextRow>("text row being written", row).is_ok_and(|back| {
                back.len == len
                    && back.terms.len() == terms.distinct()
                    && back
                        .terms
                        .iter()
                        .map(|(t, c)| (t.as_str(), *c))
                        .eq(terms.counts())
            }),
            "a text row does not decode to its text's terms"
        );
        if self
            .rows
            .insert(id, row.as_slice())
            .map_err(WriteError::storage)?
            .is_some()
        {
            return Err(
                Corruption::new("text index", format!("chunk {id} is indexed already")).into(),
            );
        }
        self.chunks_delta += 1;
        self.terms_delta += i64::from(len);
        Ok(())
    }

    /// Removes the text row of the chunk `id` (only its leading length is decoded, for the
    /// totals).
    pub(crate) fn unindex(&mut self, id: u64) -> Result<(), WriteError> {
        let Some(bytes) = self.rows.remove(id).map_err(WriteError::storage)? else {
            return Err(
                Corruption::new("text index", format!("chunk {id} has no text row")).into(),
            );
        };
        let len = row::row_len(bytes.value())?;
        self.chunks_delta -= 1;
        self.terms_delta -= i64::from(len);
        Ok(())
    }

    /// Un-indexes the `removed` chunks, then indexes the `added` ones (vector id, text).
    pub(crate) fn apply(
        &mut self,
        removed: &[u64],
        added: &[(u64, &str)],
    ) -> Result<(), WriteError> {
        for &id in removed {
            self.unindex(id)?;
        }
        for &(id, text) in added {
            self.index(id, text)?;
        }
        Ok(())
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

/// Calls `f(vector id, text)` for every chunk of every live document in `txn`'s tables.
pub(crate) fn for_each_live_chunk<D, C, V>(
    docs: &D,
    chunks: &C,
    vectors: &V,
    mut f: impl FnMut(&DocRow, u64, &str) -> Result<(), WriteError>,
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
        for (position, chunk) in row_chunks.chunks.iter().enumerate() {
            let Some(slot) = parsed.slot(position) else {
                return Err(Corruption::new(
                    "vector table",
                    format!("document {id} has fewer vectors than chunks"),
                )
                .into());
            };
            f(&row, vector_id(id, slot), &chunk.text)?;
        }
    }
    Ok(())
}

/// (Re)builds the text index of `txn` from its live chunks with `analyzer`, and records the
/// analysis in `meta`: the whole index in this one transaction.
pub(crate) fn rebuild(txn: &WriteTransaction, analyzer: Arc<Analyzer>) -> Result<(), WriteError> {
    txn.delete_table(TEXT_TOTALS).map_err(WriteError::storage)?;
    txn.delete_table(TEXT_CHUNKS).map_err(WriteError::storage)?;
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
        for_each_live_chunk(&docs, &chunks, &vectors, |_, id, text| {
            writer.index(id, text)
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
    txn.delete_table(TEXT_TOTALS).map_err(WriteError::storage)?;
    txn.delete_table(TEXT_CHUNKS).map_err(WriteError::storage)?;
    super::create_tables(txn).map_err(WriteError::storage)?;
    let mut meta = txn.open_table(META).map_err(WriteError::storage)?;
    meta.remove(meta_key::TEXT_ANALYZER)
        .map_err(WriteError::storage)?;
    Ok(())
}
