//! The embedded store's derived state: what is kept in memory beside the file and answers
//! searches faster than the rows would. Derived state is rebuilt from the file, never a
//! source of truth: each structure covers one commit, is brought up to a later one from the
//! changelog, and is rebuilt from the rows when the changelog no longer reaches back far
//! enough.
//!
//! - `indexer.rs`: the lifecycle owner: loading, applying commits, searching over one
//!   snapshot, graph builds and persistence, following another process's writer.
//! - `live_index.rs`: the vector index.
//! - `filter_index.rs`: the metadata filter's postings.
//! - `text_cache.rs`: the text rows inverted in memory.
//! - `space_index.rs`: the vector index of each space other than the default one.
//!
//! Each of the three implements [`Derived`] (the commit it covers, and catching up by a
//! commit range's [`Changes`]); [`bring_to`] is the one path that reads the changelog and
//! brings any of them up to a snapshot's commit.
//!
//! Invariant (I5): a search never returns a superseded chunk: each derived structure is
//! brought to exactly the snapshot's commit before it answers for that snapshot, and one
//! that covers another commit is never used for it.

pub(crate) mod filter_index;
pub(crate) mod indexer;
pub(crate) mod live_index;
pub(crate) mod search;
pub(crate) mod space_index;
pub(crate) mod text_cache;
pub(crate) mod text_search;

use crate::backend::redb::read::Snapshot;
use crate::backend::redb::schema::{self, ChangelogRow, CHANGELOG};
use crate::error::ReadError;

/// The changelog rows of every commit after one commit up to a snapshot's, in commit
/// order, as read from that snapshot (the rows each commit that changed the set of vectors
/// wrote in its own transaction: the vector ids it added and removed).
pub(crate) struct Changes<'s> {
    snapshot: &'s Snapshot,
    /// The commit the changes start after.
    after: u64,
    target: u64,
    rows: Vec<ChangelogRow>,
}

impl<'s> Changes<'s> {
    /// The rows after `covered` up to `snapshot`'s commit `target`; `None` when the
    /// changelog no longer holds every one of them.
    fn read(
        snapshot: &'s Snapshot,
        covered: u64,
        target: u64,
    ) -> Result<Option<Changes<'s>>, ReadError> {
        let changelog = snapshot
            .txn
            .open_table(CHANGELOG)
            .map_err(ReadError::storage)?;
        // Keys are compared with the one after the last (checked: a damaged file may carry
        // a commit sequence at u64::MAX), so a gap anywhere means "no longer complete".
        let mut last = covered;
        let mut rows = Vec::new();
        let Some(first) = covered.checked_add(1) else {
            return Ok((covered == target).then_some(Changes {
                snapshot,
                after: covered,
                target,
                rows,
            }));
        };
        for entry in changelog
            .range(first..=target)
            .map_err(ReadError::storage)?
        {
            let (key, value) = entry.map_err(ReadError::storage)?;
            if last.checked_add(1) != Some(key.value()) {
                return Ok(None);
            }
            last = key.value();
            rows.push(schema::decode::<ChangelogRow>(
                "changelog row",
                value.value(),
            )?);
        }
        Ok((last == target).then_some(Changes {
            snapshot,
            after: covered,
            target,
            rows,
        }))
    }

    /// The snapshot the rows were read from (the rows a change names are read there).
    pub(crate) fn snapshot(&self) -> &'s Snapshot {
        self.snapshot
    }

    /// The commit the changes end at: the snapshot's.
    pub(crate) fn target(&self) -> u64 {
        self.target
    }

    /// Whether one of these commits replaced the default space's vectors under the same
    /// ids (a promotion, `spaces::promote`, records its commit in `meta`): the vector
    /// index of the default space loads again rather than catch up (its vectors, and their
    /// dimension, are another model's); structures keyed by vector id alone (the filter
    /// index, the text cache) and the other spaces' indexes catch up as for any commit.
    pub(crate) fn replace_vectors(&self) -> Result<bool, ReadError> {
        use crate::backend::redb::schema::{meta_key, META};
        let meta = self
            .snapshot
            .txn
            .open_table(META)
            .map_err(ReadError::storage)?;
        let replaced = crate::backend::redb::open::meta_u64(&meta, meta_key::VECTORS_REPLACED)?;
        Ok(match replaced {
            Some(Ok(commit)) => commit > self.after && commit <= self.target,
            // Unreadable: load again (never wrong, only slower).
            Some(Err(_)) => true,
            None => false,
        })
    }

    /// One row per commit, in commit order.
    pub(crate) fn rows(&self) -> &[ChangelogRow] {
        &self.rows
    }
}

/// What a catch-up came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CatchUp {
    /// The structure covers the changes' target commit.
    Done,
    /// The changelog no longer reaches back to the commit it covers, or the structure is
    /// better rebuilt than caught up: its owner rebuilds it from the snapshot's rows (or,
    /// for the vector index, searches the snapshot exactly meanwhile). What it covers is
    /// unchanged.
    Rebuild,
}

/// A derived structure: in memory, covering one commit, brought up to later ones by the
/// changelog.
pub(crate) trait Derived {
    /// The commit sequence it covers.
    fn covers(&self) -> u64;

    /// Applies `changes`, whose rows start right after [`Derived::covers`]; on
    /// [`CatchUp::Done`] it covers `changes.target()`. After an error it may hold part of
    /// the changes (its owner drops it, or catches it up again over the same range).
    fn catch_up(&mut self, changes: &Changes<'_>) -> Result<CatchUp, ReadError>;
}

/// Brings `state` up to `snapshot`'s commit from the changelog. [`CatchUp::Done`]: it
/// covers that commit, or the later one it already covered (an owner answering for the
/// snapshot compares the two).
pub(crate) fn bring_to(
    state: &mut impl Derived,
    snapshot: &Snapshot,
) -> Result<CatchUp, ReadError> {
    let target = snapshot.commit()?;
    let covered = state.covers();
    if covered >= target {
        return Ok(CatchUp::Done);
    }
    match Changes::read(snapshot, covered, target)? {
        Some(changes) => state.catch_up(&changes),
        None => Ok(CatchUp::Rebuild),
    }
}
