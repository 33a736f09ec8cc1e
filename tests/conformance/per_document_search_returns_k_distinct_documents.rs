//! Issue 45, item 5: the top `k` could be `k` chunks of one file. With
//! `SearchOptions::per_document(true)`, vector, text and hybrid search (exact and graph,
//! default; with a filter, by every filter strategy, and a source restriction) return each
//! document's best chunk and `k` distinct documents, even where one document's chunks fill
//! the first hundreds of places of every ranking: the same hits, in the same order, as the
//! whole ranking computed by exact search and reduced to each document's first hit. Asked
//! for more documents than match, every matching document comes back.

use crate::fixture::Fixture;
use ratchetdb::{
    Chunk, Document, Filter, FilterStrategy, Hit, Options, SearchOptions, Store, Version,
};
use serde_json::json;

crate::conformance!(per_document_search_returns_k_distinct_documents);

const DIM: usize = 8;
/// Chunks of the document that dominates every ranking (more than the hybrid search's
/// first ranking depths, 50 and 200, hold).
const BIG_CHUNKS: usize = 250;
const OTHER_DOCS: usize = 20;
const OTHER_CHUNKS: usize = 3;
const TOTAL: usize = BIG_CHUNKS + OTHER_DOCS * OTHER_CHUNKS;
const WORD: &str = "pawl";

fn query() -> Vec<f32> {
    let mut q = vec![0.0; DIM];
    q[0] = 1.0;
    q
}

/// `big` (source `s`): chunks just off the query, each with the word twice in three
/// words. Twenty others (sources `s` and `t`, metadata kind `a` or `b`): chunks further
/// away, the word once in longer text.
fn corpus(store: &Store) {
    let mut big = Document::new("s", "big", Version::number(1)).with_meta(json!({"kind": "a"}));
    for i in 0..BIG_CHUNKS {
        let mut v = vec![0.0; DIM];
        v[0] = 1.0;
        v[1] = 0.0005 * i as f32;
        v[2] = 0.0003 * (i % 7) as f32;
        big = big.with_chunk(Chunk::new(format!("{WORD} {WORD} big{i}"), v));
    }
    store.upsert(big).expect("write big");
    for d in 0..OTHER_DOCS {
        let source = if d % 2 == 0 { "s" } else { "t" };
        let kind = if d % 3 == 0 { "b" } else { "a" };
        let mut doc = Document::new(source, format!("d{d}"), Version::number(1))
            .with_meta(json!({"kind": kind}));
        for p in 0..OTHER_CHUNKS {
            let mut v = vec![0.0; DIM];
            v[0] = 0.6;
            v[1 + (d + p) % (DIM - 1)] = 0.3 + 0.02 * d as f32 + 0.1 * p as f32;
            v[1 + (d * 3 + p + 1) % (DIM - 1)] += 0.2;
            let filler = (0..(2 + (d + p) % 5))
                .map(|w| format!("gear{}", d * 10 + w))
                .collect::<Vec<_>>()
                .join(" ");
            doc = doc.with_chunk(Chunk::new(format!("{WORD} d{d} part{p} {filler}"), v));
        }
        store.upsert(doc).expect("write another document");
    }
}

/// Each document's first hit in a ranking, at most `k`.
fn first_of_each_document(ranking: Vec<Hit>, k: usize) -> Vec<Hit> {
    let mut seen = std::collections::HashSet::new();
    ranking
        .into_iter()
        .filter(|h| seen.insert((h.source.clone(), h.id.clone())))
        .take(k)
        .collect()
}

fn assert_same(got: &[Hit], want: &[Hit], what: &str) {
    let key = |h: &Hit| (h.source.clone(), h.id.clone(), h.position);
    assert_eq!(
        got.iter().map(key).collect::<Vec<_>>(),
        want.iter().map(key).collect::<Vec<_>>(),
        "{what}"
    );
    for (g, w) in got.iter().zip(want) {
        assert!(
            (g.score - w.score).abs() <= 1e-5,
            "{what}: {}/{}#{} scored {} against {}",
            g.source,
            g.id,
            g.position,
            g.score,
            w.score
        );
    }
}

fn per_document_search_returns_k_distinct_documents(b: &dyn Fixture) {
    let store = b.open_with("docs", Options::default());
    check(&store);
}

/// Writes the corpus into the empty `store` and checks every search against the reference.
fn check(store: &Store) {
    corpus(store);
    assert!(store.wait_for_index(std::time::Duration::from_secs(60)));
    store.build_index().expect("build the graph");
    let q = query();

    // Without the option, one document is the whole top 5 of every ranking.
    let plain = SearchOptions::default().exact(true);
    for (what, hits) in [
        ("vector", store.search(&q, 5, &plain).expect("search")),
        ("text", store.search_text(WORD, 5, &plain).expect("text")),
        (
            "hybrid",
            store.search_hybrid(WORD, &q, 5, &plain).expect("hybrid"),
        ),
    ] {
        assert!(
            hits.len() == 5 && hits.iter().all(|h| h.id == "big"),
            "{what}: the scenario needs one document to fill the top 5: {hits:?}"
        );
    }

    let filter = Filter::parse(&json!({"kind": "a"})).expect("filter");
    let restrictions: Vec<(&str, SearchOptions)> = vec![
        ("no filter", SearchOptions::default()),
        ("filter", SearchOptions::default().filter(filter.clone())),
        (
            "filter in the graph",
            SearchOptions::default()
                .filter(filter.clone())
                .filter_strategy(FilterStrategy::Graph),
        ),
        (
            "filter by scan",
            SearchOptions::default()
                .filter(filter)
                .filter_strategy(FilterStrategy::ScanMatching),
        ),
        ("source t", SearchOptions::default().source("t")),
    ];
    for (restriction, base) in restrictions {
        let exact = base.clone().exact(true);
        // The whole rankings, exactly (hybrid: each ranking of every chunk).
        let vector_all = store.search(&q, TOTAL, &exact).expect("vector ranking");
        let text_all = store
            .search_text(WORD, TOTAL, &exact)
            .expect("text ranking");
        let hybrid_all = store
            .search_hybrid(WORD, &q, TOTAL, &exact)
            .expect("hybrid ranking");
        let documents = first_of_each_document(vector_all.clone(), usize::MAX).len();
        assert!(documents > 5, "{restriction}: only {documents} documents");
        for k in [1, 5, documents, 50] {
            let want_vector = first_of_each_document(vector_all.clone(), k);
            let want_text = first_of_each_document(text_all.clone(), k);
            let want_hybrid = first_of_each_document(hybrid_all.clone(), k);
            assert_eq!(want_vector.len(), k.min(documents), "{restriction} k {k}");
            for (how, options) in [
                ("exact", exact.clone().per_document(true)),
                ("graph ef 16", base.clone().ef(16).per_document(true)),
                ("default", base.clone().per_document(true)),
            ] {
                let what = format!("{restriction}, {how}, k {k}");
                let vector = store.search(&q, k, &options).expect("vector search");
                assert_same(&vector, &want_vector, &format!("vector, {what}"));
                let text = store.search_text(WORD, k, &options).expect("text search");
                assert_same(&text, &want_text, &format!("text, {what}"));
                let hybrid = store
                    .search_hybrid(WORD, &q, k, &options)
                    .expect("hybrid search");
                assert_same(&hybrid, &want_hybrid, &format!("hybrid, {what}"));
                let many = store
                    .search_many(std::slice::from_ref(&q), k, &options)
                    .expect("search_many");
                assert_same(&many[0], &want_vector, &format!("search_many, {what}"));
            }
        }
    }
}
