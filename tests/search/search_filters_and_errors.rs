//! Search options and bad queries: the source and document filters (alone, combined, on
//! the exact and the graph path; an unknown source is an error), the exact flag, `k = 0`,
//! an empty store, a search right
//! after open (before the index has loaded: an exact scan of the file), and queries the
//! store refuses — wrong dimension, NaN or infinite components, the zero vector under
//! cosine, an empty vector — each a `ReadError::Input` naming `query`.

use crate::search_support;

use ratchetdb::{Chunk, Document, Metric, Options, ReadError, SearchOptions, Store, Version};
use search_support::{
    assert_verified, dot, normalized, open, random_vector, settle, Rng, Structured,
};
use std::collections::BTreeSet;

const DIM: usize = 32;

/// Three sources of 40 documents with 3 chunks each; returns every chunk as
/// `(source, id, position, unit vector)`.
fn fill(store: &Store) -> Vec<(String, String, u32, Vec<f32>)> {
    let data = Structured::new(71, DIM);
    let mut rng = Rng::new(72);
    let mut chunks = Vec::new();
    for source in ["wiki", "mail", "code"] {
        let mut ops = Vec::new();
        for d in 0..40 {
            let id = format!("doc{d}");
            let mut doc = Document::new(source, &id, Version::number(1));
            for p in 0..3u32 {
                let v = data.sample(&mut rng);
                doc = doc.with_chunk(Chunk::new(format!("{source}/{id}#{p}"), v.clone()));
                chunks.push((source.to_string(), id.clone(), p, v));
            }
            ops.push(ratchetdb::Op::Upsert(doc));
        }
        for result in store.write_batch(ops).expect("batch") {
            result.expect("op");
        }
    }
    chunks
}

/// The brute-force top k of the chunks `keep` allows, as `source/id#position` texts.
fn truth(
    chunks: &[(String, String, u32, Vec<f32>)],
    query: &[f32],
    k: usize,
    keep: impl Fn(&str, &str) -> bool,
) -> Vec<String> {
    let query = normalized(query.to_vec());
    let mut scored: Vec<(f32, String)> = chunks
        .iter()
        .filter(|(s, id, _, _)| keep(s, id))
        .map(|(s, id, p, v)| (1.0 - dot(&query, v), format!("{s}/{id}#{p}")))
        .collect();
    scored.sort_by(|a, b| a.0.total_cmp(&b.0));
    scored.into_iter().take(k).map(|(_, t)| t).collect()
}

fn texts(store: &Store, query: &[f32], k: usize, options: &SearchOptions) -> Vec<String> {
    store
        .search(query, k, options)
        .expect("search")
        .into_iter()
        .map(|h| h.text)
        .collect()
}

