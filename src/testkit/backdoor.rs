//! Reaching states that take too long to reach by writing: rewriting a row behind the guard, for
//! tests only.

use crate::backend::redb::schema::{self, DocRow, Layout, RevisionRows, VectorData, VectorsRow};
use crate::backend::redb::text::row as text_row;
use std::path::Path;

/// Slots per document: the size of a document's vector id space.
pub const SLOTS_PER_DOC: u64 = schema::SLOTS_PER_DOC;

/// Sets the next vector slot of document `source/id` in the closed store at `path`, as if
/// its revisions had used that many slots. For testing what happens when a document's slot
/// space runs out, which takes millions of revisions to reach by writing.
pub fn set_next_slot(path: &Path, source: &str, id: &str, next_slot: u32) -> Result<(), String> {
    rewrite_document_row(path, source, id, |row| row.next_slot = next_slot)
}

/// Replaces the stored metadata of document `source/id` in the closed store at `path` with
/// `meta`, as it is (not checked to be JSON). For testing what reads and searches make of
/// metadata damaged on disk.
pub fn set_document_meta(path: &Path, source: &str, id: &str, meta: &str) -> Result<(), String> {
    rewrite_document_row(path, source, id, |row| row.meta = meta.to_string())
}

/// How many of a chunks row's `chunks_len` encoded bytes ride at the end of a vectors row
/// whose vectors take `vectors_len` bytes (schema 3's spill, decided in `schema/spill.rs`):
/// for benches that write the layout straight into redb.
pub fn spill_len(vectors_len: usize, chunks_len: usize) -> usize {
    schema::spill_len_for_harness(vectors_len, chunks_len)
}

/// Distances computed by graph searches on the calling thread so far (the upper layers'
/// descent and layer 0): the search benches divide the difference over a pass by its
/// queries to report distances per query.
pub fn graph_search_distances() -> u64 {
    crate::index::graph_counted::distances()
}

/// What a store's in-memory text index holds and the heap it takes.
pub use crate::backend::redb::derived::text_cache::Footprint as TextIndexFootprint;

/// The footprint of `store`'s in-memory text index as the last text search left it (`None`:
/// no text search yet, or a PostgreSQL store).
pub fn text_index_footprint(store: &crate::Store) -> Option<TextIndexFootprint> {
    store.text_index_footprint()
}

/// The internal document id a vector id carries.
pub fn vector_owner(vector_id: u64) -> u64 {
    schema::split_vector_id(vector_id).0
}

