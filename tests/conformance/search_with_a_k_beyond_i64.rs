//! A `k` is bounded only by `Limits::max_k`, which a caller may raise: vector, text, hybrid
//! and batch searches with `k = usize::MAX` answer every live chunk, like a `k` of the
//! store's size. (Regression: the PostgreSQL search bound its `LIMIT` with `k as i64`, so a
//! `k` past `i64::MAX` wrapped to a negative `LIMIT` and the server refused the statement.)

use crate::common::assert_verified;
use crate::fixture::Fixture;
use ratchetdb::{Chunk, Document, Limits, Op, Options, SearchOptions, Version};

crate::conformance!(search_with_a_k_beyond_i64);

const DOCS: u32 = 40;

fn search_with_a_k_beyond_i64(b: &dyn Fixture) {
    let mut limits = Limits::default();
    limits.max_k = usize::MAX;
    let options = Options::default().dimension(4).limits(limits);
    let store = b.open_with("db", options);
    let ops: Vec<Op> = (0..DOCS)
        .map(|i| {
            let vector: Vec<f32> = (0..4)
                .map(|d| ((i * 7 + d * 13) % 31) as f32 + 1.0)
                .collect();
            Op::Upsert(
                Document::new("s", format!("d{i}"), Version::number(1))
                    .with_chunk(Chunk::new(format!("chunk number {i}"), vector)),
            )
        })
        .collect();
    for result in store.write_batch(ops).expect("batch") {
        result.expect("write");
    }
    let query = [1.0, 2.0, 3.0, 4.0];
    let all = DOCS as usize;
    for (k, options) in [all, usize::MAX].into_iter().flat_map(|k| {
        [
            SearchOptions::default(),
            SearchOptions::default().exact(true),
        ]
        .map(|o| (k, o))
    }) {
        let hits = store
            .search(&query, k, &options)
            .unwrap_or_else(|e| panic!("k {k}: {e}"));
        assert_eq!(hits.len(), all, "vector k {k}");
        let text = store
            .search_text("chunk", k, &options)
            .unwrap_or_else(|e| panic!("text k {k}: {e}"));
        assert_eq!(text.len(), all, "text k {k}");
        let hybrid = store
            .search_hybrid("chunk", &query, k, &options)
            .unwrap_or_else(|e| panic!("hybrid k {k}: {e}"));
        assert_eq!(hybrid.len(), all, "hybrid k {k}");
        let batch = store
            .search_many(&[query, query], k, &options)
            .unwrap_or_else(|e| panic!("batch k {k}: {e}"));
        assert!(batch.iter().all(|hits| hits.len() == all), "batch k {k}");
    }
    assert_verified(&store);
}
