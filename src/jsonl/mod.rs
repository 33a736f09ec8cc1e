//! The JSON-lines interchange format: the lines `ratchet ingest --jsonl` reads and
//! `ratchet export` writes, one operation per line (`{"op":"upsert",...}`, `delete`,
//! `retain`, and a leading `store` line naming the exported store's metric, model and tickets
//! issued). This module reads lines under a size bound ([`LineReader`]) and parses one line
//! into a [`crate::Op`] ([`parse_line`]) with errors that name the field
//! (`chunks[0].vector[2]`).
//!
//! Lines are deserialized straight into typed fields through seeds that track the path, so a
//! problem found anywhere (a string where a number belongs, a number too large for a float,
//! an unknown key, a key given twice at any depth, metadata nested too deeply) is reported at
//! the field where the parser met it. What the library checks itself (empty ids, text and id
//! sizes, the dimension) it reports with its own field names.
//!
//! Memory: the limits are enforced while parsing, not after. Counts (chunks per document,
//! ids per listing, vector dimensions), metadata depth and metadata size (a lower bound of
//! its canonical JSON, so nothing the store would accept is refused) stop the parse the
//! moment they are passed, and every value parsed is charged, at an estimate of what it
//! costs in memory, against a budget of [`PARSE_FACTOR`] times the line's length plus
//! [`PARSE_ALLOWANCE`]. A line's parsed form therefore never holds more than that: with the
//! default 64 MiB line limit, at most 4 × 64 MiB + 1 MiB beside the line itself.

use crate::{Chunk, Document, Limits, Metric, Op, Version, VersionKind};
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use std::cell::{Cell, RefCell};
use std::fmt;
use std::io::{self, BufRead};
use std::marker::PhantomData;

/// The default bound on one line, in bytes (without its newline).
pub const DEFAULT_MAX_LINE_BYTES: usize = 64 << 20;

/// A line's parsed form may take this many times the line's length in memory (estimated)...
pub const PARSE_FACTOR: usize = 4;

/// ...plus this much, so that short lines of small values are never refused for it.
pub const PARSE_ALLOWANCE: usize = 1 << 20;

/// The UTF-8 byte order mark, accepted (and dropped) at the start of the input.
const BOM: &[u8] = b"\xef\xbb\xbf";

/// A rejected line: what is wrong and, when it belongs to one, the field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineError {
    /// A path such as `chunks[0].vector[2]`; `None` when the line as a whole is wrong.
    pub field: Option<String>,
    /// What is wrong, in words.
    pub message: String,
}

impl LineError {
    /// An error of the line as a whole.
    pub fn whole(message: impl Into<String>) -> LineError {
        LineError {
            field: None,
            message: message.into(),
        }
    }

    /// An error at `field` (a path such as `chunks[0].vector[2]`).
    pub fn at(field: impl Into<String>, message: impl Into<String>) -> LineError {
        LineError {
            field: Some(field.into()),
            message: message.into(),
        }
    }
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.field {
            Some(field) => write!(f, "{field}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

/// Which operation a line asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpKind {
    /// `{"op":"upsert",...}`: a document revision ([`crate::Op::Upsert`]).
    Upsert,
    /// `{"op":"delete",...}`: a document's deletion ([`crate::Op::Delete`]).
    Delete,
    /// `{"op":"retain",...}`: a source's listing ([`crate::Op::Retain`]).
    Retain,
    /// `{"op":"store","metric":"l2","model":"…","tickets_issued":N}`: what an export says
    /// of the store it came from (its first line, when the store is not a plain cosine one
    /// without a model and tickets).
    Store,
}

impl OpKind {
    /// The `op` field's value that names this kind (`"upsert"`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            OpKind::Upsert => "upsert",
            OpKind::Delete => "delete",
            OpKind::Retain => "retain",
            OpKind::Store => "store",
        }
    }
}

/// What a report needs to name a line's operation after the operation itself was handed to
/// the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// The line's operation.
    pub kind: OpKind,
    /// Empty for a `store` line.
    pub source: String,
    /// `None` for a retain or a `store` line.
    pub id: Option<String>,
}

/// What a line asks the store to do.
#[derive(Debug)]
pub enum Line {
    /// An operation on documents.
    Op(Op),
    /// What the exported store was: the store must agree, and counts its tickets as issued
    /// ([`crate::Store::adopt_tickets`]).
    Store(StoreLine),
}

/// The fields of a `store` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreLine {
    /// The exported store's distance metric (`None`: not given).
    pub metric: Option<Metric>,
    /// The exported store's recorded embedding model (`None`: not given).
    pub model: Option<String>,
    /// How many tickets the exported store had issued (0 when not given).
    pub tickets_issued: u64,
}

