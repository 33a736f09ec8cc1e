//! `verify()`'s checks of the text index against the chunks: every live chunk indexed with
//! exactly its terms, counts and length, no row for a chunk that is not live, the totals
//! equal to what the rows say, and the index stamped with the documents' commit.

use super::row;
use crate::backend::redb::read::Snapshot;
use crate::backend::redb::schema::{
    self, meta_key, seq_key, text_key, vector_id, DocRow, VectorsRow, COUNTERS, DOCS, META,
    TEXT_DOCS,
};
use crate::error::ReadError;
use crate::text::{Analyzer, TextOptions};
use crate::types::{VerifyReport, Violation};
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

/// A chunk's analysis as verify compares it: its length, and its distinct terms with their
/// counts sorted by term (rows list them in order of first occurrence).
#[derive(Debug, PartialEq, Eq)]
struct Analysis {
    len: u32,
    terms: Vec<(String, u32)>,
}

impl Analysis {
    fn of_text(analyzer: &Analyzer, text: &str) -> Analysis {
        let (counts, len) = analyzer.term_counts(text);
        let mut terms: Vec<(String, u32)> = counts.into_iter().collect();
        terms.sort_unstable();
        Analysis { len, terms }
    }

    fn of_segment(len: u32, stored: &[(&str, u32)]) -> Analysis {
        let mut terms: Vec<(String, u32)> =
            stored.iter().map(|&(t, c)| (t.to_string(), c)).collect();
        terms.sort_unstable();
        Analysis { len, terms }
    }
}

/// Adds the text index's violations to `report` (nothing if the store has no text index).
pub(crate) fn check(snapshot: &Snapshot, report: &mut VerifyReport) -> Result<(), ReadError> {
    let txn = &snapshot.txn;
    let meta = txn.open_table(META).map_err(ReadError::storage)?;
    let Some(bytes) = meta.get(meta_key::TEXT_INDEX).map_err(ReadError::storage)? else {
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
    let rows = txn.open_table(TEXT_DOCS).map_err(ReadError::storage)?;
    let (live, expected_terms) = check_live_chunks(snapshot, &analyzer, &rows, &mut problems)?;
    check_no_dead_rows(&rows, &live, &mut problems)?;
    check_totals(snapshot, &live, expected_terms, &mut problems)
}

/// Every live chunk has its segment in its document's row, equal to what its text analyses
/// to. Returns each live chunk's length in terms, and their sum.
fn check_live_chunks(
    snapshot: &Snapshot,
    analyzer: &Analyzer,
    rows: &redb::ReadOnlyTable<u64, &'static [u8]>,
    problems: &mut Problems<'_>,
) -> Result<(HashMap<u64, u32>, u64), ReadError> {
    let txn = &snapshot.txn;
    // What the chunks say the index must hold, chunk by chunk.
    let mut live: HashMap<u64, u32> = HashMap::new();
    let mut expected_terms = 0u64;
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
        let text_row = rows.get(row.internal_id).map_err(ReadError::storage)?;
        // An undecodable row is reported by `check_no_dead_rows`, with every other row.
        let (segments, decoded) = match text_row.as_ref().map(|b| row::segments(b.value())) {
            None => (Vec::new(), true),
            Some(Ok(segments)) => (segments, true),
            Some(Err(_)) => (Vec::new(), false),
        };
        for (position, chunk) in chunks.chunks.iter().enumerate() {
            let Some(slot) = vectors.slot(position) else {
                continue;
            };
            let expected = Analysis::of_text(analyzer, &chunk.text);
            live.insert(vector_id(row.internal_id, slot), expected.len);
            expected_terms += u64::from(expected.len);
            if !decoded {
                continue;
            }
            let Ok(at) = segments.binary_search_by_key(&slot, |s| s.slot) else {
                problems.push("missing row", || {
                    format!("{source}/{id} chunk {position} is not indexed")
                });
                continue;
            };
            let segment = &segments[at];
            match segment.terms(snapshot.text_codec_for_reads()?) {
                Err(c) => problems.push("undecodable row", || {
                    format!("{source}/{id} chunk {position}: {}", c.detail)
                }),
                Ok(terms) => {
                    let stored = Analysis::of_segment(segment.len, &terms.list());
                    if stored != expected {
                        problems.push("wrong row", || {
                            format!(
                                "{source}/{id} chunk {position} is indexed with {} terms of \
                                 length {}, its text has {} of length {}",
                                stored.terms.len(),
                                stored.len,
                                expected.terms.len(),
                                expected.len
                            )
                        })
                    }
                }
            }
        }
    }
    Ok((live, expected_terms))
}

