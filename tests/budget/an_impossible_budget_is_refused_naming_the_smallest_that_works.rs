//! A budget too small for the store's live vectors is refused at open with an `InputError`
//! on `memory_budget` naming the smallest budget that works, and the store is unchanged;
//! that smallest budget opens it. A budget too small for any store creates no file.

use crate::search_support::{ingest_one_chunk_docs, open, Structured};
use crate::{open_budgeted, DIM};
use ratchetdb::{InputError, OpenError, Options, SearchOptions, Store};

fn refusal(path: &std::path::Path, budget: u64) -> InputError {
    match Store::open(path, Options::default().memory_budget(budget)) {
        Err(OpenError::Input(error)) => error,
        Err(other) => panic!("expected an InputError, got {other}"),
        Ok(_) => panic!("a budget of {budget} bytes was accepted"),
    }
}

/// The smallest budget the message names, in bytes.
fn smallest(error: &InputError) -> u64 {
    let text = error.problem.split("smallest budget that works is ").nth(1);
    text.and_then(|t| t.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no smallest budget in {:?}", error.problem))
}

#[test]
fn a_budget_below_the_smallest_is_refused_and_the_smallest_opens() {
    let dir = tempfile::tempdir().expect("tempdir");
    let vectors = Structured::new(81, DIM).vectors(82, 3000);
    let query = vectors[7].clone();
    let before = {
        let store = open(dir.path());
        ingest_one_chunk_docs(&store, "s", &vectors);
        store
            .search(&query, 5, &SearchOptions::default().exact(true))
            .expect("search")
    };
    let path = dir.path().join("search.redb");
    let error = refusal(&path, 1 << 20);
    assert_eq!(error.field, "memory_budget");
    let least = smallest(&error);
    assert!(least > 1 << 20);
    // One byte short of it is refused too, naming the same smallest.
    assert_eq!(smallest(&refusal(&path, least - 1)), least);
    // Unchanged: the same documents, the same hits.
    let store = open_budgeted(dir.path(), least);
    assert_eq!(store.stats().expect("stats").documents, 3000);
    let after = store
        .search(&query, 5, &SearchOptions::default().exact(true))
        .expect("search");
    assert_eq!(
        before.iter().map(|h| (&h.id, h.score)).collect::<Vec<_>>(),
        after.iter().map(|h| (&h.id, h.score)).collect::<Vec<_>>()
    );
}

#[test]
fn a_budget_too_small_for_any_store_creates_no_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("new.redb");
    let error = match Store::open(&path, Options::default().dimension(DIM).memory_budget(1024)) {
        Err(OpenError::Input(error)) => error,
        Err(other) => panic!("expected an InputError, got {other}"),
        Ok(_) => panic!("a budget of 1 KiB was accepted"),
    };
    assert_eq!(error.field, "memory_budget");
    assert!(smallest(&error) > 1024);
    assert!(!path.exists(), "a refused open created the file");
}
