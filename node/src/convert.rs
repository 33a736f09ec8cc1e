//! Values between JavaScript and ratchetdb: versions, documents, operations, outcomes, hits.
//!
//! `index.js` checks the shapes a caller passes (and names the field when one is wrong)
//! before it calls in; what arrives here has the types below. Versions cross as
//! `{ kind, value }` with `value` a `bigint` going in and a decimal string coming out, so no
//! 64-bit version is rounded by a JavaScript number on the way.

use crate::errors::input;
use napi::bindgen_prelude::{BigInt, Float32Array};
use napi_derive::napi;
use ratchetdb::{
    Chunk, Document, Hit, Op, OpOutcome, Outcome, StoredDocument, Version, VersionKind,
};
use serde_json::{json, Value};

/// A version as `index.js` passes it: `kind` is `number`, `timestamp` (microseconds since
/// the epoch) or `ticket`.
#[napi(object)]
pub struct VersionInput {
    /// `number`, `timestamp` or `ticket`.
    pub kind: String,
    /// The value (non-negative, below 2^64).
    pub value: BigInt,
}

/// One chunk of an upsert.
#[napi(object)]
pub struct ChunkInput {
    /// The chunk's text.
    pub text: String,
    /// Its vector (absent: the store must already hold one for the same text).
    pub vector: Option<Float32Array>,
    /// Its metadata (a JSON object).
    pub meta: Option<Value>,
}

/// One operation of a write: `op` is `upsert`, `delete` or `retain`.
#[napi(object)]
pub struct OpInput {
    /// `upsert`, `delete` or `retain`.
    pub op: String,
    /// The document's source.
    pub source: String,
    /// The document id (`upsert`, `delete`).
    pub id: Option<String>,
    /// The ids a listing keeps (`retain`).
    pub ids: Option<Vec<String>>,
    /// The version.
    pub version: VersionInput,
    /// The chunks (`upsert`).
    pub chunks: Option<Vec<ChunkInput>>,
    /// The document's metadata (`upsert`).
    pub meta: Option<Value>,
}

/// A version from its JavaScript form; `field` names it in an error.
pub fn version(value: &VersionInput, field: &str) -> napi::Result<Version> {
    let (negative, number, lossless) = value.value.get_u64();
    if negative || !lossless {
        return Err(input(field, "must be a non-negative integer below 2^64"));
    }
    match value.kind.as_str() {
        "number" => Ok(Version::number(number)),
        "timestamp" => Ok(Version::timestamp_micros(number)),
        "ticket" => Ok(Version::ticket(number)),
        other => Err(input(
            &format!("{field}.kind"),
            format!("{other:?} is not a version kind (number, timestamp, ticket)"),
        )),
    }
}

/// A version in its JavaScript form (`index.js` makes it a number, `bigint`, `Date` or
/// `Ticket`).
pub fn version_json(version: Version) -> Value {
    let kind = match version.kind {
        VersionKind::Number => "number",
        VersionKind::TimestampMicros => "timestamp",
        VersionKind::Ticket => "ticket",
        _ => "unknown",
    };
    json!({ "kind": kind, "value": version.value.to_string() })
}

/// The operation `input` describes; `field` names it (`ops[3]`) in an error.
pub fn op(input_op: OpInput, field: &str) -> napi::Result<(Op, Version)> {
    let version = version(&input_op.version, &format!("{field}.version"))?;
    let id =
        |what: Option<String>| what.ok_or_else(|| input(&format!("{field}.id"), "is required"));
    let op = match input_op.op.as_str() {
        "upsert" => {
            let mut doc = Document::new(input_op.source, id(input_op.id)?, version);
            if let Some(meta) = input_op.meta {
                doc = doc.with_meta(meta);
            }
            for chunk in input_op.chunks.unwrap_or_default() {
                let made = match chunk.vector {
                    Some(vector) => Chunk::new(chunk.text, vector.to_vec()),
                    None => Chunk::without_vector(chunk.text),
                };
                doc = doc.with_chunk(made.with_meta(chunk.meta.unwrap_or(Value::Null)));
            }
            Op::Upsert(doc)
        }
        "delete" => Op::Delete {
            source: input_op.source,
            id: id(input_op.id)?,
            version,
        },
        "retain" => Op::Retain {
            source: input_op.source,
            present: input_op
                .ids
                .ok_or_else(|| input(&format!("{field}.ids"), "is required"))?,
            version,
        },
        other => {
            return Err(input(
                &format!("{field}.op"),
                format!("{other:?} is not an operation (upsert, delete, retain)"),
            ))
        }
    };
    Ok((op, version))
}

