//! Where a revision's vectors come from: the one rule both backends follow, pure and over
//! backend-neutral inputs.
//!
//! [`plan_positions`] takes the stored revision's chunks (each as the text it was written
//! for and its stored vector, through [`OldChunk`]) and the incoming document, and decides
//! for each new position whether it keeps an old vector with its id, copies an old vector
//! under a new id, or takes the incoming vector under a new id. The old vectors no
//! position keeps are removed. Each backend maps the answer onto its own rows: the
//! embedded store onto slots and vector ids, PostgreSQL onto chunk rows.

use crate::error::WriteError;
use crate::policy::prepare::{PreparedChunk, PreparedDoc};
use std::collections::HashMap;
use std::hash::Hash;

/// How a stored chunk's text is told apart from another: chunks with equal keys have
/// identical text.
pub(crate) trait TextKey: Eq + Hash {
    /// The incoming chunk's key, in the same terms as the stored one's.
    fn of(chunk: &PreparedChunk) -> &Self;
}

/// The text itself.
impl TextKey for str {
    fn of(chunk: &PreparedChunk) -> &str {
        &chunk.text
    }
}

/// The text's hash (`prepare::text_hash`), as a backend that stores it beside the chunk
/// keeps it.
impl TextKey for [u8] {
    fn of(chunk: &PreparedChunk) -> &[u8] {
        &chunk.text_hash
    }
}

/// A stored vector, as the backend holds it.
#[derive(Clone, Copy, Debug)]
pub(crate) enum StoredVector<'a> {
    /// Little-endian f32 bytes.
    Bytes(&'a [u8]),
    /// Floats (PostgreSQL's embeddings).
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    Floats(&'a [f32]),
}

impl StoredVector<'_> {
    /// Whether the stored vector is bit-identical to `vector` (so `0.0` and `-0.0` differ).
    pub(crate) fn same_as(&self, vector: &[f32]) -> bool {
        match *self {
            StoredVector::Bytes(stored) => {
                stored.len() == vector.len() * 4
                    && stored
                        .chunks_exact(4)
                        .zip(vector)
                        .all(|(b, x)| b == x.to_le_bytes())
            }
            StoredVector::Floats(stored) => {
                stored.len() == vector.len()
                    && stored
                        .iter()
                        .zip(vector)
                        .all(|(a, b)| a.to_bits() == b.to_bits())
            }
        }
    }
}

/// One chunk of the stored revision, as the rule sees it.
pub(crate) trait OldChunk {
    /// How its text is compared with an incoming chunk's.
    type Key: TextKey + ?Sized;
    /// Its text's key.
    fn text_key(&self) -> &Self::Key;
    /// Its stored vector.
    fn vector(&self) -> StoredVector<'_>;
}

/// Where one new position's vector comes from (positions in it are the old revision's).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum VectorSource<'a> {
    /// Keep an old vector (same text, same or no incoming vector) with its id, wherever the
    /// chunk now is.
    Keep {
        /// The old position whose vector is kept.
        old_position: usize,
    },
    /// Copy an old vector for identical text that another position already keeps, under a
    /// new id.
    Copy {
        /// The old position whose vector is copied.
        from: usize,
    },
    /// Write the incoming vector under a new id.
    New(&'a [f32]),
}

/// The rule's answer: each new position's vector source, and the old vectors that go.
#[derive(Debug)]
pub(crate) struct PositionPlan<'a> {
    /// Each new position's vector source, in position order.
    pub sources: Vec<VectorSource<'a>>,
    /// The old positions no new position keeps, ascending: their vectors (and ids) are
    /// removed.
    pub removed: Vec<usize>,
}

