//! The embedded store's vector spaces: adding, activating and dropping one, listing them
//! with their coverage, walking the live chunks a space lacks, and the guarded re-embed
//! write (carried out by `write/spaces.rs` inside the batch transaction).
//!
//! The store's own vectors (`doc_vectors`) are the `default` space. Every other space is a
//! row of `spaces` and one key range of `space_vectors`, `(space id, vector id)`: a row per
//! live chunk with a vector there, under the id of the chunk's default vector. The id names
//! the chunk's text as stored: a revision that keeps the chunk keeps its id (and so its
//! vectors in every space), one that replaces it removes the id's rows from every space in
//! its transaction. So a space's rows are always vectors of live chunks, and a re-embed's
//! vector is written only while the id it was read under is still live.
//!
//! Dropping the default space promotes the active one in its place ([`promote`]): its rows
//! become the vectors rows under the same ids, and the store records its model, dimension
//! and name (`meta["default_space_name"]`, which then names the default space too).
//!
//! Invariant: a space other than the default holds exactly one row per live chunk it has a
//! vector for, each of its dimension; its row's count equals its rows (`verify`).
//! Invariant: the active space is complete (activation is refused otherwise, and every
//! later revision must bring its vectors), so a search without a space never misses a
//! live chunk.
//!
//! A space whose row does not decode (a damaged file) is a *damaged space*: nothing of it
//! can be read, so it is left out of [`spaces`] and the exports, every use of it by name
//! (a search, activation, a guarded write, a revision's vector for it) is refused naming it,
//! writes that do not name it go on without keeping its rows (its count cannot be read,
//! so it is never reported complete again), [`verify`] reports it, and [`drop_space`]
//! removes it with its rows.

use crate::backend::redb::engine::{Engine, Finish};
use crate::backend::redb::read::Snapshot;
use crate::backend::redb::schema::{
    self, decode_row, meta_key, seq_key, split_vector_id, vector_id, SpaceRow, VectorsRow,
    CHANGELOG, CHUNKS, COUNTERS, META, SPACES, SPACE_VECTORS, VECTORS,
};
use crate::error::{InputError, ReadError, WriteError};
use crate::policy::space::check_space_name;
use crate::types::counters::name as counter;
use crate::types::{
    ChunkRevision, MissingChunk, SpaceInfo, SpaceVector, SpaceWriteOutcome, DEFAULT_SPACE,
};
use redb::{ReadableTable, ReadableTableMetadata};

/// The longest model name a space records, in bytes.
const MAX_MODEL_BYTES: usize = 1024;

/// The most chunks one walk step hands out.
pub(crate) const MAX_WALK: usize = 100_000;

/// The name of the active space in `snapshot`, read from its `meta` table once per
/// snapshot (a snapshot never changes).
pub(crate) fn active_space(snapshot: &Snapshot) -> Result<String, ReadError> {
    if let Some(name) = snapshot.active_space.get() {
        return Ok(name.clone());
    }
    let meta = snapshot.txn.open_table(META).map_err(ReadError::storage)?;
    let active = meta
        .get(meta_key::ACTIVE_SPACE)
        .map_err(ReadError::storage)?
        .map(|v| String::from_utf8_lossy(v.value()).into_owned())
        .unwrap_or_else(|| DEFAULT_SPACE.to_owned());
    Ok(snapshot.active_space.get_or_init(|| active).clone())
}

/// The name the default space answers to beside `default` in `snapshot`: the name of the
/// space the last promotion made the default one (`None`: never promoted). Read once per
/// snapshot.
pub(crate) fn default_name(snapshot: &Snapshot) -> Result<Option<String>, ReadError> {
    if let Some(name) = snapshot.default_name.get() {
        return Ok(name.clone());
    }
    let meta = snapshot.txn.open_table(META).map_err(ReadError::storage)?;
    let name = default_name_in(&meta).map_err(ReadError::storage)?;
    Ok(snapshot.default_name.get_or_init(|| name).clone())
}

/// [`default_name`] in a `meta` table.
fn default_name_in(
    meta: &impl redb::ReadableTable<&'static str, &'static [u8]>,
) -> Result<Option<String>, redb::StorageError> {
    Ok(meta
        .get(meta_key::DEFAULT_SPACE_NAME)?
        .map(|v| String::from_utf8_lossy(v.value()).into_owned()))
}

