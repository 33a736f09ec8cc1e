//! Readers racing a writer under a memory budget: every hit is one revision's chunk whole
//! (its text names the version the hit reports, and its score is the exact score of that
//! revision's vector), of a revision not older than the one acknowledged before the search
//! began. Filters inside the traversal keep to the filtered documents.

use crate::race::{self, revision, Race};
use crate::search_support::settle;
use crate::{open_budgeted, BUDGET};
use std::sync::Arc;

const DOCS: u64 = 2000;

#[test]
fn hits_are_whole_revisions_no_older_than_acknowledged() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Arc::new(open_budgeted(dir.path(), BUDGET));
    store
        .write_batch((0..DOCS).map(|d| revision(d, 1)).collect())
        .expect("first revisions");
    store.build_index().expect("build");
    settle(&store);
    race::run(
        &store,
        Race {
            docs: DOCS,
            rounds: 40,
            searches: 300,
            seeds: (5, 9),
            filter_every: Some(3),
        },
    );
}
