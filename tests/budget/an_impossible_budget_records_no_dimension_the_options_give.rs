//! Regression: an impossible budget on an existing store was refused only after the open had
//! written to the file. `.dimension(4096).memory_budget(4 MiB)` on a store with no dimension
//! yet committed the dimension (and the model) the options gave, then failed with an
//! `InputError` on `memory_budget`: the refused open had fixed the store's dimension at one
//! no later open under that budget could hold. The refusal now comes before any write: every
//! row of every table is as it was (redb's own header and allocator pages aside, which any
//! writable open rewrites), and the store still takes its dimension from its first vector.

use crate::store_rows::every_row;
use ratchetdb::{Chunk, Document, OpenError, Options, Store, Version};

#[test]
fn an_impossible_budget_for_the_options_dimension_records_no_dimension() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("store.redb");
    {
        let store = Store::open(&path, Options::default()).expect("create the store");
        // A document without chunks: the store holds something, and no dimension.
        store
            .upsert(Document::new("s", "empty", Version::number(1)))
            .expect("write a document without chunks");
        assert_eq!(store.dimension(), None);
    }
    let before = every_row(&path);

    // The quantiser's centroids and lookup table alone take 256 x 4096 x 6 bytes (6.3 MB).
    let refused = Store::open(
        &path,
        Options::default()
            .dimension(4096)
            .model("a-large-model")
            .memory_budget(4 << 20),
    );
    match refused {
        Err(OpenError::Input(error)) => {
            assert_eq!(error.field, "memory_budget");
            assert!(
                error.problem.contains("4096 dimensions"),
                "{}",
                error.problem
            );
        }
        Err(other) => panic!("expected an InputError, got {other}"),
        Ok(_) => panic!("4 MiB was accepted for 4096 dimensions"),
    }

    let after = every_row(&path);
    assert_eq!(
        before.0, after.0,
        "the refused open added or removed tables"
    );
    assert_eq!(
        before.1["meta"], after.1["meta"],
        "the refused open changed the metadata"
    );
    assert!(before.1 == after.1, "the refused open changed rows");
    let store = Store::open(&path, Options::default()).expect("reopen");
    assert_eq!(
        store.dimension(),
        None,
        "the refused open recorded a dimension"
    );
    assert_eq!(store.model(), None, "the refused open recorded a model");
    assert_eq!(store.stats().expect("stats").documents, 1);
    // The first vector fixes the dimension, as before.
    store
        .upsert(
            Document::new("s", "a", Version::number(1)).with_chunk(Chunk::new("a", vec![0.5; 8])),
        )
        .expect("write a vector");
    assert_eq!(store.dimension(), Some(8));
}
