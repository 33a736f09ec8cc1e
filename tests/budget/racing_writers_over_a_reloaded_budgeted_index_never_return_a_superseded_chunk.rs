//! Readers racing a writer over a budgeted index loaded from the file (saved by an earlier
//! open, brought up to date from the changelog, saved again as the store grows): every hit
//! is one revision's chunk whole, of a revision not older than the one acknowledged before
//! the search began; after the race and a reopen, the loaded index agrees with the file.

use crate::race::{self, revision, Race};
use crate::search_support::{assert_verified, settle};
use crate::{open_budgeted, BUDGET};
use std::sync::Arc;

const DOCS: u64 = 3000;

#[test]
fn hits_over_a_reloaded_budgeted_index_are_never_superseded() {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let store = open_budgeted(dir.path(), BUDGET);
        store
            .write_batch((0..DOCS).map(|d| revision(d, 1)).collect())
            .expect("first revisions");
        store.build_index().expect("build and save");
        settle(&store);
    }
    let store = Arc::new(open_budgeted(dir.path(), BUDGET));
    settle(&store);
    assert!(
        store.index_info().loaded_from_file,
        "{:?}",
        store.index_info()
    );
    race::run(
        &store,
        Race {
            docs: DOCS,
            rounds: 60,
            searches: 300,
            seeds: (15, 19),
            filter_every: None,
        },
    );
    settle(&store);
    assert_verified(&store, "after the race");
    // The writer has joined: this is the last handle, and dropping it closes the store.
    assert_eq!(Arc::strong_count(&store), 1);
    drop(store);
    let store = open_budgeted(dir.path(), BUDGET);
    settle(&store);
    assert!(
        store.index_info().loaded_from_file,
        "{:?}",
        store.index_info()
    );
    assert_eq!(store.index_info().live_vectors, DOCS);
    assert_verified(&store, "after reopening");
}
