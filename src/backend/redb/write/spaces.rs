//! The vector spaces' part of a write transaction: a revision's vectors in every space
//! other than the default one (checked before anything is mutated, then written beside
//! its default vectors), their removal with the chunks a revision or a delete removes, and
//! the guarded re-embed writes (`policy::space`).

use super::{read_counter, Batch};
use crate::backend::redb::schema::decode_row;
use crate::backend::redb::schema::{
    self, split_vector_id, vector_id, SpaceRow, VectorsRow, SPACES,
};
use crate::error::{InputError, WriteError};
use crate::policy::prepare::PreparedDoc;
use crate::policy::space::{self, NewChunkVector, SpaceVectorDecision};
use crate::types::counters::name as counter;
use crate::types::{SpaceWriteOutcome, DEFAULT_SPACE};
use redb::{ReadableTable, Table, WriteTransaction};
use std::collections::HashMap;

/// One space as a batch sees it: its row, whether it was complete when the batch began,
/// and how many rows the batch added (or removed).
#[derive(Debug)]
pub(crate) struct BatchSpace {
    pub name: String,
    /// Its row; `Err` (what is wrong with it) for a damaged space, whose row does not
    /// decode.
    pub row: Result<SpaceRow, String>,
    pub complete: bool,
    pub delta: i64,
}

/// Every space other than the default one, read at the start of a batch. A space is
/// complete when it holds a vector for every live chunk; every operation of the batch
/// keeps a complete space complete (or is refused), so deciding it once is exact for the
/// whole batch.
///
/// A damaged space (its row does not decode) is listed but not kept: an operation that
/// names it (a chunk's vector for it) is refused naming it, every other one is written
/// without touching its rows. Refusing every write instead would stop a store over one
/// row; keeping its rows is impossible without its row, and harmless to skip: its count
/// cannot be read, so it is never taken as complete (nor searched, activated or filled)
/// again, and dropping it removes every row it has (`spaces::drop_space`).
pub(crate) fn load_spaces(
    txn: &WriteTransaction,
    counters: &Table<'_, &'static str, u64>,
) -> Result<Vec<BatchSpace>, WriteError> {
    let table = txn.open_table(SPACES).map_err(WriteError::storage)?;
    let live_chunks = read_counter(counters, counter::LIVE_CHUNKS)?;
    let mut spaces = Vec::new();
    for entry in table.iter().map_err(WriteError::storage)? {
        let (name, value) = entry.map_err(WriteError::storage)?;
        let row = decode_row(name.value(), value.value()).map_err(|c| c.detail);
        spaces.push(BatchSpace {
            name: name.value().to_owned(),
            complete: row.as_ref().is_ok_and(|row| row.vectors >= live_chunks),
            row,
            delta: 0,
        });
    }
    Ok(spaces)
}

/// A live document's internal id and the slots of its live chunks (`None`: not live).
type LiveSlots = Option<(u64, Vec<u32>)>;

