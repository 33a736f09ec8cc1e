//! A budgeted index saved by an earlier build (format 1: layer 0 always `2 M` links, the
//! header not naming them) is never loaded by this one, even when its checksum is good: the
//! store builds the index again from the vectors rows under today's plan, answers with full
//! recall, saves it in the current format, and the next open loads that.

use crate::search_support::{assert_verified, ingest_one_chunk_docs, settle, Structured};
use crate::{open_budgeted, recall_at_10, BUDGET, BUDGET_SNAPSHOT, DIM, N};

/// Offset of the format version in the header (part 0), and of its checksum.
const VERSION_AT: usize = 8;
const CHECKSUM_AT: usize = 96;
/// Offset of the layer-0 links in the header (reserved, zero, in format 1).
const LINKS0_AT: usize = 76;

/// Rewrites the saved index's header in the closed file at `path` as format 1 wrote it,
/// its checksum recomputed over the header and the payload (parts 1.. in order).
fn make_format_1(path: &std::path::Path) {
    use redb::ReadableTable;
    let db = redb::Database::open(path).expect("open with redb");
    let txn = db.begin_write().expect("write");
    {
        let mut table = txn.open_table(BUDGET_SNAPSHOT).expect("the table");
        let mut header = table
            .get(0)
            .expect("get")
            .expect("a header")
            .value()
            .to_vec();
        header[VERSION_AT..VERSION_AT + 4].copy_from_slice(&1u32.to_le_bytes());
        header[LINKS0_AT..LINKS0_AT + 4].copy_from_slice(&0u32.to_le_bytes());
        let mut hasher = blake3::Hasher::new();
        hasher.update(&header[..CHECKSUM_AT]);
        for entry in table.range(1u32..).expect("parts") {
            let (_, value) = entry.expect("part");
            hasher.update(value.value());
        }
        header[CHECKSUM_AT..CHECKSUM_AT + 32].copy_from_slice(hasher.finalize().as_bytes());
        table.insert(0u32, header.as_slice()).expect("insert");
    }
    txn.commit().expect("commit");
}

#[test]
fn an_old_format_budgeted_snapshot_is_rebuilt_and_saved_in_the_current_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("search.redb");
    let data = Structured::new(61, DIM);
    let vectors = data.vectors(62, N);
    let queries = data.vectors(63, 50);
    {
        let store = open_budgeted(dir.path(), BUDGET);
        ingest_one_chunk_docs(&store, "s", &vectors);
        store.build_index().expect("build and save");
        settle(&store);
    }
    make_format_1(&path);
    {
        let store = open_budgeted(dir.path(), BUDGET);
        settle(&store);
        let info = store.index_info();
        assert!(
            !info.loaded_from_file,
            "a format-1 snapshot served: {info:?}"
        );
        assert_eq!(info.live_vectors, N as u64, "{info:?}");
        let recall = recall_at_10(&store, &vectors, &queries);
        assert!(recall >= 0.95, "recall {recall:.4} after the rebuild");
        assert_verified(&store, "after the rebuild");
        assert_eq!(info.persisted_points, N as u64, "saved again: {info:?}");
    }
    let store = open_budgeted(dir.path(), BUDGET);
    settle(&store);
    assert!(
        store.index_info().loaded_from_file,
        "the snapshot saved after the rebuild"
    );
    assert!(recall_at_10(&store, &vectors, &queries) >= 0.95);
}
