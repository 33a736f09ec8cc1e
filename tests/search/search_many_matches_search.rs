//! `Store::search_many` (issue 19) answers each query exactly as `Store::search` does, in
//! the order of the queries, with and without a filter, and names a bad query by position.

use ratchetdb::{Chunk, Document, Filter, Op, Options, ReadError, SearchOptions, Store, Version};
use serde_json::json;

#[test]
fn search_many_equals_one_search_per_query() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(
        dir.path().join("many.redb"),
        Options::default().dimension(4),
    )
    .unwrap();
    let ops = (0..300u32)
        .map(|i| {
            let v = vec![(i % 7) as f32 + 0.5, (i % 11) as f32, (i % 13) as f32, 1.0];
            Op::Upsert(
                Document::new("s", format!("d{i}"), Version::number(1)).with_chunk(
                    Chunk::new(format!("t{i}"), v).with_meta(json!({"odd": i % 2 == 1})),
                ),
            )
        })
        .collect();
    for r in store.write_batch(ops).unwrap() {
        r.unwrap();
    }
    let queries: Vec<Vec<f32>> = (0..64u32)
        .map(|q| vec![(q % 5) as f32, (q % 3) as f32 + 0.1, (q % 7) as f32, 0.5])
        .collect();
    let filter = Filter::parse(&json!({"odd": true})).unwrap();
    for options in [
        SearchOptions::default(),
        SearchOptions::default().filter(filter),
    ] {
        let many = store.search_many(&queries, 7, &options).unwrap();
        assert_eq!(many.len(), queries.len());
        for (query, hits) in queries.iter().zip(&many) {
            assert_eq!(hits, &store.search(query, 7, &options).unwrap());
        }
    }
    let mut bad = queries.clone();
    bad[5] = vec![f32::NAN, 0.0, 0.0, 0.0];
    match store.search_many(&bad, 3, &SearchOptions::default()) {
        Err(ReadError::Input(e)) => assert!(e.field.starts_with("queries[5]"), "{}", e.field),
        other => panic!("{other:?}"),
    }
}
