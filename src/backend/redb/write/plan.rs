//! Deciding a revision's rows from the rows read: pure, no I/O, the way `guard::decide` is.
//!
//! [`plan_revision`] takes the stored document row, the old revision's chunks beside their
//! vectors and the incoming document, and decides everything the write then carries out:
//! the store's dimension after it, where each new position's vector comes from (an old
//! vector kept under its id, an old vector copied under a new id, or the incoming one: the
//! rule both backends follow, `policy::revision`, mapped onto slots), which old vector ids
//! go, whether the document moves to a new internal id, whether its
//! vectors row can stay as it is, and what the outcome counts. `Batch::write_revision`
//! only allocates ids and writes what the plan says.

use crate::backend::redb::schema::{ChunkEntry, DocRow, VectorData, VectorsRow, SLOTS_PER_DOC};
use crate::error::WriteError;
use crate::policy::prepare::PreparedDoc;
use crate::policy::revision::{self, StoredVector, VectorSource};
use std::collections::HashSet;

/// One chunk of the stored revision: its text beside its vector's slot and bytes.
#[derive(Clone, Copy, Debug)]
pub(super) struct OldChunk<'a> {
    pub text: &'a str,
    pub slot: u32,
    pub vector: &'a [u8],
}

/// The shared rule compares texts themselves (schema 5 stores no per-chunk hash) and the
/// stored vectors' little-endian bytes.
impl revision::OldChunk for OldChunk<'_> {
    type Key = str;

    fn text_key(&self) -> &str {
        self.text
    }

    fn vector(&self) -> StoredVector<'_> {
        StoredVector::Bytes(self.vector)
    }
}

/// The stored revision's chunks beside its vectors, position by position (the caller has
/// checked that the rows hold the same number), from a raw vectors row
/// ([`VectorsRow::to_raw`]).
pub(super) fn old_chunks<'a>(
    chunks: &'a [ChunkEntry],
    vectors: &VectorsRow<'a>,
) -> Result<Vec<OldChunk<'a>>, WriteError> {
    Ok(chunks
        .iter()
        .zip(vectors.raw_entries()?)
        .map(|(chunk, (slot, vector))| OldChunk {
            text: &chunk.text,
            slot,
            vector,
        })
        .collect())
}

/// One new position's vector.
#[derive(Clone, Copy, Debug)]
pub(super) struct PlannedVector<'a> {
    /// Its bytes: an old vector's, or the incoming floats.
    pub data: VectorData<'a>,
    /// The old slot it keeps (and so its vector id), or `None` for the next fresh slot.
    pub kept_slot: Option<u32>,
    /// The old slot whose text (and default vector) it reuses, kept or copied (`None`: the
    /// incoming vector): where its vectors in the other spaces can come from.
    pub from_slot: Option<u32>,
}

/// Everything a revision writes, decided before anything is mutated.
#[derive(Debug)]
pub(super) struct RevisionPlan<'a> {
    /// The store's dimension after the revision (its first vector fixes an unset one).
    pub dimension: Option<usize>,
    /// The document's slot space is used up: it moves to a new internal id, where every
    /// vector takes a fresh slot.
    pub rekey: bool,
    /// Each new position's vector, in position order.
    pub vectors: Vec<PlannedVector<'a>>,
    /// The old slots no position keeps: their vector ids are removed.
    pub removed_slots: Vec<u32>,
    /// Every vector stays where it was (a revision changing only metadata): the vectors
    /// row is rewritten only if the chunks-row bytes it carries change.
    pub vectors_in_place: bool,
    /// The stored row was a tombstone.
    pub was_tombstone: bool,
    /// The old revision's chunk count (0 for none or a tombstone).
    pub old_count: u32,
    /// Vectors written from the incoming document.
    pub chunks_written: u64,
    /// Old vectors kept or copied.
    pub chunks_reused: u64,
    /// Chunks the revision has fewer than the old one.
    pub chunks_removed: u64,
}