/// Where each new position of `doc` takes its vector from, over the stored revision `old`
/// (empty for no stored document or a tombstone).
///
/// An old vector is kept for a position with identical text (in place first, then moved
/// from another position), each old vector by at most one position, and only if the
/// position brings no vector or a bit-identical one. A position left without a kept vector
/// takes its incoming vector; a position without one copies the vector of the first old
/// chunk with its text. A position with neither is [`WriteError::MissingVector`]. Texts
/// are compared in place with one comparison each, and the old chunks are put in a table
/// by text only when some position is left over.
pub(crate) fn plan_positions<'d, O: OldChunk>(
    old: &[O],
    doc: &'d PreparedDoc,
) -> Result<PositionPlan<'d>, WriteError> {
    let same = |old_position: usize, vector: &Option<Vec<f32>>| match vector {
        None => true,
        Some(vector) => old[old_position].vector().same_as(vector),
    };
    let mut plan: Vec<Option<VectorSource<'d>>> = vec![None; doc.chunks.len()];
    let mut claimed = vec![false; old.len()];
    for (position, chunk) in doc.chunks.iter().enumerate() {
        let Some(old_chunk) = old.get(position) else {
            continue;
        };
        if old_chunk.text_key() == O::Key::of(chunk) && same(position, &chunk.vector) {
            claimed[position] = true;
            plan[position] = Some(VectorSource::Keep {
                old_position: position,
            });
        }
    }
    let mut by_text: HashMap<&O::Key, Vec<usize>, foldhash::fast::RandomState> = HashMap::default();
    if plan.iter().any(Option::is_none) {
        for (old_position, old_chunk) in old.iter().enumerate() {
            by_text
                .entry(old_chunk.text_key())
                .or_default()
                .push(old_position);
        }
    }
    for (position, chunk) in doc.chunks.iter().enumerate() {
        if plan[position].is_some() {
            continue;
        }
        let candidates = by_text
            .get(O::Key::of(chunk))
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let chosen = candidates
            .iter()
            .copied()
            .find(|&old_position| !claimed[old_position] && same(old_position, &chunk.vector));
        if let Some(old_position) = chosen {
            claimed[old_position] = true;
        }
        plan[position] = Some(match (chosen, &chunk.vector) {
            (Some(old_position), _) => VectorSource::Keep { old_position },
            (None, Some(vector)) => VectorSource::New(vector),
            (None, None) => match candidates.first() {
                Some(&from) => VectorSource::Copy { from },
                None => return Err(WriteError::MissingVector { position }),
            },
        });
    }
    let removed = claimed
        .iter()
        .enumerate()
        .filter(|(_, claimed)| !**claimed)
        .map(|(old_position, _)| old_position)
        .collect();
    Ok(PositionPlan {
        sources: plan.into_iter().flatten().collect(),
        removed,
    })
}