#[test]
fn source_and_document_filters_on_the_exact_and_the_graph_path() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(dir.path());
    let chunks = fill(&store);
    let mut rng = Rng::new(73);
    let mut version = 1;
    for graph in [false, true] {
        if graph {
            store.build_index().expect("build");
            assert!(store.index_info().graph_ready);
        }
        for mode in [
            SearchOptions::default(),
            SearchOptions::default().exact(true),
            SearchOptions::default().ef(64),
        ] {
            let label = format!("graph {graph}, {mode:?}");
            let query = random_vector(&mut rng, DIM);
            // No filter.
            assert_eq!(
                texts(&store, &query, 10, &mode),
                truth(&chunks, &query, 10, |_, _| true),
                "{label}"
            );
            // One source; two sources.
            let wiki = mode.clone().source("wiki");
            assert_eq!(
                texts(&store, &query, 10, &wiki),
                truth(&chunks, &query, 10, |s, _| s == "wiki"),
                "{label}"
            );
            let two = mode.clone().source("wiki").source("code");
            assert_eq!(
                texts(&store, &query, 10, &two),
                truth(&chunks, &query, 10, |s, _| s != "mail"),
                "{label}"
            );
            // Documents: all their chunks, nothing else, even with k larger than that.
            let docs = mode
                .clone()
                .document("mail", "doc3")
                .document("code", "doc17");
            let got = texts(&store, &query, 50, &docs);
            assert_eq!(
                got,
                truth(&chunks, &query, 50, |s, id| (s, id) == ("mail", "doc3")
                    || (s, id) == ("code", "doc17")),
                "{label}"
            );
            assert_eq!(got.len(), 6, "{label}");
            // Both filters: documents of the listed sources only.
            let both = docs.clone().source("code");
            assert_eq!(
                texts(&store, &query, 50, &both),
                truth(&chunks, &query, 50, |s, id| (s, id) == ("code", "doc17")),
                "{label}"
            );
            // A source the store has never seen is refused, naming it (issue 19: it used
            // to answer "no hits" as if the source were empty).
            match store.search(&query, 10, &mode.clone().source("wiki").source("nowhere")) {
                Err(ReadError::Input(e)) => {
                    assert_eq!(e.field, "sources[1]", "{label}");
                    assert!(e.problem.contains("nowhere"), "{label}: {}", e.problem);
                }
                other => panic!("{label}: unknown source gave {other:?}"),
            }
            // Filters that match nothing.
            for none in [
                mode.clone().document("wiki", "no-such-doc"),
                mode.clone().document("wiki", "doc1").source("mail"),
            ] {
                assert!(texts(&store, &query, 10, &none).is_empty(), "{label}");
            }
            // A deleted document is filtered out, and its chunks are not returned.
            if graph {
                version += 2;
                store
                    .delete("wiki", "doc5", Version::number(version))
                    .expect("delete");
                let only = mode.clone().document("wiki", "doc5");
                assert!(texts(&store, &query, 10, &only).is_empty(), "{label}");
                // Back, with the same chunks (the brute-force truth keeps holding).
                let mut doc5 = Document::new("wiki", "doc5", Version::number(version + 1));
                for (_, _, p, v) in chunks.iter().filter(|c| c.0 == "wiki" && c.1 == "doc5") {
                    doc5 = doc5.with_chunk(Chunk::new(format!("wiki/doc5#{p}"), v.clone()));
                }
                store.upsert(doc5).expect("restore");
                let all = texts(&store, &query, 10, &only);
                assert_eq!(all.len(), 3, "{label}");
            }
        }
    }
    settle(&store);
    assert_verified(&store, "after filtered searches");
}

#[test]
fn the_exact_flag_is_the_ground_truth_and_scores_are_cosine_similarities() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(dir.path());
    let chunks = fill(&store);
    store.build_index().expect("build");
    let mut rng = Rng::new(74);
    for _ in 0..20 {
        let query = random_vector(&mut rng, DIM);
        let hits = store
            .search(&query, 15, &SearchOptions::default().exact(true))
            .expect("search");
        let got: Vec<String> = hits.iter().map(|h| h.text.clone()).collect();
        assert_eq!(got, truth(&chunks, &query, 15, |_, _| true));
        let unit = normalized(query.clone());
        for hit in &hits {
            let (_, _, _, v) = chunks
                .iter()
                .find(|(s, id, p, _)| (s, id, *p) == (&hit.source, &hit.id, hit.position))
                .expect("the hit's chunk");
            assert!((hit.score - dot(&unit, v)).abs() < 1e-5);
            assert_eq!(hit.version, Version::number(1));
        }
    }
}

#[test]
fn l2_scores_are_distances_lowest_first() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(
        dir.path().join("l2.redb"),
        Options::default().metric(Metric::L2),
    )
    .expect("open");
    for (i, x) in [3.0f32, 1.0, 2.0].into_iter().enumerate() {
        store
            .upsert(
                Document::new("s", format!("d{i}"), Version::number(1))
                    .with_chunk(Chunk::new(format!("x={x}"), vec![x, 0.0])),
            )
            .expect("upsert");
    }
    let hits = store
        .search(&[0.0, 0.0], 3, &SearchOptions::default())
        .expect("search");
    let got: Vec<(String, f32)> = hits.into_iter().map(|h| (h.text, h.score)).collect();
    assert_eq!(
        got,
        vec![
            ("x=1".into(), 1.0),
            ("x=2".into(), 2.0),
            ("x=3".into(), 3.0)
        ]
    );
}

fn input_field(result: Result<Vec<ratchetdb::Hit>, ReadError>) -> String {
    match result {
        Err(ReadError::Input(e)) => e.field,
        other => panic!("expected ReadError::Input, got {other:?}"),
    }
}

