//! Filtered search off the exact path holds recall@10 >= 0.95 against the filtered exact
//! answer at selectivities 50 %, 10 %, 1 % and 0.1 %, for the default strategy (which picks
//! the graph or a scan of the matching vectors by selectivity) and for the graph forced
//! (`FilterStrategy::Graph`); every hit matches the filter; the exact answer is the
//! brute-force filtered top 10.
//!
//! Each chunk's `bucket` (0..1000) is a hash of its number, independent of its vector, so a
//! filter's matches are spread over the whole graph: the case where post-filtering a graph
//! search collapses.

use crate::search_support;

use ratchetdb::{Chunk, Document, Filter, FilterStrategy, Op, SearchOptions};
use search_support::{assert_verified, dot, open, Structured};
use serde_json::json;

const DIM: usize = 384;
const N: usize = 8000;
const QUERIES: usize = 40;
const K: usize = 10;

fn bucket(i: u64) -> u64 {
    let mut z = i.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (z ^ (z >> 31)) % 1000
}

#[test]
fn filtered_search_recall_at_every_selectivity() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = Structured::new(51, DIM);
    let vectors = data.vectors(52, N);
    let queries = data.vectors(53, QUERIES);
    let store = open(dir.path());
    for (b, batch) in vectors.chunks(1000).enumerate() {
        let ops = batch
            .iter()
            .enumerate()
            .map(|(j, v)| {
                let i = b * 1000 + j;
                Op::Upsert(
                    Document::new("s", format!("v{i}"), ratchetdb::Version::number(1)).with_chunk(
                        Chunk::new(format!("chunk {i}"), v.clone())
                            .with_meta(json!({ "bucket": bucket(i as u64) })),
                    ),
                )
            })
            .collect();
        for result in store.write_batch(ops).expect("batch") {
            result.expect("write");
        }
    }
    store.build_index().expect("build");
    assert!(store.index_info().graph_ready);

    let cases = [
        ("50%", json!({"bucket": {"$lt": 500}}), 500),
        ("10%", json!({"bucket": {"$lt": 100}}), 100),
        ("1%", json!({"bucket": {"$lt": 10}}), 10),
        ("0.1%", json!({"bucket": 0}), 1),
    ];
    for (name, filter, below) in cases {
        let filter = Filter::parse(&filter).expect("filter");
        let matching: Vec<usize> = (0..N).filter(|&i| bucket(i as u64) < below).collect();
        assert!(!matching.is_empty(), "{name}: no vector matches");
        for strategy in [FilterStrategy::Auto, FilterStrategy::Graph] {
            let options = SearchOptions::default()
                .ef(64)
                .filter(filter.clone())
                .filter_strategy(strategy);
            let exact_options = SearchOptions::default().filter(filter.clone()).exact(true);
            let (mut found, mut total) = (0usize, 0usize);
            for query in &queries {
                // Brute force over the matching vectors: the filtered ground truth.
                let mut truth: Vec<(f32, usize)> = matching
                    .iter()
                    .map(|&i| (1.0 - dot(&vectors[i], query), i))
                    .collect();
                truth.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
                truth.truncate(K);
                let exact = store.search(query, K, &exact_options).expect("exact");
                assert_eq!(exact.len(), truth.len(), "{name}: exact count");
                for (hit, (distance, _)) in exact.iter().zip(&truth) {
                    assert!(
                        (hit.score - (1.0 - distance)).abs() < 1e-5,
                        "{name}: the filtered exact search is not the brute-force top {K}"
                    );
                }
                let exact_ids: Vec<&str> = exact.iter().map(|h| h.id.as_str()).collect();
                let hits = store.search(query, K, &options).expect("search");
                for hit in &hits {
                    let i: u64 = hit.id[1..].parse().expect("id");
                    assert!(bucket(i) < below, "{name}: a hit does not match the filter");
                    assert_eq!(hit.meta["bucket"], json!(bucket(i)));
                }
                found += hits
                    .iter()
                    .filter(|h| exact_ids.contains(&h.id.as_str()))
                    .count();
                total += exact.len();
            }
            let recall = found as f64 / total as f64;
            println!("{name} {strategy:?}: recall@{K} {recall:.4}");
            assert!(
                recall >= 0.95,
                "{name} {strategy:?}: recall@{K} = {recall:.4} < 0.95"
            );
        }
    }
    assert_verified(&store, "after the searches");
}
