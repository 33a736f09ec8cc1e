//! A read-only store opened before a promotion (another process's view: its own handle,
//! index and recorded dimension) keeps answering correctly across it (issue 46): before,
//! searches use the active `wide` space and the old default vectors by name; after, it
//! reports the promoted model and dimension, searches (default, `wide`, `default`) use the
//! new vectors and find every live chunk, a query of the old dimension is refused typed
//! (never a panic, never a hit scored on the old vectors), its index loads the new vectors
//! again, and `verify` is clean.

use super::{every_chunk_found_by_its_wide_vector, live_texts, moved_to_wide, WIDE};
use ratchetdb::{ReadError, SearchOptions, Store};
use std::time::Duration;

#[test]
fn a_reader_opened_before_a_promotion_follows_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let writer = moved_to_wide(dir.path(), 30);
    let reader = Store::open_read_only(dir.path().join("db.redb")).expect("reader");
    assert!(reader.wait_for_index(Duration::from_secs(60)));
    assert_eq!(reader.dimension(), Some(3));
    every_chunk_found_by_its_wide_vector(&reader, &SearchOptions::default());
    let texts = live_texts(&reader);
    let old = reader
        .search(
            &crate::common::vector(&texts[0]),
            1,
            &SearchOptions::default().space("default"),
        )
        .expect("the old vectors, by name");
    assert_eq!(old[0].text, texts[0]);

    writer.drop_space("default").expect("promote");

    for options in [
        SearchOptions::default(),
        SearchOptions::default().space("wide"),
        SearchOptions::default().space("default"),
    ] {
        every_chunk_found_by_its_wide_vector(&reader, &options);
        match reader.search(&crate::common::vector(&texts[0]), 1, &options) {
            Err(ReadError::Input(e)) => assert!(e.field.starts_with("query"), "{e:?}"),
            other => panic!("a query of the old dimension: {other:?}"),
        }
    }
    assert_eq!(reader.dimension(), Some(WIDE));
    assert_eq!(reader.model(), Some("wide-test"));
    assert_eq!(reader.spaces().expect("spaces").len(), 1);
    assert!(reader.wait_for_index(Duration::from_secs(60)));
    assert_eq!(reader.index_info().live_vectors, texts.len() as u64);
    every_chunk_found_by_its_wide_vector(&reader, &SearchOptions::default());
    let report = reader.verify().expect("verify");
    assert!(report.is_ok(), "{:#?}", report.violations);
}
