//! Regression (review of issue 48, 2026-12-07): a budgeted index counted only its live
//! points against its plan. A removed point keeps its code and links until the next load,
//! so a store whose live count stayed at or below the plan's while its chunks were replaced
//! (a shrink, then edits) never reloaded: every edit added a point, the dead ones were
//! never dropped, and the index grew without bound past its budget. Points now count live
//! or dead, so the index is reloaded (its dead points dropped) once it has grown by the
//! plan's room.

use crate::search_support::{ingest_one_chunk_docs, settle, Rng, Structured};
use crate::{open_budgeted, BUDGET, DIM};
use ratchetdb::{Chunk, Document, Op, SearchOptions, Version};

/// Documents written first; a fifth of them are deleted, then the rest are edited.
const DOCS: usize = 5000;
const DELETED: usize = 1000;
/// Edit rounds of [`EDITS`] documents each: three times the live documents in all.
const ROUNDS: usize = 24;
const EDITS: usize = 500;

#[test]
fn replacing_chunks_at_a_flat_live_count_reloads_the_index_and_drops_its_dead_points() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = Structured::new(131, DIM);
    let store = open_budgeted(dir.path(), BUDGET);
    ingest_one_chunk_docs(&store, "s", &data.vectors(132, DOCS));
    settle(&store);
    let deletes = (0..DELETED)
        .map(|i| Op::Delete {
            source: "s".into(),
            id: format!("v{i}"),
            version: Version::number(2),
        })
        .collect();
    for result in store.write_batch(deletes).expect("delete") {
        result.expect("delete a document");
    }
    settle(&store);
    let live = DOCS - DELETED;
    let mut rng = Rng::new(133);
    let mut last = Vec::new();
    for round in 0..ROUNDS {
        let version = 2 + round as u64;
        last.clear();
        let ops = (0..EDITS)
            .map(|j| {
                // The live documents in turn, each edit a new text and a new vector.
                let i = DELETED + (round * EDITS + j) % live;
                let vector = data.sample(&mut rng);
                last.push((i, version, vector.clone()));
                Op::Upsert(
                    Document::new("s", format!("v{i}"), Version::number(version))
                        .with_chunk(Chunk::new(format!("chunk {i} v{version}"), vector)),
                )
            })
            .collect();
        for result in store.write_batch(ops).expect("edit a batch") {
            result.expect("edit a document");
        }
        settle(&store);
    }
    let info = store.index_info();
    assert_eq!(info.live_vectors, live as u64, "{info:?}");
    // Before the fix: 5,000 + 24 x 500 = 17,000 points for 4,000 live ones, and the bytes
    // with them. Now dead points are held only while the index stays within its share of
    // the budget, and never past twice the points it was planned for (an eighth over the
    // live ones), plus the batch being applied.
    let bound = (2 * (live + live / 8) + EDITS) as u64;
    assert!(
        info.graph_points <= bound,
        "{} points (live and dead) for {live} live vectors, more than {bound}: {info:?}",
        info.graph_points
    );
    assert!(
        info.budgeted_bytes <= BUDGET,
        "the index holds {} bytes under a {BUDGET}-byte budget: {info:?}",
        info.budgeted_bytes
    );
    // The last edits are what searches find.
    for (i, version, vector) in last.iter().take(20) {
        let hits = store
            .search(vector, 1, &SearchOptions::default())
            .expect("search");
        assert_eq!(hits[0].id, format!("v{i}"));
        assert_eq!(hits[0].text, format!("chunk {i} v{version}"));
    }
}
