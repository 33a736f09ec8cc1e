//! Reading from one MVCC snapshot: documents, the export stream, and what `plan` needs.

use crate::backend::redb::schema::{
    self, vector_id, ChunkAt, ChunksRow, DocRow, ListingRow, TextCodec, VectorsRow, CHUNKS, DOCS,
    LISTINGS, LISTING_MEMBERS, META, VECTORS,
};
use crate::error::{Corruption, ReadError};
use crate::options::Metric;
use crate::policy::guard::{ContentHash, Stored};
use crate::policy::prepare::hex;
use crate::types::{StoredChunk, StoredDocument};
use crate::types::{Version, VersionKind};
use redb::{ReadOnlyTable, ReadTransaction, ReadableTable};
use std::collections::HashSet;

/// A consistent, read-only view of the store at one commit. Every read through it sees the
/// same committed state, however many writes commit meanwhile; no reader ever sees half a
/// write (invariant I4).
pub struct Snapshot {
    pub(crate) txn: ReadTransaction,
    pub(crate) metric: Metric,
    pub(crate) dimension: Option<usize>,
    pub(crate) model: Option<String>,
    docs: ReadOnlyTable<(&'static str, &'static str), &'static [u8]>,
    chunks: ReadOnlyTable<u64, &'static [u8]>,
    vectors: ReadOnlyTable<u64, &'static [u8]>,
    /// The commit sequence number the snapshot is at, read once ([`Snapshot::commit`]):
    /// searches sharing a snapshot ask it each.
    commit: std::sync::OnceLock<u64>,
    /// The active vector space's name, read once (`spaces::active_space`): searches
    /// sharing a snapshot ask it each.
    pub(crate) active_space: std::sync::OnceLock<String>,
    /// The name the default space answers to beside `default` (a promoted space's), read
    /// once (`spaces::default_name`).
    pub(crate) default_name: std::sync::OnceLock<Option<String>>,
    /// The vector spaces besides the default one (name, id, dimension), read once by the
    /// first read that returns vectors.
    other_spaces: std::sync::OnceLock<Vec<(String, u32, usize)>>,
    /// The file's text codec (`meta["text_codec"]`), read once by the first read of a chunk
    /// text.
    text_codec: std::sync::OnceLock<Option<Box<TextCodec>>>,
}

/// The text codec `meta` records (`None`: none trained, every text raw); a row that does
/// not read is a [`Corruption`] (the inner error).
pub(crate) fn stored_text_codec(
    meta: &impl ReadableTable<&'static str, &'static [u8]>,
) -> Result<Result<Option<TextCodec>, Corruption>, redb::StorageError> {
    Ok(match meta.get(schema::meta_key::TEXT_CODEC)? {
        Some(bytes) => TextCodec::from_bytes(bytes.value()).map(Some),
        None => Ok(None),
    })
}

impl Snapshot {
    pub(crate) fn new(
        txn: ReadTransaction,
        metric: Metric,
        dimension: Option<usize>,
        model: Option<String>,
    ) -> Result<Snapshot, ReadError> {
        Ok(Snapshot {
            docs: txn.open_table(DOCS).map_err(ReadError::storage)?,
            chunks: txn.open_table(CHUNKS).map_err(ReadError::storage)?,
            vectors: txn.open_table(VECTORS).map_err(ReadError::storage)?,
            txn,
            metric,
            dimension,
            model,
            commit: std::sync::OnceLock::new(),
            active_space: std::sync::OnceLock::new(),
            default_name: std::sync::OnceLock::new(),
            other_spaces: std::sync::OnceLock::new(),
            text_codec: std::sync::OnceLock::new(),
        })
    }

    /// The codec reads of chunk texts and text rows use: [`Snapshot::text_codec`], or `None`
    /// where its row does not read, so that raw texts still read and only compressed ones
    /// are a `Corruption` (which `verify` explains: it reports the codec row). An error
    /// reading the row (storage) is passed on.
    pub(crate) fn text_codec_for_reads(&self) -> Result<Option<&TextCodec>, ReadError> {
        match self.text_codec() {
            Err(ReadError::Corrupted { .. }) => Ok(None),
            other => other,
        }
    }

