//! `verify()` against the server's tables: the embedded store's invariants as queries, all
//! in one `REPEATABLE READ` snapshot.

use super::read::{column, corrupted, json, server_error, version};
use super::PgStore;
use crate::backend::Backend;
use crate::error::ReadError;
use crate::text::{Analyzer, Terms, TextOptions};
use crate::types::counters::name;
use crate::types::{VerifyReport, Violation};
use postgres::Transaction;
use std::collections::{HashMap, HashSet};

/// Text-index violations reported at most per kind (as the embedded verify), so a wholly
/// wrong index gives a readable report.
const MAX_PER_KIND: usize = 20;

fn violation(source: Option<String>, id: Option<String>, problem: impl Into<String>) -> Violation {
    Violation {
        source,
        id,
        problem: problem.into(),
    }
}

pub(super) fn verify(store: &PgStore) -> Result<VerifyReport, ReadError> {
    let mut client = store.client.lock();
    let mut txn = client
        .build_transaction()
        .isolation_level(postgres::IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .map_err(server_error)?;
    let mut report = VerifyReport::default();
    let dimension = store.dimension();

    // Every document row: its version, hash and metadata decode; a live document's chunk
    // rows are exactly positions 0..n at its generation with vectors of the store's
    // dimension; a tombstone has no chunks.
    let rows = txn
        .query(
            "SELECT d.source, d.id, d.version_kind, d.version, d.deleted, d.generation,
                    d.chunk_count, length(d.content_hash), d.meta_json,
                    count(c.position), coalesce(min(c.position), 0), coalesce(max(c.position), -1),
                    count(*) FILTER (WHERE c.generation <> d.generation),
                    count(*) FILTER (WHERE c.embedding IS NOT NULL AND vector_dims(c.embedding) <> $1)
             FROM documents d LEFT JOIN chunks c ON c.source = d.source AND c.id = d.id
             GROUP BY d.source, d.id ORDER BY d.source, d.id",
            &[&(dimension.unwrap_or(0) as i32)],
        )
        .map_err(server_error)?;
    for row in &rows {
        let what = "documents row";
        let source: String = column(row, 0, what)?;
        let id: String = column(row, 1, what)?;
        let mut problem = |p: String| {
            report
                .violations
                .push(violation(Some(source.clone()), Some(id.clone()), p))
        };
        if let Err(error) = version(column(row, 2, what)?, column(row, 3, what)?, what) {
            problem(error.to_string());
        }
        let deleted: bool = column(row, 4, what)?;
        let generation: i64 = column(row, 5, what)?;
        let chunk_count: i32 = column(row, 6, what)?;
        let hash_len: i32 = column(row, 7, what)?;
        if hash_len != 32 {
            problem(format!("content hash of {hash_len} bytes"));
        }
        if let Err(error) = json(column(row, 8, what)?, what) {
            problem(error.to_string());
        }
        let chunks: i64 = column(row, 9, what)?;
        let first: i32 = column(row, 10, what)?;
        let last: i32 = column(row, 11, what)?;
        let stale: i64 = column(row, 12, what)?;
        let wrong_dimension: i64 = column(row, 13, what)?;
        if deleted {
            report.tombstones += 1;
            if chunks != 0 || chunk_count != 0 {
                problem(format!(
                    "a tombstone with chunk_count {chunk_count} and {chunks} chunk rows"
                ));
            }
        } else {
            report.documents += 1;
            report.chunks += chunks as u64;
            report.vectors += chunks as u64;
            if chunks != i64::from(chunk_count) {
                problem(format!("chunk_count {chunk_count} but {chunks} chunk rows"));
            } else if chunks > 0 && (first != 0 || last != chunk_count - 1) {
                problem(format!(
                    "chunk positions {first}..={last}, not 0..{chunk_count}"
                ));
            }
            if stale > 0 {
                problem(format!(
                    "{stale} chunk rows not at the document's generation {generation}"
                ));
            }
            if wrong_dimension > 0 && dimension.is_some() {
                problem(format!(
                    "{wrong_dimension} vectors not of the store's dimension"
                ));
            }
        }
    }

    // Chunk rows whose metadata does not decode.
    for row in txn
        .query(
            "SELECT source, id, position FROM chunks
             WHERE NOT (meta_json::jsonb = meta) ORDER BY source, id, position",
            &[],
        )
        .map_err(server_error)?
    {
        let position: i32 = column(&row, 2, "chunks row")?;
        report.violations.push(violation(
            Some(column(&row, 0, "chunks row")?),
            Some(column(&row, 1, "chunks row")?),
            format!("chunk {position}: meta and meta_json disagree"),
        ));
    }

    // The gauges against the rows.
    let gauges = txn
        .query(
            "SELECT name, sum(value)::bigint FROM counters WHERE name = ANY($1) GROUP BY name",
            &[&vec![
                name::LIVE_DOCUMENTS,
                name::LIVE_TOMBSTONES,
                name::LIVE_CHUNKS,
                name::LIVE_VECTORS,
            ]],
        )
        .map_err(server_error)?;
    let mut counted = [0i64; 4];
    for row in &gauges {
        let key: String = column(row, 0, "counters row")?;
        let value: i64 = column(row, 1, "counters row")?;
        match key.as_str() {
            name::LIVE_DOCUMENTS => counted[0] = value,
            name::LIVE_TOMBSTONES => counted[1] = value,
            name::LIVE_CHUNKS => counted[2] = value,
            name::LIVE_VECTORS => counted[3] = value,
            _ => {}
        }
    }
    let actual = [
        report.documents,
        report.tombstones,
        report.chunks,
        report.vectors,
    ];
    let names = [
        name::LIVE_DOCUMENTS,
        name::LIVE_TOMBSTONES,
        name::LIVE_CHUNKS,
        name::LIVE_VECTORS,
    ];
    for ((counted, actual), key) in counted.iter().zip(actual).zip(names) {
        if *counted != actual as i64 {
            report.violations.push(violation(
                None,
                None,
                format!("counter {key} is {counted} but the tables hold {actual}"),
            ));
        }
    }
    check_text_index(&mut txn, &mut report)?;
    txn.commit().map_err(server_error)?;
    if report.violations.len() > 10_000 {
        return Err(corrupted(
            "store",
            format!("{} violations", report.violations.len()),
        ));
    }
    Ok(report)
}

/// The text index's violations, counted per kind and reported up to [`MAX_PER_KIND`] each.
struct TextProblems<'r> {
    report: &'r mut VerifyReport,
    counts: HashMap<&'static str, usize>,
}

