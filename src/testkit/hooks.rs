//! The embedded store's parts, for the crate's own tests (which are all embedded).

#[cfg(test)]
use crate::backend::redb::{derived::indexer::Indexer, engine::Engine, RedbBackend};
use crate::Store;
#[cfg(test)]
use std::sync::Arc;

impl Store {
    /// The embedded backend.
    #[cfg(test)]
    pub(crate) fn embedded(&self) -> &RedbBackend {
        match self.backend().redb() {
            Some(b) => b,
            None => panic!("the crate's own tests use embedded stores"),
        }
    }

    /// The engine.
    #[cfg(test)]
    pub(crate) fn engine(&self) -> &Arc<Engine> {
        self.embedded().engine()
    }

    /// The derived state's owner.
    #[cfg(test)]
    pub(crate) fn indexer(&self) -> &Indexer {
        self.embedded().indexer()
    }

    /// The embedded store's in-memory text index as last built or brought up by a text
    /// search (`None`: none yet, or a PostgreSQL store).
    pub(crate) fn text_index_footprint(
        &self,
    ) -> Option<crate::backend::redb::derived::text_cache::Footprint> {
        self.backend().redb()?.indexer().text_cache.footprint()
    }
}
