//! Regression (review of schemas 9 and 10): the batch that gathers enough text trains the
//! store's text codec and records it in its own transaction. The texts gathered to train it
//! were dropped as the table was trained, so when that batch then failed (here: a revision
//! meeting a text row missing from the file, `WriteError::Corrupted`), nothing of it
//! committed, table included, and the texts were gone too: the file was not sampled again,
//! so the store trained no table until as much text again had been written, and a store
//! written only vector chunks from then on never would. The texts now stay gathered until a
//! committed batch has the table: the next batch trains and records it, whatever it writes.

use crate::support;
use ratchetdb::{Chunk, Document, Op, Options, Store, Version};
use redb::{ReadableDatabase, ReadableTable, TableDefinition};
use std::path::Path;

const DIMENSION: usize = 8;
const TEXT_DOCS: TableDefinition<u64, &[u8]> = TableDefinition::new("text_docs");
const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");

fn note(d: u64, text: String) -> Document {
    Document::new("notes", format!("n{d:03}"), Version::number(1))
        .with_chunk(Chunk::new(text, support::minilm_like(d, DIMENSION)))
}

fn has_codec(path: &Path) -> bool {
    let db = redb::Database::open(path).expect("redb");
    let txn = db.begin_read().expect("read");
    let meta = txn.open_table(META).expect("meta");
    meta.get("text_codec").expect("get").is_some()
}

/// Removes every text row of the closed store at `path`.
fn remove_text_rows(path: &Path) {
    let db = redb::Database::open(path).expect("redb");
    let txn = db.begin_write().expect("write");
    {
        let mut rows = txn.open_table(TEXT_DOCS).expect("text_docs");
        let keys: Vec<u64> = rows
            .iter()
            .expect("iter")
            .map(|e| e.expect("row").0.value())
            .collect();
        for key in keys {
            rows.remove(key).expect("remove");
        }
    }
    txn.commit().expect("commit");
}

#[test]
fn a_batch_that_fails_after_training_its_codec_leaves_the_next_to_train() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("store.redb");
    let options = Options::default().dimension(DIMENSION);
    {
        let store = Store::open(&path, options.clone()).expect("open");
        store
            .upsert(note(0, "a short note".into()))
            .expect("upsert");
    }
    // Its text row gone: the next revision of n000 fails the batch it is in.
    remove_text_rows(&path);
    let store = Store::open(&path, options).expect("open");
    let long = |d: u64| {
        format!(
            "Note {d}: the ingestion pipeline redelivers a document, and the store keeps its \
             newest revision and refuses the stale one, counting why. {}",
            "Retries and replays arrive in no order. ".repeat(8)
        )
    };
    let mut ops: Vec<Op> = (1..60).map(|d| Op::Upsert(note(d, long(d)))).collect();
    let mut revision = note(0, "a short note, revised".into());
    revision.version = Version::number(2);
    ops.push(Op::Upsert(revision));
    let failed = support::no_panic("write_batch", || store.write_batch(ops));
    let refused = match failed {
        Err(_) => true,
        Ok(outcomes) => outcomes.iter().any(Result::is_err),
    };
    assert!(
        refused,
        "the revision meeting a missing text row was accepted"
    );
    assert!(
        store.get("notes", "n001").expect("get").is_none(),
        "the failed batch committed"
    );
    // The next batch writes one vector chunk with no text at all: it trains the table from
    // the texts gathered before, and records it.
    store
        .upsert(note(100, String::new()))
        .expect("a vector-only chunk");
    drop(store);
    assert!(
        has_codec(&path),
        "no table after a batch that had gathered enough text failed"
    );
}