impl StoreLine {
    /// The `store` line at the start of `text` (one whole line, with or without its line
    /// feed), if it is one (read before the store is opened, so that a new store gets the
    /// exported store's metric and model).
    pub fn peek(text: &[u8]) -> Option<StoreLine> {
        let text = text.strip_prefix(BOM).unwrap_or(text);
        let end = text.iter().position(|&b| b == b'\n').unwrap_or(text.len());
        match parse_line(&text[..end], VersionKind::Number).ok()?.op {
            Line::Store(line) => Some(line),
            Line::Op(_) => None,
        }
    }
}

/// A line parsed into an operation.
#[derive(Debug)]
pub struct Parsed {
    /// What names the line's operation in a report.
    pub header: Header,
    /// What the line asks the store to do.
    pub op: Line,
    /// The estimated memory its parsed form takes, in bytes (what it was charged).
    pub cost: usize,
}

/// Whether a line holds nothing but whitespace (such lines are skipped, not rejected).
pub fn is_blank(line: &[u8]) -> bool {
    line.iter().all(u8::is_ascii_whitespace)
}

/// Parses one line under the store's default [`Limits`]. `default_kind` is the version kind
/// of a line without `version_kind`.
pub fn parse_line(line: &[u8], default_kind: VersionKind) -> Result<Parsed, LineError> {
    parse_line_with(line, default_kind, &Limits::default())
}

/// [`parse_line`] under the given limits.
pub fn parse_line_with(
    line: &[u8],
    default_kind: VersionKind,
    limits: &Limits,
) -> Result<Parsed, LineError> {
    let text = std::str::from_utf8(line).map_err(|e| {
        let at = e.valid_up_to();
        let bom = if line[at..].starts_with(BOM) {
            " (a UTF-8 byte order mark, accepted only at the start of the input)"
        } else {
            ""
        };
        LineError::whole(format!("not valid UTF-8 (at byte {at} of the line){bom}"))
    })?;
    if text.starts_with('\u{feff}') {
        return Err(LineError::whole(
            "starts with a UTF-8 byte order mark, which is accepted only at the start of the \
             input; remove it",
        ));
    }
    let budget = line
        .len()
        .saturating_mul(PARSE_FACTOR)
        .saturating_add(PARSE_ALLOWANCE);
    let path = Path::new(limits, budget);
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let fields = LineSeed { path: &path }
        .deserialize(&mut deserializer)
        .and_then(|fields| deserializer.end().map(|()| fields))
        .map_err(|e| json_error(&e, path.failed_at.take()))?;
    let cost = budget - path.budget.get();
    build(fields, default_kind, cost)
}

/// Turns a serde_json error into a line error: the position suffix goes (a line is one line),
/// syntax errors say so and keep the column.
fn json_error(error: &serde_json::Error, field: Option<String>) -> LineError {
    let mut message = error.to_string();
    if error.line() != 0 {
        let suffix = format!(" at line {} column {}", error.line(), error.column());
        if let Some(stripped) = message.strip_suffix(&suffix) {
            message = stripped.to_string();
        }
    }
    let message = match error.classify() {
        serde_json::error::Category::Syntax | serde_json::error::Category::Eof => {
            let what = match message.as_str() {
                "recursion limit exceeded" => {
                    "nested too deeply (the limit is 128 levels)".to_string()
                }
                _ => message,
            };
            format!("invalid JSON: {what} at column {}", error.column())
        }
        _ => message,
    };
    LineError { field, message }
}

/// The fields of a line as they arrived, before the operation decides which it needs.
#[derive(Default)]
struct Fields {
    op: Option<String>,
    source: Option<String>,
    id: Option<String>,
    version: Option<u64>,
    version_kind: Option<VersionKind>,
    chunks: Option<Vec<(Chunk, Option<u64>)>>,
    meta: Option<serde_json::Value>,
    ids: Option<Vec<String>>,
    deleted: Option<bool>,
    content_hash: Option<String>,
    metric: Option<Metric>,
    model: Option<String>,
    tickets_issued: Option<u64>,
}

const LINE_FIELDS: &str =
    "op, source, id, version, version_kind, chunks, meta, ids, deleted, content_hash, metric, \
     model, tickets_issued";