impl TextProblems<'_> {
    fn push(
        &mut self,
        kind: &'static str,
        at: Option<(&str, &str)>,
        problem: impl FnOnce() -> String,
    ) {
        let count = self.counts.entry(kind).or_insert(0);
        *count += 1;
        if *count <= MAX_PER_KIND {
            self.report.violations.push(violation(
                at.map(|(source, _)| source.to_string()),
                at.map(|(_, id)| id.to_string()),
                format!("text index: {}", problem()),
            ));
        }
    }
}

/// The text index against the chunks, as the embedded verify checks its own: every live
/// chunk (of a live document, at its generation) has a `chunk_lengths` row and
/// `chunk_terms` rows equal to a fresh analysis of its text, and no row belongs to
/// anything else. Nothing when `meta` records no analysis (the store keeps no index).
fn check_text_index(txn: &mut Transaction<'_>, report: &mut VerifyReport) -> Result<(), ReadError> {
    let Some(row) = txn
        .query_opt("SELECT value FROM meta WHERE key = 'text_analyzer'", &[])
        .map_err(server_error)?
    else {
        return Ok(());
    };
    let mut problems = TextProblems {
        report,
        counts: HashMap::new(),
    };
    let json: String = column(&row, 0, "meta")?;
    let options: TextOptions = match serde_json::from_str(&json) {
        Ok(options) => options,
        Err(e) => {
            problems.push("analyzer", None, || {
                format!("the recorded analysis does not decode: {e}")
            });
            return Ok(());
        }
    };
    let analyzer = Analyzer::new(&options);

    // Every row's terms, by chunk.
    let mut stored_terms: HashMap<i64, Vec<(String, i32)>> = HashMap::new();
    for row in txn
        .query("SELECT vector_id, term, tf FROM chunk_terms", &[])
        .map_err(server_error)?
    {
        let what = "chunk_terms row";
        stored_terms
            .entry(column(&row, 0, what)?)
            .or_default()
            .push((column(&row, 1, what)?, column(&row, 2, what)?));
    }

    // Every live chunk against its rows.
    let mut live: HashSet<i64> = HashSet::new();
    let mut terms = Terms::default();
    for row in txn
        .query(
            "SELECT c.vector_id, c.source, c.id, c.position, c.text, l.length
             FROM chunks c
                  JOIN documents d ON d.source = c.source AND d.id = c.id
                  LEFT JOIN chunk_lengths l ON l.vector_id = c.vector_id
             WHERE NOT d.deleted AND c.generation = d.generation",
            &[],
        )
        .map_err(server_error)?
    {
        let what = "chunks row";
        let vector_id: i64 = column(&row, 0, what)?;
        let source: &str = column(&row, 1, what)?;
        let id: &str = column(&row, 2, what)?;
        let position: i32 = column(&row, 3, what)?;
        let text: &str = column(&row, 4, what)?;
        let length: Option<i32> = column(&row, 5, what)?;
        live.insert(vector_id);
        terms.analyze(&analyzer, text);
        let at = Some((source, id));
        let Some(length) = length else {
            problems.push("missing row", at, || {
                format!("chunk {position} has no chunk_lengths row")
            });
            continue;
        };
        let mut expected: Vec<(&str, i64)> =
            terms.counts().map(|(t, c)| (t, i64::from(c))).collect();
        expected.sort_unstable();
        let mut stored: Vec<(&str, i64)> = stored_terms
            .get(&vector_id)
            .map(|rows| {
                rows.iter()
                    .map(|(t, c)| (t.as_str(), i64::from(*c)))
                    .collect()
            })
            .unwrap_or_default();
        stored.sort_unstable();
        if i64::from(length) != i64::from(terms.len()) || stored != expected {
            problems.push("wrong row", at, || {
                format!(
                    "chunk {position} is indexed with {} terms of length {length}, its text \
                     has {} of length {}",
                    stored.len(),
                    expected.len(),
                    terms.len()
                )
            });
        }
    }

    // No row for anything but a live chunk.
    for row in txn
        .query("SELECT vector_id FROM chunk_lengths", &[])
        .map_err(server_error)?
    {
        let vector_id: i64 = column(&row, 0, "chunk_lengths row")?;
        if !live.contains(&vector_id) {
            problems.push("dead row", None, || {
                format!("chunk_lengths holds chunk {vector_id}, not a live chunk")
            });
        }
    }
    let mut dead: Vec<&i64> = stored_terms.keys().filter(|v| !live.contains(v)).collect();
    dead.sort_unstable();
    for vector_id in dead {
        problems.push("dead row", None, || {
            format!("chunk_terms holds chunk {vector_id}, not a live chunk")
        });
    }
    Ok(())
}
