//! FOR COMPARISON ONLY: a naive last-write-wins index, the kind of pipeline ratchetdb
//! replaces. Nothing in ratchetdb works like this; the demo runs the same schedule through
//! it to show what the guard prevents. And `audit`, which counts what any index holds that
//! the source no longer has, for both.
//!
//! The naive index is a plain map keyed by (source, id, chunk id), written in arrival order:
//! - upsert: write each chunk of the revision, overwriting what is there (last write wins);
//!   nothing is compared, nothing removed;
//! - chunk ids: `position` on a message's first delivery; a redelivered message (retry,
//!   dead-letter replay) is written under fresh random ids, as a pipeline that mints ids per
//!   processing attempt does;
//! - delete: remove the document's chunks; listing: remove the chunks of every document it
//!   omits. Neither leaves a trace, so a later stale write simply comes back.

use super::corpus::{CorpusDocument, SOURCE};
use super::schedule::{Delivery, Payload, Rng};
use super::Embeddings;
use std::collections::BTreeMap;

/// A chunk's id in the naive index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ChunkId {
    Position(u32),
    Random(u64),
}

/// A chunk as the naive index holds it.
pub struct NaiveChunk {
    pub doc: usize,
    pub revision: usize,
    pub position: u32,
    pub text: String,
    pub vector: Vec<f32>,
}

/// The naive index.
pub struct NaiveIndex {
    chunks: BTreeMap<(&'static str, &'static str, ChunkId), NaiveChunk>,
    ids: Rng,
}

impl NaiveIndex {
    pub fn new(seed: u64) -> NaiveIndex {
        NaiveIndex {
            chunks: BTreeMap::new(),
            ids: Rng::new(seed ^ 0x6e61_6976_6521),
        }
    }

    /// Applies one delivery, as it arrived.
    pub fn apply(
        &mut self,
        delivery: &Delivery,
        corpus: &[CorpusDocument],
        embeddings: &Embeddings,
    ) {
        match delivery.payload {
            Payload::Upsert { doc, revision } => {
                let chunks = &corpus[doc].revisions[revision - 1];
                for (position, text) in chunks.iter().enumerate() {
                    let chunk_id = if delivery.redelivered {
                        ChunkId::Random(self.ids.next_u64())
                    } else {
                        ChunkId::Position(position as u32)
                    };
                    self.chunks.insert(
                        (SOURCE, corpus[doc].id, chunk_id),
                        NaiveChunk {
                            doc,
                            revision,
                            position: position as u32,
                            text: text.clone(),
                            vector: embeddings[doc][revision - 1][position].clone(),
                        },
                    );
                }
            }
            Payload::Delete { doc, .. } => {
                self.chunks.retain(|_, chunk| chunk.doc != doc);
            }
            Payload::Retain => {
                self.chunks
                    .retain(|_, chunk| corpus[chunk.doc].final_chunks().is_some());
            }
        }
    }

    /// Every chunk a search can return.
    pub fn retrievable(&self) -> impl Iterator<Item = Retrievable<'_>> {
        self.chunks.iter().map(|((_, _, id), chunk)| Retrievable {
            doc: chunk.doc,
            position: match id {
                ChunkId::Position(position) => Some(*position),
                ChunkId::Random(_) => None,
            },
            text: &chunk.text,
        })
    }

    /// The `k` chunks nearest `query` (unit vectors: the dot product is the cosine).
    pub fn search(&self, query: &[f32], k: usize) -> Vec<(f32, ChunkId, &NaiveChunk)> {
        let mut scored: Vec<(f32, ChunkId, &NaiveChunk)> = self
            .chunks
            .iter()
            .map(|((_, _, id), chunk)| {
                let dot: f32 = chunk.vector.iter().zip(query).map(|(a, b)| a * b).sum();
                (dot, *id, chunk)
            })
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        scored.truncate(k);
        scored
    }
}

/// A chunk a search can return, from either index.
pub struct Retrievable<'a> {
    pub doc: usize,
    /// `None` for a chunk stored under a random id.
    pub position: Option<u32>,
    pub text: &'a str,
}

/// What an index holds that the source does not.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Audit {
    /// Chunks a search can return.
    pub retrievable: usize,
    /// Documents that exist at the source whose current text is not (all) retrievable at
    /// its positions: an older revision's text is served instead, or parts are missing.
    pub stale_documents: usize,
    /// Chunks of existing documents that are not part of their current revision: surplus
    /// positions left by a longer revision, and duplicates under random ids.
    pub orphan_chunks: usize,
    /// Documents deleted at the source (by an event or by vanishing) that a search still
    /// returns.
    pub resurrected_deletes: usize,
}

impl Audit {
    pub fn is_clean(&self) -> bool {
        self.stale_documents == 0 && self.orphan_chunks == 0 && self.resurrected_deletes == 0
    }
}

/// Compares what an index can return with what the source holds at the end.
pub fn audit<'a>(
    corpus: &[CorpusDocument],
    chunks: impl IntoIterator<Item = Retrievable<'a>>,
) -> Audit {
    let mut audit = Audit::default();
    let mut by_doc: Vec<Vec<Retrievable<'a>>> = (0..corpus.len()).map(|_| Vec::new()).collect();
    for chunk in chunks {
        audit.retrievable += 1;
        by_doc[chunk.doc].push(chunk);
    }
    for (document, chunks) in corpus.iter().zip(by_doc) {
        let Some(current) = document.final_chunks() else {
            audit.resurrected_deletes += usize::from(!chunks.is_empty());
            continue;
        };
        let is_current = |chunk: &Retrievable<'_>| {
            chunk.position.is_some_and(|p| {
                current
                    .get(p as usize)
                    .is_some_and(|text| text == chunk.text)
            })
        };
        let in_place =
            |chunk: &Retrievable<'_>| chunk.position.is_some_and(|p| (p as usize) < current.len());
        let complete = (0..current.len()).all(|p| {
            chunks
                .iter()
                .any(|c| c.position == Some(p as u32) && is_current(c))
        });
        let mixed = chunks.iter().any(|c| in_place(c) && !is_current(c));
        audit.stale_documents += usize::from(!complete || mixed);
        audit.orphan_chunks += chunks.iter().filter(|c| !in_place(c)).count();
    }
    audit
}
