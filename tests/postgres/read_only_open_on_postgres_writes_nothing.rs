//! `Store::open_read_only("postgres://...")` reads the server's store and writes nothing:
//! every write is `WriteError::ReadOnly` and leaves the tables as they were (the writer's
//! own view is unchanged), reads and search work, a store that does not exist is
//! `OpenError::NotFound` and is not created, and options that disagree with what the store
//! recorded are refused as a mismatch.

use crate::pg;
use ratchetdb::{
    Chunk, Document, Metric, OpenError, Options, SearchOptions, Store, Version, WriteError,
};

#[test]
fn read_only_open_on_postgres_writes_nothing() {
    let Some(url) = pg::fresh_url("read_only") else {
        return;
    };
    // Nothing there yet: a read-only open is refused and creates nothing.
    let missing = Store::open_read_only(&url).unwrap_err();
    assert!(matches!(missing, OpenError::NotFound { .. }), "{missing:?}");
    let base = pg::url("read_only").unwrap();
    let schemas = ratchetdb::testkit::pg_query_i64(
        &base,
        &format!(
            "SELECT count(*) FROM pg_namespace WHERE nspname = '{}'",
            pg::schema("read_only")
        ),
    )
    .expect("query");
    assert_eq!(schemas, 0, "a read-only open created the schema");

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
    pg::assert_store_verified(&reader);

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