fn build(fields: Fields, default_kind: VersionKind, cost: usize) -> Result<Parsed, LineError> {
    let required = |name: &str| LineError::at(name, "is required");
    let op = fields.op.ok_or_else(|| required("op"))?;
    let kind = match op.as_str() {
        "upsert" => OpKind::Upsert,
        "delete" => OpKind::Delete,
        "retain" => OpKind::Retain,
        "store" => OpKind::Store,
        other => {
            return Err(LineError::at(
                "op",
                format!("unknown op {other:?}; expected upsert, delete, retain or store"),
            ))
        }
    };
    let allowed: &[&str] = match kind {
        OpKind::Upsert => &[
            "source",
            "version",
            "version_kind",
            "id",
            "chunks",
            "meta",
            "deleted",
            "content_hash",
        ],
        OpKind::Delete => &["source", "version", "version_kind", "id", "deleted"],
        OpKind::Retain => &["source", "version", "version_kind", "ids"],
        OpKind::Store => &["metric", "model", "tickets_issued"],
    };
    let optional = [
        ("source", fields.source.is_some()),
        ("version", fields.version.is_some()),
        ("version_kind", fields.version_kind.is_some()),
        ("id", fields.id.is_some()),
        ("chunks", fields.chunks.is_some()),
        ("meta", fields.meta.is_some()),
        ("ids", fields.ids.is_some()),
        ("deleted", fields.deleted.is_some()),
        ("content_hash", fields.content_hash.is_some()),
        ("metric", fields.metric.is_some()),
        ("model", fields.model.is_some()),
        ("tickets_issued", fields.tickets_issued.is_some()),
    ];
    for (name, present) in optional {
        if present && !allowed.contains(&name) {
            return Err(LineError::at(
                name,
                format!("is not a field of a {}", kind.as_str()),
            ));
        }
    }
    if kind == OpKind::Store {
        let line = StoreLine {
            metric: fields.metric,
            model: fields.model,
            tickets_issued: fields.tickets_issued.unwrap_or(0),
        };
        let header = Header {
            kind,
            source: String::new(),
            id: None,
        };
        return Ok(Parsed {
            header,
            op: Line::Store(line),
            cost,
        });
    }
    // An export's `deleted` says which op the line is; it must agree.
    if let Some(deleted) = fields.deleted {
        if deleted != (kind == OpKind::Delete) {
            return Err(LineError::at(
                "deleted",
                format!(
                    "is {deleted}, but the op is {}: a tombstone is a delete, a live document \
                     an upsert",
                    kind.as_str()
                ),
            ));
        }
    }
    let source = fields.source.ok_or_else(|| required("source"))?;
    let id = match kind {
        OpKind::Retain => None,
        OpKind::Upsert | OpKind::Delete | OpKind::Store => {
            Some(fields.id.ok_or_else(|| required("id"))?)
        }
    };
    let ids = match kind {
        OpKind::Retain => Some(fields.ids.ok_or_else(|| required("ids"))?),
        OpKind::Upsert | OpKind::Delete | OpKind::Store => None,
    };
    let version = Version {
        kind: fields.version_kind.unwrap_or(default_kind),
        value: fields.version.ok_or_else(|| required("version"))?,
    };
    let header = Header {
        kind,
        source: source.clone(),
        id: id.clone(),
    };
    let op = match kind {
        OpKind::Upsert => {
            let mut chunks = Vec::new();
            for (index, (chunk, position)) in fields
                .chunks
                .ok_or_else(|| required("chunks"))?
                .into_iter()
                .enumerate()
            {
                if let Some(position) = position.filter(|&p| p != index as u64) {
                    return Err(LineError::at(
                        format!("chunks[{index}].position"),
                        format!(
                            "is {position}, but the chunk is at index {index}: chunks are given \
                             in position order"
                        ),
                    ));
                }
                chunks.push(chunk);
            }
            let document = Document {
                source,
                id: id.unwrap_or_default(),
                version,
                chunks,
                meta: fields.meta.unwrap_or(serde_json::Value::Null),
            };
            if let Some(expected) = fields.content_hash {
                let actual = document
                    .content_hash()
                    .map_err(|e| LineError::at(e.field.clone(), e.problem.clone()))?;
                if actual != expected {
                    return Err(LineError::at(
                        "content_hash",
                        format!(
                            "is not the hash of this line's metadata and chunks ({actual}): the \
                             line was changed after it was exported; drop content_hash to \
                             write it as it is"
                        ),
                    ));
                }
            }
            Op::Upsert(document)
        }
        OpKind::Delete => Op::Delete {
            source,
            id: id.unwrap_or_default(),
            version,
        },
        OpKind::Retain | OpKind::Store => Op::Retain {
            source,
            present: ids.unwrap_or_default(),
            version,
        },
    };
    Ok(Parsed {
        header,
        op: Line::Op(op),
        cost,
    })
}

// ---------------------------------------------------------------------------------------------
// Path-tracking deserialization.

enum Segment {
    Key(String),
    Index(usize),
}

impl Segment {
    fn copy(&self) -> Segment {
        match self {
            Segment::Key(key) => Segment::Key(key.clone()),
            Segment::Index(i) => Segment::Index(*i),
        }
    }
}