    /// The file's text codec at this snapshot, which decodes its compressed chunk texts
    /// (`None`: the file has none, and every text is raw).
    pub(crate) fn text_codec(&self) -> Result<Option<&TextCodec>, ReadError> {
        if let Some(codec) = self.text_codec.get() {
            return Ok(codec.as_deref());
        }
        let meta = self.txn.open_table(META).map_err(ReadError::storage)?;
        let codec = stored_text_codec(&meta).map_err(ReadError::storage)??;
        Ok(self
            .text_codec
            .get_or_init(|| codec.map(Box::new))
            .as_deref())
    }

    /// The vector spaces besides the default one, as (name, id, dimension), by name. A
    /// damaged space (its row does not decode) is left out, as `Store::spaces` leaves it
    /// out: its vectors cannot be read without its dimension, and every other space's can
    /// (`Store::verify` reports it).
    fn other_spaces(&self) -> Result<&[(String, u32, usize)], ReadError> {
        if let Some(spaces) = self.other_spaces.get() {
            return Ok(spaces);
        }
        let mut spaces = Vec::new();
        match self.txn.open_table(schema::SPACES) {
            Ok(table) => {
                for entry in table.iter().map_err(ReadError::storage)? {
                    let (name, value) = entry.map_err(ReadError::storage)?;
                    let Ok(row) =
                        crate::backend::redb::schema::decode_row(name.value(), value.value())
                    else {
                        continue;
                    };
                    spaces.push((name.value().to_owned(), row.id, row.dimension as usize));
                }
            }
            Err(redb::TableError::TableDoesNotExist(_)) => {}
            Err(e) => return Err(ReadError::storage(e)),
        }
        Ok(self.other_spaces.get_or_init(|| spaces))
    }

    /// Vector `id`'s vectors in the other spaces, by space name (a space without one for
    /// it left out).
    fn space_vectors(
        &self,
        id: u64,
    ) -> Result<std::collections::BTreeMap<String, Vec<f32>>, ReadError> {
        let mut out = std::collections::BTreeMap::new();
        let spaces = self.other_spaces()?;
        if spaces.is_empty() {
            return Ok(out);
        }
        let rows = self
            .txn
            .open_table(schema::SPACE_VECTORS)
            .map_err(ReadError::storage)?;
        for (name, space, dimension) in spaces {
            let Some(bytes) = rows.get((*space, id)).map_err(ReadError::storage)? else {
                continue;
            };
            let bytes = bytes.value();
            if bytes.len() != dimension * 4 {
                return Err(Corruption::new(
                    "space vectors",
                    format!(
                        "space {name:?}: vector {id} has {} bytes where the space holds \
                         {dimension}-dimensional vectors",
                        bytes.len()
                    ),
                )
                .into());
            }
            let vector = bytes
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            out.insert(name.clone(), vector);
        }
        Ok(out)
    }

    /// The commit sequence number this snapshot is at: the `seq.commit` counter, which
    /// every write transaction raises (what [`Backup::commit`](crate::Backup::commit)
    /// names).
    pub fn commit(&self) -> Result<u64, ReadError> {
        if let Some(seq) = self.commit.get() {
            return Ok(*seq);
        }
        let counters = self
            .txn
            .open_table(schema::COUNTERS)
            .map_err(ReadError::storage)?;
        let seq = counters
            .get(schema::seq_key::COMMIT)
            .map_err(ReadError::storage)?
            .map(|v| v.value())
            .unwrap_or(0);
        let _ = self.commit.set(seq);
        Ok(seq)
    }

    /// The highest ticket the store may have issued at this snapshot (see
    /// [`Store::tickets_issued`](crate::Store::tickets_issued)).
    pub fn tickets_issued(&self) -> Result<u64, ReadError> {
        let counters = self
            .txn
            .open_table(schema::COUNTERS)
            .map_err(ReadError::storage)?;
        let issued = counters
            .get(schema::seq_key::TICKET_HIGH_WATER)
            .map_err(ReadError::storage)?
            .map(|v| v.value())
            .unwrap_or(0);
        Ok(issued)
    }

