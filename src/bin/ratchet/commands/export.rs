//! `ratchet export`: the store as `ingest --jsonl` input, from one snapshot: first a `store`
//! line when a new store would not be like this one by default (its metric is not cosine, it
//! recorded a model, or it issued tickets), then every document sorted by (source, id) (a
//! live one as an upsert, a tombstone as a delete), then every listing `retain` recorded, as
//! a retain. Ingesting an export made with `--vectors` into a new store gives a store whose
//! export is the same, byte for byte (without `--vectors` the lines carry no vectors, which
//! a new store needs). On PostgreSQL the ticket count is read after the documents, so that
//! it covers every ticket they carry.

use crate::output::Output;
use crate::{each_document, exit, open_existing, DbArg, Failure};
use clap::Args;
use ratchetdb::{Listing, Metric, StoredDocument};
use serde::Serialize;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct ExportArgs {
    #[command(flatten)]
    db: DbArg,
    /// Add each chunk's vector (as stored: unit length under the cosine metric).
    #[arg(long)]
    vectors: bool,
}

pub fn run(args: ExportArgs) -> Result<ExitCode, Failure> {
    let store = open_existing(&args.db)?;
    let mut out = Output::stdout();
    // The tickets, documents and listings of one snapshot (PostgreSQL, which has no
    // `Store::snapshot`, reads each in a snapshot of its own).
    let snapshot = if store.is_postgres() {
        None
    } else {
        Some(store.snapshot()?)
    };
    let metric = store.metric();
    let model = store.model();
    let mut open = true;
    match &snapshot {
        Some(snapshot) => {
            let issued = snapshot.tickets_issued()?;
            store_line(&mut out, metric, model, issued)?;
            for document in snapshot.documents(args.vectors)? {
                out.json_line(&ExportLine::new(&document?))?;
                // The reader has gone (`| head`): what it wanted, it has.
                if out.is_closed() {
                    open = false;
                    break;
                }
            }
        }
        None => {
            // The documents first, into a temporary file, then the ticket count: a ticket
            // issued and written meanwhile is then counted (read the other way round, the
            // export could hold a ticket its `store` line does not, which ingest refuses).
            let spool_error = |e: std::io::Error| Failure(format!("export: temporary file: {e}"));
            let mut spool = BufWriter::new(tempfile::tempfile().map_err(spool_error)?);
            each_document(&store, args.vectors, |document| {
                serde_json::to_writer(&mut spool, &ExportLine::new(&document))
                    .map_err(std::io::Error::from)
                    .and_then(|()| spool.write_all(b"\n"))
                    .map_err(spool_error)?;
                Ok(true)
            })?;
            let mut spooled = spool
                .into_inner()
                .map_err(|e| spool_error(e.into_error()))?;
            spooled.seek(SeekFrom::Start(0)).map_err(spool_error)?;
            let issued = store.tickets_issued()?;
            store_line(&mut out, metric, model, issued)?;
            out.copy_from(&mut spooled)?;
            open = !out.is_closed();
        }
    }
    if open {
        let listings = match &snapshot {
            Some(snapshot) => snapshot.listings()?,
            None => store.listings()?,
        };
        for listing in &listings {
            out.json_line(&RetainLine::new(listing))?;
            if out.is_closed() {
                break;
            }
        }
    }
    out.finish()?;
    Ok(exit::ok())
}

/// The `store` line, when a new store would not be like this one by default.
fn store_line(
    out: &mut Output,
    metric: Metric,
    model: Option<&str>,
    issued: u64,
) -> Result<(), Failure> {
    if metric != Metric::Cosine || model.is_some() || issued > 0 {
        out.json_line(&StoreLine {
            op: "store",
            metric: metric.as_str(),
            model,
            tickets_issued: issued,
        })?;
    }
    Ok(())
}

/// `{"op":"store",…}`: the store's metric, its model, and the highest ticket it may have
/// issued.
#[derive(Serialize)]
struct StoreLine<'a> {
    op: &'static str,
    metric: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    model: Option<&'a str>,
    tickets_issued: u64,
}

/// One document as the line that recreates it: without the store's internal ids and
/// generation stamps, with its content hash (which `ingest` checks) and, on a tombstone,
/// `deleted`.
#[derive(Serialize)]
struct ExportLine<'a> {
    op: &'static str,
    source: &'a str,
    id: &'a str,
    version: u64,
    version_kind: &'static str,
    deleted: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    content_hash: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    meta: Option<&'a serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    chunks: Option<Vec<ExportChunk<'a>>>,
}

#[derive(Serialize)]
struct ExportChunk<'a> {
    position: u32,
    text: &'a str,
    meta: &'a serde_json::Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    vector: Option<&'a [f32]>,
    /// With `--vectors`: its vectors in the store's other vector spaces, by name.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    spaces: &'a std::collections::BTreeMap<String, Vec<f32>>,
}

impl<'a> ExportLine<'a> {
    fn new(document: &'a StoredDocument) -> ExportLine<'a> {
        let live = !document.deleted;
        ExportLine {
            op: if live { "upsert" } else { "delete" },
            source: &document.source,
            id: &document.id,
            version: document.version.value,
            version_kind: document.version.kind.as_str(),
            deleted: document.deleted,
            content_hash: live.then_some(document.content_hash.as_str()),
            meta: live.then_some(&document.meta),
            chunks: live.then(|| {
                document
                    .chunks
                    .iter()
                    .map(|chunk| ExportChunk {
                        position: chunk.position,
                        text: &chunk.text,
                        meta: &chunk.meta,
                        vector: chunk.vector.as_deref(),
                        spaces: &chunk.spaces,
                    })
                    .collect()
            }),
        }
    }
}

/// A listing as the retain that records it again.
#[derive(Serialize)]
struct RetainLine<'a> {
    op: &'static str,
    source: &'a str,
    version: u64,
    version_kind: &'static str,
    ids: &'a [String],
}

impl<'a> RetainLine<'a> {
    fn new(listing: &'a Listing) -> RetainLine<'a> {
        RetainLine {
            op: "retain",
            source: &listing.source,
            version: listing.version.value,
            version_kind: listing.version.kind.as_str(),
            ids: &listing.present,
        }
    }
}