/// The path of the value being deserialized, and where the first failure happened. The
/// innermost failing value records itself; the outer ones see the record taken. It also
/// carries the limits and what is left of the line's memory budget.
struct Path {
    segments: RefCell<Vec<Segment>>,
    failed_at: RefCell<Option<String>>,
    limits: Limits,
    /// Bytes of the budget not yet charged.
    budget: Cell<usize>,
    /// The budget the line started with (for the message).
    budget_total: usize,
}

impl Path {
    fn new(limits: &Limits, budget: usize) -> Path {
        Path {
            segments: RefCell::new(Vec::new()),
            failed_at: RefCell::new(None),
            limits: limits.clone(),
            budget: Cell::new(budget),
            budget_total: budget,
        }
    }

    /// Charges `bytes` of estimated memory against the line's budget.
    fn charge<E: de::Error>(&self, bytes: usize) -> Result<(), E> {
        let left = self.budget.get();
        if bytes > left {
            self.budget.set(0);
            return Err(E::custom(format!(
                "the line would take more than {} bytes of memory once parsed ({PARSE_FACTOR} \
                 times its length plus {PARSE_ALLOWANCE}): its values are too many and too \
                 small for their size; split it into several lines",
                self.budget_total
            )));
        }
        self.budget.set(left - bytes);
        Ok(())
    }

    fn record(&self) {
        let mut failed_at = self.failed_at.borrow_mut();
        if failed_at.is_none() {
            *failed_at = Some(self.render());
        }
    }

    fn render(&self) -> String {
        let mut out = String::new();
        for segment in self.segments.borrow().iter() {
            match segment {
                Segment::Key(key) => {
                    let simple = !key.is_empty()
                        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                    match (out.is_empty(), simple) {
                        (true, true) => out.push_str(key),
                        (false, true) => {
                            out.push('.');
                            out.push_str(key);
                        }
                        (_, false) => out.push_str(&format!("[{key:?}]")),
                    }
                }
                Segment::Index(i) => out.push_str(&format!("[{i}]")),
            }
        }
        out
    }

    /// An error belonging to `segment` under the current path.
    fn fail<E: de::Error>(&self, segment: Segment, message: impl fmt::Display) -> E {
        self.segments.borrow_mut().push(segment);
        self.record();
        self.segments.borrow_mut().pop();
        E::custom(message)
    }
}

/// Deserializes `seed` one segment deeper, recording the path if it fails.
struct At<'p, S> {
    path: &'p Path,
    segment: Segment,
    seed: S,
}

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for At<'_, S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<S::Value, D::Error> {
        self.path.segments.borrow_mut().push(self.segment);
        let result = self.seed.deserialize(deserializer);
        if result.is_err() {
            self.path.record();
        }
        self.path.segments.borrow_mut().pop();
        result
    }
}

fn at<'p, S>(path: &'p Path, key: &str, seed: S) -> At<'p, S> {
    At {
        path,
        segment: Segment::Key(key.to_string()),
        seed,
    }
}

/// An array whose elements are each deserialized by a seed from `element`, at their index;
/// at most `max` of them (`what` names the limit), each charged `element_cost` bytes beside
/// what its own seed charges.
struct ArrayOf<'p, S> {
    path: &'p Path,
    element: fn(&'p Path) -> S,
    max: usize,
    what: &'static str,
    element_cost: usize,
}

impl<'de, 'p, S: DeserializeSeed<'de>> DeserializeSeed<'de> for ArrayOf<'p, S> {
    type Value = Vec<S::Value>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de, 'p, S: DeserializeSeed<'de>> Visitor<'de> for ArrayOf<'p, S> {
    type Value = Vec<S::Value>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        // A Vec grows by doubling: its slack is charged with each element.
        let slot = 2 * std::mem::size_of::<S::Value>() + self.element_cost;
        while let Some(value) = seq.next_element_seed(At {
            path: self.path,
            segment: Segment::Index(out.len()),
            seed: (self.element)(self.path),
        })? {
            if out.len() == self.max {
                return Err(de::Error::custom(format!(
                    "has more than {} {}; the limit is {}",
                    self.max, self.what, self.max
                )));
            }
            self.path.charge(slot)?;
            out.push(value);
        }
        Ok(out)
    }
}

/// A string, charged for its bytes.
struct StringSeed<'p> {
    path: &'p Path,
}

impl<'de> DeserializeSeed<'de> for StringSeed<'_> {
    type Value = String;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<String, D::Error> {
        let string = String::deserialize(deserializer)?;
        // The allocator rounds small allocations up.
        self.path.charge(string.len().max(16))?;
        Ok(string)
    }
}

/// `null` or a value.
struct Nullable<S>(S);

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for Nullable<S> {
    type Value = Option<S::Value>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_option(self)
    }
}

impl<'de, S: DeserializeSeed<'de>> Visitor<'de> for Nullable<S> {
    type Value = Option<S::Value>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("null or a value")
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        self.0.deserialize(deserializer).map(Some)
    }
}

