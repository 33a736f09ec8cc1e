//! A closing store that compacts its file keeps only the last `CHANGELOG_KEEP_ON_CLOSE`
//! (16) changelog rows: the changelog serves indexes that follow commits as they happen, a
//! reopen reconciles the persisted graph with the vectors rows without it, and a bulk
//! load's rows (every vector id a batch added) were megabytes of runs compaction could not
//! always move. A reader process's store that fell further behind than the kept rows
//! reloads its index from the vectors and still finds every document; the reopened writer
//! finds them all and `verify` is clean.

use crate::support::changelog::{
    assert_reader_index_holds, assert_reopened_whole, changelog_rows, doc, finds, finds_probes,
    write_in_batches,
};
use ratchetdb::{Options, Store};

const COMMITS: u64 = 40;
const DOCS_PER_COMMIT: u64 = 50;

#[test]
fn a_closing_store_keeps_the_last_changelog_rows_and_lagging_readers_reload() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("changelog.redb");
    let writer = Store::open(&path, Options::default()).expect("create");
    writer.upsert(doc(0)).expect("the first document");
    // A reader beside the writer, whose index is at the first commit.
    let reader = Store::open_read_only(&path).expect("reader");
    assert!(finds(&reader, 0));
    let last = write_in_batches(&writer, COMMITS, DOCS_PER_COMMIT);
    drop(writer);

    // The reader is 40 commits behind, past the kept rows: it reloads, and finds the first
    // document, one from the trimmed commits and the last.
    assert!(finds_probes(&reader, last), "the reader lost a document");
    assert_reader_index_holds(&reader, last + 1);
    drop(reader);

    let keys: Vec<u64> = changelog_rows(&path)
        .into_iter()
        .map(|(key, _)| key)
        .collect();
    assert_eq!(keys.len(), 16, "{keys:?}");
    assert!(
        keys.windows(2).all(|w| w[1] == w[0] + 1),
        "the kept rows are the last, in a run: {keys:?}"
    );
    assert_reopened_whole(&path, last);
}
