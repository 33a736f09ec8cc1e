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
use serde::Serialize;
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
    /// Its vectors in the store's other vector spaces (`spaceVectors` in JavaScript).
    pub spaces: Option<Vec<SpaceVectorInput>>,
}

/// A chunk's vector in one vector space besides the default one.
#[napi(object)]
pub struct SpaceVectorInput {
    /// The space's name.
    pub name: String,
    /// The vector.
    pub vector: Float32Array,
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
    json!({ "kind": version_kind(version.kind), "value": version.value.to_string() })
}

/// A version kind's name in JavaScript's `{ kind, value }` form.
fn version_kind(kind: VersionKind) -> &'static str {
    match kind {
        VersionKind::Number => "number",
        VersionKind::TimestampMicros => "timestamp",
        VersionKind::Ticket => "ticket",
        _ => "unknown",
    }
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
                let mut made = match chunk.vector {
                    Some(vector) => Chunk::new(chunk.text, vector.to_vec()),
                    None => Chunk::without_vector(chunk.text),
                };
                for space in chunk.spaces.unwrap_or_default() {
                    made.spaces.insert(space.name, space.vector.to_vec());
                }
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

/// A vector as [`document_json`] hands it over: the base64 of its little-endian `f32`s, which
/// JavaScript decodes into a `Float32Array` (`floatsOut` in `index.js`). As a JSON array it
/// took one value per number, and napi's conversion refuses more than 1,000,000 values, so a
/// page of an export with vectors (or one document of a few thousand 384-d chunks) failed.
fn vector_json(vector: &[f32]) -> Value {
    use base64::Engine as _;
    let bytes: Vec<u8> = vector.iter().flat_map(|x| x.to_le_bytes()).collect();
    Value::String(base64::engine::general_purpose::STANDARD.encode(bytes))
}

/// How many values napi's conversion counts in `value` (each one, containers included).
pub fn json_values(value: &Value) -> usize {
    1 + match value {
        Value::Array(items) => items.iter().map(json_values).sum(),
        Value::Object(map) => map.values().map(json_values).sum(),
        _ => 0,
    }
}

/// A stored document (a tombstone has `deleted: true` and no chunks); its vectors as
/// [`vector_json`] gives them.
pub fn document_json(doc: StoredDocument) -> Value {
    let chunks: Vec<Value> = doc
        .chunks
        .into_iter()
        .map(|chunk| {
            let mut out = json!({
                "position": chunk.position, "text": chunk.text, "meta": chunk.meta,
            });
            if let Some(map) = out.as_object_mut() {
                if let Some(vector) = chunk.vector {
                    map.insert("vector".into(), vector_json(&vector));
                }
                // Its vectors in the other vector spaces, as a chunk's `spaceVectors`.
                if !chunk.spaces.is_empty() {
                    let spaces: serde_json::Map<String, Value> = chunk
                        .spaces
                        .iter()
                        .map(|(name, vector)| (name.clone(), vector_json(vector)))
                        .collect();
                    map.insert("spaceVectors".into(), Value::Object(spaces));
                }
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

/// A version as a hit carries it in JSON: a plain number when it is a `number` version that
/// a JavaScript number holds exactly, else `{ kind, value }` with the value in decimal.
#[derive(Serialize)]
#[serde(untagged)]
enum HitVersion {
    Plain(u64),
    Tagged { kind: &'static str, value: String },
}

fn hit_version(version: Version) -> HitVersion {
    match version.kind {
        VersionKind::Number if version.value <= MAX_SAFE_INTEGER => {
            HitVersion::Plain(version.value)
        }
        kind => HitVersion::Tagged {
            kind: version_kind(kind),
            value: version.value.to_string(),
        },
    }
}

/// The largest integer a JavaScript number holds exactly (2^53 - 1).
const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// How many UTF-16 code units `text` is in JavaScript (a string's `length`).
fn js_length(text: &str) -> usize {
    if text.is_ascii() {
        text.len()
    } else {
        text.chars().map(char::len_utf16).sum()
    }
}

/// The numbers and JSON values of [`hits_compact`]'s hits, seven per hit: meta, version,
/// position, score, and the lengths of source, id and text.
struct HitFields<'a>(&'a [Hit]);

impl Serialize for HitFields<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let empty = Value::Object(serde_json::Map::new());
        let mut seq = serializer.serialize_seq(Some(self.0.len() * 7))?;
        for hit in self.0 {
            seq.serialize_element(if hit.meta.is_null() {
                &empty
            } else {
                &hit.meta
            })?;
            seq.serialize_element(&hit_version(hit.version))?;
            seq.serialize_element(&hit.position)?;
            seq.serialize_element(&f64::from(hit.score))?;
            seq.serialize_element(&js_length(&hit.source))?;
            seq.serialize_element(&js_length(&hit.id))?;
            seq.serialize_element(&js_length(&hit.text))?;
        }
        seq.end()
    }
}

/// Hits as one text that `index.js` turns into objects (`decodeHits`) in about a third of
/// what `JSON.parse` of the same hits takes: `{n};` then a JSON array of `n` UTF-16 code
/// units holding seven fields per hit (meta, version, position, score, and the lengths of
/// source, id and text), then every hit's source, id and text, unescaped, end to end. A
/// version is a JSON number unless it is a timestamp, a ticket or above 2^53 - 1 (then
/// `{ kind, value }`, decoded by `index.js`).
pub fn hits_compact(hits: &[Hit]) -> napi::Result<String> {
    let fields = serde_json::to_string(&HitFields(hits))
        .map_err(|e| crate::errors::internal(&e.to_string()))?;
    let strings: usize = hits
        .iter()
        .map(|hit| hit.source.len() + hit.id.len() + hit.text.len())
        .sum();
    let length = js_length(&fields).to_string();
    let mut out = String::with_capacity(length.len() + 1 + fields.len() + strings);
    out.push_str(&length);
    out.push(';');
    out.push_str(&fields);
    for hit in hits {
        out.push_str(&hit.source);
        out.push_str(&hit.id);
        out.push_str(&hit.text);
    }
    Ok(out)
}

/// The hits of several queries: each list's [`hits_compact`] text, end to end.
pub fn hit_lists_compact(lists: &[Vec<Hit>]) -> napi::Result<String> {
    let mut out = String::new();
    for hits in lists {
        out.push_str(&hits_compact(hits)?);
    }
    Ok(out)
}

/// `search`'s hits with the nanoseconds the Rust call took, for `_searchTimed`: the
/// nanoseconds in decimal, a comma, then [`hits_compact`]'s text.
pub fn timed_hits_compact(hits: &[Hit], inner_ns: u64) -> napi::Result<String> {
    Ok(format!("{inner_ns},{}", hits_compact(hits)?))
}
