//! Validation and hashing, done before any transaction starts.
//!
//! Invariant: everything about an operation that depends only on its input is checked here,
//! so a bad input is refused with an [`InputError`] naming the field and the store is left
//! exactly as it was (I9).

use crate::error::{InputError, WriteError};
use crate::options::{Limits, Metric, MAX_FIELD_BYTES, MAX_META_DEPTH};
use crate::policy::guard::ContentHash;
use crate::types::Version;
use crate::types::{Document, Op};

/// A validated upsert: canonical metadata, hashes, normalised vectors.
#[derive(Clone, Debug)]
pub(crate) struct PreparedDoc {
    pub source: String,
    pub id: String,
    pub version: Version,
    pub meta: String,
    pub content_hash: ContentHash,
    pub chunks: Vec<PreparedChunk>,
}

#[derive(Clone, Debug)]
pub(crate) struct PreparedChunk {
    pub text: String,
    pub meta: String,
    pub text_hash: ContentHash,
    pub vector: Option<Vec<f32>>,
    /// Vectors in other spaces, by space name (checked and normalised as `vector` is; the
    /// space's existence and dimension are checked against the stored spaces).
    pub spaces: Vec<(String, Vec<f32>)>,
}

/// A validated operation.
#[derive(Clone, Debug)]
pub(crate) enum PreparedOp {
    Upsert(PreparedDoc),
    Delete {
        source: String,
        id: String,
        version: Version,
    },
    Retain {
        source: String,
        /// Sorted, without duplicates.
        present: Vec<String>,
        version: Version,
        members_hash: ContentHash,
    },
}

/// Checks a source name or document id.
pub(crate) fn check_name(field: &str, value: &str, limits: &Limits) -> Result<(), InputError> {
    if value.is_empty() {
        return Err(InputError::new(field, "must not be empty"));
    }
    if value.len() > limits.max_id_bytes {
        return Err(InputError::new(
            field,
            format!(
                "is {} bytes; the limit is {}",
                value.len(),
                limits.max_id_bytes
            ),
        ));
    }
    if value.contains('\0') {
        return Err(InputError::new(field, "must not contain a NUL character"));
    }
    Ok(())
}

/// Whether `value` nests arrays and objects deeper than `limit`, found without recursion: a
/// value built in memory can be nested far deeper than the stack allows.
fn nested_deeper_than(value: &serde_json::Value, limit: usize) -> bool {
    let mut pending: Vec<(&serde_json::Value, usize)> = vec![(value, 0)];
    while let Some((value, depth)) = pending.pop() {
        match value {
            serde_json::Value::Array(items) if depth < limit => {
                pending.extend(items.iter().map(|item| (item, depth + 1)));
            }
            serde_json::Value::Object(map) if depth < limit => {
                pending.extend(map.values().map(|item| (item, depth + 1)));
            }
            serde_json::Value::Array(_) | serde_json::Value::Object(_) => return true,
            _ => {}
        }
    }
    false
}

/// Refuses metadata nested deeper than the limit, before anything recursive (cloning,
/// canonical JSON, dropping) touches it.
pub(crate) fn check_depths(doc: &Document, limits: &Limits) -> Result<(), InputError> {
    let max_depth = limits.max_meta_depth.min(MAX_META_DEPTH);
    let too_deep = |field: String| {
        InputError::new(
            field,
            format!("nests arrays and objects deeper than {max_depth} levels"),
        )
    };
    if nested_deeper_than(&doc.meta, max_depth) {
        return Err(too_deep("meta".to_string()));
    }
    for (position, chunk) in doc.chunks.iter().enumerate() {
        if nested_deeper_than(&chunk.meta, max_depth) {
            return Err(too_deep(format!("chunks[{position}].meta")));
        }
    }
    Ok(())
}

/// Drops a JSON value without recursion (serde_json's own drop recurses once per level, and a
/// hostile value can be nested deeper than the stack).
fn dismantle(value: serde_json::Value) {
    let mut pending = vec![value];
    while let Some(mut value) = pending.pop() {
        match &mut value {
            serde_json::Value::Array(items) => pending.append(items),
            serde_json::Value::Object(map) => {
                pending.extend(std::mem::take(map).into_iter().map(|(_, v)| v));
            }
            _ => {}
        }
    }
}

