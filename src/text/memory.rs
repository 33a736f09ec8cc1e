//! The derived, in-memory inversion of the `text_docs` rows that text searches score on:
//! term -> (vector id, count, length) postings sorted by vector id, and each chunk's terms
//! (to remove it). Like the filter index it is built from a snapshot by the first text
//! search and brought up to each later search's snapshot from the changelog (every revision
//! lists its new and dropped vector ids there; a new id's row is read from the snapshot);
//! when the changelog no longer reaches back far enough, or the analysis recorded in the
//! file changed, it is rebuilt. The rows stay the truth: an index that covers another commit
//! than a search's snapshot is never used for it.

use super::analyze::TextOptions;
use super::row;
use crate::error::ReadError;
use crate::read::Snapshot;
use crate::schema::{split_vector_id, vector_id, TEXT_DOCS};
use parking_lot::RwLock;
use redb::ReadableTable;
use std::collections::HashMap;

/// One posting: the chunk's vector id, the term's count in it, the chunk's length.
pub(crate) type Posting = (u64, u32, u32);

/// The inverted index of one commit.
#[derive(Debug, Default)]
pub(crate) struct InvertedIndex {
    /// The commit sequence it covers.
    covered: u64,
    /// The analysis its rows were made with.
    options: TextOptions,
    term_ids: HashMap<String, u32>,
    /// By term id, sorted by vector id.
    postings: Vec<Vec<Posting>>,
    /// Each indexed chunk's term ids.
    chunks: HashMap<u64, Vec<u32>>,
    total_terms: u64,
}

impl InvertedIndex {
    /// Built from every row of `snapshot`.
    fn build(snapshot: &Snapshot, options: &TextOptions) -> Result<InvertedIndex, ReadError> {
        let mut index = InvertedIndex {
            covered: crate::live_index::commit_seq(snapshot)?,
            options: options.clone(),
            ..InvertedIndex::default()
        };
        let rows = snapshot
            .txn
            .open_table(TEXT_DOCS)
            .map_err(ReadError::storage)?;
        // Rows come in document order and segments in slot order, so vector ids come in
        // order and every posting list is appended to in order.
        for entry in rows.iter().map_err(ReadError::storage)? {
            let (key, value) = entry.map_err(ReadError::storage)?;
            let doc = key.value();
            for segment in row::segments(value.value())? {
                index.insert(vector_id(doc, segment.slot), segment.len, &segment.terms()?);
            }
        }
        Ok(index)
    }

    fn insert(&mut self, id: u64, len: u32, terms: &[(&str, u32)]) {
        if self.chunks.contains_key(&id) {
            return;
        }
        let mut ids = Vec::with_capacity(terms.len());
        for &(term, tf) in terms {
            let term_id = match self.term_ids.get(term) {
                Some(&t) => t,
                None => {
                    let next = self.postings.len() as u32;
                    self.term_ids.insert(term.to_string(), next);
                    self.postings.push(Vec::new());
                    next
                }
            };
            let list = &mut self.postings[term_id as usize];
            let at = list.partition_point(|p| p.0 < id);
            list.insert(at, (id, tf, len));
            ids.push(term_id);
        }
        self.total_terms += u64::from(len);
        self.chunks.insert(id, ids);
    }

    fn remove(&mut self, id: u64) {
        let Some(ids) = self.chunks.remove(&id) else {
            return;
        };
        for term_id in ids {
            let list = &mut self.postings[term_id as usize];
            if let Ok(at) = list.binary_search_by(|p| p.0.cmp(&id)) {
                list.remove(at);
            }
        }
    }

    /// Applies the changelog rows after `covered` up to `snapshot`'s commit. `false` when
    /// the changelog no longer holds them all (the caller rebuilds).
    fn catch_up(&mut self, snapshot: &Snapshot) -> Result<bool, ReadError> {
        let target = crate::live_index::commit_seq(snapshot)?;
        let rows = snapshot
            .txn
            .open_table(TEXT_DOCS)
            .map_err(ReadError::storage)?;
        let Some(changes) = crate::live_index::changes_since(snapshot, self.covered, target)?
        else {
            return Ok(false);
        };
        for change in changes {
            for &id in &change.removed {
                self.remove_chunk(id);
            }
            // The added ids come a document at a time: its row is read and split once.
            for run in change
                .added
                .chunk_by(|a, b| split_vector_id(*a).0 == split_vector_id(*b).0)
            {
                let doc = split_vector_id(run[0]).0;
                // Absent: removed again by a later commit up to the snapshot.
                let Some(bytes) = rows.get(doc).map_err(ReadError::storage)? else {
                    continue;
                };
                let segments = row::segments(bytes.value())?;
                for &id in run {
                    if self.chunks.contains_key(&id) {
                        continue;
                    }
                    let slot = split_vector_id(id).1;
                    if let Ok(at) = segments.binary_search_by_key(&slot, |s| s.slot) {
                        let segment = &segments[at];
                        self.insert(id, segment.len, &segment.terms()?);
                    }
                }
            }
        }
        self.covered = target;
        Ok(true)
    }