/// A vector component: any JSON number that is finite as an `f32`.
struct FiniteF32;

impl<'de> DeserializeSeed<'de> for FiniteF32 {
    type Value = f32;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<f32, D::Error> {
        deserializer.deserialize_f64(self).map_err(|e| {
            // serde_json refuses numbers beyond f64 (1e999) before any visitor sees them.
            if e.to_string().starts_with("number out of range") {
                de::Error::custom("must be finite (the number is out of range)")
            } else {
                e
            }
        })
    }
}

impl<'de> Visitor<'de> for FiniteF32 {
    type Value = f32;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a number")
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<f32, E> {
        let narrowed = v as f32;
        if narrowed.is_finite() {
            Ok(narrowed)
        } else {
            Err(E::custom(format!(
                "must be finite ({v:e} is beyond the range of a 32-bit float)"
            )))
        }
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<f32, E> {
        Ok(v as f32)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<f32, E> {
        Ok(v as f32)
    }
}

/// One element of `chunks`.
struct ChunkSeed<'p> {
    path: &'p Path,
}

/// A chunk, and the `position` an export gives it (checked against its index).
type ChunkAndPosition = (Chunk, Option<u64>);

impl<'de> DeserializeSeed<'de> for ChunkSeed<'_> {
    type Value = ChunkAndPosition;

    fn deserialize<D: Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<ChunkAndPosition, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ChunkSeed<'_> {
    type Value = ChunkAndPosition;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a chunk object with text, vector and meta")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ChunkAndPosition, A::Error> {
        let path = self.path;
        let mut text = None;
        let mut vector = None;
        let mut meta = None;
        let mut position = None;
        let mut spaces = None;
        while let Some(key) = map.next_key::<String>()? {
            let duplicate = match key.as_str() {
                "text" => text
                    .replace(map.next_value_seed(at(path, "text", StringSeed { path }))?)
                    .is_some(),
                "vector" => vector
                    .replace(map.next_value_seed(at(
                        path,
                        "vector",
                        Nullable(ArrayOf {
                            path,
                            element: |_| FiniteF32,
                            max: path.limits.max_dimension,
                            what: "dimensions",
                            element_cost: 0,
                        }),
                    ))?)
                    .is_some(),
                "meta" => meta
                    .replace(map.next_value_seed(at(path, "meta", MetaSeed::root(path)))?)
                    .is_some(),
                "position" => position
                    .replace(map.next_value_seed(at(path, "position", PhantomData::<u64>))?)
                    .is_some(),
                "spaces" => spaces
                    .replace(map.next_value_seed(at(path, "spaces", SpacesSeed { path }))?)
                    .is_some(),
                _ => {
                    return Err(path.fail(
                        Segment::Key(key),
                        "unknown field; a chunk has text, vector, meta, position and spaces",
                    ))
                }
            };
            if duplicate {
                return Err(path.fail(Segment::Key(key), "appears twice"));
            }
        }
        let text = text.ok_or_else(|| path.fail(Segment::Key("text".into()), "is required"))?;
        Ok((
            Chunk {
                text,
                vector: vector.flatten(),
                meta: meta.unwrap_or(serde_json::Value::Null),
                spaces: spaces.unwrap_or_default(),
            },
            position,
        ))
    }
}

/// The most vector spaces one chunk's `spaces` may name.
const MAX_SPACES_PER_CHUNK: usize = 64;

/// A chunk's `spaces`: an object of vector space name to that space's vector (as `vector`,
/// under the same limits), no name twice, at most [`MAX_SPACES_PER_CHUNK`].
struct SpacesSeed<'p> {
    path: &'p Path,
}

impl<'de> DeserializeSeed<'de> for SpacesSeed<'_> {
    type Value = std::collections::BTreeMap<String, Vec<f32>>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for SpacesSeed<'_> {
    type Value = std::collections::BTreeMap<String, Vec<f32>>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object of vector space name to vector")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let path = self.path;
        let mut out = std::collections::BTreeMap::new();
        while let Some(name) = map.next_key::<String>()? {
            if out.contains_key(&name) {
                return Err(path.fail(Segment::Key(name), "appears twice"));
            }
            if out.len() == MAX_SPACES_PER_CHUNK {
                return Err(path.fail(
                    Segment::Key(name),
                    format!("is one space too many; the limit is {MAX_SPACES_PER_CHUNK}"),
                ));
            }
            path.charge(name.len().max(16) + MAP_ENTRY_BYTES)?;
            let vector = map.next_value_seed(at(
                path,
                &name,
                ArrayOf {
                    path,
                    element: |_| FiniteF32,
                    max: path.limits.max_dimension,
                    what: "dimensions",
                    element_cost: 0,
                },
            ))?;
            out.insert(name, vector);
        }
        Ok(out)
    }
}