/// Whether `name` names the default space in `snapshot`: `default`, or the name of the
/// space a promotion made the default one.
pub(crate) fn is_default(snapshot: &Snapshot, name: &str) -> Result<bool, ReadError> {
    Ok(name == DEFAULT_SPACE || default_name(snapshot)?.as_deref() == Some(name))
}

/// The row of space `name` in `snapshot` (`None`: no such space, or the default one).
pub(crate) fn space_row(snapshot: &Snapshot, name: &str) -> Result<Option<SpaceRow>, ReadError> {
    let table = match snapshot.txn.open_table(SPACES) {
        Ok(table) => table,
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(None),
        Err(e) => return Err(ReadError::storage(e)),
    };
    match table.get(name).map_err(ReadError::storage)? {
        Some(bytes) => Ok(Some(decode_row(name, bytes.value())?)),
        None => Ok(None),
    }
}

/// The space id a damaged row's first bytes still give (the row's first field), if any:
/// what [`drop_space`] removes that space's rows by.
fn damaged_row_id(bytes: &[u8]) -> Option<u32> {
    bincode::serde::decode_from_slice::<u32, _>(bytes, bincode::config::standard())
        .ok()
        .map(|(id, _)| id)
}

/// Every space of `snapshot`, the default one first, then by name; a damaged space (its row
/// does not decode) is left out ([`verify`] reports it).
pub(crate) fn spaces(snapshot: &Snapshot) -> Result<Vec<SpaceInfo>, ReadError> {
    let counters = snapshot
        .txn
        .open_table(COUNTERS)
        .map_err(ReadError::storage)?;
    let read = |key: &str| -> Result<u64, ReadError> {
        Ok(counters
            .get(key)
            .map_err(ReadError::storage)?
            .map(|v| v.value())
            .unwrap_or(0))
    };
    let live_chunks = read(counter::LIVE_CHUNKS)?;
    let active = active_space(snapshot)?;
    let mut spaces = vec![SpaceInfo {
        name: default_name(snapshot)?.unwrap_or_else(|| DEFAULT_SPACE.to_owned()),
        model: snapshot.model.clone().unwrap_or_default(),
        dimension: snapshot.dimension,
        vectors: read(counter::LIVE_VECTORS)?,
        live_chunks,
        active: active == DEFAULT_SPACE,
    }];
    let table = match snapshot.txn.open_table(SPACES) {
        Ok(table) => table,
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(spaces),
        Err(e) => return Err(ReadError::storage(e)),
    };
    for entry in table.iter().map_err(ReadError::storage)? {
        let (name, value) = entry.map_err(ReadError::storage)?;
        let Ok(row) = decode_row(name.value(), value.value()) else {
            continue;
        };
        spaces.push(SpaceInfo {
            name: name.value().to_owned(),
            model: row.model,
            dimension: Some(row.dimension as usize),
            vectors: row.vectors,
            live_chunks,
            active: active == name.value(),
        });
    }
    Ok(spaces)
}

/// The durability of a space's own operations: always durable (they are rare, and a
/// re-embed resumes from what is on disk).
const DURABLE: redb::Durability = redb::Durability::Immediate;

