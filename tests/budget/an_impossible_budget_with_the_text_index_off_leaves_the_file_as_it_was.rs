//! Regression: an impossible budget on an existing store was refused only after the open had
//! written to the file. With `text_index(false)` the open removed the store's text index
//! first (`text::prepare_on_open`), then failed with an `InputError` on `memory_budget`, so
//! the refused open had dropped the index. The refusal now comes before any write: every row
//! of every table is as it was (redb's own header and allocator pages aside, which any
//! writable open rewrites), and the text index still answers.

use crate::search_support::{ingest_one_chunk_docs, open, Structured};
use crate::store_rows::every_row;
use ratchetdb::{OpenError, Options, SearchOptions, Store};

const N: usize = 2000;
const DIM: usize = 64;

#[test]
fn an_impossible_budget_with_the_text_index_off_leaves_the_text_index_in_place() {
    let dir = tempfile::tempdir().expect("tempdir");
    let vectors = Structured::new(111, DIM).vectors(112, N);
    ingest_one_chunk_docs(&open(dir.path()), "s", &vectors);
    let path = dir.path().join("search.redb");
    let before = every_row(&path);
    // The text index's table: a row per document.
    assert_eq!(before.1["text_docs"].len(), N);

    let refused = Store::open(
        &path,
        Options::default().text_index(false).memory_budget(1 << 20),
    );
    match refused {
        Err(OpenError::Input(error)) => {
            assert_eq!(error.field, "memory_budget");
            assert!(
                error.problem.contains("smallest budget that works"),
                "{}",
                error.problem
            );
        }
        Err(other) => panic!("expected an InputError, got {other}"),
        Ok(_) => panic!("a budget of 1 MiB was accepted for {N} vectors"),
    }

    let after = every_row(&path);
    assert_eq!(
        before.0, after.0,
        "the refused open added or removed tables"
    );
    assert_eq!(
        after.1["text_docs"].len(),
        N,
        "the refused open removed the text index"
    );
    assert!(before.1 == after.1, "the refused open changed rows");
    // A reader (which never builds a text index) finds a chunk by its text.
    let reader = Store::open_read_only(&path).expect("open read-only");
    assert!(reader.has_text_index());
    let hits = reader
        .search_text("chunk 7", 3, &SearchOptions::default())
        .expect("text search");
    assert!(
        hits.iter().any(|hit| hit.id == "v7"),
        "the text index lost v7: {hits:?}"
    );
}