/// A metadata value (`meta` of a line or of a chunk), built as a `serde_json::Value` under
/// the limits: nesting no deeper than `max_meta_depth` (as the store counts it), no key twice
/// in one object (at the top level and at every depth, as for the line's own fields), a
/// canonical JSON length (counted as a lower bound while parsing) within `max_meta_bytes`,
/// and every node charged against the line's memory budget.
struct MetaSeed<'p> {
    path: &'p Path,
    state: &'p MetaState,
    depth: usize,
}

/// What one metadata value's parse shares across its levels.
#[derive(Default)]
struct MetaState {
    /// A lower bound of the value's canonical JSON length so far.
    json_bytes: Cell<usize>,
    /// Keys and indices from the metadata's root to the value being parsed (for a duplicate
    /// key's field name).
    trail: RefCell<Vec<Segment>>,
}

/// What a `serde_json::Value` node costs beside its own heap (a slot in its parent's `Vec`
/// or map, with growth slack).
const VALUE_NODE_BYTES: usize = 2 * std::mem::size_of::<serde_json::Value>();
/// What a map entry costs beside its key's bytes and its value (a B-tree's share).
const MAP_ENTRY_BYTES: usize = 64;

impl<'p> MetaSeed<'p> {
    /// The seed of a whole metadata value; its state lives as long as the line's path.
    fn root(path: &'p Path) -> MetaRoot<'p> {
        MetaRoot { path }
    }

    fn add_json<E: de::Error>(&self, bytes: usize) -> Result<(), E> {
        let total = self.state.json_bytes.get().saturating_add(bytes);
        self.state.json_bytes.set(total);
        let max = self.path.limits.max_meta_bytes;
        if total > max {
            return Err(E::custom(format!(
                "is more than {max} bytes of JSON; the limit is {max}"
            )));
        }
        Ok(())
    }

    fn leaf<E: de::Error>(&self, json: usize, heap: usize) -> Result<(), E> {
        self.add_json(json)?;
        self.path.charge(heap)
    }

    fn open_container<E: de::Error>(&self) -> Result<(), E> {
        let max = self.path.limits.max_meta_depth;
        // The store's count: the root container is at depth 0, and one at `max` is too deep.
        if self.depth >= max {
            return Err(E::custom(format!(
                "nested too deeply (the limit is {max} levels)"
            )));
        }
        self.add_json(2)
    }

    fn child(&self) -> MetaSeed<'p> {
        MetaSeed {
            path: self.path,
            state: self.state,
            depth: self.depth + 1,
        }
    }
}

/// The entry point of [`MetaSeed`]: makes the state for one metadata value.
struct MetaRoot<'p> {
    path: &'p Path,
}

impl<'de> DeserializeSeed<'de> for MetaRoot<'_> {
    type Value = serde_json::Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        let state = MetaState::default();
        MetaSeed {
            path: self.path,
            state: &state,
            depth: 0,
        }
        .deserialize(deserializer)
    }
}

impl<'de> DeserializeSeed<'de> for MetaSeed<'_> {
    type Value = serde_json::Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

/// Decimal digits of `n`.
fn digits(mut n: u64) -> usize {
    let mut count = 1;
    while n >= 10 {
        n /= 10;
        count += 1;
    }
    count
}