fn check_meta(
    field: &str,
    value: &serde_json::Value,
    limits: &Limits,
) -> Result<String, InputError> {
    // Checked before anything recursive (canonical JSON), and kept within what a read can
    // parse back, so that accepted metadata is always readable.
    let max_depth = limits.max_meta_depth.min(MAX_META_DEPTH);
    if nested_deeper_than(value, max_depth) {
        return Err(InputError::new(
            field,
            format!("nests arrays and objects deeper than {max_depth} levels"),
        ));
    }
    let json = canonical_json(value);
    let max_bytes = limits.max_meta_bytes.min(MAX_FIELD_BYTES);
    if json.len() > max_bytes {
        return Err(InputError::new(
            field,
            format!("is {} bytes of JSON; the limit is {max_bytes}", json.len()),
        ));
    }
    Ok(json)
}

/// The largest squared length of an L2 or dot-product vector: an eighth of `f32::MAX`, so
/// that `|a - b|^2` and `a . b` of two such vectors stay finite in f32, rounding included.
pub(crate) const MAX_SQUARED_NORM: f64 = f32::MAX as f64 / 8.0;

/// Validates chunk `position`'s vector in space `space` as [`prepare_vector`] does, errors
/// naming `chunks[{position}].spaces.{space}`. The default space's vector is
/// `Chunk::vector`, not an entry here.
fn prepare_space_vector(
    position: usize,
    space: String,
    vector: Vec<f32>,
    metric: Metric,
    limits: &Limits,
) -> Result<(String, Vec<f32>), InputError> {
    let field = format!("chunks[{position}].spaces.{space}");
    if space == crate::types::DEFAULT_SPACE {
        return Err(InputError::new(
            field,
            "is the default space, whose vector is Chunk::vector",
        ));
    }
    crate::policy::space::check_space_name(&field, &space)?;
    let vector = prepare_vector(position, vector, metric, limits).map_err(|e| {
        let old = format!("chunks[{position}].vector");
        InputError::new(e.field.replacen(&old, &field, 1), e.problem)
    })?;
    Ok((space, vector))
}

/// Validates a vector and, for cosine, normalises it to unit length.
pub(crate) fn prepare_vector(
    position: usize,
    mut vector: Vec<f32>,
    metric: Metric,
    limits: &Limits,
) -> Result<Vec<f32>, InputError> {
    let field = || format!("chunks[{position}].vector");
    if vector.is_empty() {
        return Err(InputError::new(field(), "must not be empty"));
    }
    if vector.len() > limits.max_dimension {
        return Err(InputError::new(
            field(),
            format!(
                "has {} dimensions; the limit is {}",
                vector.len(),
                limits.max_dimension
            ),
        ));
    }
    // The squares of finite f32 values cannot overflow an f64 sum, so a sum that is not
    // finite means a value that is not: the slow search for it runs only then.
    let squares = squared_norm(&vector);
    if !squares.is_finite() {
        if let Some(i) = vector.iter().position(|x| !x.is_finite()) {
            return Err(InputError::new(
                format!("chunks[{position}].vector[{i}]"),
                format!("is {}; vectors must be finite", vector[i]),
            ));
        }
    }
    // L2 and dot products are computed in f32: past this length a distance between two
    // vectors (|a - b|^2 <= 2|a|^2 + 2|b|^2) or a product could overflow to infinity, and a
    // far vector would rank beside a near one. Such vectors are refused; cosine normalises.
    if metric != Metric::Cosine && squares > MAX_SQUARED_NORM {
        return Err(InputError::new(
            field(),
            format!(
                "has squared length {squares:e}; {metric} vectors may have at most {MAX_SQUARED_NORM:e} (distances would overflow f32)"
            ),
        ));
    }
    if metric == Metric::Cosine {
        let norm = squares.sqrt();
        if norm == 0.0 || !norm.is_finite() {
            return Err(InputError::new(
                field(),
                "has zero length and cannot be normalised for cosine",
            ));
        }
        // A vector of unit length within f32 rounding (each component rounded to f32 moves
        // the squared length by at most `f32::EPSILON` in all) is kept as given: dividing by
        // its length again would only move last bits, and a stored vector written again (an
        // export ingested into a new store) must keep its bits.
        if (squares - 1.0).abs() > f64::from(f32::EPSILON) {
            for x in &mut vector {
                *x = (f64::from(*x) / norm) as f32;
            }
        }
    }
    Ok(vector)
}

