//! `Metric::Dot` (issue 19): vectors are stored as given (not normalised), scores are dot
//! products (higher is closer, a vector's length counts), the exact scan and the graph
//! agree, and the metric is recorded in the file (reopening without naming it keeps it;
//! files of the other metrics read as before).

use ratchetdb::{Chunk, Document, Metric, Op, Options, SearchOptions, Store, Version};

const DIM: usize = 16;

fn vector(i: usize) -> Vec<f32> {
    // Directions spread around (a hash per component), lengths from 0.5 to 3.
    let length = 0.5 + (i % 11) as f32 * 0.25;
    let mut state = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut direction: Vec<f32> = (0..DIM)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        })
        .collect();
    let norm = direction.iter().map(|x| x * x).sum::<f32>().sqrt();
    for x in &mut direction {
        *x *= length / norm;
    }
    direction
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[test]
fn dot_product_search_ranks_by_inner_product() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("dot.redb");
    let store = Store::open(&path, Options::default().metric(Metric::Dot)).expect("open");
    let n = 4_000;
    let vectors: Vec<Vec<f32>> = (0..n).map(vector).collect();
    for (b, batch) in vectors.chunks(2000).enumerate() {
        let ops = batch
            .iter()
            .enumerate()
            .map(|(j, v)| {
                Op::Upsert(
                    Document::new("s", format!("v{}", b * 2000 + j), Version::number(1))
                        .with_chunk(Chunk::new("t", v.clone())),
                )
            })
            .collect();
        for r in store.write_batch(ops).expect("batch") {
            r.expect("write");
        }
    }
    // Stored as given: a vector's length is kept.
    let stored = store
        .snapshot()
        .unwrap()
        .get_with_vectors("s", "v3")
        .unwrap()
        .expect("v3");
    assert_eq!(
        stored.chunks[0].vector.as_deref(),
        Some(vectors[3].as_slice())
    );

    let query: Vec<f32> = (0..DIM).map(|j| (j as f32 * 0.3).sin()).collect();
    let mut truth: Vec<(f32, usize)> = vectors
        .iter()
        .enumerate()
        .map(|(i, v)| (dot(v, &query), i))
        .collect();
    truth.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let exact = store
        .search(&query, 10, &SearchOptions::default().exact(true))
        .expect("exact");
    for (hit, (score, _)) in exact.iter().zip(&truth) {
        assert!(
            (hit.score - score).abs() <= 1e-4 * score.abs().max(1.0),
            "{} vs {score}",
            hit.score
        );
    }
    assert!(
        exact.windows(2).all(|w| w[0].score >= w[1].score),
        "higher is closer"
    );

    store.build_index().expect("graph");
    assert!(store.index_info().graph_ready);
    let graph = store
        .search(&query, 10, &SearchOptions::default().ef(128))
        .expect("graph");
    let exact_ids: Vec<&str> = exact.iter().map(|h| h.id.as_str()).collect();
    let found = graph
        .iter()
        .filter(|h| exact_ids.contains(&h.id.as_str()))
        .count();
    assert!(found >= 8, "graph recall {found}/10 under the dot product");
    drop(store);

    let reopened = Store::open(&path, Options::default()).expect("reopen");
    assert_eq!(reopened.metric(), Metric::Dot);
    let again = reopened
        .search(&query, 10, &SearchOptions::default().exact(true))
        .expect("exact after reopen");
    assert_eq!(
        again.iter().map(|h| &h.id).collect::<Vec<_>>(),
        exact.iter().map(|h| &h.id).collect::<Vec<_>>()
    );
    assert!(reopened.verify().unwrap().is_ok());
}
