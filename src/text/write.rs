//! Keeping the text index in the write transaction: a revision's new chunks are indexed and
//! the chunks it drops un-indexed by the same [`TextWriter`] the batch opened on its
//! transaction, so the postings commit with the chunk rows or not at all.
//!
//! Cost: one postings insert (or delete) per distinct term of a chunk whose vector id is new
//! (or gone), and one length row per such chunk; a chunk kept under its vector id (same text)
//! is not touched. Document frequencies and totals are summed in memory and written once
//! per transaction ([`TextWriter::finish`]).

use super::analyze::Analyzer;
use crate::error::{Corruption, WriteError};
use crate::schema::{
    self, meta_key, seq_key, text_key, vector_id, ChunksRow, DocRow, VectorsRow, CHUNKS, COUNTERS,
    DOCS, META, TEXT_DF, TEXT_LENGTHS, TEXT_POSTINGS, TEXT_TOTALS, VECTORS,
};
use redb::{ReadableTable, Table, WriteTransaction};
use std::collections::HashMap;
use std::sync::Arc;

/// A posting's value: the term's count in the chunk and the chunk's length.
pub(crate) fn posting(tf: u32, len: u32) -> u64 {
    u64::from(tf) | (u64::from(len) << 32)
}

/// The term count and chunk length a posting's value holds.
pub(crate) fn split_posting(value: u64) -> (u32, u32) {
    // Each half is below 2^32 by construction.
    ((value & 0xffff_ffff) as u32, (value >> 32) as u32)
}

/// The text tables of one write transaction and the batch's pending frequency changes.
pub(crate) struct TextWriter<'txn> {
    analyzer: Arc<Analyzer>,
    postings: Table<'txn, (&'static str, u64), u64>,
    lengths: Table<'txn, u64, u32>,
    df: Table<'txn, &'static str, u64>,
    totals: Table<'txn, &'static str, u64>,
    df_delta: HashMap<String, i64>,
    chunks_delta: i64,
    terms_delta: i64,
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
            postings: txn.open_table(TEXT_POSTINGS).map_err(WriteError::storage)?,
            lengths: txn.open_table(TEXT_LENGTHS).map_err(WriteError::storage)?,
            df: txn.open_table(TEXT_DF).map_err(WriteError::storage)?,
            totals: txn.open_table(TEXT_TOTALS).map_err(WriteError::storage)?,
            df_delta: HashMap::new(),
            chunks_delta: 0,
            terms_delta: 0,
        })
    }

    /// Indexes the chunk `id` (a vector id no live chunk has) with `text`.
    pub(crate) fn index(&mut self, id: u64, text: &str) -> Result<(), WriteError> {
        let (counts, len) = self.analyzer.term_counts(text);
        if self
            .lengths
            .insert(id, len)
            .map_err(WriteError::storage)?
            .is_some()
        {
            return Err(
                Corruption::new("text index", format!("chunk {id} is indexed already")).into(),
            );
        }
        for (term, tf) in counts {
            self.postings
                .insert((term.as_str(), id), posting(tf, len))
                .map_err(WriteError::storage)?;
            *self.df_delta.entry(term).or_insert(0) += 1;
        }
        self.chunks_delta += 1;
        self.terms_delta += i64::from(len);
        Ok(())
    }

    /// Removes the postings of the chunk `id`, whose text is `text`.
    pub(crate) fn unindex(&mut self, id: u64, text: &str) -> Result<(), WriteError> {
        let (counts, len) = self.analyzer.term_counts(text);
        let missing = |what: String| -> WriteError { Corruption::new("text index", what).into() };
        let Some(stored) = self.lengths.remove(id).map_err(WriteError::storage)? else {
            return Err(missing(format!("chunk {id} has no length row")));
        };
        if stored.value() != len {
            return Err(missing(format!(
                "chunk {id} has length {} but its text {len} terms",
                stored.value()
            )));
        }
        drop(stored);
        for (term, _) in counts {
            if self
                .postings
                .remove((term.as_str(), id))
                .map_err(WriteError::storage)?
                .is_none()
            {
                return Err(missing(format!("chunk {id} has no posting for {term:?}")));
            }
            *self.df_delta.entry(term).or_insert(0) -= 1;
        }
        self.chunks_delta -= 1;
        self.terms_delta -= i64::from(len);
        Ok(())
    }

    /// Un-indexes the `removed` chunks, then indexes the `added` ones (vector id, text).
    pub(crate) fn apply(
        &mut self,
        removed: &[(u64, &str)],
        added: &[(u64, &str)],
    ) -> Result<(), WriteError> {
        for &(id, text) in removed {
            self.unindex(id, text)?;
        }
        for &(id, text) in added {
            self.index(id, text)?;
        }
        Ok(())
    }

    /// Writes the frequencies and totals, and stamps the index with `commit` (the batch's
    /// commit sequence).
    pub(crate) fn finish(mut self, commit: u64) -> Result<(), WriteError> {
        let mut deltas: Vec<(String, i64)> = std::mem::take(&mut self.df_delta)
            .into_iter()
            .filter(|(_, d)| *d != 0)
            .collect();
        // Sorted: neighbouring keys share pages.
        deltas.sort_unstable();
        for (term, delta) in deltas {
            let current = self
                .df
                .get(term.as_str())
                .map_err(WriteError::storage)?
                .map(|v| v.value())
                .unwrap_or(0);
            let updated = apply_delta("a document frequency", current, delta)?;
            if updated == 0 {
                self.df.remove(term.as_str()).map_err(WriteError::storage)?;
            } else {
                self.df
                    .insert(term.as_str(), updated)
                    .map_err(WriteError::storage)?;
            }
        }
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
        let row_chunks: ChunksRow = schema::decode_chunks(chunk_bytes.value(), parsed.spill())?;
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
    for table in [TEXT_DF, TEXT_TOTALS] {
        txn.delete_table(table).map_err(WriteError::storage)?;
    }
    txn.delete_table(TEXT_POSTINGS)
        .map_err(WriteError::storage)?;
    txn.delete_table(TEXT_LENGTHS)
        .map_err(WriteError::storage)?;
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
    for table in [TEXT_DF, TEXT_TOTALS] {
        txn.delete_table(table).map_err(WriteError::storage)?;
    }
    txn.delete_table(TEXT_POSTINGS)
        .map_err(WriteError::storage)?;
    txn.delete_table(TEXT_LENGTHS)
        .map_err(WriteError::storage)?;
    super::create_tables(txn).map_err(WriteError::storage)?;
    let mut meta = txn.open_table(META).map_err(WriteError::storage)?;
    meta.remove(meta_key::TEXT_ANALYZER)
        .map_err(WriteError::storage)?;
    Ok(())
}
