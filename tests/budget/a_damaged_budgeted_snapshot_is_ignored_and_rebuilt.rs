//! A budgeted index saved in the file and then damaged (a flipped byte in a link part, a
//! part missing, a header cut short) is never loaded: the store builds the index again from
//! the vectors rows, answers with exact scores and full recall, saves a good one, and the
//! next open loads that.

use crate::search_support::{assert_verified, ingest_one_chunk_docs, settle, Structured};
use crate::{open_budgeted, recall_at_10, BUDGET, BUDGET_SNAPSHOT, DIM, N};

/// Parts by part number.
type Parts = Vec<(u32, Vec<u8>)>;

/// The saved index's parts in the closed file at `path`, by part number.
fn parts(path: &std::path::Path) -> Parts {
    use redb::{ReadableDatabase, ReadableTable};
    let db = redb::Database::open(path).expect("open with redb");
    let txn = db.begin_read().expect("read");
    let table = txn.open_table(BUDGET_SNAPSHOT).expect("the table");
    table
        .iter()
        .expect("iter")
        .map(|entry| {
            let (key, value) = entry.expect("row");
            (key.value(), value.value().to_vec())
        })
        .collect()
}

/// Replaces the saved index in the closed file at `path` with `parts`.
fn rewrite(path: &std::path::Path, parts: &[(u32, Vec<u8>)]) {
    let db = redb::Database::open(path).expect("open with redb");
    let txn = db.begin_write().expect("write");
    {
        let mut table = txn.open_table(BUDGET_SNAPSHOT).expect("the table");
        table.retain(|_, _| false).expect("clear");
        for (part, bytes) in parts {
            table.insert(*part, bytes.as_slice()).expect("insert");
        }
    }
    txn.commit().expect("commit");
}

#[test]
fn a_damaged_budgeted_snapshot_is_rebuilt_and_answers_right() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("search.redb");
    let data = Structured::new(91, DIM);
    let vectors = data.vectors(92, N);
    let queries = data.vectors(93, 50);
    {
        let store = open_budgeted(dir.path(), BUDGET);
        ingest_one_chunk_docs(&store, "s", &vectors);
        store.build_index().expect("build and save");
        settle(&store);
    }
    let good = parts(&path);
    assert!(good.len() > 10, "{} parts", good.len());
    assert_eq!(good[0].0, 0, "the header is part 0");
    let last = good.len() - 1;
    let damages: Vec<(&str, Parts)> = vec![
        ("a flipped byte in the last part", {
            let mut p = good.clone();
            let at = p[last].1.len() / 2;
            p[last].1[at] ^= 0x40;
            p
        }),
        ("a part missing", {
            let mut p = good.clone();
            p.remove(last / 2);
            p
        }),
        ("a header cut short", {
            let mut p = good.clone();
            p[0].1.truncate(40);
            p
        }),
    ];
    for (damage, parts_now) in damages {
        rewrite(&path, &parts_now);
        let store = open_budgeted(dir.path(), BUDGET);
        settle(&store);
        let info = store.index_info();
        assert!(!info.loaded_from_file, "{damage}: loaded anyway: {info:?}");
        assert_eq!(info.live_vectors, N as u64, "{damage}: {info:?}");
        let recall = recall_at_10(&store, &vectors, &queries);
        assert!(recall >= 0.95, "{damage}: recall {recall:.4}");
        assert_verified(&store, damage);
        assert_eq!(
            info.persisted_points, N as u64,
            "{damage}: saved again: {info:?}"
        );
    }
    let store = open_budgeted(dir.path(), BUDGET);
    settle(&store);
    assert!(
        store.index_info().loaded_from_file,
        "the one saved after the rebuild"
    );
}