/// What one operation did, as `index.js` returns it (keys in camelCase).
pub fn outcome_json(outcome: &OpOutcome, incoming: Version) -> Value {
    match outcome {
        OpOutcome::Document(Outcome::Written {
            generation,
            chunks_written,
            chunks_reused,
            chunks_removed,
        }) => json!({
            "status": "written", "version": version_json(incoming), "generation": generation,
            "chunksWritten": chunks_written, "chunksReused": chunks_reused,
            "chunksRemoved": chunks_removed,
        }),
        OpOutcome::Document(Outcome::Unchanged { version }) => {
            json!({ "status": "unchanged", "version": version_json(*version) })
        }
        OpOutcome::Document(Outcome::Deleted { chunks_removed }) => json!({
            "status": "deleted", "version": version_json(incoming), "chunksRemoved": chunks_removed,
        }),
        OpOutcome::Document(Outcome::Skipped {
            reason,
            stored_version,
            incoming_version,
        }) => json!({
            "status": "skipped", "reason": reason,
            "storedVersion": version_json(*stored_version),
            "incomingVersion": version_json(*incoming_version),
        }),
        OpOutcome::Retain(retain) => {
            let mut out = json!({
                "status": if retain.skipped.is_some() { "skipped" } else { "retained" },
                "version": version_json(incoming),
                "documentsRemoved": retain.documents_removed,
                "chunksRemoved": retain.chunks_removed,
                "newerKept": retain.newer_kept,
            });
            if let (Some(reason), Some(map)) = (retain.skipped, out.as_object_mut()) {
                map.insert("reason".into(), json!(reason));
            }
            out
        }
        other => json!({ "status": "unknown", "detail": format!("{other:?}") }),
    }
}

/// A stored document (a tombstone has `deleted: true` and no chunks).
pub fn document_json(doc: StoredDocument) -> Value {
    let chunks: Vec<Value> = doc
        .chunks
        .into_iter()
        .map(|chunk| {
            let mut out = json!({
                "position": chunk.position, "text": chunk.text, "meta": chunk.meta,
            });
            if let (Some(vector), Some(map)) = (chunk.vector, out.as_object_mut()) {
                map.insert("vector".into(), json!(vector));
            }
            out
        })
        .collect();
    json!({
        "source": doc.source, "id": doc.id, "version": version_json(doc.version),
        "deleted": doc.deleted, "generation": doc.generation,
        "contentHash": doc.content_hash, "meta": doc.meta, "chunks": chunks,
    })
}

/// One search hit: a live chunk of the snapshot the search read, with its score.
#[napi(object)]
pub struct NativeHit {
    /// The document's source.
    pub source: String,
    /// The document id.
    pub id: String,
    /// The chunk's position in its document.
    pub position: u32,
    /// The chunk's text.
    pub text: String,
    /// The chunk's metadata.
    pub meta: Value,
    /// The document's version kind.
    pub version_kind: String,
    /// The document's version, in decimal.
    pub version_value: String,
    /// The score (higher is closer for cosine and dot; the distance for L2).
    pub score: f64,
}

/// Hits in their JavaScript form.
pub fn hits(hits: Vec<Hit>) -> Vec<NativeHit> {
    hits.into_iter()
        .map(|hit| {
            let version = version_json(hit.version);
            NativeHit {
                source: hit.source,
                id: hit.id,
                position: hit.position,
                text: hit.text,
                meta: hit.meta,
                version_kind: version["kind"].as_str().unwrap_or("number").to_string(),
                version_value: hit.version.value.to_string(),
                score: f64::from(hit.score),
            }
        })
        .collect()
}