/// The sum of the squares of `vector`, in f64 (each square of an f32 is exact there). It is
/// summed in eight independent lanes, added pairwise at the end, rather than one running sum:
/// a single chain of dependent additions is what made this the costliest step of preparing
/// a vector. Vectors shorter than eight are summed in order.
fn squared_norm(vector: &[f32]) -> f64 {
    let mut lanes = [0f64; 8];
    let mut blocks = vector.chunks_exact(8);
    for block in &mut blocks {
        for (lane, x) in lanes.iter_mut().zip(block) {
            *lane += f64::from(*x) * f64::from(*x);
        }
    }
    let tail = blocks
        .remainder()
        .iter()
        .map(|x| f64::from(*x) * f64::from(*x))
        .sum::<f64>();
    let [a, b, c, d, e, f, g, h] = lanes;
    (((a + e) + (b + f)) + ((c + g) + (d + h))) + tail
}

/// The content hash: blake3 over the document metadata and, for each chunk in order, the
/// blake3 hash of its text and its metadata; every field is length-prefixed. Hashing the
/// text hashes (which the store keeps per chunk anyway) reads each text once. Vectors are
/// not part of it: one store is one embedding space, so the same text has the same meaning.
pub(crate) fn content_hash(meta: &str, chunks: &[PreparedChunk]) -> ContentHash {
    content_hash_of(meta, chunks.iter().map(|c| (c.text_hash, c.meta.as_str())))
}

/// [`Document::content_hash`]: the hash [`prepare_document`] computes, without the limits
/// on sizes (only the nesting that canonical JSON can walk).
pub(crate) fn document_content_hash(doc: &Document) -> Result<String, InputError> {
    let canonical = |field: &str, value: &serde_json::Value| {
        if nested_deeper_than(value, MAX_META_DEPTH) {
            return Err(InputError::new(
                field,
                format!("nests arrays and objects deeper than {MAX_META_DEPTH} levels"),
            ));
        }
        Ok(canonical_json(value))
    };
    let meta = canonical("meta", &doc.meta)?;
    let chunks = doc
        .chunks
        .iter()
        .enumerate()
        .map(|(position, chunk)| {
            canonical(&format!("chunks[{position}].meta"), &chunk.meta)
                .map(|meta| (chunk.text.as_str(), meta))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let hash = stored_content_hash(
        &meta,
        chunks.iter().map(|(text, meta)| (*text, meta.as_str())),
    );
    Ok(hex(&hash))
}

/// The content hash of a stored revision: its metadata and its chunks' texts and metadata
/// (what [`content_hash`] hashes when the revision was written). The embedded store keeps
/// only its [`ContentKey`](crate::policy::guard::ContentKey) in the document's row, and computes the
/// whole hash where it is shown (`get`, the export) and where `verify` checks that key.
pub(crate) fn stored_content_hash<'a>(
    meta: &str,
    chunks: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> ContentHash {
    content_hash_of(
        meta,
        chunks
            .into_iter()
            .map(|(text, meta)| (text_hash(text), meta)),
    )
}

/// [`content_hash`] over each chunk's text hash and metadata.
fn content_hash_of<'a>(
    meta: &str,
    chunks: impl Iterator<Item = (ContentHash, &'a str)>,
) -> ContentHash {
    let mut hasher = blake3::Hasher::new();
    hasher.update(b"ratchetdb content v1\0");
    let mut field = |bytes: &[u8]| {
        hasher.update(&(bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    };
    field(meta.as_bytes());
    for (text_hash, meta) in chunks {
        field(&text_hash);
        field(meta.as_bytes());
    }
    *hasher.finalize().as_bytes()
}

/// Canonical JSON: object keys sorted at every depth, whatever map type serde_json was built
/// with (so the content hash does not depend on a cargo feature of a dependency).
pub(crate) fn canonical_json(value: &serde_json::Value) -> String {
    fn write(value: &serde_json::Value, out: &mut String) {
        match value {
            serde_json::Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                out.push('{');
                for (i, key) in keys.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&serde_json::Value::String(key.clone()).to_string());
                    out.push(':');
                    if let Some(v) = map.get(key) {
                        write(v, out);
                    }
                }
                out.push('}');
            }
            serde_json::Value::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write(item, out);
                }
                out.push(']');
            }
            scalar => out.push_str(&scalar.to_string()),
        }
    }
    let mut out = String::new();
    write(value, &mut out);
    out
}