    pub(crate) fn doc_row(&self, source: &str, id: &str) -> Result<Option<DocRow>, ReadError> {
        match self.docs.get((source, id)).map_err(ReadError::storage)? {
            Some(bytes) => Ok(Some(schema::decode("document row", bytes.value())?)),
            None => Ok(None),
        }
    }

    /// The chunks row of a live document (its chunks row joined with the tail its vectors
    /// row carries), checked against its chunk count.
    pub(crate) fn chunks_row(&self, row: &DocRow) -> Result<ChunksRow, ReadError> {
        let Some(vectors) = self.vectors_row(row.internal_id)? else {
            return Err(Corruption::new(
                "vector table",
                format!("document {} has no vectors row", row.internal_id),
            )
            .into());
        };
        self.chunks_row_beside(row, &VectorsRow::parse(vectors.value())?)
    }

    /// The stored bytes of a live document's chunks row; missing is a corruption.
    fn chunks_bytes(
        &self,
        row: &DocRow,
    ) -> Result<redb::AccessGuard<'static, &'static [u8]>, ReadError> {
        self.chunks
            .get(row.internal_id)
            .map_err(ReadError::storage)?
            .ok_or_else(|| {
                Corruption::new(
                    "chunk table",
                    format!("document {} has no chunks row", row.internal_id),
                )
                .into()
            })
    }

    /// [`Snapshot::chunks_row`], given the document's vectors row, already read.
    fn chunks_row_beside(
        &self,
        row: &DocRow,
        vectors: &VectorsRow<'_>,
    ) -> Result<ChunksRow, ReadError> {
        let bytes = self.chunks_bytes(row)?;
        let chunks = schema::join_chunks(bytes.value(), vectors, self.text_codec_for_reads()?)?;
        if chunks.chunks.len() != row.chunk_count as usize {
            return Err(Corruption::new(
                "chunk table",
                format!(
                    "document {} has {} chunks but its chunks row {}",
                    row.internal_id,
                    row.chunk_count,
                    chunks.chunks.len()
                ),
            )
            .into());
        }
        Ok(chunks)
    }