/// See [`Store::add_space`](crate::Store::add_space).
pub(crate) fn add_space(
    engine: &Engine,
    name: &str,
    model: &str,
    dimension: usize,
) -> Result<SpaceInfo, WriteError> {
    check_space_name("name", name)?;
    if name == DEFAULT_SPACE {
        return Err(
            InputError::new("name", "\"default\" is the store's own vectors' space").into(),
        );
    }
    if model.len() > MAX_MODEL_BYTES {
        return Err(InputError::new(
            "model",
            format!("is {} bytes; the limit is {MAX_MODEL_BYTES}", model.len()),
        )
        .into());
    }
    let max = engine.options().limits.max_dimension;
    if dimension == 0 || dimension > max {
        return Err(InputError::new(
            "dimension",
            format!("is {dimension}; a space's dimension is 1 to {max}"),
        )
        .into());
    }
    // A space's row records its dimension in 32 bits (`Limits::max_dimension` may allow
    // more).
    let dimension32 = u32::try_from(dimension).map_err(|_| {
        InputError::new(
            "dimension",
            format!(
                "is {dimension}; a space's dimension is at most {}",
                u32::MAX
            ),
        )
    })?;
    engine.write_txn(DURABLE, |txn| {
        let meta = txn.open_table(META).map_err(WriteError::storage)?;
        if default_name_in(&meta)
            .map_err(WriteError::storage)?
            .as_deref()
            == Some(name)
        {
            return Err(InputError::new(
                "name",
                format!("{name:?} names the default space (it was promoted to it)"),
            )
            .into());
        }
        drop(meta);
        let mut spaces = txn.open_table(SPACES).map_err(WriteError::storage)?;
        if let Some(bytes) = spaces.get(name).map_err(WriteError::storage)? {
            let damaged = if decode_row(name, bytes.value()).is_err() {
                " whose row is damaged"
            } else {
                ""
            };
            return Err(InputError::new(
                "name",
                format!(
                    "the store already has a space named {name:?}{damaged} (Store::drop_space \
                     removes it)"
                ),
            )
            .into());
        }
        let mut counters = txn.open_table(COUNTERS).map_err(WriteError::storage)?;
        let read = |counters: &redb::Table<'_, &'static str, u64>, key: &str| {
            counters
                .get(key)
                .map(|v| v.map(|v| v.value()).unwrap_or(0))
                .map_err(WriteError::storage)
        };
        // Space 0 is the default one.
        let id = read(&counters, seq_key::NEXT_SPACE)?.max(1);
        let id32 = u32::try_from(id).map_err(|_| WriteError::Exhausted {
            what: "vector space ids",
        })?;
        let live_chunks = read(&counters, counter::LIVE_CHUNKS)?;
        let row = SpaceRow {
            id: id32,
            model: model.to_owned(),
            dimension: dimension32,
            created_commit: read(&counters, seq_key::COMMIT)?,
            vectors: 0,
        };
        spaces
            .insert(name, schema::encode(&row).as_slice())
            .map_err(WriteError::storage)?;
        counters
            .insert(seq_key::NEXT_SPACE, id + 1)
            .map_err(WriteError::storage)?;
        Ok(Finish::Commit(SpaceInfo {
            name: name.to_owned(),
            model: model.to_owned(),
            dimension: Some(dimension),
            vectors: 0,
            live_chunks,
            active: false,
        }))
    })
}

/// See [`Store::activate`](crate::Store::activate).
pub(crate) fn activate(engine: &Engine, name: &str) -> Result<(), WriteError> {
    engine.write_txn(DURABLE, |txn| {
        let promoted = {
            let meta = txn.open_table(META).map_err(WriteError::storage)?;
            default_name_in(&meta).map_err(WriteError::storage)?
        };
        let name = if promoted.as_deref() == Some(name) {
            DEFAULT_SPACE
        } else {
            name
        };
        if name != DEFAULT_SPACE {
            let spaces = txn.open_table(SPACES).map_err(WriteError::storage)?;
            let Some(bytes) = spaces.get(name).map_err(WriteError::storage)? else {
                return Err(crate::backend::redb::write::spaces::unknown_space(
                    "name", name,
                ));
            };
            let row = decode_row(name, bytes.value())?;
            let counters = txn.open_table(COUNTERS).map_err(WriteError::storage)?;
            let live = counters
                .get(counter::LIVE_CHUNKS)
                .map_err(WriteError::storage)?
                .map(|v| v.value())
                .unwrap_or(0);
            if row.vectors < live {
                return Err(WriteError::SpaceIncomplete {
                    space: name.to_owned(),
                    missing: live - row.vectors,
                });
            }
        }
        let mut meta = txn.open_table(META).map_err(WriteError::storage)?;
        meta.insert(meta_key::ACTIVE_SPACE, name.as_bytes())
            .map_err(WriteError::storage)?;
        Ok(Finish::Commit(()))
    })
}

/// What [`drop_space`] did.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Dropped {
    /// A space other than the default one went: its id, and the rows freed.
    Space { id: u32, freed: u64 },
    /// The default space's vectors were replaced by the active space's (a promotion): that
    /// space's id, and the default space's vectors replaced (one per live chunk).
    Promoted { id: u32, freed: u64 },
}