impl<'de> Visitor<'de> for MetaSeed<'_> {
    type Value = serde_json::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        self.leaf(if v { 4 } else { 5 }, 0)?;
        Ok(serde_json::Value::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        self.leaf(digits(v.unsigned_abs()) + usize::from(v < 0), 0)?;
        Ok(serde_json::Value::from(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        self.leaf(digits(v), 0)?;
        Ok(serde_json::Value::from(v))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        // At least one character (as serde_json's own Value: a non-finite float is null).
        self.leaf(1, 0)?;
        Ok(serde_json::Number::from_f64(v)
            .map_or(serde_json::Value::Null, serde_json::Value::Number))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        self.leaf(v.len() + 2, v.len())?;
        Ok(serde_json::Value::String(v.to_string()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        self.leaf(v.len() + 2, v.len())?;
        Ok(serde_json::Value::String(v))
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        self.leaf(4, 0)?;
        Ok(serde_json::Value::Null)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        self.visit_none()
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        self.open_container()?;
        let mut items = Vec::new();
        loop {
            self.state
                .trail
                .borrow_mut()
                .push(Segment::Index(items.len()));
            let item = seq.next_element_seed(self.child());
            self.state.trail.borrow_mut().pop();
            let Some(item) = item? else { break };
            if !items.is_empty() {
                self.add_json(1)?;
            }
            self.path.charge(VALUE_NODE_BYTES)?;
            items.push(item);
        }
        Ok(serde_json::Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        self.open_container()?;
        let mut object = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            // The key's quotes, its colon, and the comma before every entry but the first.
            self.add_json(key.len() + 3 + usize::from(!object.is_empty()))?;
            self.path
                .charge(key.len() + VALUE_NODE_BYTES + MAP_ENTRY_BYTES)?;
            if object.contains_key(&key) {
                let mut segments = self.path.segments.borrow_mut();
                let depth = segments.len();
                segments.extend(self.state.trail.borrow().iter().map(Segment::copy));
                segments.push(Segment::Key(key));
                drop(segments);
                self.path.record();
                self.path.segments.borrow_mut().truncate(depth);
                return Err(de::Error::custom(
                    "appears twice in this object; a key may be given once",
                ));
            }
            self.state
                .trail
                .borrow_mut()
                .push(Segment::Key(key.clone()));
            let value = map.next_value_seed(self.child());
            self.state.trail.borrow_mut().pop();
            object.insert(key, value?);
        }
        Ok(serde_json::Value::Object(object))
    }
}

/// A whole line.
struct LineSeed<'p> {
    path: &'p Path,
}

impl<'de> DeserializeSeed<'de> for LineSeed<'_> {
    type Value = Fields;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Fields, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for LineSeed<'_> {
    type Value = Fields;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object with an \"op\" field")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Fields, A::Error> {
        let path = self.path;
        let mut fields = Fields::default();
        while let Some(key) = map.next_key::<String>()? {
            let string = || at(path, &key, PhantomData::<String>);
            let duplicate = match key.as_str() {
                "op" => fields.op.replace(map.next_value_seed(string())?).is_some(),
                "source" => fields
                    .source
                    .replace(map.next_value_seed(string())?)
                    .is_some(),
                "id" => fields.id.replace(map.next_value_seed(string())?).is_some(),
                "version" => fields
                    .version
                    .replace(map.next_value_seed(at(path, &key, PhantomData::<u64>))?)
                    .is_some(),
                "version_kind" => fields
                    .version_kind
                    .replace(map.next_value_seed(at(path, &key, PhantomData::<VersionKind>))?)
                    .is_some(),
                "chunks" => fields
                    .chunks
                    .replace(map.next_value_seed(at(
                        path,
                        &key,
                        ArrayOf {
                            path,
                            element: |path| ChunkSeed { path },
                            max: path.limits.max_chunks_per_document,
                            what: "chunks",
                            element_cost: 0,
                        },
                    ))?)
                    .is_some(),
                "meta" => fields
                    .meta
                    .replace(map.next_value_seed(at(path, &key, MetaSeed::root(path)))?)
                    .is_some(),
                "deleted" => fields
                    .deleted
                    .replace(map.next_value_seed(at(path, &key, PhantomData::<bool>))?)
                    .is_some(),
                "content_hash" => fields
                    .content_hash
                    .replace(map.next_value_seed(string())?)
                    .is_some(),
                "metric" => fields
                    .metric
                    .replace(map.next_value_seed(at(path, &key, PhantomData::<Metric>))?)
                    .is_some(),
                "model" => fields
                    .model
                    .replace(map.next_value_seed(string())?)
                    .is_some(),
                "tickets_issued" => fields
                    .tickets_issued
                    .replace(map.next_value_seed(at(path, &key, PhantomData::<u64>))?)
                    .is_some(),
                "ids" => fields
                    .ids
                    .replace(map.next_value_seed(at(
                        path,
                        &key,
                        ArrayOf {
                            path,
                            element: |path| StringSeed { path },
                            max: path.limits.max_listing_ids,
                            what: "ids",
                            element_cost: 0,
                        },
                    ))?)
                    .is_some(),
                _ => {
                    return Err(path.fail(
                        Segment::Key(key),
                        format!("unknown field; a line has {LINE_FIELDS}"),
                    ))
                }
            };
            if duplicate {
                return Err(path.fail(Segment::Key(key), "appears twice"));
            }
        }
        Ok(fields)
    }
}

// ---------------------------------------------------------------------------------------------
// Reading lines.

/// How reading one line went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadLine {
    /// The line is in the buffer (without its `\n` or `\r\n`).
    Complete,
    /// The line was longer than the bound; it was skipped without being held in memory.
    TooLong {
        /// The line's length in bytes (without its line end).
        bytes: u64,
    },
}

/// Reads lines one at a time, never holding more than `max_bytes` of one line. A UTF-8 byte
/// order mark at the very start of the input is dropped (editors on Windows write one).
pub struct LineReader<R> {
    inner: R,
    max_bytes: usize,
    at_start: bool,
}

impl<R: BufRead> LineReader<R> {
    /// Reads the lines of `inner`, each bounded to `max_bytes` (without its line end).
    pub fn new(inner: R, max_bytes: usize) -> LineReader<R> {
        LineReader {
            inner,
            max_bytes,
            at_start: true,
        }
    }

