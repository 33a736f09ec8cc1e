//! Regression: `Store::reembed` walked again whenever a walk handed out any chunk, so chunks
//! that could never be written kept it walking for ever. A damaged file does that: here a
//! document's row is removed (with redb directly) while its chunks stay, so the walk hands
//! them out and every guarded write of theirs counts them superseded (their document is
//! not live). Now two walks in a row handing out the same chunks without writing one stop
//! the re-embed with `ReembedError::NoProgress`, naming the space and how many chunks; what
//! could be written is written. It runs on a thread of its own, so a loop fails the test
//! instead of hanging it.

use super::{open, reembed_within_a_minute, revision, Wide, WIDE};
use ratchetdb::ReembedError;
use redb::TableDefinition;

const DOCS: TableDefinition<(&str, &str), &[u8]> = TableDefinition::new("docs");

#[test]
fn a_reembed_that_can_write_nothing_stops_instead_of_walking_for_ever() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("db.redb");
    {
        let store = open(dir.path());
        for d in 0..5 {
            store
                .upsert(revision(&format!("d{d}"), 1, 3))
                .expect("write");
        }
        store.add_space("wide", "wide-test", WIDE).expect("add");
    }
    {
        let db = redb::Database::open(&path).expect("open with redb");
        let txn = db.begin_write().expect("write");
        txn.open_table(DOCS)
            .expect("docs")
            .remove(("s", "d2"))
            .expect("remove")
            .expect("d2's row");
        txn.commit().expect("commit");
    }

    let store = open(dir.path());
    let result = reembed_within_a_minute(
        &store,
        "wide",
        Wide,
        4,
        "it walked the unwritable chunks for ever",
    );
    match result {
        Err(ReembedError::NoProgress { space, chunks }) => {
            assert_eq!((space.as_str(), chunks), ("wide", 3));
        }
        other => panic!("chunks that cannot be written: {other:?}"),
    }
    let space = store
        .spaces()
        .expect("spaces")
        .into_iter()
        .find(|s| s.name == "wide")
        .expect("wide");
    assert_eq!(space.vectors, 12, "every other chunk is written: {space:?}");
}
