//! Carrying the guard's decisions out inside one write transaction.
//!
//! A [`Batch`] holds the open tables of one redb write transaction and the in-memory state
//! of the batch (sequences, counter deltas, the changelog entry, new skip-log rows). Each
//! operation first reads and decides, and only then mutates: an operation refused for its
//! input (kind mismatch, dimension, missing vector) has changed nothing when it returns its
//! error, so the rest of the batch goes on. A storage error fails the whole batch; the caller
//! drops the transaction, so nothing of it is visible.

use crate::backend::redb::schema::{
    self, seq_key, vector_id, ChangelogRow, ChunkEntry, ChunkEntryRef, ChunksRow, ChunksRowRef,
    DocRow, Layout, ListingRow, RevisionRows, SkipRow, TextCodec, VectorData, VectorsRow,
    CHANGELOG, CHUNKS, COUNTERS, DOCS, LISTINGS, LISTING_MEMBERS, META, SKIP_LOG, TRAIN_BYTES,
    VECTORS,
};
use crate::error::{Corruption, WriteError};
use crate::options::ConflictPolicy;
use crate::policy::guard::{
    self, ContentHash, DeleteDecision, Stored, UpsertDecision, WriteReason,
};
use crate::policy::prepare::{PreparedDoc, PreparedOp};
use crate::types::counters::name as counter;
use crate::types::SkipReason;
use crate::types::Version;
use crate::types::{OpOutcome, Outcome, PurgeOutcome, RetainOutcome};
use plan::RevisionPlan;
use redb::{ReadableTable, Table, WriteTransaction};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

pub(crate) mod plan;
pub(crate) mod spaces;

/// Changelog rows kept behind the newest commit.
const CHANGELOG_KEEP: u64 = 1024;

/// The sequences a batch allocates from.
#[derive(Clone, Copy, Debug, Default)]
struct Sequences {
    next_doc: u64,
    next_generation: u64,
    next_skip: u64,
    commit: u64,
}

/// Store-wide settings a batch needs.
#[derive(Clone, Debug)]
pub(crate) struct BatchSettings {
    pub policy: ConflictPolicy,
    pub skip_log_capacity: u64,
    /// The highest ticket the store may have issued; read for each operation, because a
    /// ticket taken while a group commit is being built may join it.
    pub tickets_issued: Arc<AtomicU64>,
    /// The text index's analyzer (`None`: the store keeps no text index).
    pub text: Option<Arc<crate::text::Analyzer>>,
    /// The text codec the engine last learned from a batch (`None`: none yet), reused while
    /// the file's row is the same table.
    pub text_codec: Option<Arc<TextCodec>>,
    /// The texts gathered to train the text codec while the file has none, kept by the
    /// engine across batches until a committed batch has a codec.
    pub training: Arc<parking_lot::Mutex<Training>>,
}

/// The rows of the file a writer reads once, after it opens, for texts to train a text codec
/// with: bounded, so a store of empty or short texts costs a bounded read however large.
const SAMPLE_ROWS: usize = 4096;

/// The texts gathered to train a store's text codec (`schema/text_code.rs`) while it has
/// none: those of the file's first live revisions (read once, after the writer opens), then
/// those the batches write, until [`TRAIN_BYTES`] of them.
#[derive(Default)]
pub(crate) struct Training {
    texts: Vec<String>,
    bytes: usize,
    sampled_store: bool,
}

/// Without the texts: they are the user's.
impl std::fmt::Debug for Training {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Training")
            .field("texts", &self.texts.len())
            .field("bytes", &self.bytes)
            .field("sampled_store", &self.sampled_store)
            .finish()
    }
}

impl Training {
    /// Whether it holds texts or has sampled the file (what a store with its table no
    /// longer needs).
    pub(crate) fn is_gathering(&self) -> bool {
        self.sampled_store || !self.texts.is_empty()
    }

    /// Whether [`TRAIN_BYTES`] of text have been gathered.
    fn is_full(&self) -> bool {
        self.bytes >= TRAIN_BYTES
    }

    fn add(&mut self, text: &str) {
        if !self.is_full() && !text.is_empty() {
            self.bytes += text.len();
            self.texts.push(text.to_owned());
        }
    }
}

/// One write transaction's worth of guarded operations.
pub(crate) struct Batch<'txn> {
    docs: Table<'txn, (&'static str, &'static str), &'static [u8]>,
    chunks: Table<'txn, u64, &'static [u8]>,
    vectors: Table<'txn, u64, &'static [u8]>,
    listings: Table<'txn, (&'static str, u64), &'static [u8]>,
    listing_members: Table<'txn, (&'static str, u64, &'static str), ()>,
    counters: Table<'txn, &'static str, u64>,
    meta: Table<'txn, &'static str, &'static [u8]>,
    changelog: Table<'txn, u64, &'static [u8]>,
    skip_log: Table<'txn, u64, &'static [u8]>,
    /// The text index's tables, when the store keeps one (`text/`).
    text: Option<crate::backend::redb::text::TextWriter<'txn>>,
    /// The vector spaces other than the default one, their rows and their changelog.
    spaces: Vec<spaces::BatchSpace>,
    spaces_table: Table<'txn, &'static str, &'static [u8]>,
    space_vectors: Table<'txn, (u32, u64), &'static [u8]>,
    space_changelog: Table<'txn, u64, &'static [u8]>,
    space_change: schema::SpaceChangeRow,
    settings: BatchSettings,
    seq: Sequences,
    deltas: BTreeMap<&'static str, i64>,
    change: ChangelogRow,
    skips: Vec<SkipRow>,
    dimension: Option<usize>,
    dimension_fixed_here: bool,
    /// The file's text codec (`None`: none trained yet, or its row is damaged; texts are
    /// written raw).
    codec: Option<Arc<TextCodec>>,
    /// The file's codec row does not read: texts are written raw and no codec is trained
    /// (one over the row would leave the texts compressed with it unreadable for good;
    /// `verify` reports the row).
    codec_damaged: bool,
}

