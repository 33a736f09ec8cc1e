//! A closing store that compacts its file keeps only the last `CHANGELOG_KEEP_ON_CLOSE`
//! (16) changelog rows: the changelog serves indexes that follow commits as they happen, a
//! reopen reconciles the persisted graph with the vectors rows without it, and a bulk
//! load's rows (every vector id a batch added) were megabytes of runs compaction could not
//! always move. A reader process's store that fell further behind than the kept rows
//! reloads its index from the vectors and still finds every document; the reopened writer
//! finds them all and `verify` is clean.

use ratchetdb::{Chunk, Document, Op, Options, SearchOptions, Store, Version};
use redb::{ReadableDatabase, ReadableTable, TableDefinition};
use std::path::Path;

const CHANGELOG: TableDefinition<u64, &[u8]> = TableDefinition::new("changelog");
const COMMITS: u64 = 40;
const DOCS_PER_COMMIT: u64 = 50;
const DIM: usize = 8;

fn vector(n: u64) -> Vec<f32> {
    // splitmix64 of n and the dimension: no two documents share a direction.
    (0..DIM as u64)
        .map(|d| {
            let mut z = (n * DIM as u64 + d).wrapping_add(0x9E37_79B9_7F4A_7C15);
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            ((z ^ (z >> 31)) >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        })
        .collect()
}

fn doc(n: u64) -> Document {
    Document::new("s", format!("d{n}"), Version::number(1))
        .with_chunk(Chunk::new(format!("chunk of d{n}"), vector(n)))
}

fn changelog_keys(path: &Path) -> Vec<u64> {
    let db = redb::Database::open(path).expect("redb open");
    let txn = db.begin_read().expect("read");
    let table = txn.open_table(CHANGELOG).expect("changelog");
    table
        .iter()
        .expect("iter")
        .map(|row| row.expect("row").0.value())
        .collect()
}

/// The store's best exact hit for document `n`'s vector is `n`'s chunk.
fn finds(store: &Store, n: u64) -> bool {
    store
        .search(&vector(n), 1, &SearchOptions::default().exact(true))
        .expect("search")
        .first()
        .is_some_and(|hit| hit.id == format!("d{n}"))
}

#[test]
fn a_closing_store_keeps_the_last_changelog_rows_and_lagging_readers_reload() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("changelog.redb");
    let writer = Store::open(&path, Options::default()).expect("create");
    writer.upsert(doc(0)).expect("the first document");
    // A reader beside the writer, whose index is at the first commit.
    let reader = Store::open_read_only(&path).expect("reader");
    assert!(finds(&reader, 0));
    let mut n = 1;
    for _ in 0..COMMITS {
        let ops = (0..DOCS_PER_COMMIT)
            .map(|_| {
                n += 1;
                Op::Upsert(doc(n - 1))
            })
            .collect();
        for outcome in writer.write_batch(ops).expect("batch") {
            outcome.expect("upsert");
        }
    }
    let last = n - 1;
    drop(writer);

    // The reader is 40 commits behind, past the kept rows: it reloads, and finds the first
    // document, one from the trimmed commits and the last.
    for probe in [0, 1, last / 2, last] {
        assert!(finds(&reader, probe), "the reader lost d{probe}");
    }
    drop(reader);

    let keys = changelog_keys(&path);
    assert_eq!(keys.len(), 16, "{keys:?}");
    assert!(
        keys.windows(2).all(|w| w[1] == w[0] + 1),
        "the kept rows are the last, in a run: {keys:?}"
    );

    let store = Store::open(&path, Options::default()).expect("reopen");
    for probe in [0, 1, last / 2, last] {
        assert!(finds(&store, probe), "the reopened store lost d{probe}");
    }
    assert_eq!(store.stats().expect("stats").documents, last + 1);
    let report = store.verify().expect("verify");
    assert!(report.violations.is_empty(), "{report:?}");
}
