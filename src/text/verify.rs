//! `verify()`'s checks of the text index against the chunks: every live chunk indexed with
//! exactly its terms, no posting or length row for a chunk that is not live, document
//! frequencies and totals equal to what the postings say, and the index stamped with the
//! documents' commit.

use super::analyze::{Analyzer, TextOptions};
use super::write::split_posting;
use crate::error::ReadError;
use crate::read::Snapshot;
use crate::schema::{
    self, meta_key, seq_key, text_key, vector_id, DocRow, VectorsRow, COUNTERS, DOCS, META,
    TEXT_DF, TEXT_LENGTHS, TEXT_POSTINGS, TEXT_TOTALS,
};
use crate::verify::{VerifyReport, Violation};
use redb::ReadableTable;
use std::collections::HashMap;

/// Violations reported at most per kind, so a wholly wrong index gives a readable report.
const MAX_PER_KIND: usize = 20;

struct Problems<'r> {
    report: &'r mut VerifyReport,
    counts: HashMap<&'static str, usize>,
}

impl Problems<'_> {
    fn push(&mut self, kind: &'static str, problem: impl FnOnce() -> String) {
        let count = self.counts.entry(kind).or_insert(0);
        *count += 1;
        if *count <= MAX_PER_KIND {
            self.report.violations.push(Violation {
                source: None,
                id: None,
                problem: format!("text index: {}", problem()),
            });
        }
    }
}