/// The bytes of a vector as a space row holds them.
pub(crate) fn vector_bytes(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A revision's rows in one space, decided before anything is mutated: by position, the
/// bytes of each chunk under a new id that gets a vector there.
pub(super) struct SpaceInserts {
    /// (index into the batch's spaces, position, bytes).
    rows: Vec<(usize, usize, Vec<u8>)>,
}

impl Batch<'_> {
    /// Whether `name` is the name the default space answers to since a promotion.
    fn is_promoted_name(&self, name: &str) -> Result<bool, WriteError> {
        Ok(self
            .meta
            .get(schema::meta_key::DEFAULT_SPACE_NAME)
            .map_err(WriteError::storage)?
            .is_some_and(|v| v.value() == name.as_bytes()))
    }

    /// Checks `doc`'s vectors in the other spaces against the stored spaces and decides
    /// each new chunk's vector in every space (`policy::space::new_chunk_vector`): the
    /// incoming one, the one of the stored chunk it reuses, or none (an incomplete space);
    /// a complete space without one is [`WriteError::MissingSpaceVector`]. `fresh` says,
    /// by position, whether the chunk takes a new id and which stored slot (of internal id
    /// `old_owner`) it reuses. Reads only.
    pub(super) fn plan_space_rows(
        &self,
        doc: &PreparedDoc,
        fresh: &[(bool, Option<u32>)],
        old_owner: Option<u64>,
    ) -> Result<SpaceInserts, WriteError> {
        for (position, chunk) in doc.chunks.iter().enumerate() {
            for (name, vector) in &chunk.spaces {
                let field = || format!("chunks[{position}].spaces.{name}");
                let Some(space) = self.spaces.iter().find(|s| &s.name == name) else {
                    if self.is_promoted_name(name)? {
                        return Err(InputError::new(
                            field(),
                            format!(
                                "{name:?} names the default space (it was promoted to it): \
                                 give this vector as the chunk's own (Chunk::vector)"
                            ),
                        )
                        .into());
                    }
                    return Err(InputError::new(
                        field(),
                        format!(
                            "names no vector space of this store (Store::add_space adds {name:?})"
                        ),
                    )
                    .into());
                };
                let row = match &space.row {
                    Ok(row) => row,
                    Err(_) => {
                        return Err(InputError::new(
                            field(),
                            format!(
                                "space {name:?} cannot take vectors: its row in the file is \
                                 damaged (Store::verify reports it; Store::drop_space removes it)"
                            ),
                        )
                        .into())
                    }
                };
                if vector.len() != row.dimension as usize {
                    return Err(InputError::new(
                        field(),
                        format!(
                            "has {} dimensions; space {name:?} holds {}-dimensional vectors",
                            vector.len(),
                            row.dimension
                        ),
                    )
                    .into());
                }
            }
        }
        let mut rows = Vec::new();
        for (index, space) in self.spaces.iter().enumerate() {
            // A damaged space is not kept (see `load_spaces`).
            let Ok(row) = &space.row else { continue };
            for (position, chunk) in doc.chunks.iter().enumerate() {
                let (is_fresh, from_slot) = fresh[position];
                if !is_fresh {
                    continue;
                }
                let incoming = chunk
                    .spaces
                    .iter()
                    .find(|(name, _)| name == &space.name)
                    .map(|(_, v)| vector_bytes(v));
                let reused = match (&incoming, old_owner, from_slot) {
                    (None, Some(owner), Some(slot)) => self
                        .space_vectors
                        .get((row.id, vector_id(owner, slot)))
                        .map_err(WriteError::storage)?
                        .map(|b| b.value().to_vec()),
                    _ => None,
                };
                match space::new_chunk_vector(space.complete, incoming.is_some(), reused.is_some())
                {
                    Some(NewChunkVector::Incoming) => {
                        rows.push((index, position, incoming.unwrap_or_default()))
                    }
                    Some(NewChunkVector::Reused) => {
                        rows.push((index, position, reused.unwrap_or_default()))
                    }
                    Some(NewChunkVector::Left) => {}
                    None => {
                        return Err(WriteError::MissingSpaceVector {
                            space: space.name.clone(),
                            position,
                        })
                    }
                }
            }
        }
        Ok(SpaceInserts { rows })
    }

    /// Removes the rows of vector ids `removed` from every space.
    pub(super) fn remove_space_rows(&mut self, removed: &[u64]) -> Result<(), WriteError> {
        for space in &mut self.spaces {
            // A damaged space is not kept (see `load_spaces`).
            let Ok(row) = &space.row else { continue };
            for &id in removed {
                if self
                    .space_vectors
                    .remove((row.id, id))
                    .map_err(WriteError::storage)?
                    .is_some()
                {
                    space.delta -= 1;
                }
            }
        }
        Ok(())
    }

    /// Writes the rows `plan_space_rows` decided, each chunk's under the vector id its
    /// position now has (`ids`, by position).
    pub(super) fn insert_space_rows(
        &mut self,
        inserts: SpaceInserts,
        ids: &[u64],
    ) -> Result<(), WriteError> {
        for (index, position, bytes) in inserts.rows {
            let space = &mut self.spaces[index];
            // Planned for readable spaces only.
            let Ok(row) = &space.row else { continue };
            let id = ids[position];
            let before = self
                .space_vectors
                .insert((row.id, id), bytes.as_slice())
                .map_err(WriteError::storage)?;
            if before.is_none() {
                space.delta += 1;
            }
            self.space_change.added.push((row.id, id));
        }
        Ok(())
    }

    /// The guarded re-embed write: each of `vectors` (vector id, floats already checked and
    /// normalised), made from a chunk of document `(source, id)` as it was read, is written
    /// into space `name` only while that chunk is still stored as it was read and has no
    /// vector there (`policy::space::decide_space_vector`); the others are counted. With
    /// `expected`, only while `name` is still the space of that id (a re-embed's space, not
    /// one added again under its name since): an `InputError` naming `space` otherwise. A
    /// damaged space is `Corrupted`, naming it.
    pub(crate) fn write_space_vectors(
        &mut self,
        name: &str,
        expected: Option<u32>,
        vectors: &[(String, String, u64, Vec<f32>)],
    ) -> Result<SpaceWriteOutcome, WriteError> {
        let Some(index) = self.spaces.iter().position(|s| s.name == name) else {
            if self.is_promoted_name(name)? {
                return Err(InputError::new(
                    "space",
                    format!(
                        "{name:?} names the default space (it was promoted to it): its vectors \
                         are written with their revisions (Chunk::vector)"
                    ),
                )
                .into());
            }
            return Err(unknown_space("space", name));
        };
        let row = match &self.spaces[index].row {
            Ok(row) => row,
            Err(detail) => {
                return Err(WriteError::Corrupted {
                    what: "space row".into(),
                    detail: detail.clone(),
                })
            }
        };
        if let Some(expected) = expected.filter(|id| *id != row.id) {
            return Err(InputError::new(
                "space",
                format!(
                    "{name:?} is another space than the one this write was made for: that one \
                     (id {expected}) was dropped and a space of the same name (id {}) added \
                     since; nothing written",
                    row.id
                ),
            )
            .into());
        }
        let dimension = row.dimension as usize;
        let space_id = row.id;
        for (i, (_, _, _, vector)) in vectors.iter().enumerate() {
            if vector.len() != dimension {
                return Err(InputError::new(
                    format!("vectors[{i}].vector"),
                    format!(
                        "has {} dimensions; space {name:?} holds {dimension}-dimensional vectors",
                        vector.len()
                    ),
                )
                .into());
            }
        }
        let mut outcome = SpaceWriteOutcome::default();
        // Each document's live slots, read once.
        let mut live: HashMap<(&str, &str), LiveSlots> = HashMap::new();
        for (source, id, vector_id, vector) in vectors {
            let (owner, slot) = split_vector_id(*vector_id);
            let known = match live.entry((source.as_str(), id.as_str())) {
                std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::hash_map::Entry::Vacant(e) => {
                    e.insert(self.live_slots(source, id)?)
                }
            };
            let slots = known
                .as_ref()
                .filter(|(internal, _)| *internal == owner)
                .map(|(_, slots)| slots.as_slice());
            let present = self
                .space_vectors
                .get((space_id, *vector_id))
                .map_err(WriteError::storage)?
                .is_some();
            match space::decide_space_vector(slots, slot, present) {
                SpaceVectorDecision::Write => {
                    self.space_vectors
                        .insert((space_id, *vector_id), vector_bytes(vector).as_slice())
                        .map_err(WriteError::storage)?;
                    self.spaces[index].delta += 1;
                    self.space_change.added.push((space_id, *vector_id));
                    outcome.written += 1;
                }
                SpaceVectorDecision::Superseded => outcome.superseded += 1,
                SpaceVectorDecision::Present => outcome.present += 1,
            }
        }
        Ok(outcome)
    }

    /// The internal id and live slots of document `(source, id)` (`None`: not live).
    fn live_slots(&self, source: &str, id: &str) -> Result<LiveSlots, WriteError> {
        let Some(row) = self.doc_row(source, id)?.filter(|row| !row.deleted) else {
            return Ok(None);
        };
        match self
            .vectors
            .get(row.internal_id)
            .map_err(WriteError::storage)?
        {
            Some(bytes) => Ok(Some((
                row.internal_id,
                VectorsRow::parse(bytes.value())?.slots().collect(),
            ))),
            None => Ok(None),
        }
    }

    /// Writes each space's row count back, in `finish`.
    pub(super) fn finish_spaces(&mut self) -> Result<(), WriteError> {
        let changed: Vec<(String, SpaceRow)> = self
            .spaces
            .iter()
            .filter(|s| s.delta != 0)
            .filter_map(|s| s.row.as_ref().ok().map(|row| (s, row)))
            .map(|(s, row)| {
                let mut row = row.clone();
                row.vectors = row.vectors.checked_add_signed(s.delta).ok_or_else(|| {
                    crate::error::Corruption::new(
                        "space row",
                        format!(
                            "space {:?} holds {} vectors, which cannot change by {}",
                            s.name, row.vectors, s.delta
                        ),
                    )
                })?;
                Ok((s.name.clone(), row))
            })
            .collect::<Result<_, WriteError>>()?;
        for (name, row) in changed {
            self.spaces_table
                .insert(name.as_str(), schema::encode(&row).as_slice())
                .map_err(WriteError::storage)?;
        }
        Ok(())
    }
}

/// The error for a space name the store does not have.
pub(crate) fn unknown_space(field: &str, name: &str) -> WriteError {
    let hint = if name == DEFAULT_SPACE {
        "the default space's vectors are Chunk::vector".to_owned()
    } else {
        format!("names no vector space of this store (Store::spaces lists them; Store::add_space adds {name:?})")
    };
    InputError::new(field, format!("{name:?} {hint}")).into()
}