/// See [`Store::drop_space`](crate::Store::drop_space).
pub(crate) fn drop_space(engine: &Engine, name: &str) -> Result<Dropped, WriteError> {
    engine.write_txn(DURABLE, |txn| {
        let meta = txn.open_table(META).map_err(WriteError::storage)?;
        let promoted = default_name_in(&meta).map_err(WriteError::storage)?;
        let active = meta
            .get(meta_key::ACTIVE_SPACE)
            .map_err(WriteError::storage)?
            .map(|v| String::from_utf8_lossy(v.value()).into_owned())
            .unwrap_or_else(|| DEFAULT_SPACE.to_owned());
        drop(meta);
        if name == DEFAULT_SPACE || promoted.as_deref() == Some(name) {
            return promote(txn, name, &active, engine.options());
        }
        let mut spaces = txn.open_table(SPACES).map_err(WriteError::storage)?;
        let bytes = match spaces.get(name).map_err(WriteError::storage)? {
            Some(bytes) => bytes.value().to_vec(),
            None => {
                return Err(crate::backend::redb::write::spaces::unknown_space(
                    "name", name,
                ))
            }
        };
        if active == name {
            return Err(InputError::new(
                "name",
                format!("{name:?} is the active space; activate another one first"),
            )
            .into());
        }
        let mut vectors = txn.open_table(SPACE_VECTORS).map_err(WriteError::storage)?;
        let before = vectors.len().map_err(WriteError::storage)?;
        let id = match decode_row(name, &bytes) {
            Ok(row) => {
                vectors
                    .retain_in((row.id, 0u64)..=(row.id, u64::MAX), |_, _| false)
                    .map_err(WriteError::storage)?;
                row.id
            }
            Err(_) => drop_damaged_rows(&spaces, &mut vectors, name, &bytes)?,
        };
        let freed = before - vectors.len().map_err(WriteError::storage)?;
        spaces.remove(name).map_err(WriteError::storage)?;
        Ok(Finish::Commit(Dropped::Space { id, freed }))
    })
}

/// The rows of damaged space `name` (its row `bytes` does not decode), removed from
/// `vectors`: those under the id the row's first bytes still give, unless a readable space
/// or another damaged one claims it; and, when no other damaged space remains, every row
/// under an id no space claims (this space's, when its id cannot be read; nothing else
/// puts rows there). Returns the id removed (0, the default space's, which no space index
/// holds, when none could be read).
fn drop_damaged_rows(
    spaces: &redb::Table<'_, &'static str, &'static [u8]>,
    vectors: &mut redb::Table<'_, (u32, u64), &'static [u8]>,
    name: &str,
    bytes: &[u8],
) -> Result<u32, WriteError> {
    use std::collections::HashSet;
    let mut claimed = HashSet::new();
    let mut others_damaged = false;
    for entry in spaces.iter().map_err(WriteError::storage)? {
        let (other, value) = entry.map_err(WriteError::storage)?;
        if other.value() == name {
            continue;
        }
        match decode_row(other.value(), value.value()) {
            Ok(row) => {
                claimed.insert(row.id);
            }
            Err(_) => {
                others_damaged = true;
                claimed.extend(damaged_row_id(value.value()));
            }
        }
    }
    let own = damaged_row_id(bytes).filter(|id| *id != 0 && !claimed.contains(id));
    if let Some(id) = own {
        vectors
            .retain_in((id, 0u64)..=(id, u64::MAX), |_, _| false)
            .map_err(WriteError::storage)?;
    }
    if !others_damaged {
        vectors
            .retain(|(space, _), _| claimed.contains(&space))
            .map_err(WriteError::storage)?;
    }
    Ok(own.unwrap_or(0))
}