    /// The chunk of vector `slot` of internal document `owner`'s live revision, with its
    /// chunks row's header, handed to `read` borrowed from the row's bytes; the document's
    /// other chunks are skipped, not decoded. `None` if `owner` has no chunks row in this
    /// snapshot (a chunks row exists exactly while its document is live: `verify` checks
    /// it), in which case `read` is not called.
    ///
    /// One B-tree lookup when the chunks row holds the whole encoded row: bytes that decode
    /// alone are a whole row ([`schema::decode_chunk_of_slot`]). Only a row whose tail
    /// rides in its vectors row (a spill) reads that row too and is joined with it.
    pub(crate) fn chunk_of<R>(
        &self,
        owner: u64,
        slot: u32,
        read: impl FnOnce(ChunkAt<'_>) -> R,
    ) -> Result<Option<R>, ReadError> {
        let Some(bytes) = self.chunks.get(owner).map_err(ReadError::storage)? else {
            return Ok(None);
        };
        // An empty chunks row: the whole row rides in its vectors row.
        let codec = self.text_codec_for_reads()?;
        let alone = match bytes.value() {
            [] => None,
            kept => match schema::decode_chunk_of_slot(kept, slot, codec) {
                Ok(at) => return Ok(Some(read(at))),
                Err(c) => Some(c),
            },
        };
        let Some(vectors) = self.vectors_row(owner)? else {
            return Err(Corruption::new(
                "vector table",
                format!("document {owner} has a chunks row but no vectors row"),
            )
            .into());
        };
        let vectors = VectorsRow::parse(vectors.value())?;
        if !vectors.has_spill() {
            // Nothing to join: the chunks row alone is all there is, and it is damaged.
            return Err(alone
                .unwrap_or_else(|| Corruption::new("chunks row", "empty, and nothing spilled"))
                .into());
        }
        Ok(Some(schema::join_chunk_of_slot(
            bytes.value(),
            &vectors,
            slot,
            codec,
            read,
        )?))
    }

    /// The key (source, id) of the live document of internal id `doc`, which its chunks row
    /// carries; `None` if `doc` has no chunks row in this snapshot (no live document has it).
    pub(crate) fn document_of(&self, doc: u64) -> Result<Option<(String, String)>, ReadError> {
        // No chunk has slot `u32::MAX` (slots are below 2^24): only the header is kept.
        self.chunk_of(doc, u32::MAX, |at| (at.source.to_owned(), at.id.to_owned()))
    }

    /// The vectors row of internal document `doc`, read in place (parse it with
    /// [`VectorsRow::parse`]).
    pub(crate) fn vectors_row(
        &self,
        doc: u64,
    ) -> Result<Option<redb::AccessGuard<'static, &'static [u8]>>, ReadError> {
        self.vectors.get(doc).map_err(ReadError::storage)
    }

    pub(crate) fn assemble(
        &self,
        source: &str,
        id: &str,
        row: &DocRow,
        with_vectors: bool,
    ) -> Result<StoredDocument, ReadError> {
        // Not sized from the row alone: a damaged count must not allocate.
        let mut chunks = Vec::with_capacity((row.chunk_count as usize).min(1024));
        // A tombstone's content hash is zeros; a live revision's is computed from its rows
        // (the document row keeps only its first 16 bytes).
        let mut content_hash = [0u8; 32];
        if !row.deleted {
            let Some(bytes) = self.vectors_row(row.internal_id)? else {
                return Err(Corruption::new(
                    "vector table",
                    format!("{source}/{id} has no vectors row"),
                )
                .into());
            };
            let vectors = VectorsRow::parse(bytes.value())?;
            let stored = self.chunks_row_beside(row, &vectors)?;
            if vectors.len() != stored.chunks.len() {
                return Err(Corruption::new(
                    "vector table",
                    format!(
                        "{source}/{id} has {} chunks but {} vectors",
                        stored.chunks.len(),
                        vectors.len()
                    ),
                )
                .into());
            }
            content_hash = crate::policy::prepare::stored_content_hash(
                &row.meta,
                stored
                    .chunks
                    .iter()
                    .map(|c| (c.text.as_str(), c.meta.as_str())),
            );
            for (position, (chunk, vector)) in
                stored.chunks.into_iter().zip(vectors.vectors()).enumerate()
            {
                let id = vector_id(row.internal_id, vector.slot());
                let (vector, spaces) = if with_vectors {
                    let mut floats = Vec::with_capacity(vectors.dimension());
                    vector.extend_floats(&mut floats);
                    (Some(floats), self.space_vectors(id)?)
                } else {
                    (None, Default::default())
                };
                chunks.push(StoredChunk {
                    // Below the row's u32 count.
                    position: position as u32,
                    meta: schema::decode_meta(&chunk.meta)?,
                    text: chunk.text,
                    generation: stored.generation,
                    vector_id: id,
                    vector,
                    spaces,
                });
            }
        }
        Ok(StoredDocument {
            source: source.to_string(),
            id: id.to_string(),
            version: row.version()?,
            deleted: row.deleted,
            generation: row.generation,
            content_hash: hex(&content_hash),
            meta: schema::decode_meta(&row.meta)?,
            chunks,
        })
    }

    /// A document and its chunks in order; tombstones have `deleted: true` and no chunks.
    pub fn get(&self, source: &str, id: &str) -> Result<Option<StoredDocument>, ReadError> {
        self.get_inner(source, id, false)
    }

    /// Like [`Snapshot::get`], with each chunk's vector.
    pub fn get_with_vectors(
        &self,
        source: &str,
        id: &str,
    ) -> Result<Option<StoredDocument>, ReadError> {
        self.get_inner(source, id, true)
    }

    fn get_inner(
        &self,
        source: &str,
        id: &str,
        with_vectors: bool,
    ) -> Result<Option<StoredDocument>, ReadError> {
        crate::backend::redb::contain::contain(ReadError::contained, || {
            match self.doc_row(source, id)? {
                Some(row) => Ok(Some(self.assemble(source, id, &row, with_vectors)?)),
                None => Ok(None),
            }
        })
    }

    /// Every document (tombstones included), sorted by `(source, id)`, streamed from this
    /// snapshot.
    pub fn documents(&self, with_vectors: bool) -> Result<Documents<'_>, ReadError> {
        Ok(Documents {
            snapshot: self,
            range: self
                .docs
                .range::<(&str, &str)>(..)
                .map_err(ReadError::storage)?,
            with_vectors,
            failed: false,
        })
    }

