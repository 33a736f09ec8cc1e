//! [`Store::reembed`]: a vector space filled from the chunks' texts while the store goes
//! on serving, built on the walk ([`Store::chunks_missing_vectors`]) and the guarded write
//! ([`Store::write_space_vectors`]).

use crate::embed::{EmbedError, Embedder};
use crate::error::{InputError, ReadError, WriteError};
use crate::store::Store;
use crate::types::{MissingChunk, ReembedOutcome, ReembedProgress, SpaceVector};

/// Why a re-embed stopped. What it wrote before stays written (each batch is its own
/// transaction), and a later call goes on from there.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReembedError {
    /// Walking the chunks failed.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// Writing a batch of vectors failed.
    #[error(transparent)]
    Write(#[from] WriteError),
    /// The embedder failed.
    #[error(transparent)]
    Embed(#[from] EmbedError),
    /// The embedder returned another number of vectors than it was given texts (an
    /// [`Embedder`] must return one vector per text, in order); nothing of the batch was
    /// written.
    #[error(
        "the embedder {embedder} returned {vectors} vectors for {texts} texts (one per text \
         is its contract); nothing of the batch was written"
    )]
    VectorCount {
        /// The embedder's name.
        embedder: String,
        /// Texts it was given.
        texts: usize,
        /// Vectors it returned.
        vectors: usize,
    },
    /// The embedder made a vector the store refuses for one chunk (not finite, or of zero
    /// length under the cosine metric: [`Store::write_space_vectors`]'s checks); nothing of
    /// its batch was written.
    #[error(
        "the embedder's vector for chunk {position} of document {source_name}/{id} is refused: \
         {problem}; nothing of the batch was written"
    )]
    Vector {
        /// The chunk's document's source.
        source_name: String,
        /// The chunk's document's id.
        id: String,
        /// The chunk's position in its document when it was read.
        position: usize,
        /// What is wrong with the vector (its field names the vector in the batch).
        problem: InputError,
    },
    /// The space was dropped and another added under its name while the re-embed ran: the
    /// vectors it makes are not that space's, and none was written to it.
    #[error(
        "space {space:?} was dropped and another space added under its name while the \
         re-embed ran; nothing was written to the new one (run the re-embed again for it)"
    )]
    SpaceReplaced {
        /// The space's name.
        space: String,
    },
    /// A walk handed out the same chunks as the walk before it and none of them could be
    /// written (each write counted superseded or present): the file disagrees with itself
    /// (`Store::verify` says where), and walking again would repeat them for ever.
    #[error(
        "the re-embed of space {space:?} made no progress: the same {chunks} chunks were \
         handed out by two walks in a row and none could be written (Store::verify checks \
         the file)"
    )]
    NoProgress {
        /// The space's name.
        space: String,
        /// Chunks the last walk handed out.
        chunks: u64,
    },
}

/// What one walk handed out and wrote: enough to tell a walk that repeats the one before
/// it without writing anything (the chunks are not kept: a walk may hand out millions).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Walk {
    /// Chunks handed out.
    chunks: u64,
    /// An order-independent digest of their revisions.
    digest: u64,
}

impl Walk {
    fn add(&mut self, chunks: &[MissingChunk]) {
        for chunk in chunks {
            self.chunks += 1;
            // A multiplicative hash of each revision, summed: the same set gives the same
            // digest in any order.
            self.digest = self.digest.wrapping_add(
                (chunk.revision.0 ^ 0x9e37_79b9_7f4a_7c15).wrapping_mul(0xbf58_476d_1ce4_e5b9),
            );
        }
    }
}