impl<'a> RevisionPlan<'a> {
    /// The vectors row's entries, fresh slots numbered from `next_slot`; returns them and
    /// the document's next slot after them.
    pub(super) fn entries(&self, mut next_slot: u32) -> (Vec<(u32, VectorData<'a>)>, u32) {
        let entries = self
            .vectors
            .iter()
            .map(|planned| {
                let slot = planned.kept_slot.unwrap_or_else(|| {
                    next_slot += 1;
                    next_slot - 1
                });
                (slot, planned.data)
            })
            .collect();
        (entries, next_slot)
    }

    /// How many positions take a fresh slot.
    fn fresh_slots(&self) -> u64 {
        self.vectors
            .iter()
            .filter(|v| v.kept_slot.is_none())
            .count() as u64
    }
}

/// Decides a revision of `doc` over the stored `row` (absent, a tombstone, or live with the
/// revision `old`) in a store of `dimension`. Errors are the operation's own (a dimension
/// mismatch, a chunk without a vector and no old vector for its text); nothing is mutated.
pub(super) fn plan_revision<'a>(
    row: Option<&DocRow>,
    old: &[OldChunk<'a>],
    doc: &'a PreparedDoc,
    dimension: Option<usize>,
) -> Result<RevisionPlan<'a>, WriteError> {
    let dimension = revision::revision_dimension(doc, dimension)?;
    let positions = revision::plan_positions(old, doc)?;
    let sources = positions.sources;
    let vectors_in_place = row.is_some_and(|r| !r.deleted)
        && sources.len() == old.len()
        && sources
            .iter()
            .enumerate()
            .all(|(p, s)| matches!(s, VectorSource::Keep { old_position } if *old_position == p));
    let mut plan = RevisionPlan {
        dimension,
        rekey: false,
        vectors: Vec::with_capacity(sources.len()),
        removed_slots: Vec::new(),
        vectors_in_place,
        was_tombstone: row.is_some_and(|r| r.deleted),
        old_count: old.len() as u32,
        chunks_written: 0,
        chunks_reused: 0,
        chunks_removed: (old.len() as u64).saturating_sub(doc.chunks.len() as u64),
    };
    for source in &sources {
        let planned = match *source {
            VectorSource::Keep { old_position } => PlannedVector {
                data: VectorData::Raw(old[old_position].vector),
                kept_slot: Some(old[old_position].slot),
                from_slot: Some(old[old_position].slot),
            },
            VectorSource::Copy { from } => PlannedVector {
                data: VectorData::Raw(old[from].vector),
                kept_slot: None,
                from_slot: Some(old[from].slot),
            },
            VectorSource::New(vector) => PlannedVector {
                data: VectorData::Floats(vector),
                kept_slot: None,
                from_slot: None,
            },
        };
        match planned.data {
            VectorData::Raw(_) => plan.chunks_reused += 1,
            VectorData::Floats(_) => plan.chunks_written += 1,
        }
        plan.vectors.push(planned);
    }
    // A document whose revisions used up its slot space moves to a new internal id: every
    // vector gets a new id there, and the old ids are removed as for any revision.
    plan.rekey = row.is_some_and(|r| u64::from(r.next_slot) + plan.fresh_slots() > SLOTS_PER_DOC);
    if plan.rekey {
        plan.vectors_in_place = false;
        for planned in &mut plan.vectors {
            planned.kept_slot = None;
        }
    }
    // The old vectors the rule removes go, or every old vector when the document moves;
    // by slot, so a slot some position keeps is never removed.
    plan.removed_slots = if plan.rekey {
        old.iter().map(|o| o.slot).collect()
    } else if positions.removed.is_empty() {
        Vec::new()
    } else {
        let kept: HashSet<u32> = plan.vectors.iter().filter_map(|v| v.kept_slot).collect();
        positions
            .removed
            .iter()
            .map(|&old_position| old[old_position].slot)
            .filter(|slot| !kept.contains(slot))
            .collect()
    };
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::prepare::fixtures::{chunk, doc};

    fn row(next_slot: u32, deleted: bool) -> DocRow {
        DocRow {
            internal_id: 5,
            version_kind: 0,
            version: 1,
            generation: 1,
            chunk_count: 0,
            content_key: [0; 16],
            deleted,
            meta: "{}".to_string(),
            next_slot,
        }
    }