/// Drops the default space (named `name`: `default` or its promoted name) by promoting the
/// active space `active` in its place, in `txn`: every live document's vectors row takes
/// that space's vectors under the same slots (so the chunks, the filter postings and the
/// text rows, all keyed by vector id, stay as they are; a chunks row's spilled tail is
/// split again beside the new vectors); the store records that space's model and
/// dimension, answers to its name, and has no active space other than the default one;
/// that space's rows and row go; the persisted graph (of the old vectors) is cleared; and
/// the commit is recorded as one that replaced the vectors (`VECTORS_REPLACED`), which
/// every index of the default space covering an earlier commit loads again for.
///
/// Refused, changing nothing: the default space is the active one (nothing to promote),
/// or the active space is incomplete; a vectors row whose chunk lacks a vector in the
/// active space is `Corrupted` (a complete space has one for every live chunk).
fn promote(
    txn: &mut redb::WriteTransaction,
    name: &str,
    active: &str,
    options: &crate::options::Options,
) -> Result<Finish<Dropped>, WriteError> {
    use crate::backend::redb::schema::{
        join_chunk_bytes, text_key, RevisionRows, VectorData, INDEX_SNAPSHOT,
    };
    use crate::error::Corruption;
    if active == DEFAULT_SPACE {
        return Err(InputError::new(
            "name",
            format!(
                "{name:?} is the default space and the active one: activate a complete space \
                 first, whose vectors then replace the default space's"
            ),
        )
        .into());
    }
    let mut spaces = txn.open_table(SPACES).map_err(WriteError::storage)?;
    let row: SpaceRow = match spaces.get(active).map_err(WriteError::storage)? {
        Some(bytes) => decode_row(active, bytes.value())?,
        None => {
            return Err(WriteError::Corrupted {
                what: "meta".into(),
                detail: format!("the active space {active:?} has no row"),
            })
        }
    };
    let mut counters = txn.open_table(COUNTERS).map_err(WriteError::storage)?;
    let read = |counters: &redb::Table<'_, &'static str, u64>, key: &str| {
        counters
            .get(key)
            .map(|v| v.map(|v| v.value()).unwrap_or(0))
            .map_err(WriteError::storage)
    };
    let live = read(&counters, counter::LIVE_CHUNKS)?;
    if row.vectors < live {
        return Err(WriteError::SpaceIncomplete {
            space: active.to_owned(),
            missing: live - row.vectors,
        });
    }
    let dimension = row.dimension as usize;
    // Under a memory budget the promoted space's vectors become the default index's: a
    // budget that cannot hold them is refused here, as the next open would refuse it
    // (before, the promotion committed and the same options could not open the store).
    let live_vectors = read(&counters, counter::LIVE_VECTORS)?;
    let live_vectors = usize::try_from(live_vectors).unwrap_or(usize::MAX);
    if let Some((field, problem)) = crate::index::budget::refusal(options, live_vectors, dimension)
    {
        return Err(InputError::new(field, problem).into());
    }
    let mut space_vectors = txn.open_table(SPACE_VECTORS).map_err(WriteError::storage)?;
    let mut chunks = txn.open_table(CHUNKS).map_err(WriteError::storage)?;
    let mut vectors = txn.open_table(VECTORS).map_err(WriteError::storage)?;
    let docs: Vec<u64> = vectors
        .iter()
        .map_err(WriteError::storage)?
        .map(|entry| entry.map(|(key, _)| key.value()))
        .collect::<Result<_, _>>()
        .map_err(WriteError::storage)?;
    let mut rewritten = 0u64;
    for doc in docs {
        let Some(old) = vectors
            .get(doc)
            .map_err(WriteError::storage)?
            .map(|v| v.value().to_vec())
        else {
            continue;
        };
        let old = VectorsRow::parse(&old)?;
        if old.len() == 0 {
            continue;
        }
        let chunks_row = chunks
            .get(doc)
            .map_err(WriteError::storage)?
            .map(|v| v.value().to_vec())
            .ok_or_else(|| {
                Corruption::new(
                    "vector table",
                    format!("document {doc} has a vectors row but no chunks row"),
                )
            })?;
        let joined = join_chunk_bytes(&chunks_row, &old);
        let mut new_vectors: Vec<(u32, Vec<u8>)> = Vec::with_capacity(old.len());
        for slot in old.slots() {
            let id = vector_id(doc, slot);
            let bytes = space_vectors
                .get((row.id, id))
                .map_err(WriteError::storage)?
                .map(|v| v.value().to_vec())
                .ok_or_else(|| {
                    Corruption::new(
                        "space vectors",
                        format!("the complete space {active:?} has no vector for chunk {id}"),
                    )
                })?;
            if bytes.len() != dimension * 4 {
                return Err(Corruption::new(
                    "space vectors",
                    format!(
                        "space {active:?}: vector {id} has {} bytes where the space holds \
                         {dimension}-dimensional vectors",
                        bytes.len()
                    ),
                )
                .into());
            }
            new_vectors.push((slot, bytes));
        }
        let entries: Vec<(u32, VectorData<'_>)> = new_vectors
            .iter()
            .map(|(slot, bytes)| (*slot, VectorData::Raw(bytes)))
            .collect();
        let rows = RevisionRows::split(&joined, &entries);
        let encoded = rows.vectors_row(&entries)?;
        chunks
            .insert(doc, rows.chunks_row())
            .map_err(WriteError::storage)?;
        vectors
            .insert(doc, encoded.as_slice())
            .map_err(WriteError::storage)?;
        rewritten += old.len() as u64;
    }
    space_vectors
        .retain_in((row.id, 0u64)..=(row.id, u64::MAX), |_, _| false)
        .map_err(WriteError::storage)?;
    spaces.remove(active).map_err(WriteError::storage)?;
    // The commit moves on, with an empty changelog row: the filter index and the text cache
    // (keyed by vector id, which no chunk changed) catch up over it; an index of the
    // default space finds it at or after `VECTORS_REPLACED` and loads again.
    let old_commit = read(&counters, seq_key::COMMIT)?;
    let commit = old_commit.checked_add(1).ok_or_else(|| {
        crate::backend::redb::write::sequence_at_its_end(seq_key::COMMIT, old_commit)
    })?;
    counters
        .insert(seq_key::COMMIT, commit)
        .map_err(WriteError::storage)?;
    if read(&counters, text_key::COMMIT)? == old_commit {
        // The text index covered every commit so far, and this one changed no text.
        counters
            .insert(text_key::COMMIT, commit)
            .map_err(WriteError::storage)?;
    }
    let mut changelog = txn.open_table(CHANGELOG).map_err(WriteError::storage)?;
    changelog
        .insert(
            commit,
            schema::encode(&schema::ChangelogRow::default()).as_slice(),
        )
        .map_err(WriteError::storage)?;
    let mut graph = txn
        .open_table(INDEX_SNAPSHOT)
        .map_err(WriteError::storage)?;
    graph.retain(|_, _| false).map_err(WriteError::storage)?;
    let mut meta = txn.open_table(META).map_err(WriteError::storage)?;
    for key in [meta_key::INDEX_SNAPSHOT_SEQ, meta_key::ACTIVE_SPACE] {
        meta.remove(key).map_err(WriteError::storage)?;
    }
    let recorded = [
        (meta_key::MODEL, row.model.as_bytes().to_vec()),
        (
            meta_key::DIMENSION,
            (dimension as u64).to_le_bytes().to_vec(),
        ),
        (meta_key::DEFAULT_SPACE_NAME, active.as_bytes().to_vec()),
        (meta_key::VECTORS_REPLACED, commit.to_le_bytes().to_vec()),
    ];
    for (key, value) in recorded {
        meta.insert(key, value.as_slice())
            .map_err(WriteError::storage)?;
    }
    Ok(Finish::CommitRecording(
        Dropped::Promoted {
            id: row.id,
            freed: rewritten,
        },
        crate::backend::redb::engine::Recorded {
            dimension,
            model: row.model,
        },
    ))
}

/// See [`Store::chunks_missing_vectors`](crate::Store::chunks_missing_vectors).
pub(crate) fn chunks_missing_vectors(
    snapshot: &Snapshot,
    name: &str,
    after: Option<ChunkRevision>,
    limit: usize,
) -> Result<Vec<MissingChunk>, ReadError> {
    if limit == 0 || limit > MAX_WALK {
        return Err(
            InputError::new("limit", format!("is {limit}; it must be 1 to {MAX_WALK}")).into(),
        );
    }
    if is_default(snapshot, name)? {
        // Every live chunk has its default vector.
        return Ok(Vec::new());
    }
    let Some(space) = space_row(snapshot, name)? else {
        return Err(
            match crate::backend::redb::write::spaces::unknown_space("space", name) {
                WriteError::Input(e) => ReadError::Input(e),
                other => ReadError::Input(InputError::new("space", other.to_string())),
            },
        );
    };
    let chunks = snapshot
        .txn
        .open_table(CHUNKS)
        .map_err(ReadError::storage)?;
    let vectors = snapshot
        .txn
        .open_table(VECTORS)
        .map_err(ReadError::storage)?;
    let space_vectors = snapshot
        .txn
        .open_table(SPACE_VECTORS)
        .map_err(ReadError::storage)?;
    let first_doc = after.map_or(0, |r| split_vector_id(r.0).0);
    let mut out = Vec::new();
    for entry in chunks.range(first_doc..).map_err(ReadError::storage)? {
        let (doc, bytes) = entry.map_err(ReadError::storage)?;
        let doc = doc.value();
        let Some(vector_bytes) = vectors.get(doc).map_err(ReadError::storage)? else {
            return Err(crate::error::Corruption::new(
                "vector table",
                format!("document {doc} has a chunks row but no vectors row"),
            )
            .into());
        };
        let row = schema::join_chunks(
            bytes.value(),
            &VectorsRow::parse(vector_bytes.value())?,
            snapshot.text_codec_for_reads()?,
        )?;
        let mut own: Vec<(u64, usize)> = row
            .chunks
            .iter()
            .enumerate()
            .map(|(position, c)| (vector_id(doc, c.slot), position))
            .filter(|(id, _)| after.is_none_or(|a| *id > a.0))
            .collect();
        own.sort_unstable();
        for (id, position) in own {
            if space_vectors
                .get((space.id, id))
                .map_err(ReadError::storage)?
                .is_some()
            {
                continue;
            }
            out.push(MissingChunk {
                source: row.source.clone(),
                id: row.id.clone(),
                position,
                revision: ChunkRevision(id),
                text: row.chunks[position].text.clone(),
            });
            if out.len() == limit {
                return Ok(out);
            }
        }
    }
    Ok(out)
}

/// See [`Store::write_space_vectors`](crate::Store::write_space_vectors).
pub(crate) fn write_space_vectors(
    engine: &Engine,
    name: &str,
    vectors: Vec<SpaceVector>,
) -> Result<SpaceWriteOutcome, WriteError> {
    if name == DEFAULT_SPACE {
        return Err(InputError::new(
            "space",
            "the default space's vectors are written with their revisions (Chunk::vector)",
        )
        .into());
    }
    let limits = &engine.options().limits;
    let mut prepared = Vec::with_capacity(vectors.len());
    for (i, v) in vectors.into_iter().enumerate() {
        let vector = crate::policy::prepare::prepare_vector(i, v.vector, engine.metric(), limits)
            .map_err(|e| {
            InputError::new(
                e.field.replacen(
                    &format!("chunks[{i}].vector"),
                    &format!("vectors[{i}].vector"),
                    1,
                ),
                e.problem,
            )
        })?;
        prepared.push((v.source, v.id, v.revision.0, vector));
    }
    // Read on the caller's thread, where `expecting_space` set it.
    let expected = EXPECTED_SPACE.with(std::cell::Cell::take);
    engine.run(engine.options().durability, |batch| {
        let outcome = batch.write_space_vectors(name, expected, &prepared)?;
        Ok((outcome, outcome.written > 0, false))
    })
}

thread_local! {
    /// The id the space named by the next [`write_space_vectors`] on this thread must have
    /// (set by [`expecting_space`]).
    static EXPECTED_SPACE: std::cell::Cell<Option<u32>> = const { std::cell::Cell::new(None) };
}

/// Runs `write`, in which a [`write_space_vectors`] (through the public
/// `Store::write_space_vectors`, which names its space by name alone) writes only if the
/// name still resolves to space id `id` in its own transaction: a re-embed follows the
/// space it began on, not a space dropped and added again under its name meanwhile (an
/// `InputError` naming `space` otherwise, nothing written). `None`: no expectation.
pub(crate) fn expecting_space<T>(id: Option<u32>, write: impl FnOnce() -> T) -> T {
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            EXPECTED_SPACE.with(|e| e.set(None));
        }
    }
    EXPECTED_SPACE.with(|e| e.set(id));
    let _reset = Reset;
    write()
}

