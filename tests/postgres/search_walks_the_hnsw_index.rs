//! Regression: a search on PostgreSQL sorted a sequential scan of every chunk instead of
//! walking pgvector's HNSW index (the planner estimated that the join to the document rows
//! leaves one row, so sorting looked cheaper), which made every search an exact scan: recall
//! 1.0 at any `ef`, 15 queries/s at 40k chunks. Pinned: after a search, the server's
//! statistics show a scan of the HNSW index (`pg_stat_user_indexes.idx_scan` grows), and an
//! exact search does not use it.

use crate::pg;
use ratchetdb::testkit;
use ratchetdb::{Chunk, Document, Op, Options, SearchOptions, Store, Version};
use std::time::{Duration, Instant};

fn index_scans(url: &str, schema: &str) -> i64 {
    testkit::pg_query_i64(
        url,
        &format!(
            "SELECT coalesce(sum(idx_scan), 0)::bigint FROM pg_stat_user_indexes
             WHERE schemaname = '{schema}' AND indexrelname = 'chunks_embedding_hnsw'"
        ),
    )
    .expect("index statistics")
}

/// The index scan count once the server has published the searching session's statistics
/// (it does so when the session goes idle, within about a second), waiting up to 15 s for
/// it to pass `above`.
fn scans_after(url: &str, schema: &str, above: i64) -> i64 {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let scans = index_scans(url, schema);
        if scans > above || Instant::now() > deadline {
            return scans;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn search_walks_the_hnsw_index() {
    let Some(address) = pg::fresh_url("hnsw_walk") else {
        return;
    };
    let (url, schema) = (pg::url("hnsw_walk").unwrap(), pg::schema("hnsw_walk"));
    let store = Store::open(&address, Options::default().dimension(8)).expect("open");
    let ops: Vec<Op> = (0..3000u32)
        .map(|i| {
            let vector: Vec<f32> = (0..8)
                .map(|d| ((i * 7 + d * 13) % 97) as f32 + 1.0)
                .collect();
            Op::Upsert(
                Document::new("s", format!("d{i}"), Version::number(1))
                    .with_chunk(Chunk::new(format!("chunk {i}"), vector)),
            )
        })
        .collect();
    for result in store.write_batch(ops).expect("batch") {
        result.expect("write");
    }
    testkit::pg_execute(
        &url,
        &format!("ANALYZE {schema}.chunks; ANALYZE {schema}.documents"),
    )
    .expect("analyze");

    let query = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0];
    let before = index_scans(&url, &schema);
    let exact = store
        .search(&query, 10, &SearchOptions::default().exact(true))
        .expect("exact search");
    assert_eq!(exact.len(), 10);
    // Let the exact search's statistics land before the graph search: it must add none.
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(
        index_scans(&url, &schema),
        before,
        "an exact search used the HNSW index"
    );
    let hits = store
        .search(&query, 10, &SearchOptions::default())
        .expect("search");
    assert_eq!(hits.len(), 10);
    // A search's statistics are published when its session goes idle: leave it idle.
    let after = scans_after(&url, &schema, before);
    assert!(
        after > before,
        "the search did not scan the HNSW index ({before} scans before, {after} after)"
    );
}