/// Lowercase hexadecimal of `bytes` (content hashes as reads show them).
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub(crate) fn text_hash(text: &str) -> ContentHash {
    *blake3::hash(text.as_bytes()).as_bytes()
}

/// The hard ceiling of chunks per document (2^24): the embedded store gives each chunk's
/// vector a slot of its document's slot space of this size.
pub(crate) const MAX_CHUNKS: usize = 1 << 24;

/// A revision's chunks are one row and its vectors another: both must stay readable
/// (the embedded store's largest row, for the chunks) and modest in memory.
pub(crate) const MAX_DOCUMENT_TEXT_BYTES: usize = 48 << 20;
/// See [`MAX_DOCUMENT_TEXT_BYTES`]: the ceiling of a revision's vectors, `chunks * dimension * 4`.
pub(crate) const MAX_DOCUMENT_VECTOR_BYTES: usize = 256 << 20;

fn check_document_size(
    chunks: &[PreparedChunk],
    dimension: Option<usize>,
) -> Result<(), InputError> {
    // 48 bytes per chunk: the text hash and the length prefixes, generously.
    let text: usize = chunks
        .iter()
        .map(|c| c.text.len().saturating_add(c.meta.len()).saturating_add(48))
        .fold(0, usize::saturating_add);
    if text > MAX_DOCUMENT_TEXT_BYTES {
        return Err(InputError::new(
            "chunks",
            format!("text and metadata total {text} bytes; a document holds at most {MAX_DOCUMENT_TEXT_BYTES}"),
        ));
    }
    let vectors = chunks
        .len()
        .saturating_mul(dimension.unwrap_or(0))
        .saturating_mul(4);
    if vectors > MAX_DOCUMENT_VECTOR_BYTES {
        return Err(InputError::new(
            "chunks",
            format!("{} chunks of {}-dimensional vectors are {vectors} bytes; a document holds at most {MAX_DOCUMENT_VECTOR_BYTES}", chunks.len(), dimension.unwrap_or(0)),
        ));
    }
    Ok(())
}