    fn remove_chunk(&mut self, id: u64) {
        let Some(ids) = self.chunks.get(&id) else {
            return;
        };
        let len = ids
            .first()
            .and_then(|&t| {
                let list = &self.postings[t as usize];
                list.binary_search_by(|p| p.0.cmp(&id))
                    .ok()
                    .map(|at| list[at].2)
            })
            .unwrap_or(0);
        self.remove(id);
        self.total_terms = self.total_terms.saturating_sub(u64::from(len));
    }

    /// Live chunks indexed.
    pub(crate) fn chunk_count(&self) -> u64 {
        self.chunks.len() as u64
    }

    /// Their lengths summed.
    pub(crate) fn total_terms(&self) -> u64 {
        self.total_terms
    }

    /// What the index holds and the heap it takes (see [`Footprint`]).
    #[cfg(any(test, feature = "testkit"))]
    pub(crate) fn footprint(&self) -> Footprint {
        fn map_bytes(capacity: usize, entry: usize) -> usize {
            let buckets = match capacity {
                0 => return 0,
                c if c < 7 => c + 1,
                c => c * 8 / 7,
            };
            buckets * (entry + 1) + 16
        }
        let mut bytes = map_bytes(self.term_ids.capacity(), std::mem::size_of::<(String, u32)>());
        bytes += self.term_ids.keys().map(String::capacity).sum::<usize>();
        bytes += self.postings.capacity() * std::mem::size_of::<Vec<Posting>>();
        bytes += self
            .postings
            .iter()
            .map(|p| p.capacity() * std::mem::size_of::<Posting>())
            .sum::<usize>();
        bytes += map_bytes(self.chunks.capacity(), std::mem::size_of::<(u64, Vec<u32>)>());
        bytes += self.chunks.values().map(|v| v.capacity() * 4).sum::<usize>();
        Footprint {
            chunks: self.chunks.len() as u64,
            pairs: self.postings.iter().map(|p| p.len() as u64).sum(),
            heap_bytes: bytes as u64,
        }
    }

    /// The postings of `term` (empty if no live chunk has it).
    pub(crate) fn postings(&self, term: &str) -> &[Posting] {
        self.term_ids
            .get(term)
            .map_or(&[][..], |&t| self.postings[t as usize].as_slice())
    }
}

/// What an inverted index holds and the heap it takes.
#[cfg(any(test, feature = "testkit"))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Footprint {
    /// Live chunks indexed.
    pub chunks: u64,
    /// (term, chunk) pairs: each live chunk's distinct terms, summed.
    pub pairs: u64,
    /// Heap bytes the index holds (its tables' capacities, not the allocator's overhead).
    pub heap_bytes: u64,
}

/// The store's inverted index, shared by its searches.
#[derive(Debug, Default)]
pub(crate) struct TextCache {
    index: RwLock<Option<InvertedIndex>>,
}

impl TextCache {
    /// The footprint of the index as last built or brought up (`None`: no text search yet).
    #[cfg(any(test, feature = "testkit"))]
    pub(crate) fn footprint(&self) -> Option<Footprint> {
        self.index.read().as_ref().map(InvertedIndex::footprint)
    }

    /// Runs `f` on the inverted index of exactly `snapshot`'s commit (built or brought up
    /// to it first), or on one built from the snapshot alone when the shared one has moved
    /// past it (a search on a newer snapshot got there first).
    pub(crate) fn with<R>(
        &self,
        snapshot: &Snapshot,
        options: &TextOptions,
        f: impl FnOnce(&InvertedIndex) -> R,
    ) -> Result<R, ReadError> {
        let seq = crate::live_index::commit_seq(snapshot)?;
        {
            let guard = self.index.read();
            if let Some(index) = guard.as_ref() {
                if index.covered == seq && &index.options == options {
                    return Ok(f(index));
                }
            }
        }
        let mut guard = self.index.write();
        let usable = guard
            .as_ref()
            .is_some_and(|i| &i.options == options && i.covered <= seq);
        let ahead = guard
            .as_ref()
            .is_some_and(|i| &i.options == options && i.covered > seq);
        if ahead {
            drop(guard);
            return Ok(f(&InvertedIndex::build(snapshot, options)?));
        }
        let caught_up = match guard.as_mut() {
            Some(index) if usable => index.catch_up(snapshot)?,
            _ => false,
        };
        if !caught_up {
            *guard = Some(InvertedIndex::build(snapshot, options)?);
        }
        match guard.as_ref() {
            Some(index) => Ok(f(index)),
            None => Ok(f(&InvertedIndex::build(snapshot, options)?)),
        }
    }
}