    /// What `plan` needs: the stored state (or a listing's tombstone) and the text hashes
    /// that already have a vector.
    pub(crate) fn plan_state(
        &self,
        source: &str,
        id: &str,
        incoming: Version,
    ) -> Result<(Option<Stored>, HashSet<ContentHash>), ReadError> {
        match self.doc_row(source, id)? {
            Some(row) => {
                let stored = row.stored()?;
                let texts = if row.deleted {
                    HashSet::new()
                } else {
                    self.chunks_row(&row)?
                        .chunks
                        .into_iter()
                        .map(|c| crate::policy::prepare::text_hash(&c.text))
                        .collect()
                };
                Ok((Some(stored), texts))
            }
            None => {
                let listings = self.txn.open_table(LISTINGS).map_err(ReadError::storage)?;
                let members = self
                    .txn
                    .open_table(LISTING_MEMBERS)
                    .map_err(ReadError::storage)?;
                for entry in listings
                    .range((source, incoming.value)..=(source, u64::MAX))
                    .map_err(ReadError::storage)?
                    .rev()
                {
                    let (key, value) = entry.map_err(ReadError::storage)?;
                    let listing_version = key.value().1;
                    let row: ListingRow = schema::decode("listing row", value.value())?;
                    if members
                        .get((source, listing_version, id))
                        .map_err(ReadError::storage)?
                        .is_none()
                    {
                        let kind = VersionKind::from_byte(row.version_kind).ok_or_else(|| {
                            Corruption::new(
                                "listing row",
                                format!("unknown version kind {}", row.version_kind),
                            )
                        })?;
                        return Ok((
                            Some(Stored::tombstone(Version {
                                kind,
                                value: listing_version,
                            })),
                            HashSet::new(),
                        ));
                    }
                }
                Ok((None, HashSet::new()))
            }
        }
    }
}

/// The stream of [`Snapshot::documents`].
pub struct Documents<'s> {
    snapshot: &'s Snapshot,
    range: redb::Range<'static, (&'static str, &'static str), &'static [u8]>,
    with_vectors: bool,
    /// A panic was contained: the stream has ended.
    failed: bool,
}

impl Iterator for Documents<'_> {
    type Item = Result<StoredDocument, ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        // A panic inside redb stepping the range or reading a row is this item's error; the
        // stream ends after it (the range's state is not trusted after a panic).
        if self.failed {
            return None;
        }
        let (snapshot, with_vectors) = (self.snapshot, self.with_vectors);
        let range = &mut self.range;
        let item = crate::backend::redb::contain::contain(ReadError::contained, || {
            let Some(entry) = range.next() else {
                return Ok(None);
            };
            let (key, value) = entry.map_err(ReadError::storage)?;
            let (source, id) = key.value();
            let row: DocRow = schema::decode("document row", value.value())?;
            snapshot.assemble(source, id, &row, with_vectors).map(Some)
        });
        match item {
            Ok(Some(document)) => Some(Ok(document)),
            Ok(None) => None,
            Err(error) => {
                self.failed = matches!(&error, ReadError::Corrupted { what, .. } if what == crate::backend::redb::contain::WHAT);
                Some(Err(error))
            }
        }
    }
}
