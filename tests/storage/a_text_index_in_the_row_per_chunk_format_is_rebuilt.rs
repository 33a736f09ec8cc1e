//! A file whose text index is in the format of builds before the one-row-per-document
//! `text_docs` table (a `text_chunks` row per chunk, `text_totals`, and the analysis in
//! `meta["text_analyzer"]`) is refused by text searches until a writer opens it; the writer's
//! open rebuilds the index in the current format, keeps the analysis the file recorded, and
//! removes the old tables.

use super::text_index_is_built_for_existing_stores::{doc, ids};
use ratchetdb::{Options, ReadError, SearchOptions, Store, TextLanguage, TextOptions};
use redb::{ReadableDatabase, ReadableTable, TableDefinition, TableHandle};

const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");
const COUNTERS: TableDefinition<&str, u64> = TableDefinition::new("counters");
const TEXT_DOCS: TableDefinition<u64, &[u8]> = TableDefinition::new("text_docs");
const LEGACY_CHUNKS: TableDefinition<u64, &[u8]> = TableDefinition::new("text_chunks");
const LEGACY_TOTALS: TableDefinition<&str, u64> = TableDefinition::new("text_totals");

fn table_names(path: &std::path::Path) -> Vec<String> {
    let db = redb::Database::open(path).expect("redb");
    let txn = db.begin_read().expect("read");
    txn.list_tables()
        .expect("tables")
        .map(|t| t.name().to_string())
        .collect()
}

/// Rewrites the text index of the file at `path` as the earlier format left it: the
/// current table, counters and meta key gone, the old ones holding `english` analysis, covering the
/// file's commit.
fn downgrade_text_index(path: &std::path::Path, keep_current_record: bool) {
    let db = redb::Database::open(path).expect("redb");
    let txn = db.begin_write().expect("write");
    let commit = {
        let mut counters = txn.open_table(COUNTERS).expect("counters");
        for key in ["text.chunks", "text.terms", "text.commit"] {
            assert!(counters.remove(key).expect("remove").is_some(), "{key}");
        }
        counters
            .get("seq.commit")
            .expect("get")
            .map_or(0, |v| v.value())
    };
    assert!(txn.delete_table(TEXT_DOCS).expect("delete"));
    {
        let mut meta = txn.open_table(META).expect("meta");
        if !keep_current_record {
            assert!(meta.remove("text_index").expect("remove").is_some());
        }
        let english =
            serde_json::to_vec(&TextOptions::language(TextLanguage::English)).expect("json");
        meta.insert("text_analyzer", english.as_slice())
            .expect("insert");
        let mut totals = txn.open_table(LEGACY_TOTALS).expect("totals");
        totals.insert("commit", commit).expect("commit");
        totals.insert("chunks", 1).expect("chunks");
        // A row of the old format (its bytes are never read again).
        let mut rows = txn.open_table(LEGACY_CHUNKS).expect("rows");
        rows.insert(1 << 24, &[1u8, 1, 4, b'g', b'e', b'a', b'r', 1][..])
            .expect("row");
    }
    txn.commit().expect("commit");
}

#[test]
fn a_text_index_in_the_row_per_chunk_format_is_rebuilt_by_the_next_writer() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("earlier.redb");
    {
        let store = Store::open(&path, Options::default()).expect("open");
        store
            .upsert(doc("a", "the runners were running"))
            .expect("a");
        store.upsert(doc("b", "a gear train")).expect("b");
    }
    downgrade_text_index(&path, false);
    {
        let reader = Store::open_read_only(&path).expect("read-only");
        match reader.search_text("gear", 5, &SearchOptions::default()) {
            Err(ReadError::NoTextIndex { detail }) => {
                assert!(detail.contains("earlier build"), "{detail}")
            }
            other => panic!("a text search on the earlier format: {other:?}"),
        }
    }
    let store = Store::open(&path, Options::default()).expect("reopen");
    let report = store.verify().expect("verify");
    assert!(report.is_ok(), "{:?}", report.violations);
    // The analysis the file recorded (English stemming and stop words) is kept.
    assert_eq!(ids(&store, "run"), ["a"]);
    assert!(ids(&store, "the").is_empty(), "a stop word");
    assert_eq!(ids(&store, "gears"), ["b"]);
    drop(store);
    let names = table_names(&path);
    assert!(names.iter().any(|n| n == "text_docs"), "{names:?}");
    assert!(
        !names
            .iter()
            .any(|n| n == "text_chunks" || n == "text_totals"),
        "the earlier format's tables are removed: {names:?}"
    );
    let db = redb::Database::open(&path).expect("redb");
    let txn = db.begin_read().expect("read");
    let meta = txn.open_table(META).expect("meta");
    assert!(meta.get("text_analyzer").expect("get").is_none());
    assert!(meta.get("text_index").expect("get").is_some());
}

/// A file this build indexed (default analysis) that an older build then reopened with
/// English analysis: both records are there, and the older build's, written last, is the
/// analysis the rebuild keeps.
#[test]
fn the_older_builds_later_analysis_wins_when_both_are_recorded() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("both.redb");
    {
        let store = Store::open(&path, Options::default()).expect("open");
        store
            .upsert(doc("a", "the runners were running"))
            .expect("a");
    }
    downgrade_text_index(&path, true);
    let store = Store::open(&path, Options::default()).expect("reopen");
    let report = store.verify().expect("verify");
    assert!(report.is_ok(), "{:?}", report.violations);
    assert_eq!(ids(&store, "run"), ["a"], "English stemming kept");
}