/// Validates and hashes a document. `dimension` is the store's, if it has one yet.
pub(crate) fn prepare_document(
    doc: Document,
    metric: Metric,
    dimension: Option<usize>,
    limits: &Limits,
) -> Result<PreparedDoc, WriteError> {
    if let Err(error) = check_depths(&doc, limits) {
        dismantle(doc.meta);
        for chunk in doc.chunks {
            dismantle(chunk.meta);
        }
        return Err(error.into());
    }
    check_name("source", &doc.source, limits)?;
    check_name("id", &doc.id, limits)?;
    let max_chunks = limits.max_chunks_per_document.min(MAX_CHUNKS);
    if doc.chunks.len() > max_chunks {
        return Err(InputError::new(
            "chunks",
            format!("has {} chunks; the limit is {max_chunks}", doc.chunks.len()),
        )
        .into());
    }
    let meta = check_meta("meta", &doc.meta, limits)?;
    let mut expected = dimension;
    let mut chunks = Vec::with_capacity(doc.chunks.len());
    for (position, chunk) in doc.chunks.into_iter().enumerate() {
        let max_text = limits.max_chunk_text_bytes.min(MAX_FIELD_BYTES);
        if chunk.text.len() > max_text {
            return Err(InputError::new(
                format!("chunks[{position}].text"),
                format!("is {} bytes; the limit is {max_text}", chunk.text.len()),
            )
            .into());
        }
        let chunk_meta = check_meta(&format!("chunks[{position}].meta"), &chunk.meta, limits)?;
        let vector = match chunk.vector {
            None => None,
            Some(vector) => {
                let found = vector.len();
                match expected {
                    Some(dim) if dim != found => {
                        return Err(WriteError::DimensionMismatch {
                            position,
                            expected: dim,
                            found,
                        })
                    }
                    _ => expected = Some(found),
                }
                Some(prepare_vector(position, vector, metric, limits)?)
            }
        };
        let mut spaces = Vec::with_capacity(chunk.spaces.len());
        for (space, vector) in chunk.spaces {
            spaces.push(prepare_space_vector(
                position, space, vector, metric, limits,
            )?);
        }
        chunks.push(PreparedChunk {
            text_hash: text_hash(&chunk.text),
            text: chunk.text,
            meta: chunk_meta,
            vector,
            spaces,
        });
    }
    check_document_size(&chunks, expected)?;
    let content_hash = content_hash(&meta, &chunks);
    Ok(PreparedDoc {
        source: doc.source,
        id: doc.id,
        version: doc.version,
        meta,
        content_hash,
        chunks,
    })
}

/// Validates any operation.
pub(crate) fn prepare_op(
    op: Op,
    metric: Metric,
    dimension: Option<usize>,
    limits: &Limits,
) -> Result<PreparedOp, WriteError> {
    match op {
        Op::Upsert(doc) => Ok(PreparedOp::Upsert(prepare_document(
            doc, metric, dimension, limits,
        )?)),
        Op::Delete {
            source,
            id,
            version,
        } => {
            let delete = prepare_delete(source, id, version, limits)?;
            Ok(PreparedOp::Delete {
                source: delete.source,
                id: delete.id,
                version: delete.version,
            })
        }
        Op::Retain {
            source,
            present,
            version,
        } => {
            let retain = prepare_retain(source, present, version, limits)?;
            Ok(PreparedOp::Retain {
                source: retain.source,
                present: retain.present,
                version: retain.version,
                members_hash: retain.members_hash,
            })
        }
    }
}

/// A validated delete.
#[derive(Clone, Debug)]
pub(crate) struct PreparedDelete {
    pub source: String,
    pub id: String,
    pub version: Version,
}

/// Validates a delete.
pub(crate) fn prepare_delete(
    source: String,
    id: String,
    version: Version,
    limits: &Limits,
) -> Result<PreparedDelete, WriteError> {
    check_name("source", &source, limits)?;
    check_name("id", &id, limits)?;
    Ok(PreparedDelete {
        source,
        id,
        version,
    })
}

/// A validated listing.
#[derive(Clone, Debug)]
pub(crate) struct PreparedRetain {
    pub source: String,
    /// Sorted, without duplicates.
    pub present: Vec<String>,
    pub version: Version,
    pub members_hash: ContentHash,
}

/// Validates a listing: names checked, ids sorted and deduplicated, and hashed.
pub(crate) fn prepare_retain(
    source: String,
    mut present: Vec<String>,
    version: Version,
    limits: &Limits,
) -> Result<PreparedRetain, WriteError> {
    check_name("source", &source, limits)?;
    if present.len() > limits.max_listing_ids {
        return Err(InputError::new(
            "ids",
            format!(
                "has {} ids; the limit is {}",
                present.len(),
                limits.max_listing_ids
            ),
        )
        .into());
    }
    for (i, id) in present.iter().enumerate() {
        check_name(&format!("ids[{i}]"), id, limits)?;
    }
    present.sort_unstable();
    present.dedup();
    let mut hasher = blake3::Hasher::new();
    for id in &present {
        hasher.update(&(id.len() as u64).to_le_bytes());
        hasher.update(id.as_bytes());
    }
    Ok(PreparedRetain {
        source,
        present,
        version,
        members_hash: *hasher.finalize().as_bytes(),
    })
}