    /// Old chunks `texts` in slots 10, 11, …, each vector `[i as f32, 1.0]`.
    fn old_bytes<'t>(texts: &[&'t str]) -> Vec<(&'t str, u32, Vec<u8>)> {
        texts
            .iter()
            .enumerate()
            .map(|(i, text)| {
                let bytes = [i as f32, 1.0]
                    .iter()
                    .flat_map(|x| x.to_le_bytes())
                    .collect();
                (*text, 10 + i as u32, bytes)
            })
            .collect()
    }

    fn old<'a>(bytes: &'a [(&'a str, u32, Vec<u8>)]) -> Vec<OldChunk<'a>> {
        bytes
            .iter()
            .map(|(text, slot, vector)| OldChunk {
                text,
                slot: *slot,
                vector,
            })
            .collect()
    }

    #[test]
    fn a_revision_with_the_same_texts_keeps_every_vector_in_place() {
        let stored = old_bytes(&["a", "b"]);
        let incoming = doc(vec![chunk("a", None), chunk("b", None)]);
        let plan = plan_revision(Some(&row(12, false)), &old(&stored), &incoming, Some(2));
        let plan = plan.ok();
        let plan = plan.as_ref();
        assert!(plan.is_some_and(|p| p.vectors_in_place && !p.rekey));
        assert_eq!(plan.map(|p| p.removed_slots.clone()), Some(vec![]));
        assert_eq!(
            plan.map(|p| (p.chunks_reused, p.chunks_written)),
            Some((2, 0))
        );
        assert_eq!(
            plan.map(|p| p.entries(12).0.iter().map(|e| e.0).collect::<Vec<_>>()),
            Some(vec![10, 11])
        );
    }

    #[test]
    fn a_moved_chunk_keeps_its_vector_id_and_a_dropped_one_loses_it() {
        let stored = old_bytes(&["a", "b", "c"]);
        // "c" moves to the front, "a" stays, "b" goes, "d" is new.
        let incoming = doc(vec![
            chunk("c", None),
            chunk("a", None),
            chunk("d", Some(vec![7.0, 7.0])),
        ]);
        let plan = plan_revision(Some(&row(13, false)), &old(&stored), &incoming, Some(2)).ok();
        let plan = plan.as_ref();
        assert!(plan.is_some_and(|p| !p.vectors_in_place));
        assert_eq!(
            plan.map(|p| p.vectors.iter().map(|v| v.kept_slot).collect::<Vec<_>>()),
            Some(vec![Some(12), Some(10), None])
        );
        assert_eq!(plan.map(|p| p.removed_slots.clone()), Some(vec![11]));
        assert_eq!(
            plan.map(|p| (p.chunks_reused, p.chunks_written)),
            Some((2, 1))
        );
        // The new vector takes the next fresh slot, and the next slot moves past it.
        assert_eq!(
            plan.map(|p| {
                let (entries, next) = p.entries(13);
                (entries.iter().map(|e| e.0).collect::<Vec<_>>(), next)
            }),
            Some((vec![12, 10, 13], 14))
        );
    }

    #[test]
    fn a_chunk_without_a_vector_or_an_old_one_for_its_text_is_refused() {
        let stored = old_bytes(&["a"]);
        let incoming = doc(vec![chunk("a", None), chunk("new", None)]);
        let plan = plan_revision(Some(&row(11, false)), &old(&stored), &incoming, Some(2));
        assert!(matches!(
            plan,
            Err(WriteError::MissingVector { position: 1 })
        ));
    }

    #[test]
    fn the_first_vector_fixes_the_dimension_and_the_others_must_match() {
        let incoming = doc(vec![chunk("a", Some(vec![1.0; 3]))]);
        let plan = plan_revision(None, &[], &incoming, None);
        assert_eq!(plan.ok().map(|p| p.dimension), Some(Some(3)));
        let incoming = doc(vec![
            chunk("a", Some(vec![1.0; 3])),
            chunk("b", Some(vec![1.0; 2])),
        ]);
        let plan = plan_revision(None, &[], &incoming, None);
        assert!(matches!(
            plan,
            Err(WriteError::DimensionMismatch {
                position: 1,
                expected: 3,
                found: 2
            })
        ));
    }

    #[test]
    fn a_document_out_of_slots_moves_every_vector_to_fresh_slots() {
        let stored = old_bytes(&["a", "b"]);
        let incoming = doc(vec![chunk("a", None), chunk("z", Some(vec![0.0, 1.0]))]);
        // Every slot used: the one fresh slot the revision needs is not there.
        let full = SLOTS_PER_DOC as u32;
        let plan = plan_revision(Some(&row(full, false)), &old(&stored), &incoming, Some(2)).ok();
        let plan = plan.as_ref();
        assert!(plan.is_some_and(|p| p.rekey && !p.vectors_in_place));
        assert!(plan.is_some_and(|p| p.vectors.iter().all(|v| v.kept_slot.is_none())));
        assert_eq!(plan.map(|p| p.removed_slots.clone()), Some(vec![10, 11]));
    }

    #[test]
    fn a_revision_over_a_tombstone_reuses_nothing() {
        let incoming = doc(vec![chunk("a", Some(vec![1.0, 0.0]))]);
        let plan = plan_revision(Some(&row(4, true)), &[], &incoming, Some(2)).ok();
        let plan = plan.as_ref();
        assert!(plan.is_some_and(|p| p.was_tombstone && !p.vectors_in_place));
        assert_eq!(plan.map(|p| (p.old_count, p.chunks_written)), Some((0, 1)));
        assert_eq!(plan.map(|p| p.entries(4).1), Some(5));
    }
}