/// What a committed batch changed that the in-memory side must learn.
#[derive(Debug, Default)]
pub(crate) struct BatchEffects {
    /// The dimension, if this batch fixed it.
    pub dimension_fixed: Option<usize>,
    /// The file's text codec, if the batch read or trained it (the engine keeps it for the
    /// batches after).
    pub text_codec: Option<Arc<TextCodec>>,
    /// The commit sequence of this batch's changelog entry, and the entry.
    pub changelog: Option<(u64, ChangelogRow)>,
}

fn read_counter(table: &Table<'_, &'static str, u64>, key: &str) -> Result<u64, WriteError> {
    Ok(table
        .get(key)
        .map_err(WriteError::storage)?
        .map(|v| v.value())
        .unwrap_or(0))
}

/// Moves the sequence `key` on by one and returns the value it had. Only a damaged file
/// holds a sequence at `u64::MAX` (it counts commits, revisions and refusals), so that is
/// [`WriteError::Corrupted`], and nothing is written.
fn advance(seq: &mut u64, key: &str) -> Result<u64, WriteError> {
    let value = *seq;
    *seq = value
        .checked_add(1)
        .ok_or_else(|| sequence_at_its_end(key, value))?;
    Ok(value)
}

/// The error for a sequence of the `counters` table that cannot move on from `value`.
pub(crate) fn sequence_at_its_end(key: &str, value: u64) -> WriteError {
    WriteError::Corrupted {
        what: "counters".to_owned(),
        detail: format!("sequence {key} is at its largest value, {value}"),
    }
}

