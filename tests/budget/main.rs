//! The store under `Options::memory_budget`: recall against exact search, the index's own
//! accounting of its memory within the budget, racing writers, reopening, and the refusal of
//! a budget too small for the store.
//!
//! One binary per theme; one file per scenario, named for it.

#[path = "../search_support/mod.rs"]
mod search_support;

/// One writer racing searches (the racing writer scenarios).
mod race;
/// Every row of a closed store file (the refused opens' scenarios).
mod store_rows;

mod a_damaged_budgeted_snapshot_is_ignored_and_rebuilt;
mod a_filtered_search_of_a_second_space_under_a_budget_finds_the_matching_chunks;
mod a_first_vector_of_a_dimension_the_budget_cannot_hold_is_refused;
mod a_per_document_search_of_a_few_long_documents_finds_k_of_them;
mod a_space_under_a_budget_is_scanned_from_the_file;
mod a_store_filled_from_empty_under_a_budget_settles;
mod a_tight_budget_thins_layer_0_for_the_codes_and_keeps_recall;
mod alternating_budgeted_and_unbudgeted_opens_each_keep_their_index;
mod an_impossible_budget_is_refused_naming_the_smallest_that_works;
mod an_impossible_budget_leaves_an_older_schema_unconverted;
mod an_impossible_budget_records_no_dimension_the_options_give;
mod an_impossible_budget_with_the_text_index_off_leaves_the_file_as_it_was;
mod an_old_format_budgeted_snapshot_is_rebuilt_not_served;
mod budgeted_index_memory_stays_within_the_budget;
mod build_index_right_after_a_reopen_without_a_saved_index_waits_for_the_load;
mod build_refuses_a_budget_the_store_has_outgrown;
mod building_under_a_budget_keeps_the_peak_rss_near_it;
mod closing_a_budgeted_store_keeps_the_peak_rss_near_the_budget;
mod racing_writers_over_a_reloaded_budgeted_index_never_return_a_superseded_chunk;
mod racing_writers_under_a_budget_never_return_a_superseded_chunk;
mod recall_at_a_budget_against_exact_search;
mod reopen_under_a_budget_scores_hits_exactly;
mod reopening_under_the_same_budget_loads_the_saved_index;
mod replacing_chunks_under_a_budget_keeps_the_dead_points_bounded;
mod the_rerank_width_bounds_the_candidates_scored_from_the_file;

use ratchetdb::{Options, SearchOptions, Store};
use search_support::{doc_index, exact_top_k};
use std::path::Path;

/// The budget the tests give a store of [`N`] vectors of [`DIM`] dimensions: 4 MiB, about
/// half of what the vectors alone take (7.7 MB) and a little above the smallest budget
/// that works for them (the quantiser's fixed bytes weigh more at this size than at 200k).
pub const BUDGET: u64 = 4 << 20;
/// Vectors of the tests' stores.
pub const N: usize = 5000;
/// Their dimension.
pub const DIM: usize = 384;

/// The store at `dir` under `budget`.
pub fn open_budgeted(dir: &Path, budget: u64) -> Store {
    Store::open(
        dir.join("search.redb"),
        Options::default()
            .durability(ratchetdb::Durability::None)
            .memory_budget(budget),
    )
    .expect("open the store under a budget")
}

/// Writes documents `v0..v{n}` of one chunk each (text `text(i)`, a vector drawn from
/// `vectors`) in batches of `batch`, a batch drawn at a time (so the process holds no copy
/// of the set).
pub fn write_drawn_documents(
    store: &Store,
    n: usize,
    batch: usize,
    vectors: &search_support::Structured,
    rng: &mut search_support::Rng,
    text: impl Fn(usize) -> String,
) {
    for first in (0..n).step_by(batch) {
        let ops = (first..n.min(first + batch))
            .map(|i| {
                ratchetdb::Op::Upsert(
                    ratchetdb::Document::new("s", format!("v{i}"), ratchetdb::Version::number(1))
                        .with_chunk(ratchetdb::Chunk::new(text(i), vectors.sample(rng))),
                )
            })
            .collect();
        for result in store.write_batch(ops).expect("write a batch") {
            result.expect("write a document");
        }
    }
}

/// The process's resident set and its peak (`VmRSS`, `VmHWM`), in bytes.
pub fn resident() -> (u64, u64) {
    (
        search_support::status_bytes("VmRSS:"),
        search_support::status_bytes("VmHWM:"),
    )
}

/// The resident set now, after resetting the peak to it (proc(5), `clear_refs`).
pub fn resident_from_here() -> u64 {
    std::fs::write("/proc/self/clear_refs", "5").expect("reset the peak resident set");
    resident().0
}

/// The budgeted index's table in the file (`budget_snapshot`: part number -> bytes).
pub const BUDGET_SNAPSHOT: redb::TableDefinition<u32, &[u8]> =
    redb::TableDefinition::new("budget_snapshot");

/// Recall@10 of `store`'s searches at width 64 for `queries`, against the exact top 10 of
/// `vectors` (documents `v{i}`).
pub fn recall_at_10(store: &Store, vectors: &[Vec<f32>], queries: &[Vec<f32>]) -> f64 {
    recall_at_10_with(store, vectors, queries, &SearchOptions::default().ef(64))
}

/// [`recall_at_10`] at `options`; every search must return 10 hits, each with the exact score.
pub fn recall_at_10_with(
    store: &Store,
    vectors: &[Vec<f32>],
    queries: &[Vec<f32>],
    options: &SearchOptions,
) -> f64 {
    let mut found = 0usize;
    for query in queries {
        let truth = exact_top_k(vectors, query, 10);
        let hits = store.search(query, 10, options).expect("search");
        assert_eq!(hits.len(), 10, "fewer hits than asked for at {options:?}");
        for hit in &hits {
            let exact = search_support::dot(&vectors[doc_index(hit)], query);
            assert!(
                (hit.score - exact).abs() < 1e-5,
                "a hit's score is not exact at {options:?}"
            );
        }
        found += hits
            .iter()
            .filter(|hit| truth.contains(&doc_index(hit)))
            .count();
    }
    found as f64 / (queries.len() * 10) as f64
}
