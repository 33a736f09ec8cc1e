//! The full-text index in the redb file: BM25 over chunk text, kept in the same write
//! transaction as the chunks (the analysis and the ranking are shared: `crate::text`).
//!
//! - `row.rs`: the `text_docs` row codec: one row per document, a segment per live chunk
//!   (its slot, length in terms, and distinct terms with their counts).
//! - `write.rs`: the rows and the totals, updated by the write batch as it writes and
//!   removes chunk rows (a revision rewrites its document's row once); the whole-index
//!   (re)build.
//! - the rows inverted in memory (compact on any vocabulary: rare terms are counted from
//!   the rows at query time), kept at a search's commit by the changelog as the filter index
//!   is, are derived state: the text cache, `backend/redb/derived/text_cache.rs`.
//! - BM25 on a snapshot and rank fusion for hybrid search answer from the text cache:
//!   `backend/redb/derived/text_search.rs`.
//! - `verify.rs`: the index checked against the chunks.
//!
//! A chunk is named by its vector id (its document's internal id and its slot). Existing
//! stores (schema-3 files of builds without the text index, schema-1/2 files once converted,
//! and files indexed in the earlier row-per-chunk format, `text_chunks`) gain the index when a
//! writer opens them: built whole in one transaction ([`prepare_on_open`]). The file records
//! the analysis in `meta["text_index"]` (its presence means the index exists) and the commit
//! the index covers in `counters["text.commit"]`; a file whose documents moved past that commit
//! (written by a build without the index, or with the earlier format) is re-indexed by the
//! next writer, and refused by text searches until then.

pub(crate) mod row;
mod verify;
mod write;

pub(crate) use verify::check as verify;
pub(crate) use write::TextWriter;

use crate::backend::redb::schema::{meta_key, seq_key, text_key, COUNTERS, META};
use crate::error::WriteError;
use crate::text::{Analyzer, TextOptions};
use redb::{Database, ReadableDatabase};
use std::sync::Arc;

/// What a writer's open found and did about the text index.
#[derive(Debug)]
pub(crate) enum OpenAction {
    /// The index was up to date with the requested analysis.
    Kept,
    /// The index was built (or rebuilt) in one transaction.
    Built,
    /// There is no index (none requested).
    Off,
}

/// Brings a writable file's text index in line with the options, in one durable
/// transaction if anything must change: built if missing, rebuilt if the requested
/// analysis differs from the recorded one or the documents moved past it, removed if
/// `enabled` is false. Returns the analyzer writes must use (`None`: no index).
pub(crate) fn prepare_on_open(
    db: &Database,
    enabled: bool,
    requested: Option<&TextOptions>,
) -> Result<(Option<Arc<Analyzer>>, OpenAction), WriteError> {
    let (recorded, legacy, covered, commit) = {
        let txn = db.begin_read().map_err(WriteError::storage)?;
        let meta = txn.open_table(META).map_err(WriteError::storage)?;
        let analysis = |key: &str| -> Result<Option<Result<TextOptions, String>>, WriteError> {
            Ok(meta
                .get(key)
                .map_err(WriteError::storage)?
                .map(|bytes| serde_json::from_slice(bytes.value()).map_err(|e| e.to_string())))
        };
        let recorded = analysis(meta_key::TEXT_INDEX)?;
        let legacy = analysis(meta_key::LEGACY_TEXT_ANALYZER)?;
        let counters = txn.open_table(COUNTERS).map_err(WriteError::storage)?;
        let commit = counters
            .get(seq_key::COMMIT)
            .map_err(WriteError::storage)?
            .map_or(0, |v| v.value());
        let covered = counters
            .get(text_key::COMMIT)
            .map_err(WriteError::storage)?
            .map(|v| v.value());
        (recorded, legacy, covered, commit)
    };
    let begin = || -> Result<redb::WriteTransaction, WriteError> {
        let mut txn = db.begin_write().map_err(WriteError::storage)?;
        txn.set_durability(redb::Durability::Immediate)
            .map_err(WriteError::storage)?;
        Ok(txn)
    };
    if !enabled {
        if recorded.is_some() || legacy.is_some() {
            let txn = begin()?;
            write::drop_index(&txn)?;
            txn.commit().map_err(WriteError::storage)?;
        }
        return Ok((None, OpenAction::Off));
    }
    let recorded = recorded.and_then(Result::ok);
    // A file indexed in the row-per-chunk format keeps the analysis it recorded then. A file
    // holding both records had the old one written last (this build removes it whenever it
    // builds), so that one is the newer choice.
    let wanted = requested
        .cloned()
        .or_else(|| legacy.clone().and_then(Result::ok))
        .or_else(|| recorded.clone())
        .unwrap_or_default();
    let analyzer = Arc::new(Analyzer::new(&wanted));
    if recorded.as_ref() == Some(&wanted) && covered == Some(commit) && legacy.is_none() {
        return Ok((Some(analyzer), OpenAction::Kept));
    }
    let txn = begin()?;
    write::rebuild(&txn, analyzer.clone())?;
    txn.commit().map_err(WriteError::storage)?;
    Ok((Some(analyzer), OpenAction::Built))
}

/// A new store's text index (empty, at commit 0) and its recorded analysis, unless
/// `options` keep none.
pub(crate) fn initialise(
    txn: &redb::WriteTransaction,
    options: &crate::options::Options,
) -> Result<(), redb::Error> {
    if !options.text_index {
        return Ok(());
    }
    let analysis = options.text.clone().unwrap_or_default();
    let json = serde_json::to_vec(&analysis).unwrap_or_default();
    txn.open_table(META)?
        .insert(meta_key::TEXT_INDEX, json.as_slice())?;
    txn.open_table(COUNTERS)?.insert(text_key::COMMIT, 0)?;
    Ok(())
}

/// The text index's table, for a new store's table list.
pub(crate) fn create_tables(txn: &redb::WriteTransaction) -> Result<(), redb::Error> {
    txn.open_table(crate::backend::redb::schema::TEXT_DOCS)?;
    Ok(())
}
