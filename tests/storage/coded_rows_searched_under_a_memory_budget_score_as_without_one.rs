//! Under `Options::memory_budget` searches score their candidates on the vectors rows in the
//! file (the exact scan reads every row, a graph search reranks its pool from the rows), so
//! coded rows (schema 8) are decoded on every search. This proves that decoding is exact:
//! over a store of coded rows (one-chunk and six-chunk documents of MiniLM-like vectors)
//! beside raw ones (two-chunk documents), exact search and graph search at ef 64 under a
//! budget give the same hits with bit-identical scores as the same file opened without a
//! budget (its graph built over the vectors in memory), and the exact scores are the cosines of
//! the vectors written, computed here in f64, to within 1e-6.

use crate::support;
use ratchetdb::{Chunk, Document, Op, Options, SearchOptions, Store, Version};

const DIMENSION: usize = 384;
/// A budget far above what these few vectors need: the point is where searches read from.
const BUDGET: u64 = 4 << 20;
/// Fewer vectors than the graph search's width, so that a graph search at ef 64 reaches
/// every vector and its hits are the exact ones in either mode.
const ONE_CHUNK: u64 = 30;
const SIX_CHUNKS: u64 = 3;
const TWO_CHUNKS: u64 = 5;

/// Every document written: id and its chunks' vectors (text `"{id} chunk {position}"`).
fn documents() -> Vec<(String, Vec<Vec<f32>>)> {
    let mut docs = Vec::new();
    let mut seed = 0u64;
    let mut vectors = |n: usize| -> Vec<Vec<f32>> {
        (0..n)
            .map(|_| {
                seed += 1;
                support::minilm_like(seed, DIMENSION)
            })
            .collect()
    };
    for d in 0..ONE_CHUNK {
        docs.push((format!("one{d}"), vectors(1)));
    }
    for d in 0..SIX_CHUNKS {
        docs.push((format!("six{d}"), vectors(6)));
    }
    for d in 0..TWO_CHUNKS {
        docs.push((format!("two{d}"), vectors(2)));
    }
    docs
}

fn document(id: &str, vectors: &[Vec<f32>]) -> Document {
    vectors.iter().enumerate().fold(
        Document::new("s", id, Version::number(1)),
        |doc, (position, v)| {
            doc.with_chunk(Chunk::new(format!("{id} chunk {position}"), v.clone()))
        },
    )
}

/// (id, position, score bits) of each hit.
type Hits = Vec<(String, u32, u32)>;

/// The exact and the ef-64 graph hits of each query.
fn answers(store: &Store, queries: &[Vec<f32>]) -> Vec<(Hits, Hits)> {
    let hits = |query: &[f32], options: &SearchOptions| -> Hits {
        store
            .search(query, 10, options)
            .expect("search")
            .into_iter()
            .map(|h| (h.id, h.position, h.score.to_bits()))
            .collect()
    };
    queries
        .iter()
        .map(|q| {
            (
                hits(q, &SearchOptions::default().exact(true)),
                hits(q, &SearchOptions::default().ef(64)),
            )
        })
        .collect()
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| *x as f64 * *y as f64).sum();
    let norm = |v: &[f32]| v.iter().map(|x| *x as f64 * *x as f64).sum::<f64>().sqrt();
    dot / (norm(a) * norm(b))
}

fn settle(store: &Store) {
    assert!(
        store.wait_for_index(std::time::Duration::from_secs(60)),
        "the index did not settle: {:?}",
        store.index_info()
    );
}

fn assert_verified(store: &Store, when: &str) {
    let report = store.verify().expect("verify");
    assert!(report.is_ok(), "{when}: {:#?}", report.violations);
}

#[test]
fn coded_rows_searched_under_a_memory_budget_score_as_without_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("db.redb");
    let docs = documents();
    let queries: Vec<Vec<f32>> = (0..20)
        .map(|q| support::minilm_like(1_000_000 + q, DIMENSION))
        .collect();

    let budgeted = {
        let store = Store::open(&path, Options::default().memory_budget(BUDGET)).expect("open");
        let ops: Vec<Op> = docs
            .iter()
            .map(|(id, vectors)| Op::Upsert(document(id, vectors)))
            .collect();
        for outcome in store.write_batch(ops).expect("write_batch") {
            assert!(outcome.is_ok(), "{outcome:?}");
        }
        settle(&store);
        let info = store.index_info();
        assert_eq!(info.memory_budget, BUDGET, "{info:?}");
        assert!(info.graph_ready, "{info:?}");
        let answers = answers(&store, &queries);
        assert_verified(&store, "under a budget");
        answers
    };
    // One- and six-chunk rows are coded; a two-chunk row is alone in its leaf raw or coded,
    // so it stays raw.
    assert_eq!(
        ratchetdb::testkit::vectors_row_layouts(&path),
        Ok((TWO_CHUNKS, ONE_CHUNK + SIX_CHUNKS)),
        "(raw, coded) rows"
    );

    // The same file without a budget: its index holds the vectors in memory.
    let store = Store::open(&path, Options::default()).expect("reopen without a budget");
    // Its graph built over the vectors in memory (a store this small is otherwise scanned).
    store.build_index().expect("build the graph");
    settle(&store);
    let info = store.index_info();
    assert_eq!(info.memory_budget, 0, "{info:?}");
    assert!(info.graph_ready, "{info:?}");
    let vectors = ONE_CHUNK + 6 * SIX_CHUNKS + 2 * TWO_CHUNKS;
    assert_eq!(info.graph_points, vectors, "{info:?}");
    let unbudgeted = answers(&store, &queries);
    assert_verified(&store, "without a budget");

    for (q, query) in queries.iter().enumerate() {
        let (exact, graph) = &budgeted[q];
        assert_eq!(exact.len(), 10, "query {q}");
        assert_eq!(
            exact, &unbudgeted[q].0,
            "query {q}: exact, budgeted and not"
        );
        assert_eq!(
            graph, &unbudgeted[q].1,
            "query {q}: graph, budgeted and not"
        );
        assert_eq!(graph, exact, "query {q}: ef 64 reaches every vector");

        // The exact scores against the cosines of the vectors written.
        let mut truth: Vec<f64> = docs
            .iter()
            .flat_map(|(_, vectors)| vectors.iter().map(|v| cosine(query, v)))
            .collect();
        truth.sort_by(|a, b| b.total_cmp(a));
        for (rank, (id, position, bits)) in exact.iter().enumerate() {
            let score = f32::from_bits(*bits) as f64;
            let vectors = &docs.iter().find(|(d, _)| d == id).expect("a written id").1;
            let own = cosine(query, &vectors[*position as usize]);
            assert!(
                (score - own).abs() <= 1e-6,
                "query {q}: {id}#{position} scored {score}, its cosine is {own}"
            );
            assert!(
                (score - truth[rank]).abs() <= 1e-6,
                "query {q}: rank {rank} scored {score}, the {rank}th best cosine is {}",
                truth[rank]
            );
        }
    }
}
