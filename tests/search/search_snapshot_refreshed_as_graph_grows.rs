//! The persisted graph keeps up with ingestion: vectors written after the last snapshot are
//! absorbed into the graph in the background, and once the graph has grown past the
//! snapshot by the refresh threshold (half, at least 4096 points) the snapshot is
//! rewritten — so the next open loads a graph that already holds them, instead of leaving
//! every vector ingested since the first build to be scored exactly and absorbed again.
//! A snapshot that lacks some live vectors still serves at once: they are scored exactly
//! until absorbed.

use crate::search_support;

use ratchetdb::{Chunk, Document, Op, SearchOptions, Store, Version};
use search_support::{assert_verified, ingest_one_chunk_docs, open, settle, Structured};

const DIM: usize = 32;
const FIRST: usize = 2000;
/// More than the 4096-point minimum growth that triggers a refresh.
const GROWTH: usize = 4500;

fn top_hits(
    store: &Store,
    queries: &[Vec<f32>],
    options: &SearchOptions,
) -> Vec<Vec<(String, String, u32)>> {
    queries
        .iter()
        .map(|q| {
            store
                .search(q, 10, options)
                .expect("search")
                .into_iter()
                .map(|h| (h.source, h.id, h.position))
                .collect()
        })
        .collect()
}

#[test]
fn a_grown_graph_is_persisted_again_and_loaded_whole() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = Structured::new(61, DIM);
    let first = data.vectors(62, FIRST);
    let more = data.vectors(63, GROWTH);
    let queries = data.vectors(64, 20);

    let before = {
        let store = open(dir.path());
        ingest_one_chunk_docs(&store, "first", &first);
        store.build_index().expect("build");
        let info = store.index_info();
        assert_eq!(info.persisted_points, FIRST as u64, "{info:?}");

        // One commit, so that one background round absorbs them all and then persists.
        let ops = more
            .iter()
            .enumerate()
            .map(|(i, v)| {
                Op::Upsert(
                    Document::new("more", format!("v{i}"), Version::number(1))
                        .with_chunk(Chunk::new(format!("chunk {i}"), v.clone())),
                )
            })
            .collect();
        for result in store.write_batch(ops).expect("one batch") {
            result.expect("write");
        }
        settle(&store);
        let info = store.index_info();
        assert_eq!(info.graph_points, (FIRST + GROWTH) as u64, "{info:?}");
        assert_eq!(
            info.persisted_points,
            (FIRST + GROWTH) as u64,
            "the grown graph was not persisted again: {info:?}"
        );
        assert_verified(&store, "after absorbing");
        top_hits(&store, &queries, &SearchOptions::default().ef(64))
    };

    let store = open(dir.path());
    settle(&store);
    let info = store.index_info();
    assert!(info.graph_ready, "{info:?}");
    assert_eq!(info.persisted_points, (FIRST + GROWTH) as u64, "{info:?}");
    assert_eq!(info.graph_points, (FIRST + GROWTH) as u64, "{info:?}");
    // The very graph that was persisted: identical graph search results.
    assert_eq!(
        top_hits(&store, &queries, &SearchOptions::default().ef(64)),
        before
    );
    assert_verified(&store, "after reopening");
}

#[test]
fn growth_below_the_threshold_keeps_the_old_snapshot_and_is_absorbed_after_open() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = Structured::new(65, DIM);
    let first = data.vectors(66, FIRST);
    let few = data.vectors(67, 1000);
    let queries = data.vectors(68, 20);

    let before = {
        let store = open(dir.path());
        ingest_one_chunk_docs(&store, "first", &first);
        store.build_index().expect("build");
        ingest_one_chunk_docs(&store, "few", &few);
        settle(&store);
        let info = store.index_info();
        assert_eq!(info.graph_points, (FIRST + 1000) as u64, "{info:?}");
        assert_eq!(info.persisted_points, FIRST as u64, "{info:?}");
        top_hits(&store, &queries, &SearchOptions::default().exact(true))
    };

    // The snapshot lacks the last 1000 vectors: the graph serves at once, they are scored
    // exactly meanwhile, and the background absorber moves them in.
    let store = open(dir.path());
    settle(&store);
    let info = store.index_info();
    assert!(info.graph_ready, "{info:?}");
    assert_eq!(info.persisted_points, FIRST as u64, "{info:?}");
    assert_eq!(info.graph_points, (FIRST + 1000) as u64, "{info:?}");
    assert_eq!(
        top_hits(&store, &queries, &SearchOptions::default().exact(true)),
        before
    );
    // Each absorbed vector is found by a graph search for itself.
    for (i, v) in few.iter().enumerate() {
        let hit = &store
            .search(v, 1, &SearchOptions::default().ef(64))
            .expect("search")[0];
        assert_eq!(
            (hit.source.as_str(), hit.id.clone()),
            ("few", format!("v{i}"))
        );
    }
    assert_verified(&store, "after reopening on the older snapshot");
}
