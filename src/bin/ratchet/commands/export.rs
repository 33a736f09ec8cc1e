//! `ratchet export`: every document as JSONL, sorted by (source, id), from one snapshot.

use crate::output::Output;
use crate::{each_document, exit, open_existing, DbArg, Failure};
use clap::Args;
use ratchetdb::StoredDocument;
use serde::Serialize;
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
    each_document(&store, args.vectors, |document| {
        out.json_line(&ExportLine::new(&document))?;
        // The reader has gone (`| head`): what it wanted, it has.
        Ok(!out.is_closed())
    })?;
    out.finish()?;
    Ok(exit::ok())
}

/// One line of the export: the document without the store's internal ids.
#[derive(Serialize)]
struct ExportLine<'a> {
    source: &'a str,
    id: &'a str,
    version: u64,
    version_kind: &'static str,
    deleted: bool,
    generation: u64,
    content_hash: &'a str,
    meta: &'a serde_json::Value,
    chunks: Vec<ExportChunk<'a>>,
}

#[derive(Serialize)]
struct ExportChunk<'a> {
    position: u32,
    text: &'a str,
    meta: &'a serde_json::Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    vector: Option<&'a [f32]>,
}

impl<'a> ExportLine<'a> {
    fn new(document: &'a StoredDocument) -> ExportLine<'a> {
        ExportLine {
            source: &document.source,
            id: &document.id,
            version: document.version.value,
            version_kind: document.version.kind.as_str(),
            deleted: document.deleted,
            generation: document.generation,
            content_hash: &document.content_hash,
            meta: &document.meta,
            chunks: document
                .chunks
                .iter()
                .map(|chunk| ExportChunk {
                    position: chunk.position,
                    text: &chunk.text,
                    meta: &chunk.meta,
                    vector: chunk.vector.as_deref(),
                })
                .collect(),
        }
    }
}