/// Adds the text index's violations to `report` (nothing if the store has no text index).
pub(crate) fn check(snapshot: &Snapshot, report: &mut VerifyReport) -> Result<(), ReadError> {
    let txn = &snapshot.txn;
    let meta = txn.open_table(META).map_err(ReadError::storage)?;
    let Some(bytes) = meta
        .get(meta_key::TEXT_ANALYZER)
        .map_err(ReadError::storage)?
    else {
        return Ok(());
    };
    let mut problems = Problems {
        report,
        counts: HashMap::new(),
    };
    let options: TextOptions = match serde_json::from_slice(bytes.value()) {
        Ok(options) => options,
        Err(e) => {
            problems.push("analyzer", || {
                format!("the recorded analysis does not decode: {e}")
            });
            return Ok(());
        }
    };
    drop(bytes);
    let analyzer = Analyzer::new(&options);

    // What the chunks say the index must hold.
    let mut expected_df: HashMap<String, u64> = HashMap::new();
    let mut expected_len: HashMap<u64, u32> = HashMap::new();
    let mut expected_terms = 0u64;
    let mut expected_postings = 0u64;
    let postings = txn.open_table(TEXT_POSTINGS).map_err(ReadError::storage)?;
    let docs = txn.open_table(DOCS).map_err(ReadError::storage)?;
    for entry in docs.iter().map_err(ReadError::storage)? {
        let (key, value) = entry.map_err(ReadError::storage)?;
        let (source, id) = key.value();
        // Undecodable rows are reported by the document checks.
        let Ok(row) = schema::decode::<DocRow>("document row", value.value()) else {
            continue;
        };
        if row.deleted {
            continue;
        }
        let Ok(chunks) = snapshot.chunks_row(&row) else {
            continue;
        };
        let Some(vectors) = snapshot.vectors_row(row.internal_id)? else {
            continue;
        };
        let Ok(vectors) = VectorsRow::parse(vectors.value()) else {
            continue;
        };
        for (position, chunk) in chunks.chunks.iter().enumerate() {
            let Some(slot) = vectors.slot(position) else {
                continue;
            };
            let vid = vector_id(row.internal_id, slot);
            let (counts, len) = analyzer.term_counts(&chunk.text);
            expected_len.insert(vid, len);
            expected_terms += u64::from(len);
            for (term, tf) in counts {
                expected_postings += 1;
                match postings
                    .get((term.as_str(), vid))
                    .map_err(ReadError::storage)?
                {
                    None => problems.push("missing posting", || {
                        format!("{source}/{id} chunk {position} has no posting for {term:?}")
                    }),
                    Some(v) if split_posting(v.value()) != (tf, len) => {
                        let (stored_tf, stored_len) = split_posting(v.value());
                        problems.push("wrong posting", || {
                            format!(
                                "{source}/{id} chunk {position}: the posting for {term:?} says \
                                 {stored_tf} of {stored_len} terms, the text {tf} of {len}"
                            )
                        });
                    }
                    Some(_) => {}
                }
                *expected_df.entry(term).or_insert(0) += 1;
            }
        }
    }

    // Every posting belongs to a live chunk (and so was counted above, or is extra).
    let mut posting_count = 0u64;
    for entry in postings.iter().map_err(ReadError::storage)? {
        let (key, _) = entry.map_err(ReadError::storage)?;
        let (term, vid) = key.value();
        posting_count += 1;
        if !expected_len.contains_key(&vid) {
            problems.push("dead posting", || {
                format!("a posting for {term:?} names chunk {vid}, which is not live")
            });
        }
    }
    if posting_count != expected_postings {
        problems.push("posting count", || {
            format!("{posting_count} postings, the live chunks have {expected_postings} terms")
        });
    }
    let lengths = txn.open_table(TEXT_LENGTHS).map_err(ReadError::storage)?;
    let mut length_rows = 0u64;
    for entry in lengths.iter().map_err(ReadError::storage)? {
        let (key, value) = entry.map_err(ReadError::storage)?;
        let (vid, len) = (key.value(), value.value());
        length_rows += 1;
        match expected_len.get(&vid) {
            None => problems.push("dead length", || {
                format!("a length row names chunk {vid}, which is not live")
            }),
            Some(&expected) if expected != len => problems.push("wrong length", || {
                format!("chunk {vid} has length {len}, its text {expected} terms")
            }),
            Some(_) => {}
        }
    }
    if length_rows != expected_len.len() as u64 {
        problems.push("length count", || {
            format!(
                "{length_rows} length rows for {} live chunks",
                expected_len.len()
            )
        });
    }
    let df = txn.open_table(TEXT_DF).map_err(ReadError::storage)?;
    let mut df_rows = 0u64;
    for entry in df.iter().map_err(ReadError::storage)? {
        let (key, value) = entry.map_err(ReadError::storage)?;
        let (term, stored) = (key.value(), value.value());
        df_rows += 1;
        let expected = expected_df.get(term).copied().unwrap_or(0);
        if stored != expected {
            problems.push("document frequency", || {
                format!("{term:?} is counted in {stored} chunks, the postings say {expected}")
            });
        }
    }
    if df_rows != expected_df.len() as u64 {
        problems.push("document frequency count", || {
            format!(
                "{df_rows} document-frequency rows for {} distinct live terms",
                expected_df.len()
            )
        });
    }
    let totals = txn.open_table(TEXT_TOTALS).map_err(ReadError::storage)?;
    let total = |key: &str| -> Result<u64, ReadError> {
        Ok(totals
            .get(key)
            .map_err(ReadError::storage)?
            .map_or(0, |v| v.value()))
    };
    for (key, expected) in [
        (text_key::CHUNKS, expected_len.len() as u64),
        (text_key::TERMS, expected_terms),
    ] {
        let stored = total(key)?;
        if stored != expected {
            problems.push("totals", || {
                format!("the total {key} says {stored}, the live chunks {expected}")
            });
        }
    }
    let counters = txn.open_table(COUNTERS).map_err(ReadError::storage)?;
    let commit = counters
        .get(seq_key::COMMIT)
        .map_err(ReadError::storage)?
        .map_or(0, |v| v.value());
    let covered = total(text_key::COMMIT)?;
    if covered != commit {
        problems.push("commit", || {
            format!("the index covers commit {covered}, the documents are at commit {commit}")
        });
    }
    Ok(())
}