/// The vector spaces' invariants in `snapshot`, each violation naming its space: the
/// active space exists and is complete; every space's row decodes (a damaged one is
/// reported once, its rows unchecked); every row of a space is the vector of a live chunk
/// (its id in its document's vectors row), of the space's dimension, under a space that
/// exists; each space's row count is what its row records, and at most the live chunks.
pub(crate) fn verify(
    snapshot: &Snapshot,
    report: &mut crate::types::VerifyReport,
) -> Result<(), ReadError> {
    use std::collections::{BTreeMap, HashMap, HashSet};
    let spaces = spaces(snapshot)?;
    let active = active_space(snapshot)?;
    let lookup = if active == DEFAULT_SPACE {
        spaces.first().map(|s| s.name.clone()).unwrap_or_default()
    } else {
        active.clone()
    };
    let damaged =
        |name: &str| matches!(space_row(snapshot, name), Err(ReadError::Corrupted { .. }));
    match spaces.iter().find(|s| s.name == lookup) {
        // Its row is reported below as well.
        None if damaged(&lookup) => report.store(format!(
            "the active space {active:?} cannot be read: its row is damaged"
        )),
        None => report.store(format!("the active space {active:?} does not exist")),
        Some(space) if !space.is_complete() => report.store(format!(
            "the active space {active:?} lacks a vector for {} live chunks",
            space.missing()
        )),
        Some(_) => {}
    }
    let table = match snapshot.txn.open_table(SPACES) {
        Ok(table) => table,
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(()),
        Err(e) => return Err(ReadError::storage(e)),
    };
    let mut by_id: HashMap<u32, (String, SpaceRow)> = HashMap::new();
    // The damaged spaces (rows that do not decode): name, what is wrong, and the id the
    // row's first bytes still give.
    let mut damaged_rows: Vec<(String, String, Option<u32>)> = Vec::new();
    for entry in table.iter().map_err(ReadError::storage)? {
        let (name, value) = entry.map_err(ReadError::storage)?;
        match schema::decode::<SpaceRow>("space row", value.value()) {
            Ok(row) => {
                if let Some((other, _)) = by_id.get(&row.id) {
                    report.store(format!(
                        "spaces {other:?} and {:?} share id {}",
                        name.value(),
                        row.id
                    ));
                }
                by_id.insert(row.id, (name.value().to_owned(), row));
            }
            Err(c) => damaged_rows.push((
                name.value().to_owned(),
                c.detail,
                damaged_row_id(value.value()),
            )),
        }
    }
    // A damaged space's rows cannot be checked (its dimension is unknown): they are counted
    // under its report, not reported one by one as rows of no space.
    let damaged_ids: HashSet<u32> = damaged_rows
        .iter()
        .filter_map(|(_, _, id)| id.filter(|id| !by_id.contains_key(id)))
        .collect();
    let live_chunks = spaces.first().map_or(0, |s| s.live_chunks);
    let vectors = snapshot
        .txn
        .open_table(VECTORS)
        .map_err(ReadError::storage)?;
    let rows = snapshot
        .txn
        .open_table(SPACE_VECTORS)
        .map_err(ReadError::storage)?;
    let mut live_slots: HashMap<u64, HashSet<u32>> = HashMap::new();
    let mut counted: BTreeMap<u32, u64> = BTreeMap::new();
    for entry in rows.iter().map_err(ReadError::storage)? {
        let (key, value) = entry.map_err(ReadError::storage)?;
        let (space, id) = key.value();
        *counted.entry(space).or_default() += 1;
        if damaged_ids.contains(&space) {
            continue;
        }
        let Some((name, row)) = by_id.get(&space) else {
            report.store(format!(
                "space_vectors holds a row of space id {space}, which no space has"
            ));
            continue;
        };
        if value.value().len() != row.dimension as usize * 4 {
            report.store(format!(
                "space {name:?}: vector {id} has {} bytes where the space holds {}-dimensional vectors",
                value.value().len(),
                row.dimension
            ));
        }
        let (owner, slot) = split_vector_id(id);
        if let std::collections::hash_map::Entry::Vacant(e) = live_slots.entry(owner) {
            let slots = match vectors.get(owner).map_err(ReadError::storage)? {
                Some(bytes) => match VectorsRow::parse(bytes.value()) {
                    Ok(parsed) => parsed.slots().collect(),
                    Err(_) => HashSet::new(),
                },
                None => HashSet::new(),
            };
            e.insert(slots);
        }
        if !live_slots
            .get(&owner)
            .is_some_and(|slots| slots.contains(&slot))
        {
            report.store(format!(
                "space {name:?}: vector {id} belongs to no live chunk (document {owner}, slot {slot})"
            ));
        }
    }
    for (name, detail, id) in &damaged_rows {
        let rows = id
            .filter(|id| damaged_ids.contains(id))
            .map_or(0, |id| counted.get(&id).copied().unwrap_or(0));
        report.store(format!(
            "space {name:?}: undecodable row: {detail}; its {rows} vectors are not checked \
             (Store::drop_space removes the space)"
        ));
    }
    for (id, (name, row)) in &by_id {
        let found = counted.get(id).copied().unwrap_or(0);
        if found != row.vectors {
            report.store(format!(
                "space {name:?} records {} vectors but holds {found}",
                row.vectors
            ));
        }
        if found > live_chunks {
            report.store(format!(
                "space {name:?} holds {found} vectors for {live_chunks} live chunks"
            ));
        }
    }
    Ok(())
}