impl Store {
    /// Embeds, with `embedder`, every live chunk that lacks a vector in space `space`, and
    /// writes the vectors guarded ([`Store::write_space_vectors`]), `batch_size` chunks per
    /// embedding call and transaction, calling `progress` after each batch. Searches and
    /// writers go on meanwhile. It walks the chunks again until a walk finds none (chunks
    /// rewritten meanwhile come back to it), so on return the space covers every live
    /// chunk unless writes go on. Stopped at any point (an error, a kill), nothing written
    /// is lost and a later call embeds only what is still missing (the batch in flight when
    /// it stopped, embedded but not committed, is embedded again).
    ///
    /// Refused before anything is embedded, with an `InputError` naming the field: a
    /// `batch_size` of 0 or above 100 000, an unknown space (`space`), an embedder whose
    /// [`name`](Embedder::name) is not the model the space was added for, or of another
    /// dimension (`embedder`). The re-embed follows the space it began on: one dropped and
    /// added again under its name meanwhile is [`ReembedError::SpaceReplaced`], nothing
    /// written to it. An embedder returning another number of vectors than texts is
    /// [`ReembedError::VectorCount`], a vector the store refuses (not finite, zero under
    /// cosine) [`ReembedError::Vector`] naming its chunk, and two walks in a row that hand
    /// out the same chunks without writing any [`ReembedError::NoProgress`].
    pub fn reembed(
        &self,
        space: &str,
        embedder: &dyn Embedder,
        batch_size: usize,
        progress: &mut dyn FnMut(ReembedProgress),
    ) -> Result<ReembedOutcome, ReembedError> {
        if batch_size == 0 || batch_size > crate::backend::redb::spaces::MAX_WALK {
            return Err(ReadError::Input(InputError::new(
                "batch_size",
                format!(
                    "is {batch_size}; it must be 1 to {}",
                    crate::backend::redb::spaces::MAX_WALK
                ),
            ))
            .into());
        }
        let info = self.space_info(space)?;
        if embedder.name() != info.model {
            return Err(ReadError::Input(InputError::new(
                "embedder",
                format!(
                    "is {}; space {space:?} holds vectors of {:?} (an embedder of another model \
                     would mix two models' vectors in one space)",
                    embedder.name(),
                    info.model
                ),
            ))
            .into());
        }
        if info.dimension != Some(embedder.dimension()) {
            return Err(ReadError::Input(InputError::new(
                "embedder",
                format!(
                    "{} makes {}-dimensional vectors; space {space:?} holds {}-dimensional ones",
                    embedder.name(),
                    embedder.dimension(),
                    info.dimension.unwrap_or(0)
                ),
            ))
            .into());
        }
        // The space this re-embed is for (`None`: the default space, which never lacks a
        // vector).
        let expected = self.space_id(space)?;
        let mut outcome = ReembedOutcome::default();
        let mut unwritten: Option<Walk> = None;
        loop {
            let mut after = None;
            let mut walk = Walk::default();
            let written_before = outcome.writes.written;
            loop {
                let missing = self.space_info(space)?.missing();
                if self.space_id(space)? != expected {
                    return Err(ReembedError::SpaceReplaced {
                        space: space.to_owned(),
                    });
                }
                let chunks = self.chunks_missing_vectors(space, after, batch_size)?;
                let Some(last) = chunks.last() else { break };
                after = Some(last.revision);
                walk.add(&chunks);
                let texts: Vec<&str> = chunks.iter().map(|c| c.text.as_str()).collect();
                let vectors = embedder.embed_batch(&texts)?;
                if vectors.len() != chunks.len() {
                    return Err(ReembedError::VectorCount {
                        embedder: embedder.name().to_owned(),
                        texts: chunks.len(),
                        vectors: vectors.len(),
                    });
                }
                outcome.embedded += chunks.len() as u64;
                let vectors: Vec<SpaceVector> = chunks
                    .iter()
                    .zip(vectors)
                    .map(|(chunk, vector)| SpaceVector::for_chunk(chunk, vector))
                    .collect();
                let wrote = crate::backend::redb::spaces::expecting_space(expected, || {
                    self.write_space_vectors(space, vectors)
                })
                .map_err(|e| self.write_failed(space, expected, &chunks, e))?;
                outcome.writes.written += wrote.written;
                outcome.writes.superseded += wrote.superseded;
                outcome.writes.present += wrote.present;
                progress(ReembedProgress {
                    embedded: outcome.embedded,
                    missing,
                });
            }
            if walk.chunks == 0 {
                break;
            }
            if outcome.writes.written > written_before {
                unwritten = None;
            } else if unwritten == Some(walk) {
                return Err(ReembedError::NoProgress {
                    space: space.to_owned(),
                    chunks: walk.chunks,
                });
            } else {
                unwritten = Some(walk);
            }
        }
        outcome.complete = self.space_info(space)?.is_complete();
        Ok(outcome)
    }

    /// Space `space`'s listing entry; an unknown one is an `InputError` naming `space`, a
    /// damaged one (left out of the listing) the walk's `Corrupted` naming it.
    fn space_info(&self, space: &str) -> Result<crate::SpaceInfo, ReadError> {
        if let Some(info) = self.spaces()?.into_iter().find(|s| s.name == space) {
            return Ok(info);
        }
        // Not listed: unknown, or damaged (the walk says which, naming it).
        self.chunks_missing_vectors(space, None, 1)?;
        Err(ReadError::Input(InputError::new(
            "space",
            format!("{space:?} names no vector space of this store (Store::spaces lists them)"),
        )))
    }

    /// The id of the space `space` names now (`None`: the default space, or none).
    fn space_id(&self, space: &str) -> Result<Option<u32>, ReadError> {
        let snapshot = self.snapshot()?;
        if crate::backend::redb::spaces::is_default(&snapshot, space)? {
            return Ok(None);
        }
        Ok(crate::backend::redb::spaces::space_row(&snapshot, space)?.map(|row| row.id))
    }

    /// The error for a failed write of the batch made from `chunks`: the space replaced
    /// meanwhile ([`ReembedError::SpaceReplaced`]), a vector refused (named by its chunk),
    /// else `error` as it is.
    fn write_failed(
        &self,
        space: &str,
        expected: Option<u32>,
        chunks: &[MissingChunk],
        error: WriteError,
    ) -> ReembedError {
        if matches!(self.space_id(space), Ok(id) if id.is_some() && id != expected) {
            return ReembedError::SpaceReplaced {
                space: space.to_owned(),
            };
        }
        if let WriteError::Input(problem) = &error {
            // `vectors[i].vector`: the i-th vector of the batch, made for the i-th chunk.
            let chunk = problem
                .field
                .strip_prefix("vectors[")
                .and_then(|rest| rest.split_once(']'))
                .and_then(|(i, _)| i.parse::<usize>().ok())
                .and_then(|i| chunks.get(i));
            if let Some(chunk) = chunk {
                return ReembedError::Vector {
                    source_name: chunk.source.clone(),
                    id: chunk.id.clone(),
                    position: chunk.position,
                    problem: problem.clone(),
                };
            }
        }
        error.into()
    }
}
