//! The rules of vector spaces both backends would follow, pure and over backend-neutral
//! inputs: what a space may be called, whether a vector made from a chunk as it was read
//! may still be written (the guard of a re-embed), and where a new chunk's vector in a
//! space comes from.
//!
//! Invariant: a space's vector is written for a chunk only while the chunk is still stored
//! as it was read ([`decide_space_vector`]); a chunk a revision replaced or a delete
//! removed is counted as `superseded`, never written over.

use crate::error::InputError;

/// The longest space name, in bytes.
pub(crate) const MAX_SPACE_NAME_BYTES: usize = 64;

/// Checks a space name: 1 to [`MAX_SPACE_NAME_BYTES`] bytes of ASCII letters, digits, `-`,
/// `_` and `.` (it is shown in messages and used as a command-line argument).
pub(crate) fn check_space_name(field: &str, name: &str) -> Result<(), InputError> {
    if name.is_empty() {
        return Err(InputError::new(field, "must not be empty"));
    }
    if name.len() > MAX_SPACE_NAME_BYTES {
        return Err(InputError::new(
            field,
            format!(
                "is {} bytes; the limit is {MAX_SPACE_NAME_BYTES}",
                name.len()
            ),
        ));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
    {
        return Err(InputError::new(
            field,
            format!("contains {c:?}; a space name is ASCII letters, digits, '-', '_' and '.'"),
        ));
    }
    Ok(())
}

/// What becomes of one vector of a re-embed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SpaceVectorDecision {
    /// The chunk is stored as it was read and has no vector in the space: write it.
    Write,
    /// The chunk is no longer stored as it was read (rewritten, moved to new ids, deleted):
    /// not written.
    Superseded,
    /// The chunk already has a vector in the space (an earlier write of the same walk, or
    /// the revision brought one): not written.
    Present,
}

/// Whether a vector made from chunk `slot` of a document as it was read may be written:
/// `live_slots` are the slots of that document's live revision now (`None`: the document
/// is not live under the id it was read under), `present` whether the space already holds
/// a vector for the chunk.
pub(crate) fn decide_space_vector(
    live_slots: Option<&[u32]>,
    slot: u32,
    present: bool,
) -> SpaceVectorDecision {
    match live_slots {
        Some(slots) if slots.contains(&slot) => {
            if present {
                SpaceVectorDecision::Present
            } else {
                SpaceVectorDecision::Write
            }
        }
        _ => SpaceVectorDecision::Superseded,
    }
}

/// Where a chunk a revision writes under a new id takes its vector in one space from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NewChunkVector {
    /// The vector the revision brings for the space.
    Incoming,
    /// The space's vector of the stored chunk whose text (and default vector) it reuses.
    Reused,
    /// None: the space is incomplete, and a re-embed will fill it in.
    Left,
}

/// The vector a chunk under a new id takes in a space: the incoming one, else the one of
/// the stored chunk it reuses (`reusable`), else none, which only an incomplete space
/// allows (`None`: the revision is refused as missing that space's vector).
pub(crate) fn new_chunk_vector(
    complete: bool,
    incoming: bool,
    reusable: bool,
) -> Option<NewChunkVector> {
    if incoming {
        Some(NewChunkVector::Incoming)
    } else if reusable {
        Some(NewChunkVector::Reused)
    } else if complete {
        None
    } else {
        Some(NewChunkVector::Left)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_vector_is_written_only_for_a_chunk_still_stored_as_read() {
        assert_eq!(
            decide_space_vector(Some(&[3, 4]), 4, false),
            SpaceVectorDecision::Write
        );
        // Already there: never written twice.
        assert_eq!(
            decide_space_vector(Some(&[3, 4]), 4, true),
            SpaceVectorDecision::Present
        );
        // Rewritten: the slot read is gone (even if a chunk now sits at its position).
        assert_eq!(
            decide_space_vector(Some(&[5, 6]), 4, false),
            SpaceVectorDecision::Superseded
        );
        // Deleted or moved to another internal id.
        assert_eq!(
            decide_space_vector(None, 4, false),
            SpaceVectorDecision::Superseded
        );
        assert_eq!(
            decide_space_vector(None, 4, true),
            SpaceVectorDecision::Superseded
        );
    }

    #[test]
    fn a_complete_space_needs_a_vector_for_every_new_chunk() {
        use NewChunkVector::*;
        for complete in [false, true] {
            assert_eq!(new_chunk_vector(complete, true, true), Some(Incoming));
            assert_eq!(new_chunk_vector(complete, true, false), Some(Incoming));
            assert_eq!(new_chunk_vector(complete, false, true), Some(Reused));
        }
        assert_eq!(new_chunk_vector(false, false, false), Some(Left));
        assert_eq!(new_chunk_vector(true, false, false), None);
    }

    #[test]
    fn space_names_are_short_and_plain() {
        assert!(check_space_name("space", "minilm-l6_v2.1").is_ok());
        let empty = check_space_name("space", "").unwrap_err();
        assert_eq!(empty.field, "space");
        assert!(check_space_name("space", "a b").is_err());
        assert!(check_space_name("space", "é").is_err());
        assert!(check_space_name("space", &"a".repeat(MAX_SPACE_NAME_BYTES)).is_ok());
        assert!(check_space_name("space", &"a".repeat(MAX_SPACE_NAME_BYTES + 1)).is_err());
    }
}