// The content hash is the policy's: defined here, on the shared vocabulary's type.
impl Document {
    /// The content hash the store records for this document, in hex as
    /// [`StoredDocument::content_hash`](crate::StoredDocument::content_hash) shows it: its
    /// metadata and its chunks' texts and metadata (canonical JSON), not its vectors or
    /// version. Metadata nested deeper than any store accepts is refused, naming the field.
    pub fn content_hash(&self) -> Result<String, crate::InputError> {
        document_content_hash(self)
    }
}

/// A prepared chunk and document for the unit tests of the rules that take them
/// (`policy::revision`, the embedded store's revision plan).
#[cfg(test)]
pub(crate) mod fixtures {
    use super::{text_hash, PreparedChunk, PreparedDoc};
    use crate::types::Version;

    /// A chunk with empty metadata.
    pub(crate) fn chunk(text: &str, vector: Option<Vec<f32>>) -> PreparedChunk {
        PreparedChunk {
            text: text.to_string(),
            meta: "{}".to_string(),
            text_hash: text_hash(text),
            vector,
            spaces: Vec::new(),
        }
    }

    /// Document `s/d` at version 2 with `chunks`.
    pub(crate) fn doc(chunks: Vec<PreparedChunk>) -> PreparedDoc {
        PreparedDoc {
            source: "s".to_string(),
            id: "d".to_string(),
            version: Version::number(2),
            meta: "{}".to_string(),
            content_hash: [0; 32],
            chunks,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sequential(vector: &[f32]) -> f64 {
        vector.iter().map(|x| f64::from(*x) * f64::from(*x)).sum()
    }

    fn values(n: usize, seed: u32) -> Vec<f32> {
        (0..n as u32)
            .map(|i| {
                let h = (i.wrapping_mul(2_654_435_761) ^ seed).wrapping_mul(40_503);
                (h % 20_001) as f32 / 1_000.0 - 10.0
            })
            .collect()
    }

    #[test]
    fn squared_norm_agrees_with_the_running_sum() {
        // From 1: an empty vector is refused before its norm is taken.
        for n in 1..70 {
            for seed in 0..5 {
                let v = values(n, seed);
                let (fast, slow) = (squared_norm(&v), sequential(&v));
                if n < 8 {
                    assert_eq!(fast.to_bits(), slow.to_bits(), "n={n}: summed in order");
                } else {
                    assert!(
                        (fast - slow).abs() <= slow * 1e-14,
                        "n={n}: {fast} vs {slow}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_value_that_is_not_finite_is_named_wherever_it_is() {
        let limits = Limits::default();
        for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
            for at in [0, 7, 8, 9, 383] {
                let mut v = values(384, 1);
                v[at] = bad;
                for metric in [Metric::Cosine, Metric::L2] {
                    let error =
                        prepare_vector(3, v.clone(), metric, &limits).expect_err("not finite");
                    assert_eq!(
                        error.field,
                        format!("chunks[3].vector[{at}]"),
                        "{bad} {metric:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_first_value_that_is_not_finite_is_the_one_named() {
        let mut v = values(384, 2);
        v[9] = f32::NAN;
        v[3] = f32::INFINITY;
        v[200] = f32::NEG_INFINITY;
        let error = prepare_vector(0, v, Metric::Cosine, &Limits::default()).expect_err("bad");
        assert_eq!(error.field, "chunks[0].vector[3]");
    }

    #[test]
    fn the_largest_finite_values_are_normalised_not_refused() {
        let v = vec![f32::MAX; 4096];
        let unit = prepare_vector(0, v, Metric::Cosine, &Limits::default()).expect("finite");
        let norm = sequential(&unit).sqrt();
        assert!((norm - 1.0).abs() < 1e-6, "norm {norm}");
    }

    #[test]
    fn canonical_json_sorts_keys() {
        let value: serde_json::Value =
            serde_json::from_str(r#"{"b":[1,{"z":1,"a":2}],"a":"x\"y"}"#).unwrap_or_default();
        assert_eq!(
            canonical_json(&value),
            r#"{"a":"x\"y","b":[1,{"a":2,"z":1}]}"#
        );
    }
}