#[test]
fn bad_queries_are_input_errors_naming_query() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(dir.path());
    fill(&store);
    let options = SearchOptions::default();
    let good = vec![0.5f32; DIM];
    assert_eq!(
        input_field(store.search(&good[..DIM - 1], 5, &options)),
        "query"
    );
    assert_eq!(
        input_field(store.search(&[0.5f32; DIM + 1], 5, &options)),
        "query"
    );
    assert_eq!(input_field(store.search(&[], 5, &options)), "query");
    let mut nan = good.clone();
    nan[7] = f32::NAN;
    assert_eq!(input_field(store.search(&nan, 5, &options)), "query[7]");
    let mut inf = good.clone();
    inf[0] = f32::INFINITY;
    assert_eq!(input_field(store.search(&inf, 5, &options)), "query[0]");
    assert_eq!(
        input_field(store.search(&[0.0f32; DIM], 5, &options)),
        "query"
    );
    // The same with the graph built, and on the exact path.
    store.build_index().expect("build");
    for options in [
        SearchOptions::default().ef(64),
        SearchOptions::default().exact(true),
    ] {
        assert_eq!(input_field(store.search(&good[1..], 5, &options)), "query");
        assert_eq!(input_field(store.search(&nan, 5, &options)), "query[7]");
        assert_eq!(
            input_field(store.search(&[0.0f32; DIM], 5, &options)),
            "query"
        );
    }
    // A good query still works, and nothing changed.
    assert_eq!(store.search(&good, 5, &options).expect("search").len(), 5);
    assert_verified(&store, "after bad queries");
}

#[test]
fn k_zero_and_empty_stores_return_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    // A new store knows no dimension yet: any query finds nothing.
    let store = open(dir.path());
    assert!(store
        .search(&[1.0, 2.0], 10, &SearchOptions::default())
        .expect("search")
        .is_empty());
    // A store with a fixed dimension and no vectors.
    let store = Store::open(
        dir.path().join("fixed.redb"),
        Options::default().dimension(DIM),
    )
    .expect("open");
    settle(&store);
    let query = vec![1.0f32; DIM];
    for options in [
        SearchOptions::default(),
        SearchOptions::default().exact(true),
        SearchOptions::default().ef(64),
    ] {
        assert!(store
            .search(&query, 10, &options)
            .expect("search")
            .is_empty());
    }
    // Every document deleted.
    store
        .upsert(
            Document::new("s", "only", Version::number(1))
                .with_chunk(Chunk::new("text", query.clone())),
        )
        .expect("upsert");
    assert_eq!(
        store
            .search(&query, 0, &SearchOptions::default())
            .expect("k=0")
            .len(),
        0
    );
    assert_eq!(
        store
            .search(&query, 10, &SearchOptions::default())
            .expect("search")
            .len(),
        1
    );
    store
        .delete("s", "only", Version::number(2))
        .expect("delete");
    assert!(store
        .search(&query, 10, &SearchOptions::default())
        .expect("search")
        .is_empty());
    // k = 0 with a graph.
    std::fs::create_dir(dir.path().join("full")).expect("mkdir");
    let full = open(&dir.path().join("full"));
    fill(&full);
    full.build_index().expect("build");
    for options in [SearchOptions::default(), SearchOptions::default().ef(64)] {
        assert!(full
            .search(&[0.3f32; DIM], 0, &options)
            .expect("k=0")
            .is_empty());
    }
}

#[test]
fn a_search_right_after_open_scans_the_file_and_is_correct() {
    let dir = tempfile::tempdir().expect("tempdir");
    let chunks = {
        let store = open(dir.path());
        let chunks = fill(&store);
        store.build_index().expect("build");
        chunks
    };
    let mut rng = Rng::new(75);
    let queries: Vec<Vec<f32>> = (0..10).map(|_| random_vector(&mut rng, DIM)).collect();
    let mut before_load = 0;
    for (round, query) in queries.iter().enumerate() {
        let store = open(dir.path());
        // Before the background loader has installed the index (checked, not assumed).
        let loaded = store.index_info().loaded;
        for options in [
            SearchOptions::default(),
            SearchOptions::default().ef(64),
            SearchOptions::default().source("mail"),
        ] {
            let keep_mail = !options.sources.is_empty();
            assert_eq!(
                texts(&store, query, 10, &options),
                truth(&chunks, query, 10, |s, _| !keep_mail || s == "mail"),
                "round {round}, loaded {loaded}"
            );
        }
        if !loaded {
            before_load += 1;
        }
        settle(&store);
    }
    assert!(
        before_load > 0,
        "the index always loaded before the first search"
    );
    let store = open(dir.path());
    settle(&store);
    assert_verified(&store, "after reopening");
    let set: BTreeSet<String> = texts(
        &store,
        &queries[0],
        360,
        &SearchOptions::default().exact(true),
    )
    .into_iter()
    .collect();
    assert_eq!(set.len(), chunks.len());
}
