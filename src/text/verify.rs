//! `verify()`'s checks of the text index against the chunks: every live chunk indexed with
//! exactly its terms, counts and length, no row for a chunk that is not live, the totals
//! equal to what the rows say, and the index stamped with the documents' commit.

use super::analyze::{Analyzer, TextOptions};
use super::write::text_row;
use crate::error::ReadError;
use crate::read::Snapshot;
use crate::schema::{
    self, meta_key, seq_key, text_key, vector_id, DocRow, TextRow, VectorsRow, COUNTERS, DOCS,
    META, TEXT_CHUNKS, TEXT_TOTALS,
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
    let rows = txn.open_table(TEXT_CHUNKS).map_err(ReadError::storage)?;
    let (live, expected_terms) = check_live_chunks(snapshot, &analyzer, &rows, &mut problems)?;
    check_no_dead_rows(&rows, &live, &mut problems)?;
    check_totals(snapshot, &live, expected_terms, &mut problems)
}

/// Every live chunk has its row, equal to what its text analyses to. Returns each live
/// chunk's length in terms, and their sum.
fn check_live_chunks(
    snapshot: &Snapshot,
    analyzer: &Analyzer,
    rows: &redb::ReadOnlyTable<u64, &'static [u8]>,
    problems: &mut Problems<'_>,
) -> Result<(HashMap<u64, u32>, u64), ReadError> {
    let txn = &snapshot.txn;
    // What the chunks say the index must hold, row by row.
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
        for (position, chunk) in chunks.chunks.iter().enumerate() {
            let Some(slot) = vectors.slot(position) else {
                continue;
            };
            let vid = vector_id(row.internal_id, slot);
            let expected = text_row(analyzer, &chunk.text);
            live.insert(vid, expected.len);
            expected_terms += u64::from(expected.len);
            match rows.get(vid).map_err(ReadError::storage)? {
                None => problems.push("missing row", || {
                    format!("{source}/{id} chunk {position} is not indexed")
                }),
                Some(bytes) => match schema::decode::<TextRow>("text row", bytes.value()) {
                    Err(c) => problems.push("undecodable row", || {
                        format!("{source}/{id} chunk {position}: {}", c.detail)
                    }),
                    Ok(stored) if !same_row(&stored, &expected) => {
                        problems.push("wrong row", || {
                            format!(
                            "{source}/{id} chunk {position} is indexed with {} terms of length \
                             {}, its text has {} of length {}",
                            stored.terms.len(),
                            stored.len,
                            expected.terms.len(),
                            expected.len
                        )
                        })
                    }
                    Ok(_) => {}
                },
            }
        }
    }
    Ok((live, expected_terms))
}

/// Every row belongs to a live chunk.
fn check_no_dead_rows(
    rows: &redb::ReadOnlyTable<u64, &'static [u8]>,
    live: &HashMap<u64, u32>,
    problems: &mut Problems<'_>,
) -> Result<(), ReadError> {
    let mut row_count = 0u64;
    for entry in rows.iter().map_err(ReadError::storage)? {
        let (key, _) = entry.map_err(ReadError::storage)?;
        let vid = key.value();
        row_count += 1;
        if !live.contains_key(&vid) {
            problems.push("dead row", || {
                format!("chunk {vid} is indexed but is not a live chunk")
            });
        }
    }
    if row_count != live.len() as u64 {
        problems.push("row count", || {
            format!("{row_count} text rows for {} live chunks", live.len())
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
    let totals = txn.open_table(TEXT_TOTALS).map_err(ReadError::storage)?;
    let total = |key: &str| -> Result<u64, ReadError> {
        Ok(totals
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

/// Whether two rows hold the same length and the same terms with the same counts, in any
/// order (rows list their terms in order of first occurrence; files of earlier builds sorted
/// them by term).
fn same_row(a: &TextRow, b: &TextRow) -> bool {
    if a.len != b.len || a.terms.len() != b.terms.len() {
        return false;
    }
    let mut a: Vec<&(String, u32)> = a.terms.iter().collect();
    let mut b: Vec<&(String, u32)> = b.terms.iter().collect();
    a.sort_unstable();
    b.sort_unstable();
    a == b
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(len: u32, terms: &[(&str, u32)]) -> TextRow {
        TextRow {
            len,
            terms: terms.iter().map(|(t, c)| (t.to_string(), *c)).collect(),
        }
    }

    #[test]
    fn rows_compare_as_sets_of_terms() {
        // A row of the first build (sorted) and one of now (first occurrence) agree.
        let sorted = row(4, &[("alpha", 1), ("beta", 2), ("gamma", 1)]);
        let first_seen = row(4, &[("beta", 2), ("gamma", 1), ("alpha", 1)]);
        assert!(same_row(&sorted, &first_seen));
        assert!(!same_row(
            &sorted,
            &row(4, &[("beta", 1), ("gamma", 1), ("alpha", 2)])
        ));
        assert!(!same_row(
            &sorted,
            &row(5, &[("beta", 2), ("gamma", 1), ("alpha", 1)])
        ));
        assert!(!same_row(&sorted, &row(4, &[("beta", 2), ("gamma", 1)])));
    }
}