/// The store's dimension after `doc`: every vector must have the store's, or (for a store
/// without one yet) the first vector's; a vector of another is
/// [`WriteError::DimensionMismatch`] naming its position.
pub(crate) fn revision_dimension(
    doc: &PreparedDoc,
    mut dimension: Option<usize>,
) -> Result<Option<usize>, WriteError> {
    for (position, chunk) in doc.chunks.iter().enumerate() {
        if let Some(vector) = &chunk.vector {
            match dimension {
                Some(expected) if expected != vector.len() => {
                    return Err(WriteError::DimensionMismatch {
                        position,
                        expected,
                        found: vector.len(),
                    })
                }
                _ => dimension = Some(vector.len()),
            }
        }
    }
    Ok(dimension)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::prepare::fixtures::{chunk, doc};
    use crate::policy::prepare::text_hash;

    /// A stored chunk as the embedded store gives it: its text and little-endian bytes.
    struct ByText {
        text: String,
        bytes: Vec<u8>,
    }

    impl OldChunk for ByText {
        type Key = str;
        fn text_key(&self) -> &str {
            &self.text
        }
        fn vector(&self) -> StoredVector<'_> {
            StoredVector::Bytes(&self.bytes)
        }
    }

    /// A stored chunk as PostgreSQL gives it: its text's hash and floats.
    struct ByHash {
        hash: Vec<u8>,
        floats: Vec<f32>,
    }

    impl OldChunk for ByHash {
        type Key = [u8];
        fn text_key(&self) -> &[u8] {
            &self.hash
        }
        fn vector(&self) -> StoredVector<'_> {
            StoredVector::Floats(&self.floats)
        }
    }

    /// The vector the old chunk at `i` was stored with.
    fn old_vector(i: usize) -> Vec<f32> {
        vec![i as f32, 1.0]
    }

    /// Old chunks `texts`, each (at position `i`) with the vector [`old_vector`]`(i)`.
    fn by_text(texts: &[&str]) -> Vec<ByText> {
        texts
            .iter()
            .enumerate()
            .map(|(i, text)| ByText {
                text: text.to_string(),
                bytes: old_vector(i).iter().flat_map(|x| x.to_le_bytes()).collect(),
            })
            .collect()
    }

    fn by_hash(texts: &[&str]) -> Vec<ByHash> {
        texts
            .iter()
            .enumerate()
            .map(|(i, text)| ByHash {
                hash: text_hash(text).to_vec(),
                floats: old_vector(i),
            })
            .collect()
    }

    /// The rule's answer over `texts` stored both ways; asserts the two agree.
    fn decide<'d>(
        texts: &[&str],
        incoming: &'d PreparedDoc,
    ) -> Result<(Vec<VectorSource<'d>>, Vec<usize>), WriteError> {
        let text = plan_positions(&by_text(texts), incoming).map(|p| (p.sources, p.removed));
        let hash = plan_positions(&by_hash(texts), incoming).map(|p| (p.sources, p.removed));
        assert_eq!(format!("{text:?}"), format!("{hash:?}"));
        text
    }

    fn keep(old_position: usize) -> VectorSource<'static> {
        VectorSource::Keep { old_position }
    }

    #[test]
    fn a_revision_with_the_same_texts_keeps_every_vector_in_place() {
        let incoming = doc(vec![chunk("a", None), chunk("b", None)]);
        let plan = decide(&["a", "b"], &incoming).ok();
        assert_eq!(plan, Some((vec![keep(0), keep(1)], vec![])));
    }

    #[test]
    fn a_moved_chunk_keeps_its_vector_and_a_dropped_one_loses_it() {
        // "c" moves to the front, "a" stays, "b" goes, "d" is new.
        let incoming = doc(vec![
            chunk("c", None),
            chunk("a", None),
            chunk("d", Some(vec![7.0, 7.0])),
        ]);
        let plan = decide(&["a", "b", "c"], &incoming).ok();
        assert_eq!(
            plan,
            Some((
                vec![keep(2), keep(0), VectorSource::New(&[7.0, 7.0])],
                vec![1]
            ))
        );
    }

    #[test]
    fn a_chunk_without_a_vector_or_an_old_one_for_its_text_is_refused() {
        let incoming = doc(vec![chunk("a", None), chunk("new", None)]);
        assert!(matches!(
            decide(&["a"], &incoming),
            Err(WriteError::MissingVector { position: 1 })
        ));
        // Nothing stored (no document, or a tombstone): a chunk without a vector has none.
        let incoming = doc(vec![chunk("a", None)]);
        assert!(matches!(
            decide(&[], &incoming),
            Err(WriteError::MissingVector { position: 0 })
        ));
    }

    #[test]
    fn a_revision_over_nothing_stored_takes_every_incoming_vector() {
        let incoming = doc(vec![chunk("a", Some(vec![1.0, 0.0]))]);
        let plan = decide(&[], &incoming).ok();
        assert_eq!(plan, Some((vec![VectorSource::New(&[1.0, 0.0])], vec![])));
    }

    #[test]
    fn an_identical_incoming_vector_keeps_the_old_one_and_another_replaces_it() {
        let incoming = doc(vec![
            chunk("a", Some(old_vector(0))),
            chunk("b", Some(vec![9.0, 9.0])),
        ]);
        let plan = decide(&["a", "b"], &incoming).ok();
        assert_eq!(
            plan,
            Some((vec![keep(0), VectorSource::New(&[9.0, 9.0])], vec![1]))
        );
    }

    #[test]
    fn vectors_are_compared_bit_for_bit() {
        // The old vector at 0 is [0.0, 1.0]: [-0.0, 1.0] equals it as floats, not as bits.
        let incoming = doc(vec![chunk("a", Some(vec![-0.0, 1.0]))]);
        let plan = decide(&["a"], &incoming).ok();
        assert_eq!(plan, Some((vec![VectorSource::New(&[-0.0, 1.0])], vec![0])));
        let bits = |p: &Option<(Vec<VectorSource<'_>>, Vec<usize>)>| match p {
            Some((sources, _)) => match sources.first() {
                Some(VectorSource::New(v)) => v.first().map(|x| x.to_bits()),
                _ => None,
            },
            None => None,
        };
        assert_eq!(bits(&plan), Some((-0.0f32).to_bits()));
    }

    #[test]
    fn a_repeated_text_copies_the_vector_another_position_keeps() {
        // "a" twice: the first keeps the old vector, the second copies it under a new id.
        let incoming = doc(vec![chunk("a", None), chunk("a", None)]);
        let plan = decide(&["a"], &incoming).ok();
        assert_eq!(
            plan,
            Some((vec![keep(0), VectorSource::Copy { from: 0 }], vec![]))
        );
    }

    #[test]
    fn each_old_vector_is_kept_by_one_position_at_most() {
        // Two old "a"s and three new ones: the first two keep one each (in place), the third
        // copies the first old one.
        let incoming = doc(vec![chunk("a", None), chunk("a", None), chunk("a", None)]);
        let plan = decide(&["a", "a"], &incoming).ok();
        assert_eq!(
            plan,
            Some((
                vec![keep(0), keep(1), VectorSource::Copy { from: 0 }],
                vec![]
            ))
        );
        // Reversed in place: "b" moves ahead of the old "a"s, which shift by one.
        let incoming = doc(vec![chunk("b", None), chunk("a", None), chunk("a", None)]);
        let plan = decide(&["a", "a", "b"], &incoming).ok();
        assert_eq!(plan, Some((vec![keep(2), keep(1), keep(0)], vec![])));
    }

    #[test]
    fn a_moved_chunk_with_a_different_vector_does_not_take_the_old_one() {
        // "b" moves to the front with a new vector: the old "b" vector goes.
        let incoming = doc(vec![chunk("b", Some(vec![5.0, 5.0])), chunk("a", None)]);
        let plan = decide(&["a", "b"], &incoming).ok();
        assert_eq!(
            plan,
            Some((vec![VectorSource::New(&[5.0, 5.0]), keep(0)], vec![1]))
        );
    }

    #[test]
    fn the_first_vector_fixes_the_dimension_and_the_others_must_match() {
        let incoming = doc(vec![chunk("a", None), chunk("b", Some(vec![1.0; 3]))]);
        assert_eq!(revision_dimension(&incoming, None).ok(), Some(Some(3)));
        assert_eq!(revision_dimension(&doc(vec![]), None).ok(), Some(None));
        let incoming = doc(vec![
            chunk("a", Some(vec![1.0; 3])),
            chunk("b", Some(vec![1.0; 2])),
        ]);
        assert!(matches!(
            revision_dimension(&incoming, None),
            Err(WriteError::DimensionMismatch {
                position: 1,
                expected: 3,
                found: 2
            })
        ));
        let incoming = doc(vec![chunk("a", Some(vec![1.0; 3]))]);
        assert!(matches!(
            revision_dimension(&incoming, Some(4)),
            Err(WriteError::DimensionMismatch {
                position: 0,
                expected: 4,
                found: 3
            })
        ));
    }
}
