//! Regression: a graph search reserved its heaps by the asked `ef` (`ef + 1` for the beam,
//! `2 × ef` for the frontier), and `ef` is bounded only by `Limits::max_k`, which a caller
//! may raise: `ef` near `usize::MAX` overflowed the reservation (a panic reachable from a
//! search's options) and a very large one asked for memory the graph could never fill (the
//! process aborted on a 16 TiB allocation at `ef` 2^40). `k` had the same holes: the hit
//! list reserved `k` entries, and the filtered traversal's budget (`64 × max(k, ef)`) and the
//! scan's trim point (`4 × k`) overflowed. Every reservation is now bounded by what the store
//! holds and the arithmetic saturates: a search with any allowed `k` and `ef`, filtered or
//! not, by vector, text, both, or in a batch, answers what a wide search answers, and the
//! store is unchanged.

use ratchetdb::{
    Chunk, Document, Filter, FilterStrategy, Limits, Op, Options, SearchOptions, Store, Version,
};
use serde_json::json;

const DIM: usize = 8;
const DOCS: u64 = 3000;

fn vector(n: u64) -> Vec<f32> {
    (0..DIM as u64)
        .map(|d| (((n * 7919 + d * 104_729) % 1000) as f32) / 1000.0 + 0.001)
        .collect()
}

#[test]
fn search_with_an_ef_beyond_the_graph() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut limits = Limits::default();
    limits.max_k = usize::MAX;
    let store =
        Store::open(dir.path().join("s.redb"), Options::default().limits(limits)).expect("open");
    let ops: Vec<Op> = (0..DOCS)
        .map(|n| {
            Op::Upsert(
                Document::new("s", format!("d{n}"), Version::number(1))
                    .with_meta(json!({"even": n % 2 == 0}))
                    .with_chunk(Chunk::new(format!("chunk {n}"), vector(n))),
            )
        })
        .collect();
    for outcome in store.write_batch(ops).expect("batch") {
        outcome.expect("write");
    }
    store.build_index().expect("build");
    assert!(store.index_info().graph_ready, "{:?}", store.index_info());
    let before = store.stats().expect("stats");
    let wide = store
        .search(&vector(17), 5, &SearchOptions::default().ef(10_000))
        .expect("wide search");
    for ef in [DOCS as usize * 4, 1 << 40, usize::MAX / 2 + 1, usize::MAX] {
        let hits = store
            .search(&vector(17), 5, &SearchOptions::default().ef(ef))
            .unwrap_or_else(|e| panic!("ef {ef}: {e}"));
        let ids = |h: &[ratchetdb::Hit]| h.iter().map(|h| h.id.clone()).collect::<Vec<_>>();
        assert_eq!(ids(&hits), ids(&wide), "ef {ef}");
    }
    // `k` is bounded by the same limit; a `k` beyond the store answers every live chunk.
    let all = store
        .search(
            &vector(17),
            DOCS as usize,
            &SearchOptions::default().ef(10_000),
        )
        .expect("every chunk");
    assert_eq!(all.len(), DOCS as usize);
    for k in [1 << 40, usize::MAX] {
        let hits = store
            .search(&vector(17), k, &SearchOptions::default())
            .unwrap_or_else(|e| panic!("k {k}: {e}"));
        assert_eq!(hits.len(), all.len(), "k {k}");
    }
    // The filtered traversal's budget, the scans, the text and hybrid rankings and the
    // batch search take the same bounds.
    let even = Filter::parse(&json!({"even": true})).expect("filter");
    for strategy in [
        FilterStrategy::Auto,
        FilterStrategy::Graph,
        FilterStrategy::ScanMatching,
    ] {
        for (k, ef) in [(usize::MAX, 64), (5, usize::MAX), (usize::MAX, usize::MAX)] {
            let options = SearchOptions::default()
                .ef(ef)
                .filter(even.clone())
                .filter_strategy(strategy);
            let hits = store
                .search(&vector(17), k, &options)
                .unwrap_or_else(|e| panic!("{strategy:?} k {k} ef {ef}: {e}"));
            let expected = if k == 5 { 5 } else { DOCS as usize / 2 };
            assert_eq!(hits.len(), expected, "{strategy:?} k {k} ef {ef}");
        }
    }
    let text = store
        .search_text("chunk", usize::MAX, &SearchOptions::default())
        .expect("text search");
    assert_eq!(text.len(), DOCS as usize);
    let hybrid = store
        .search_hybrid(
            "chunk",
            &vector(17),
            usize::MAX,
            &SearchOptions::default().ef(usize::MAX),
        )
        .expect("hybrid search");
    assert_eq!(hybrid.len(), DOCS as usize);
    let batch = store
        .search_many(
            &[vector(17), vector(18)],
            usize::MAX,
            &SearchOptions::default().ef(usize::MAX),
        )
        .expect("batch search");
    assert!(batch.iter().all(|hits| hits.len() == DOCS as usize));
    assert_eq!(
        store.stats().expect("stats"),
        before,
        "a search changed the store"
    );
}
