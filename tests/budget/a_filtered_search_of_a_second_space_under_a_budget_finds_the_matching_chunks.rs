//! Regression: under `Options::memory_budget`, a filtered search of a vector space other
//! than the default one handed the scan of the space's rows no filter index, and the scan
//! built one of the whole store for that search alone (a posting, a row and an entry for
//! every live chunk: tens of MB per query at a million chunks, per concurrent query in
//! `search_many`, outside the budget). It now evaluates the filter on the store's shared
//! filter index, brought to each search's snapshot, as every other filtered search does.
//!
//! From outside: the hits are exactly the exact top 10 of the chunks that match, for one
//! search at a time and for `search_many`, and stay so after commits that change which
//! chunks match (the shared index catches up from the changelog). That no filter index is
//! built per query is counted by the crate's own test
//! (`indexer::filtered_space_search_tests`): the count is not reachable from here.

use crate::search_support::{dot, Structured};
use crate::{open_budgeted, BUDGET, DIM};
use ratchetdb::{Chunk, Document, Filter, Hit, Op, SearchOptions, SpaceVector, Store, Version};
use serde_json::json;

/// Documents of the store.
const DOCS: usize = 1500;
/// Dimension of the second space.
const WIDE: usize = 64;
/// Groups the chunks' metadata spreads them over.
const GROUPS: usize = 5;

/// Writes `s/v{i}` for each `i` in `ids`: one chunk, text `{text} {i}`, a default vector
/// from `default`, metadata `{"group": group(i)}`, and (`wide`) its vector in space `wide`.
fn write(
    store: &Store,
    ids: impl Iterator<Item = usize>,
    version: u64,
    text: &str,
    default: &[Vec<f32>],
    wide: Option<&[Vec<f32>]>,
    group: impl Fn(usize) -> usize,
) {
    let ops: Vec<Op> = ids
        .map(|i| {
            let mut chunk = Chunk::new(format!("{text} {i}"), default[i].clone())
                .with_meta(json!({ "group": group(i) }));
            if let Some(wide) = wide {
                chunk = chunk.with_space_vector("wide", wide[i].clone());
            }
            Op::Upsert(
                Document::new("s", format!("v{i}"), Version::number(version)).with_chunk(chunk),
            )
        })
        .collect();
    for batch in ops.chunks(500) {
        for result in store.write_batch(batch.to_vec()).expect("write a batch") {
            result.expect("write a document");
        }
    }
}

/// Gives every chunk of `store` its vector in space `wide` (document `v{i}`: `wide[i]`).
fn fill_wide(store: &Store, wide: &[Vec<f32>]) {
    let mut after = None;
    loop {
        let missing = store
            .chunks_missing_vectors("wide", after, 1000)
            .expect("walk the chunks");
        let Some(last) = missing.last() else { break };
        after = Some(last.revision);
        let vectors = missing
            .into_iter()
            .map(|chunk| {
                let i: usize = chunk.id[1..].parse().expect("a document v{i}");
                SpaceVector::for_chunk(&chunk, wide[i].clone())
            })
            .collect();
        store.write_space_vectors("wide", vectors).expect("write");
    }
}

/// The exact top 10 in space `wide` for `query` of the live documents whose group is
/// `wanted`: ids and scores (unit vectors: the score is the dot product).
fn expected(
    wide: &[Vec<f32>],
    groups: &[Option<usize>],
    query: &[f32],
    wanted: usize,
) -> Vec<(String, f32)> {
    let mut scored: Vec<(f32, usize)> = (0..DOCS)
        .filter(|&i| groups[i] == Some(wanted))
        .map(|i| (dot(&wide[i], query), i))
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    scored
        .into_iter()
        .take(10)
        .map(|(score, i)| (format!("v{i}"), score))
        .collect()
}

/// Asserts that `hits` are `expected`, in order, each score within rounding.
fn assert_hits(hits: &[Hit], expected: &[(String, f32)], what: &str) {
    let ids: Vec<&str> = hits.iter().map(|h| h.id.as_str()).collect();
    let want: Vec<&str> = expected.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, want, "{what}");
    for (hit, (_, score)) in hits.iter().zip(expected) {
        assert!(
            (hit.score - score).abs() < 1e-5,
            "{what}: a score is not exact"
        );
    }
}

/// Checks every group's filtered search, one at a time and in `search_many`.
fn check(store: &Store, wide: &[Vec<f32>], groups: &[Option<usize>], queries: &[Vec<f32>]) {
    for wanted in 0..GROUPS {
        let filter = Filter::parse(&json!({ "group": wanted })).expect("filter");
        let options = SearchOptions::default().space("wide").filter(filter);
        for (q, query) in queries.iter().enumerate() {
            let hits = store.search(query, 10, &options).expect("search");
            let what = format!("group {wanted}, query {q}");
            assert_hits(&hits, &expected(wide, groups, query, wanted), &what);
        }
        let many = store
            .search_many(queries, 10, &options)
            .expect("search_many");
        for (q, hits) in many.iter().enumerate() {
            let what = format!("search_many: group {wanted}, query {q}");
            assert_hits(hits, &expected(wide, groups, &queries[q], wanted), &what);
        }
    }
}

#[test]
fn a_filtered_search_of_a_second_space_under_a_budget_finds_the_matching_chunks() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open_budgeted(dir.path(), BUDGET);
    let default = Structured::new(101, DIM).vectors(102, DOCS);
    let wide_set = Structured::new(103, WIDE);
    let wide = wide_set.vectors(104, DOCS);
    let queries = wide_set.vectors(105, 8);
    let mut groups: Vec<Option<usize>> = (0..DOCS).map(|i| Some(i % GROUPS)).collect();
    write(&store, 0..DOCS, 1, "chunk", &default, None, |i| i % GROUPS);
    store.add_space("wide", "test-model", WIDE).expect("add");
    fill_wide(&store, &wide);
    check(&store, &wide, &groups, &queries);

    // Commits that move chunks between groups (new revisions, with their vectors in the
    // complete space) and delete others.
    let moved = |i: usize| (i + 1) % GROUPS;
    write(&store, 0..300, 2, "moved", &default, Some(&wide), moved);
    for (i, group) in groups.iter_mut().enumerate().take(300) {
        *group = Some(moved(i));
    }
    for i in (300..DOCS).step_by(7) {
        store
            .delete("s", &format!("v{i}"), Version::number(2))
            .expect("delete");
        groups[i] = None;
    }
    check(&store, &wide, &groups, &queries);
}
