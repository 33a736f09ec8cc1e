//! `Store::open_read_only` reads a store and writes nothing: every write (the `Writer`'s
//! too, `sync` and `ticket` included) is `WriteError::ReadOnly` and leaves the store as it
//! was (the writer's own view is unchanged), reads and search work, a store that does not
//! exist is `OpenError::NotFound` and is not created, and options that disagree with what
//! the store recorded are refused as a mismatch. (The file's own read-only guarantees,
//! its bytes and modification time, are `tests/concurrency/read_only_open_never_writes.rs`.)

use crate::common::assert_verified;
use crate::fixture::Fixture;
use ratchetdb::{
    Chunk, Document, Metric, OpenError, Options, SearchOptions, Store, Version, WriteError,
};

crate::conformance!(read_only_stores_refuse_writes);

fn read_only_stores_refuse_writes(b: &dyn Fixture) {
    let url = b.address("db");
    // Nothing there yet: a read-only open is refused and creates nothing.
    let missing = Store::open_read_only(&url).unwrap_err();
    assert!(matches!(missing, OpenError::NotFound { .. }), "{missing:?}");
    assert!(!b.exists("db"), "a read-only open created the store");

    let writer = Store::open(&url, Options::default().model("m1")).expect("writer");
    writer
        .upsert(
            Document::new("s", "a", Version::number(1))
                .with_chunk(Chunk::new("text", vec![1.0, 0.0])),
        )
        .expect("upsert");
    let reader = Store::open_read_only(&url).expect("read-only open");
    assert!(reader.is_read_only());
    assert_eq!(reader.model(), Some("m1"));
    assert_eq!(reader.dimension(), Some(2));
    let before = writer.documents(true).expect("documents");

    let refused: Vec<WriteError> = vec![
        reader
            .upsert(
                Document::new("s", "b", Version::number(1))
                    .with_chunk(Chunk::new("x", vec![0.0, 1.0])),
            )
            .unwrap_err(),
        reader.delete("s", "a", Version::number(5)).unwrap_err(),
        reader
            .retain("s", Vec::<String>::new(), Version::number(5))
            .unwrap_err(),
        reader.purge("s", Version::number(5)).unwrap_err(),
        reader.ticket().unwrap_err(),
        reader.sync().unwrap_err(),
        reader
            .writer()
            .upsert(
                Document::new("s", "c", Version::number(1))
                    .with_chunk(Chunk::new("y", vec![0.0, 1.0])),
            )
            .unwrap_err(),
    ];
    for error in refused {
        assert!(matches!(error, WriteError::ReadOnly { .. }), "{error:?}");
    }
    assert_eq!(writer.documents(true).expect("documents"), before);
    assert_eq!(reader.documents(true).expect("documents"), before);
    let hits = reader
        .search(&[1.0, 0.0], 1, &SearchOptions::default())
        .expect("search");
    assert_eq!(hits[0].text, "text");
    assert_verified(&reader);

    let mismatch =
        Store::open_read_only_with(&url, Options::default().metric(Metric::L2)).unwrap_err();
    assert!(
        matches!(
            mismatch,
            OpenError::Mismatch {
                field: "metric",
                ..
            }
        ),
        "{mismatch:?}"
    );
}
