//! [`Store::reembed`]: a vector space filled from the chunks' texts while the store goes
//! on serving, built on the walk ([`Store::chunks_missing_vectors`]) and the guarded write
//! ([`Store::write_space_vectors`]).

use crate::embed::{EmbedError, Embedder};
use crate::error::{InputError, ReadError, WriteError};
use crate::store::Store;
use crate::types::{ReembedOutcome, ReembedProgress, SpaceVector};

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
}

impl Store {
    /// Embeds, with `embedder`, every live chunk that lacks a vector in space `space`, and
    /// writes the vectors guarded ([`Store::write_space_vectors`]), `batch_size` chunks per
    /// embedding call and transaction, calling `progress` after each batch. Searches and
    /// writers go on meanwhile. It walks the chunks again until a walk finds none (chunks
    /// rewritten meanwhile come back to it), so on return the space covers every live
    /// chunk unless writes go on. Stopped at any point (an error, a kill), nothing written
    /// is lost and a later call embeds only what is still missing. An embedder of another
    /// dimension than the space's, a `batch_size` of 0 or above 100 000, or an unknown
    /// space is an `InputError` naming the field, before anything is embedded.
    pub fn reembed(
        &self,
        space: &str,
        embedder: &dyn Embedder,
        batch_size: usize,
        progress: &mut dyn FnMut(ReembedProgress),
    ) -> Result<ReembedOutcome, ReembedError> {
        let info = self.space_info(space)?;
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
        let mut outcome = ReembedOutcome::default();
        loop {
            let mut after = None;
            let mut found = false;
            loop {
                let missing = self.space_info(space)?.missing();
                let chunks = self.chunks_missing_vectors(space, after, batch_size)?;
                let Some(last) = chunks.last() else { break };
                found = true;
                after = Some(last.revision);
                let texts: Vec<&str> = chunks.iter().map(|c| c.text.as_str()).collect();
                let vectors = embedder.embed_batch(&texts)?;
                outcome.embedded += chunks.len() as u64;
                let vectors: Vec<SpaceVector> = chunks
                    .iter()
                    .zip(vectors)
                    .map(|(chunk, vector)| SpaceVector::for_chunk(chunk, vector))
                    .collect();
                let wrote = self.write_space_vectors(space, vectors)?;
                outcome.writes.written += wrote.written;
                outcome.writes.superseded += wrote.superseded;
                outcome.writes.present += wrote.present;
                progress(ReembedProgress {
                    embedded: outcome.embedded,
                    missing,
                });
            }
            if !found {
                break;
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
}
