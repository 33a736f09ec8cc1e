//! `verify()` against the server's tables: the embedded store's invariants as queries, all
//! in one `REPEATABLE READ` snapshot.

use super::read::{column, corrupted, json, server_error, version};
use super::PgStore;
use crate::counters::name;
use crate::error::ReadError;
use crate::verify::{VerifyReport, Violation};

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
    txn.commit().map_err(server_error)?;
    if report.violations.len() > 10_000 {
        return Err(corrupted(
            "store",
            format!("{} violations", report.violations.len()),
        ));
    }
    Ok(report)
}