/// Every segment of every row belongs to a live chunk.
fn check_no_dead_rows(
    rows: &redb::ReadOnlyTable<u64, &'static [u8]>,
    live: &HashMap<u64, u32>,
    problems: &mut Problems<'_>,
) -> Result<(), ReadError> {
    let mut indexed = 0u64;
    for entry in rows.iter().map_err(ReadError::storage)? {
        let (key, value) = entry.map_err(ReadError::storage)?;
        let doc = key.value();
        let segments = match row::segments(value.value()) {
            Ok(segments) => segments,
            Err(c) => {
                problems.push("undecodable row", || {
                    format!("the text row of document {doc}: {}", c.detail)
                });
                continue;
            }
        };
        if segments.is_empty() {
            problems.push("empty row", || {
                format!("document {doc} has a text row without chunks")
            });
        }
        for segment in segments {
            let vid = vector_id(doc, segment.slot);
            indexed += 1;
            if !live.contains_key(&vid) {
                problems.push("dead row", || {
                    format!("chunk {vid} is indexed but is not a live chunk")
                });
            }
        }
    }
    if indexed != live.len() as u64 {
        problems.push("row count", || {
            format!("{indexed} chunks indexed for {} live chunks", live.len())
        });
    }
    Ok(())
}

/// The totals agree with the live chunks, and the index covers the documents' commit.
fn check_totals(
    snapshot: &Snapshot,
    live: &HashMap<u64, u32>,
    expected_terms: u64,
    problems: &mut Problems<'_>,
) -> Result<(), ReadError> {
    let txn = &snapshot.txn;
    let counters = txn.open_table(COUNTERS).map_err(ReadError::storage)?;
    let total = |key: &str| -> Result<u64, ReadError> {
        Ok(counters
            .get(key)
            .map_err(ReadError::storage)?
            .map_or(0, |v| v.value()))
    };
    for (key, expected) in [
        (text_key::CHUNKS, live.len() as u64),
        (text_key::TERMS, expected_terms),
    ] {
        let stored = total(key)?;
        if stored != expected {
            problems.push("totals", || {
                format!("the total {key} says {stored}, the live chunks {expected}")
            });
        }
    }
    let commit = total(seq_key::COMMIT)?;
    let covered = total(text_key::COMMIT)?;
    if covered != commit {
        problems.push("commit", || {
            format!("the index covers commit {covered}, the documents are at commit {commit}")
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn analyses_compare_as_sets_of_terms() {
        // A segment lists terms in order of first occurrence; the text's analysis is sorted.
        let analyzer = Analyzer::new(&TextOptions::default());
        let text = Analysis::of_text(&analyzer, "gamma beta alpha beta");
        assert_eq!(
            text,
            Analysis::of_segment(4, &[("gamma", 1), ("beta", 2), ("alpha", 1)])
        );
        assert_ne!(
            text,
            Analysis::of_segment(4, &[("gamma", 1), ("beta", 1), ("alpha", 2)])
        );
        assert_ne!(
            text,
            Analysis::of_segment(5, &[("gamma", 1), ("beta", 2), ("alpha", 1)])
        );
        assert_ne!(text, Analysis::of_segment(4, &[("gamma", 1), ("beta", 2)]));
    }
}
