//! Regression: a read-only store forgot the index of a space the writer dropped only in a
//! pass that caught up over the drop, and its own searches keep the default index up to
//! date, so a reader that searched within the follower's interval never ran one: the
//! dropped space's vectors stayed in its memory for good (until a `verify`). Here the reader
//! loads the `wide` space's index, the writer drops the space, the reader keeps searching
//! the default space, and the index must be let go.

use super::{live_texts, moved_to_wide, wide};
use ratchetdb::{SearchOptions, Store};
use std::time::{Duration, Instant};

#[test]
fn a_reader_forgets_a_space_another_process_dropped() {
    let dir = tempfile::tempdir().expect("tempdir");
    let writer = moved_to_wide(dir.path(), 30);
    let reader = Store::open_read_only(dir.path().join("db.redb")).expect("reader");
    let texts = live_texts(&reader);
    reader
        .search(&wide(&texts[0]), 5, &SearchOptions::default().space("wide"))
        .expect("the wide space");
    assert_eq!(reader.index_info().space_vectors, texts.len() as u64);

    writer.activate("default").expect("activate default");
    writer.drop_space("wide").expect("drop");

    let deadline = Instant::now() + Duration::from_secs(30);
    let mut searches = 0;
    while reader.index_info().space_vectors != 0 {
        assert!(
            Instant::now() < deadline,
            "after {searches} searches the dropped space's index is still held: {:?}",
            reader.index_info()
        );
        let query = crate::common::vector(&texts[searches % texts.len()]);
        let hits = reader
            .search(&query, 5, &SearchOptions::default())
            .expect("search");
        assert!(!hits.is_empty());
        searches += 1;
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(reader
        .search(&wide(&texts[0]), 5, &SearchOptions::default().space("wide"))
        .is_err());
}