    /// The next line into `buf` (cleared first); `None` at the end of the input.
    pub fn read_line(&mut self, buf: &mut Vec<u8>) -> io::Result<Option<ReadLine>> {
        buf.clear();
        let mut started = false;
        let mut total: u64 = 0;
        let mut too_long = false;
        loop {
            let available = match self.inner.fill_buf() {
                Ok(available) => available,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if available.is_empty() {
                if !started {
                    return Ok(None);
                }
                break;
            }
            started = true;
            let (piece, consumed, end_of_line) = match available.iter().position(|&b| b == b'\n') {
                Some(i) => (&available[..i], i + 1, true),
                None => (available, available.len(), false),
            };
            total += piece.len() as u64;
            if !too_long {
                if buf.len() + piece.len() > self.max_bytes {
                    too_long = true;
                    buf.clear();
                    buf.shrink_to(1 << 16);
                } else {
                    buf.extend_from_slice(piece);
                }
            }
            self.inner.consume(consumed);
            if end_of_line {
                break;
            }
        }
        let first = std::mem::replace(&mut self.at_start, false);
        if too_long {
            return Ok(Some(ReadLine::TooLong { bytes: total }));
        }
        if first && buf.starts_with(BOM) {
            buf.drain(..BOM.len());
        }
        if buf.last() == Some(&b'\r') {
            buf.pop();
        }
        Ok(Some(ReadLine::Complete))
    }
}

// ---------------------------------------------------------------------------------------------
// The fuzz harness.

/// The harness of the `jsonl_line` fuzz target and of the corpus
/// replay test below: bytes read as an input of lines under a 4 KiB line bound and small
/// limits. Never a panic; a line is never longer than the bound; what is accepted is JSON
/// serde_json accepts too, within every count limit and the memory budget, and its header
/// names its operation; what is refused says why. Returns what broke.
#[doc(hidden)]
pub fn fuzz_lines(data: &[u8]) -> Result<(), String> {
    const MAX_LINE: usize = 4096;
    let limits = Limits {
        max_chunks_per_document: 8,
        max_listing_ids: 16,
        max_dimension: 16,
        max_meta_bytes: 256,
        max_meta_depth: 8,
        ..Limits::default()
    };
    let mut reader = LineReader::new(data, MAX_LINE);
    let mut buf = Vec::new();
    for _ in 0..256 {
        let Some(read) = reader.read_line(&mut buf).map_err(|e| e.to_string())? else {
            return Ok(());
        };
        if read == ReadLine::Complete && (buf.len() > MAX_LINE || buf.contains(&b'\n')) {
            return Err(format!(
                "a line of {} bytes came through the bound",
                buf.len()
            ));
        }
        if let ReadLine::TooLong { bytes } = read {
            if bytes <= MAX_LINE as u64 {
                return Err(format!("a line of {bytes} bytes was called too long"));
            }
            continue;
        }
        let parsed = match parse_line_with(&buf, VersionKind::Number, &limits) {
            Ok(parsed) => parsed,
            Err(error) if error.message.is_empty() => {
                return Err(format!("a rejection without a message: {error:?}"))
            }
            Err(_) => continue,
        };
        if serde_json::from_slice::<serde_json::Value>(&buf).is_err() {
            return Err(format!(
                "accepted a line serde_json refuses: {:?}",
                String::from_utf8_lossy(&buf)
            ));
        }
        if parsed.cost > buf.len() * PARSE_FACTOR + PARSE_ALLOWANCE {
            return Err(format!("cost {} over the budget", parsed.cost));
        }
        let header = &parsed.header;
        let within = match &parsed.op {
            Line::Store(_) => header.kind == OpKind::Store,
            Line::Op(Op::Upsert(doc)) => {
                header.kind == OpKind::Upsert
                    && header.id.as_deref() == Some(doc.id.as_str())
                    && header.source == doc.source
                    && doc.chunks.len() <= limits.max_chunks_per_document
                    && doc.chunks.iter().all(|c| {
                        c.vector
                            .as_ref()
                            .is_none_or(|v| v.len() <= limits.max_dimension)
                    })
            }
            Line::Op(Op::Delete { source, id, .. }) => {
                header.kind == OpKind::Delete
                    && header.id.as_deref() == Some(id.as_str())
                    && header.source == *source
            }
            Line::Op(Op::Retain {
                source, present, ..
            }) => {
                header.kind == OpKind::Retain
                    && header.source == *source
                    && present.len() <= limits.max_listing_ids
            }
        };
        if !within {
            return Err(format!(
                "accepted an operation past a limit or unlike its header: {:?}",
                String::from_utf8_lossy(&buf)
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