/// Rewrites every coded vectors row of the closed store at `path` as a schema-7 build writes
/// the revision (raw, the chunks row split by the raw row's length) and stamps the file
/// schema 7, leaving every other row as it is: the file a schema-7 build would have written.
/// Returns how many rows it rewrote. A store that trained a text codec (schema 9) keeps it,
/// its compressed texts and its text index's compressed terms (schema 10), which no schema-7
/// build reads (this build does, a schema-7 file being read as it is): use a store of less
/// than 16 KiB of text for a schema-7 build's file.
pub fn rewrite_as_schema_7(path: &Path) -> Result<u64, String> {
    use redb::ReadableTable;
    let err = |e: redb::Error| e.to_string();
    let db = redb::Database::open(path).map_err(|e| err(e.into()))?;
    let txn = db.begin_write().map_err(|e| err(e.into()))?;
    let mut rewritten = 0;
    {
        let mut vectors = txn.open_table(schema::VECTORS).map_err(|e| err(e.into()))?;
        let mut chunks = txn.open_table(schema::CHUNKS).map_err(|e| err(e.into()))?;
        let mut coded: Vec<(u64, Vec<u8>)> = Vec::new();
        for entry in vectors.iter().map_err(|e| err(e.into()))? {
            let (key, value) = entry.map_err(|e| err(e.into()))?;
            let row = VectorsRow::parse(value.value()).map_err(|c| c.detail)?;
            if row.layout() != Layout::Raw {
                coded.push((key.value(), value.value().to_vec()));
            }
        }
        for (doc, bytes) in coded {
            let row = VectorsRow::parse(&bytes).map_err(|c| c.detail)?;
            let chunks_row = chunks
                .get(doc)
                .map_err(|e| err(e.into()))?
                .map(|b| b.value().to_vec())
                .unwrap_or_default();
            let joined = schema::join_chunk_bytes(&chunks_row, &row);
            let raw = row.to_raw();
            let raw = VectorsRow::parse(&raw).map_err(|c| c.detail)?;
            let entries: Vec<(u32, VectorData<'_>)> = raw
                .raw_entries()
                .map_err(|c| c.detail)?
                .into_iter()
                .map(|(slot, b)| (slot, VectorData::Raw(b)))
                .collect();
            let rows = RevisionRows::split_raw(&joined, &entries);
            let encoded = rows.vectors_row(&entries).map_err(|c| c.detail)?;
            vectors
                .insert(doc, encoded.as_slice())
                .map_err(|e| err(e.into()))?;
            chunks
                .insert(doc, rows.chunks_row())
                .map_err(|e| err(e.into()))?;
            rewritten += 1;
        }
        txn.open_table(schema::META)
            .map_err(|e| err(e.into()))?
            .insert(
                schema::meta_key::SCHEMA_VERSION,
                7u64.to_le_bytes().as_slice(),
            )
            .map_err(|e| err(e.into()))?;
    }
    txn.commit().map_err(|e| err(e.into()))?;
    Ok(rewritten)
}

/// `bytes` in the raw vectors-row layout if they are a coded vectors row (schema 8; its
/// spill kept), and as they are otherwise: for tests that compare rows' bytes across
/// schemas.
pub fn raw_vectors_row(bytes: &[u8]) -> Vec<u8> {
    match VectorsRow::parse(bytes) {
        Ok(row) if row.layout() != Layout::Raw => row.to_raw().into_owned(),
        _ => bytes.to_vec(),
    }
}

/// A vectors row holding `vectors` (slots 0, 1, ...) and no spill, in the layout a writer
/// gives them (`coded: false` forces the raw one), and whether it came out coded: for the
/// decode bench.
pub fn vectors_row(vectors: &[Vec<f32>], coded: bool) -> Result<(Vec<u8>, bool), String> {
    let entries: Vec<(u32, VectorData<'_>)> = vectors
        .iter()
        .enumerate()
        .map(|(slot, v)| (slot as u32, VectorData::Floats(v)))
        .collect();
    let rows = if coded {
        RevisionRows::split(&[], &entries)
    } else {
        RevisionRows::split_raw(&[], &entries)
    };
    let bytes = rows.vectors_row(&entries).map_err(|c| c.detail)?;
    let layout = VectorsRow::parse(&bytes).map_err(|c| c.detail)?.layout();
    Ok((bytes, layout != Layout::Raw))
}

/// Decodes every vector of every row in `rows` into `out` (cleared first), as the index load
/// does row by row: the decode bench's unit of work. Returns the floats decoded.
pub fn decode_vectors_rows(rows: &[Vec<u8>], out: &mut Vec<f32>) -> Result<usize, String> {
    out.clear();
    for bytes in rows {
        let row = VectorsRow::parse(bytes).map_err(|c| c.detail)?;
        for vector in row.vectors() {
            vector.extend_floats(out);
        }
    }
    Ok(out.len())
}

/// How many of the vectors rows of the closed store at `path` are raw and how many coded
/// (`(raw, coded)`).
pub fn vectors_row_layouts(path: &Path) -> Result<(u64, u64), String> {
    use redb::{ReadableDatabase, ReadableTable};
    let err = |e: redb::Error| e.to_string();
    let db = redb::Database::open(path).map_err(|e| err(e.into()))?;
    let txn = db.begin_read().map_err(|e| err(e.into()))?;
    let vectors = txn.open_table(schema::VECTORS).map_err(|e| err(e.into()))?;
    let (mut raw, mut coded) = (0, 0);
    for entry in vectors.iter().map_err(|e| err(e.into()))? {
        let (_, value) = entry.map_err(|e| err(e.into()))?;
        match VectorsRow::parse(value.value())
            .map_err(|c| c.detail)?
            .layout()
        {
            Layout::Raw => raw += 1,
            Layout::Coded { .. } => coded += 1,
        }
    }
    Ok((raw, coded))
}

/// Rewrites the row of document `source/id` in the closed store at `path` with `change`.
fn rewrite_document_row(
    path: &Path,
    source: &str,
    id: &str,
    change: impl FnOnce(&mut DocRow),
) -> Result<(), String> {
    use redb::ReadableTable;
    let db = redb::Database::open(path).map_err(|e| e.to_string())?;
    let txn = db.begin_write().map_err(|e| e.to_string())?;
    {
        let mut docs = txn.open_table(schema::DOCS).map_err(|e| e.to_string())?;
        let mut row: DocRow = match docs.get((source, id)).map_err(|e| e.to_string())? {
            Some(bytes) => schema::decode("document row", bytes.value()).map_err(|c| c.detail)?,
            None => return Err(format!("no document {source}/{id}")),
        };
        change(&mut row);
        docs.insert((source, id), schema::encode(&row).as_slice())
            .map_err(|e| e.to_string())?;
    }
    txn.commit().map_err(|e| e.to_string())
}

/// How many of the text index's segments in the closed store at `path` keep their terms
/// compressed (schema 10), and how many raw.
pub fn text_row_segments(path: &Path) -> Result<(u64, u64), String> {
    use redb::{ReadableDatabase, ReadableTable};
    let err = |e: redb::Error| e.to_string();
    let db = redb::Database::open(path).map_err(|e| err(e.into()))?;
    let txn = db.begin_read().map_err(|e| err(e.into()))?;
    let rows = txn
        .open_table(schema::TEXT_DOCS)
        .map_err(|e| err(e.into()))?;
    let (mut compressed, mut raw) = (0, 0);
    for entry in rows.iter().map_err(|e| err(e.into()))? {
        let (_, value) = entry.map_err(|e| err(e.into()))?;
        for segment in text_row::segments(value.value()).map_err(|c| c.detail)? {
            if segment.terms_compressed().map_err(|c| c.detail)? {
                compressed += 1;
            } else {
                raw += 1;
            }
        }
    }
    Ok((compressed, raw))
}

/// Rewrites every text index segment of the closed store at `path` with its terms raw and
/// stamps the file schema 9, leaving every other row (the text codec and compressed chunk
/// texts included) as it is: the file a schema-9 build would have written. Returns how
/// many segments it rewrote.
pub fn rewrite_as_schema_9(path: &Path) -> Result<u64, String> {
    use redb::ReadableTable;
    let err = |e: redb::Error| e.to_string();
    let db = redb::Database::open(path).map_err(|e| err(e.into()))?;
    let txn = db.begin_write().map_err(|e| err(e.into()))?;
    let mut rewritten = 0;
    {
        let mut meta = txn.open_table(schema::META).map_err(|e| err(e.into()))?;
        let codec = crate::backend::redb::read::stored_text_codec(&meta)
            .map_err(|e| err(e.into()))?
            .map_err(|c| c.detail)?;
        let mut rows = txn
            .open_table(schema::TEXT_DOCS)
            .map_err(|e| err(e.into()))?;
        let mut raw_rows = Vec::new();
        for entry in rows.iter().map_err(|e| err(e.into()))? {
            let (key, value) = entry.map_err(|e| err(e.into()))?;
            let mut row = Vec::new();
            for segment in text_row::segments(value.value()).map_err(|c| c.detail)? {
                let terms = segment.terms(codec.as_ref()).map_err(|c| c.detail)?;
                let (mut arena, mut spans) = (Vec::new(), Vec::new());
                for (term, count) in terms.list() {
                    let start = arena.len() as u32;
                    arena.extend_from_slice(term.as_bytes());
                    spans.push((start, arena.len() as u32, count));
                }
                text_row::put_segment(&mut row, segment.slot, segment.len, &arena, &spans, None);
                rewritten += 1;
            }
            raw_rows.push((key.value(), row));
        }
        for (key, row) in raw_rows {
            rows.insert(key, row.as_slice())
                .map_err(|e| err(e.into()))?;
        }
        meta.insert(
            schema::meta_key::SCHEMA_VERSION,
            9u64.to_le_bytes().as_slice(),
        )
        .map_err(|e| err(e.into()))?;
    }
    txn.commit().map_err(|e| err(e.into()))?;
    Ok(rewritten)
}