impl<'txn> Batch<'txn> {
    /// Opens every table of the transaction and loads the sequences.
    pub(crate) fn begin(
        txn: &'txn WriteTransaction,
        settings: BatchSettings,
        dimension: Option<usize>,
    ) -> Result<Batch<'txn>, WriteError> {
        let open_err = WriteError::storage;
        let counters = txn.open_table(COUNTERS).map_err(open_err)?;
        let seq = Sequences {
            next_doc: read_counter(&counters, seq_key::NEXT_DOC)?,
            next_generation: read_counter(&counters, seq_key::NEXT_GENERATION)?.max(1),
            next_skip: read_counter(&counters, seq_key::NEXT_SKIP)?,
            commit: read_counter(&counters, seq_key::COMMIT)?,
        };
        let spaces = spaces::load_spaces(txn, &counters)?;
        let meta = txn.open_table(META).map_err(open_err)?;
        // The transaction's own record, not the caller's copy: a promotion committed since
        // the caller read it changes it (the caller's stands until a first vector fixes it).
        let dimension =
            match crate::backend::redb::open::meta_u64(&meta, schema::meta_key::DIMENSION)
                .map_err(WriteError::storage)?
            {
                Some(Ok(stored)) => {
                    Some(usize::try_from(stored).map_err(|_| WriteError::Corrupted {
                        what: "dimension".into(),
                        detail: format!("{stored} is too large"),
                    })?)
                }
                _ => dimension,
            };
        // The file's own codec row, every batch (one lookup): the engine's copy is reused
        // only while it is the same table (it saves rebuilding the compressor).
        let (codec, codec_damaged) = match meta
            .get(schema::meta_key::TEXT_CODEC)
            .map_err(WriteError::storage)?
        {
            None => (None, false),
            Some(bytes) => match &settings.text_codec {
                Some(known) if known.is_row(bytes.value()) => (Some(known.clone()), false),
                _ => match TextCodec::from_bytes(bytes.value()) {
                    Ok(codec) => (Some(Arc::new(codec)), false),
                    Err(_) => (None, true),
                },
            },
        };
        let text = match &settings.text {
            Some(analyzer) => Some(crate::backend::redb::text::TextWriter::open(
                txn,
                analyzer.clone(),
                codec.clone(),
            )?),
            None => None,
        };
        Ok(Batch {
            codec,
            codec_damaged,
            spaces,
            spaces_table: txn.open_table(schema::SPACES).map_err(open_err)?,
            space_vectors: txn.open_table(schema::SPACE_VECTORS).map_err(open_err)?,
            space_changelog: txn.open_table(schema::SPACE_CHANGELOG).map_err(open_err)?,
            space_change: schema::SpaceChangeRow::default(),
            docs: txn.open_table(DOCS).map_err(open_err)?,
            chunks: txn.open_table(CHUNKS).map_err(open_err)?,
            vectors: txn.open_table(VECTORS).map_err(open_err)?,
            listings: txn.open_table(LISTINGS).map_err(open_err)?,
            listing_members: txn.open_table(LISTING_MEMBERS).map_err(open_err)?,
            meta,
            changelog: txn.open_table(CHANGELOG).map_err(open_err)?,
            skip_log: txn.open_table(SKIP_LOG).map_err(open_err)?,
            text,
            counters,
            settings,
            seq,
            deltas: BTreeMap::new(),
            change: ChangelogRow::default(),
            skips: Vec::new(),
            dimension,
            dimension_fixed_here: false,
        })
    }

    fn bump(&mut self, name: &'static str, by: i64) {
        *self.deltas.entry(name).or_insert(0) += by;
    }

    /// Sets each counter of `targets` to its value (the difference is this transaction's
    /// delta) and appends `skips` to the skip log: a store's history restored
    /// (`history.rs`).
    pub(crate) fn restore(
        &mut self,
        targets: &[(&'static str, u64)],
        skips: Vec<SkipRow>,
    ) -> Result<(), WriteError> {
        for &(name, target) in targets {
            // Wide enough for any stored value and pending delta; a difference outside
            // i64 is only a damaged counter's (the targets are checked to fit).
            let current = i128::from(read_counter(&self.counters, name)?)
                + i128::from(self.deltas.get(name).copied().unwrap_or(0));
            let delta =
                i64::try_from(i128::from(target) - current).map_err(|_| WriteError::Corrupted {
                    what: "counters".to_owned(),
                    detail: format!("{name} = {current} cannot be set to {target}"),
                })?;
            self.bump(name, delta);
        }
        self.skips.extend(skips);
        Ok(())
    }

    /// Applies one operation.
    pub(crate) fn apply(&mut self, op: &PreparedOp) -> Result<OpOutcome, WriteError> {
        match op {
            PreparedOp::Upsert(doc) => self.upsert(doc).map(OpOutcome::Document),
            PreparedOp::Delete {
                source,
                id,
                version,
            } => self.delete(source, id, *version).map(OpOutcome::Document),
            PreparedOp::Retain {
                source,
                present,
                version,
                members_hash,
            } => self
                .retain(source, present, *version, *members_hash)
                .map(OpOutcome::Retain),
        }
    }

    fn doc_row(&self, source: &str, id: &str) -> Result<Option<DocRow>, WriteError> {
        match self.docs.get((source, id)).map_err(WriteError::storage)? {
            Some(bytes) => Ok(Some(schema::decode("document row", bytes.value())?)),
            None => Ok(None),
        }
    }

    /// For an id with no row: the highest listing of its source, at a version not older
    /// than `incoming`, that omits it — seen as a tombstone at the listing's version.
    fn listing_tombstone(
        &self,
        source: &str,
        id: &str,
        incoming: Version,
    ) -> Result<Option<Stored>, WriteError> {
        let range = self
            .listings
            .range((source, incoming.value)..=(source, u64::MAX))
            .map_err(WriteError::storage)?;
        for entry in range.rev() {
            let (key, value) = entry.map_err(WriteError::storage)?;
            let listing_version = key.value().1;
            let row: ListingRow = schema::decode("listing row", value.value())?;
            let member = self
                .listing_members
                .get((source, listing_version, id))
                .map_err(WriteError::storage)?;
            if member.is_none() {
                let kind =
                    crate::types::VersionKind::from_byte(row.version_kind).ok_or_else(|| {
                        Corruption::new(
                            "listing row",
                            format!("unknown version kind {}", row.version_kind),
                        )
                    })?;
                return Ok(Some(Stored::tombstone(Version {
                    kind,
                    value: listing_version,
                })));
            }
        }
        Ok(None)
    }

    /// What the guard compares against: the document's row, or a listing that omitted it.
    fn stored_state(
        &self,
        source: &str,
        id: &str,
        incoming: Version,
    ) -> Result<(Option<DocRow>, Option<Stored>), WriteError> {
        match self.doc_row(source, id)? {
            Some(row) => {
                let stored = row.stored()?;
                Ok((Some(row), Some(stored)))
            }
            None => Ok((None, self.listing_tombstone(source, id, incoming)?)),
        }
    }

    fn skip(
        &mut self,
        source: &str,
        id: &str,
        reason: SkipReason,
        equal_version: bool,
        stored: Version,
        incoming: Version,
    ) -> Outcome {
        for name in crate::types::counters::for_skip(reason, equal_version) {
            self.bump(name, 1);
        }
        self.skips.push(SkipRow {
            source: source.to_string(),
            id: id.to_string(),
            reason: reason.to_byte(),
            stored_kind: stored.kind.to_byte(),
            stored_value: stored.value,
            incoming_kind: incoming.kind.to_byte(),
            incoming_value: incoming.value,
        });
        Outcome::Skipped {
            reason,
            stored_version: stored,
            incoming_version: incoming,
        }
    }

    /// Refuses a ticket the store never issued (above every ticket it has handed out): it
    /// would outrank every real ticket of the document forever. Checked after the kind
    /// (a ticket against a numbered document is a kind mismatch first) and before anything
    /// is mutated.
    fn check_ticket(&self, version: Version) -> Result<(), WriteError> {
        let issued = self.settings.tickets_issued.load(Ordering::SeqCst);
        if version.kind == crate::types::VersionKind::Ticket && version.value > issued {
            return Err(crate::error::InputError::new(
                "version",
                format!(
                    "ticket {} was never issued by this store (the highest it has issued is \
                     {issued}); take tickets with Store::ticket",
                    version.value
                ),
            )
            .into());
        }
        Ok(())
    }

    fn kind_mismatch(
        source: &str,
        id: &str,
        stored: crate::types::VersionKind,
        incoming: Version,
    ) -> WriteError {
        WriteError::VersionKindMismatch {
            source_name: source.to_string(),
            id: id.to_string(),
            stored,
            incoming: incoming.kind,
        }
    }

    pub(crate) fn upsert(&mut self, doc: &PreparedDoc) -> Result<Outcome, WriteError> {
        // Before the guard: whether a wrong-dimension vector is an error must not depend on
        // whether the revision happens to be stale, nor on batch boundaries.
        if let Some(expected) = self.dimension {
            for (position, chunk) in doc.chunks.iter().enumerate() {
                if let Some(vector) = chunk.vector.as_ref().filter(|v| v.len() != expected) {
                    return Err(WriteError::DimensionMismatch {
                        position,
                        expected,
                        found: vector.len(),
                    });
                }
            }
        }
        let (row, stored) = self.stored_state(&doc.source, &doc.id, doc.version)?;
        let decision = guard::decide_upsert(
            stored.as_ref(),
            doc.version,
            guard::content_key(&doc.content_hash),
            self.settings.policy,
        );
        if !matches!(decision, UpsertDecision::KindMismatch { .. }) {
            self.check_ticket(doc.version)?;
        }
        match decision {
            UpsertDecision::KindMismatch { stored } => Err(Self::kind_mismatch(
                &doc.source,
                &doc.id,
                stored,
                doc.version,
            )),
            UpsertDecision::Skip {
                reason,
                equal_version,
            } => {
                let stored_version = stored.map(|s| s.version).unwrap_or(doc.version);
                Ok(self.skip(
                    &doc.source,
                    &doc.id,
                    reason,
                    equal_version,
                    stored_version,
                    doc.version,
                ))
            }
            UpsertDecision::Unchanged => match row {
                Some(row) => self.raise_version(row, doc),
                None => unreachable!("the guard answers Unchanged only over a live revision's row"),
            },
            UpsertDecision::Write(reason) => {
                let counter_name = match (reason, &row) {
                    (WriteReason::ResolveConflict, _) => counter::CONFLICTS_RESOLVED,
                    (_, Some(row)) if !row.deleted => counter::WRITTEN_NEWER,
                    _ => counter::WRITTEN_NEW,
                };
                let outcome = self.write_revision(row, doc)?;
                self.bump(counter_name, 1);
                Ok(outcome)
            }
        }
    }

    /// An `Unchanged` upsert: raises the live revision's version; no chunk, vector or
    /// generation changes, but the chunks row, which carries the version for search hits,
    /// is written again with it.
    fn raise_version(&mut self, mut row: DocRow, doc: &PreparedDoc) -> Result<Outcome, WriteError> {
        row.version = doc.version.value;
        self.restamp_revision(&row, doc)?;
        self.docs
            .insert(
                (doc.source.as_str(), doc.id.as_str()),
                schema::encode(&row).as_slice(),
            )
            .map_err(WriteError::storage)?;
        self.bump(counter::UNCHANGED, 1);
        Ok(Outcome::Unchanged {
            version: doc.version,
        })
    }

    /// Writes the live revision's chunks row again under `row`'s version, its chunks as
    /// they are. When the version encodes in as many bytes as before, only the header's
    /// bytes in the chunks table change (the row's length, and so its split with the
    /// vectors row, stays); otherwise the row is encoded again and split, and the vectors
    /// row is written again only if that moves the part of it that rides there
    /// (`schema::RevisionRows`).
    fn restamp_revision(&mut self, row: &DocRow, doc: &PreparedDoc) -> Result<(), WriteError> {
        let head = self
            .chunks
            .get(row.internal_id)
            .map_err(WriteError::storage)?
            .and_then(|b| schema::restamp_head(b.value(), row.version_kind, row.version));
        if let Some(head) = head {
            self.chunks
                .insert(row.internal_id, head.as_slice())
                .map_err(WriteError::storage)?;
            return Ok(());
        }
        let (chunks, vectors_bytes) = self.old_revision(row)?;
        let vectors = VectorsRow::parse(&vectors_bytes)?;
        let stamped = ChunksRow {
            generation: row.generation,
            version_kind: row.version_kind,
            version: row.version,
            source: doc.source.clone(),
            id: doc.id.clone(),
            chunks,
        };
        let chunks_bytes = schema::encode_chunks_row(&stamped, self.codec.as_deref());
        let entries: Vec<(u32, VectorData<'_>)> = vectors
            .raw_entries()?
            .into_iter()
            .map(|(slot, bytes)| (slot, VectorData::Raw(bytes)))
            .collect();
        let rows = RevisionRows::split(&chunks_bytes, &entries);
        if !rows.spill_matches(&vectors) {
            let mut slot = self
                .vectors
                .insert_reserve(row.internal_id, rows.vectors_row_len())
                .map_err(WriteError::storage)?;
            rows.write_vectors_row(&entries, slot.as_mut())?;
        }
        self.chunks
            .insert(row.internal_id, rows.chunks_row())
            .map_err(WriteError::storage)?;
        Ok(())
    }

    /// A new internal document id (not yet recorded anywhere).
    fn new_internal_id(&mut self) -> Result<u64, WriteError> {
        let id = self.seq.next_doc;
        if id > schema::MAX_INTERNAL_ID {
            return Err(WriteError::Exhausted {
                what: "internal document ids",
            });
        }
        self.seq.next_doc += 1;
        Ok(id)
    }

    /// The stored revision of a live document: its chunks and its vectors row's bytes in the
    /// raw layout, checked against the document row's chunk count.
    fn old_revision(&self, row: &DocRow) -> Result<(Vec<ChunkEntry>, Vec<u8>), WriteError> {
        let id = row.internal_id;
        let vectors = match self.vectors.get(id).map_err(WriteError::storage)? {
            Some(bytes) => bytes.value().to_vec(),
            None => {
                return Err(Corruption::new(
                    "vector table",
                    format!("document {id} has no vectors row"),
                )
                .into())
            }
        };
        // A coded row's vectors decoded once: the revision copies them from the raw layout.
        let layout = VectorsRow::parse(&vectors)?.layout();
        let vectors = match layout {
            Layout::Raw => vectors,
            Layout::Coded { .. } => VectorsRow::parse(&vectors)?.to_raw().into_owned(),
        };
        let parsed = VectorsRow::parse(&vectors)?;
        let chunks: ChunksRow = match self.chunks.get(id).map_err(WriteError::storage)? {
            Some(bytes) => schema::join_chunks(bytes.value(), &parsed, self.codec.as_deref())?,
            None => {
                return Err(Corruption::new(
                    "chunk table",
                    format!("document {id} has no chunks row"),
                )
                .into())
            }
        };
        let count = row.chunk_count as usize;
        let vector_count = parsed.len();
        if chunks.chunks.len() != count || vector_count != count {
            return Err(Corruption::new(
                "chunk table",
                format!(
                    "document {id} has {count} chunks but rows of {} chunks and {vector_count} vectors",
                    chunks.chunks.len()
                ),
            )
            .into());
        }
        Ok((chunks.chunks, vectors))
    }

    /// Writes a revision of `doc` over the stored `row`: reads the old revision, asks
    /// [`plan::plan_revision`] what to write, then writes it.
    fn write_revision(
        &mut self,
        row: Option<DocRow>,
        doc: &PreparedDoc,
    ) -> Result<Outcome, WriteError> {
        // Read and plan; nothing is mutated until every check has passed.
        let (old_chunks, old_bytes) = match &row {
            Some(row) if !row.deleted => self.old_revision(row)?,
            _ => (Vec::new(), EMPTY_VECTORS.to_vec()),
        };
        let old_vectors = VectorsRow::parse(&old_bytes)?;
        let old = plan::old_chunks(&old_chunks, &old_vectors)?;
        let plan = plan::plan_revision(row.as_ref(), &old, doc, self.dimension)?;
        let fresh: Vec<(bool, Option<u32>)> = plan
            .vectors
            .iter()
            .map(|v| (v.kept_slot.is_none(), v.from_slot))
            .collect();
        let old_owner = row.as_ref().filter(|r| !r.deleted).map(|r| r.internal_id);
        let space_rows = self.plan_space_rows(doc, &fresh, old_owner)?;

        // Mutate.
        let (internal_id, next_slot) = self.revision_home(row.as_ref(), plan.rekey)?;
        if plan.dimension != self.dimension {
            self.dimension = plan.dimension;
            self.dimension_fixed_here = true;
        }
        let generation = advance(&mut self.seq.next_generation, seq_key::NEXT_GENERATION)?;
        let first_fresh = next_slot;
        let (entries, next_slot) = plan.entries(next_slot);
        let removed: Vec<u64> = match row.as_ref() {
            Some(row) => plan
                .removed_slots
                .iter()
                .map(|slot| vector_id(row.internal_id, *slot))
                .collect(),
            None => Vec::new(),
        };
        // Every vector of the revision is listed, kept ones too: the revision's metadata may
        // have changed, and the filter index learns which documents to re-read from the
        // changelog (the vector index re-inserting an identical vector changes nothing).
        self.change.added.extend(
            entries
                .iter()
                .map(|(slot, _)| vector_id(internal_id, *slot)),
        );
        self.change.removed.extend_from_slice(&removed);
        self.remove_space_rows(&removed)?;
        let ids: Vec<u64> = entries
            .iter()
            .map(|(slot, _)| vector_id(internal_id, *slot))
            .collect();
        self.insert_space_rows(space_rows, &ids)?;
        self.index_text(
            doc,
            row.as_ref().filter(|r| !r.deleted).map(|r| r.internal_id),
            &plan.removed_slots,
            internal_id,
            &entries,
            first_fresh,
        )?;
        let chunks_row = ChunksRowRef {
            generation,
            version_kind: doc.version.kind.to_byte(),
            version: doc.version.value,
            source: &doc.source,
            id: &doc.id,
            chunks: doc
                .chunks
                .iter()
                .zip(&entries)
                .map(|(c, (slot, _))| ChunkEntryRef {
                    slot: *slot,
                    text: &c.text,
                    meta: &c.meta,
                })
                .collect(),
        };
        // The two rows as `schema::RevisionRows` splits them; the vectors are encoded
        // straight into their reserved place in a redb page, unless every vector stayed in
        // place and the vectors row already carries the same chunks-row bytes.
        let codec = self.codec_for(doc)?;
        let chunks_bytes = schema::encode_chunks(&chunks_row, codec.as_deref());
        let rows = RevisionRows::split(&chunks_bytes, &entries);
        if !(plan.vectors_in_place && rows.spill_matches(&old_vectors)) {
            let mut slot = self
                .vectors
                .insert_reserve(internal_id, rows.vectors_row_len())
                .map_err(WriteError::storage)?;
            rows.write_vectors_row(&entries, slot.as_mut())?;
        }
        self.chunks
            .insert(internal_id, rows.chunks_row())
            .map_err(WriteError::storage)?;
        let new_row = DocRow {
            internal_id,
            version_kind: doc.version.kind.to_byte(),
            version: doc.version.value,
            generation,
            chunk_count: doc.chunks.len() as u32,
            content_key: guard::content_key(&doc.content_hash),
            deleted: false,
            meta: doc.meta.clone(),
            next_slot,
        };
        self.docs
            .insert(
                (doc.source.as_str(), doc.id.as_str()),
                schema::encode(&new_row).as_slice(),
            )
            .map_err(WriteError::storage)?;
        self.count_revision(&plan, row.is_none(), new_row.chunk_count);
        Ok(Outcome::Written {
            generation,
            chunks_written: plan.chunks_written,
            chunks_reused: plan.chunks_reused,
            chunks_removed: plan.chunks_removed,
        })
    }

    /// The text codec to write `doc`'s texts with. While the file has none, texts are
    /// gathered ([`Training`]); once there are [`TRAIN_BYTES`] of them a codec is trained and
    /// recorded in this transaction, and `doc` is the first revision written with it.
    fn codec_for(&mut self, doc: &PreparedDoc) -> Result<Option<Arc<TextCodec>>, WriteError> {
        if self.codec.is_some() || self.codec_damaged {
            return Ok(self.codec.clone());
        }
        let training = self.settings.training.clone();
        let mut training = training.lock();
        if !training.sampled_store {
            training.sampled_store = true;
            self.sample_stored_texts(&mut training)?;
        }
        for chunk in &doc.chunks {
            training.add(&chunk.text);
        }
        if training.is_full() {
            // The texts stay gathered until the table commits (the engine drops them then):
            // a batch that fails after training leaves the next one to train again.
            let refs: Vec<&str> = training.texts.iter().map(String::as_str).collect();
            let codec = Arc::new(TextCodec::train(&refs));
            drop(refs);
            drop(training);
            self.meta
                .insert(schema::meta_key::TEXT_CODEC, codec.to_bytes().as_slice())
                .map_err(WriteError::storage)?;
            if let Some(text) = &mut self.text {
                text.compress_with(codec.clone());
            }
            self.codec = Some(codec);
        }
        Ok(self.codec.clone())
    }

    /// Adds the texts of the file's first live revisions (at most [`SAMPLE_ROWS`] rows) to
    /// `training`, until it is full. A row that does not decode is left out: training only
    /// samples.
    fn sample_stored_texts(&self, training: &mut Training) -> Result<(), WriteError> {
        for entry in self
            .chunks
            .iter()
            .map_err(WriteError::storage)?
            .take(SAMPLE_ROWS)
        {
            if training.is_full() {
                break;
            }
            let (id, bytes) = entry.map_err(WriteError::storage)?;
            let Some(vectors) = self.vectors.get(id.value()).map_err(WriteError::storage)? else {
                continue;
            };
            let Ok(parsed) = VectorsRow::parse(vectors.value()) else {
                continue;
            };
            if let Ok(row) = schema::join_chunks(bytes.value(), &parsed, None) {
                for chunk in &row.chunks {
                    training.add(&chunk.text);
                }
            }
        }
        Ok(())
    }

    /// The text index's changes for a revision (when the store keeps one): the chunks under
    /// a fresh slot (`first_fresh` or later) are indexed under `internal_id`, those at the
    /// `removed` slots of the document's previous row (under `from`) un-indexed.
    fn index_text(
        &mut self,
        doc: &PreparedDoc,
        from: Option<u64>,
        removed: &[u32],
        internal_id: u64,
        entries: &[(u32, crate::backend::redb::schema::VectorData<'_>)],
        first_fresh: u32,
    ) -> Result<(), WriteError> {
        let Some(text) = &mut self.text else {
            return Ok(());
        };
        // Fresh slots are numbered in position order: `added` ascends by slot.
        let added: Vec<(u32, &str)> = entries
            .iter()
            .zip(&doc.chunks)
            .filter(|((slot, _), _)| *slot >= first_fresh)
            .map(|((slot, _), chunk)| (*slot, chunk.text.as_str()))
            .collect();
        let keeps = entries.len() > added.len();
        text.revise(from, removed, internal_id, &added, keeps)
    }

    /// The internal id a revision is written under and the document's next slot there: the
    /// stored row's, or (for a new document, or one moving off a used-up slot space) a new
    /// id (the old id's rows removed).
    fn revision_home(
        &mut self,
        row: Option<&DocRow>,
        rekey: bool,
    ) -> Result<(u64, u32), WriteError> {
        if let Some(row) = row.filter(|_| !rekey) {
            return Ok((row.internal_id, row.next_slot));
        }
        let id = self.new_internal_id()?;
        if let Some(row) = row {
            self.chunks
                .remove(row.internal_id)
                .map_err(WriteError::storage)?;
            self.vectors
                .remove(row.internal_id)
                .map_err(WriteError::storage)?;
        }
        Ok((id, 0))
    }

    /// The counters a written revision moves.
    fn count_revision(&mut self, plan: &RevisionPlan<'_>, was_absent: bool, new_count: u32) {
        if was_absent || plan.was_tombstone {
            self.bump(counter::LIVE_DOCUMENTS, 1);
        }
        if plan.was_tombstone {
            self.bump(counter::LIVE_TOMBSTONES, -1);
        }
        let live_delta = i64::from(new_count) - i64::from(plan.old_count);
        self.bump(counter::LIVE_CHUNKS, live_delta);
        self.bump(counter::LIVE_VECTORS, live_delta);
        self.bump(counter::CHUNKS_WRITTEN, plan.chunks_written as i64);
        self.bump(counter::CHUNKS_REUSED, plan.chunks_reused as i64);
        self.bump(counter::CHUNKS_REMOVED, plan.chunks_removed as i64);
    }

    pub(crate) fn delete(
        &mut self,
        source: &str,
        id: &str,
        version: Version,
    ) -> Result<Outcome, WriteError> {
        let (row, stored) = self.stored_state(source, id, version)?;
        let decision = guard::decide_delete(stored.as_ref(), version);
        if !matches!(decision, DeleteDecision::KindMismatch { .. }) {
            self.check_ticket(version)?;
        }
        match decision {
            DeleteDecision::KindMismatch { stored } => {
                Err(Self::kind_mismatch(source, id, stored, version))
            }
            DeleteDecision::Skip {
                reason,
                equal_version,
            } => {
                let stored_version = stored.map(|s| s.version).unwrap_or(version);
                Ok(self.skip(source, id, reason, equal_version, stored_version, version))
            }
            DeleteDecision::Tombstone { over_equal_version } => {
                let chunks_removed = self.tombstone(source, id, row, version)?;
                self.bump(counter::DELETED, 1);
                if over_equal_version {
                    self.bump(counter::DELETES_OVER_EQUAL_VERSION, 1);
                }
                Ok(Outcome::Deleted { chunks_removed })
            }
        }
    }

    /// Writes (or raises) a tombstone, removing every chunk and vector. Returns chunks removed.
    fn tombstone(
        &mut self,
        source: &str,
        id: &str,
        row: Option<DocRow>,
        version: Version,
    ) -> Result<u64, WriteError> {
        let (internal_id, removed) = match &row {
            Some(row) => {
                let mut removed = 0u64;
                if !row.deleted {
                    let Some(bytes) = self
                        .vectors
                        .remove(row.internal_id)
                        .map_err(WriteError::storage)?
                    else {
                        return Err(Corruption::new(
                            "vector table",
                            format!("document {} has no vectors row", row.internal_id),
                        )
                        .into());
                    };
                    let vectors = VectorsRow::parse(bytes.value())?;
                    let slots: Vec<u32> = vectors.slots().collect();
                    drop(bytes);
                    let ids: Vec<u64> = slots
                        .iter()
                        .map(|&slot| vector_id(row.internal_id, slot))
                        .collect();
                    self.remove_space_rows(&ids)?;
                    self.change.removed.extend(ids);
                    if let Some(text) = &mut self.text {
                        text.revise(Some(row.internal_id), &slots, row.internal_id, &[], false)?;
                    }
                    self.chunks
                        .remove(row.internal_id)
                        .map_err(WriteError::storage)?;
                    removed = u64::from(row.chunk_count);
                    self.bump(counter::LIVE_DOCUMENTS, -1);
                    self.bump(counter::LIVE_TOMBSTONES, 1);
                    self.bump(counter::LIVE_CHUNKS, -(removed as i64));
                    self.bump(counter::LIVE_VECTORS, -(removed as i64));
                    self.bump(counter::CHUNKS_REMOVED, removed as i64);
                }
                (row.internal_id, removed)
            }
            None => {
                let internal_id = self.new_internal_id()?;
                self.bump(counter::LIVE_TOMBSTONES, 1);
                (internal_id, 0)
            }
        };
        let tomb = DocRow {
            internal_id,
            version_kind: version.kind.to_byte(),
            version: version.value,
            generation: 0,
            chunk_count: 0,
            content_key: [0; 16],
            deleted: true,
            meta: "null".to_string(),
            // Slots stay used: a later revision must not reuse the ids just removed.
            next_slot: row.as_ref().map_or(0, |r| r.next_slot),
        };
        self.docs
            .insert((source, id), schema::encode(&tomb).as_slice())
            .map_err(WriteError::storage)?;
        Ok(removed)
    }

    pub(crate) fn retain(
        &mut self,
        source: &str,
        present: &[String],
        version: Version,
        members_hash: ContentHash,
    ) -> Result<RetainOutcome, WriteError> {
        // A listing already recorded at this version: a redelivery, or a conflicting listing.
        let existing: Option<ListingRow> = match self
            .listings
            .get((source, version.value))
            .map_err(WriteError::storage)?
        {
            Some(bytes) => Some(schema::decode("listing row", bytes.value())?),
            None => None,
        };
        if let Some(existing) = existing {
            let reason = if existing.members_hash == members_hash
                && existing.version_kind == version.kind.to_byte()
            {
                SkipReason::Duplicate
            } else {
                SkipReason::Conflict
            };
            self.skip(source, "(listing)", reason, true, version, version);
            return Ok(RetainOutcome {
                skipped: Some(reason),
                ..RetainOutcome::default()
            });
        }
        // Decide for every omitted document first; mutate only when none is refused.
        let mut omitted: Vec<(String, DocRow, bool)> = Vec::new();
        let mut newer_kept = 0u64;
        {
            let range = self
                .docs
                .range((source, "")..)
                .map_err(WriteError::storage)?;
            for entry in range {
                let (key, value) = entry.map_err(WriteError::storage)?;
                let (row_source, row_id) = key.value();
                if row_source != source {
                    break;
                }
                if present.binary_search_by(|p| p.as_str().cmp(row_id)).is_ok() {
                    continue;
                }
                let row: DocRow = schema::decode("document row", value.value())?;
                let stored = row.stored()?;
                match guard::decide_delete(Some(&stored), version) {
                    DeleteDecision::KindMismatch { stored } => {
                        return Err(Self::kind_mismatch(source, row_id, stored, version))
                    }
                    DeleteDecision::Tombstone { .. } => {
                        let live = !row.deleted;
                        omitted.push((row_id.to_string(), row, live));
                    }
                    DeleteDecision::Skip {
                        reason: SkipReason::Older,
                        ..
                    } if !stored.deleted => newer_kept += 1,
                    DeleteDecision::Skip { .. } => {}
                }
            }
        }
        self.check_ticket(version)?;
        let mut outcome = RetainOutcome {
            newer_kept,
            ..RetainOutcome::default()
        };
        for (id, row, live) in omitted {
            outcome.chunks_removed += self.tombstone(source, &id, Some(row), version)?;
            if live {
                outcome.documents_removed += 1;
            }
        }
        let listing = ListingRow {
            version_kind: version.kind.to_byte(),
            present_count: present.len() as u64,
            members_hash,
        };
        self.listings
            .insert((source, version.value), schema::encode(&listing).as_slice())
            .map_err(WriteError::storage)?;
        for id in present {
            self.listing_members
                .insert((source, version.value, id.as_str()), ())
                .map_err(WriteError::storage)?;
        }
        self.bump(counter::RETAIN_LISTINGS, 1);
        self.bump(
            counter::RETAIN_DOCUMENTS_REMOVED,
            outcome.documents_removed as i64,
        );
        Ok(outcome)
    }

    /// Removes tombstones and listings of `source` older than `before`.
    pub(crate) fn purge(
        &mut self,
        source: &str,
        before: Version,
    ) -> Result<PurgeOutcome, WriteError> {
        let mut outcome = PurgeOutcome::default();
        let mut dead: Vec<String> = Vec::new();
        for entry in self
            .docs
            .range((source, "")..)
            .map_err(WriteError::storage)?
        {
            let (key, value) = entry.map_err(WriteError::storage)?;
            let (row_source, row_id) = key.value();
            if row_source != source {
                break;
            }
            let row: DocRow = schema::decode("document row", value.value())?;
            if row.deleted
                && row.version_kind == before.kind.to_byte()
                && row.version < before.value
            {
                dead.push(row_id.to_string());
            }
        }
        for id in dead {
            self.docs
                .remove((source, id.as_str()))
                .map_err(WriteError::storage)?;
            outcome.tombstones_purged += 1;
        }
        let mut old_listings: Vec<u64> = Vec::new();
        for entry in self
            .listings
            .range((source, 0u64)..(source, before.value))
            .map_err(WriteError::storage)?
        {
            let (key, value) = entry.map_err(WriteError::storage)?;
            let row: ListingRow = schema::decode("listing row", value.value())?;
            if row.version_kind == before.kind.to_byte() {
                old_listings.push(key.value().1);
            }
        }
        for listing_version in old_listings {
            self.listings
                .remove((source, listing_version))
                .map_err(WriteError::storage)?;
            let mut members: Vec<String> = Vec::new();
            for entry in self
                .listing_members
                .range((source, listing_version, "")..)
                .map_err(WriteError::storage)?
            {
                let (key, _) = entry.map_err(WriteError::storage)?;
                let (s, v, id) = key.value();
                if s != source || v != listing_version {
                    break;
                }
                members.push(id.to_string());
            }
            for id in members {
                self.listing_members
                    .remove((source, listing_version, id.as_str()))
                    .map_err(WriteError::storage)?;
            }
            outcome.listings_purged += 1;
        }
        self.bump(
            counter::LIVE_TOMBSTONES,
            -(outcome.tombstones_purged as i64),
        );
        self.bump(counter::PURGED_TOMBSTONES, outcome.tombstones_purged as i64);
        self.bump(counter::PURGED_LISTINGS, outcome.listings_purged as i64);
        Ok(outcome)
    }

    /// Writes the batch's bookkeeping: sequences, counters, the changelog entry, the skip log
    /// and a newly fixed dimension. The caller commits the transaction.
    pub(crate) fn finish(mut self) -> Result<BatchEffects, WriteError> {
        let mut effects = BatchEffects::default();
        let advanced = !self.change.added.is_empty()
            || !self.change.removed.is_empty()
            || !self.space_change.added.is_empty();
        if advanced {
            advance(&mut self.seq.commit, seq_key::COMMIT)?;
            let commit = self.seq.commit;
            self.changelog
                .insert(commit, schema::encode(&self.change).as_slice())
                .map_err(WriteError::storage)?;
            if !self.space_change.added.is_empty() {
                self.space_changelog
                    .insert(commit, schema::encode(&self.space_change).as_slice())
                    .map_err(WriteError::storage)?;
            }
            effects.changelog = Some((commit, std::mem::take(&mut self.change)));
        }
        self.finish_spaces()?;
        // The index applies changelog rows right after each commit and reloads from the
        // vectors if it ever finds a gap, so only a recent window is kept.
        if let Some(text) = self.text.take() {
            text.finish(&mut self.counters, self.seq.commit, advanced)?;
        }
        let keep_from = self.seq.commit.saturating_sub(CHANGELOG_KEEP);
        if keep_from > 0 {
            self.changelog
                .retain_in(..=keep_from, |_, _| false)
                .map_err(WriteError::storage)?;
            self.space_changelog
                .retain_in(..=keep_from, |_, _| false)
                .map_err(WriteError::storage)?;
        }
        let capacity = self.settings.skip_log_capacity;
        for skip in std::mem::take(&mut self.skips) {
            let seq = advance(&mut self.seq.next_skip, seq_key::NEXT_SKIP)?;
            if capacity > 0 {
                self.skip_log
                    .insert(seq, schema::encode(&skip).as_slice())
                    .map_err(WriteError::storage)?;
            }
        }
        let keep_from = self.seq.next_skip.saturating_sub(capacity);
        self.skip_log
            .retain_in(..keep_from, |_, _| false)
            .map_err(WriteError::storage)?;
        self.bump(counter::COMMITS, 1);
        let sequences = [
            (seq_key::NEXT_DOC, self.seq.next_doc),
            (seq_key::NEXT_GENERATION, self.seq.next_generation),
            (seq_key::NEXT_SKIP, self.seq.next_skip),
            (seq_key::COMMIT, self.seq.commit),
        ];
        for (key, value) in sequences {
            self.counters
                .insert(key, value)
                .map_err(WriteError::storage)?;
        }
        for (key, delta) in std::mem::take(&mut self.deltas) {
            if delta == 0 {
                continue;
            }
            let current = read_counter(&self.counters, key)?;
            let updated = current.checked_add_signed(delta).ok_or_else(|| {
                Corruption::new(
                    "counters",
                    format!("{key} = {current} cannot change by {delta}"),
                )
            })?;
            self.counters
                .insert(key, updated)
                .map_err(WriteError::storage)?;
        }
        if self.dimension_fixed_here {
            if let Some(dimension) = self.dimension {
                let bytes = (dimension as u64).to_le_bytes();
                self.meta
                    .insert(schema::meta_key::DIMENSION, bytes.as_slice())
                    .map_err(WriteError::storage)?;
                effects.dimension_fixed = Some(dimension);
            }
        }
        effects.text_codec = self.codec.take();
        Ok(effects)
    }
}

/// The vectors row of a document with no chunks.
const EMPTY_VECTORS: [u8; 8] = [0; 8];
