//! A store's text codec (`meta["text_codec"]`, schema 9) damaged on disk: its compressed texts
//! cannot be decoded, and every read of one is `ReadError::Corrupted` naming the chunk text
//! and the codec, never a panic and never a wrong text, while its raw texts still read; a
//! text search, whose index holds terms compressed with the same table (schema 10), is
//! `Corrupted` naming the text row and the codec;
//! `verify` reports the codec row. Writes go on with raw texts and train no codec over the
//! damaged row (which would leave the compressed texts unreadable for good): a new document
//! reads back, a compressed one can be deleted. Each of the row's bytes changed in turn, and
//! the row cut short, gives one of those answers or (a change the table still reads) the
//! same texts or a reported corruption, never a panic.

use crate::support;
use ratchetdb::{Chunk, Document, Options, ReadError, SearchOptions, Store, Version};
use redb::{ReadableDatabase, TableDefinition};
use std::path::Path;

const DIMENSION: usize = 8;
const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");

fn document(d: u64) -> Document {
    Document::new("notes", format!("n{d:03}"), Version::number(1)).with_chunk(Chunk::new(
        format!(
            "Note {d}: the pipeline redelivers a document and the store keeps its newest \
             revision, refusing the stale one with its reason."
        ),
        support::minilm_like(d, DIMENSION),
    ))
}

fn codec_row(path: &Path) -> Vec<u8> {
    let db = redb::Database::open(path).expect("redb");
    let txn = db.begin_read().expect("read");
    let meta = txn.open_table(META).expect("meta");
    let row = meta.get("text_codec").expect("get").expect("a table");
    row.value().to_vec()
}

fn set_codec_row(path: &Path, row: &[u8]) {
    let db = redb::Database::open(path).expect("redb");
    let txn = db.begin_write().expect("write");
    txn.open_table(META)
        .expect("meta")
        .insert("text_codec", row)
        .expect("insert");
    txn.commit().expect("commit");
}

#[test]
fn a_damaged_text_codec_is_corruption_not_a_panic() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("codec.redb");
    let options = Options::default().dimension(DIMENSION);
    let texts: Vec<String> = {
        let store = Store::open(&path, options.clone()).expect("open");
        let ops = (0..300)
            .map(|d| ratchetdb::Op::Upsert(document(d)))
            .collect();
        for outcome in store.write_batch(ops).expect("write_batch") {
            assert!(outcome.is_ok(), "{outcome:?}");
        }
        (0..300)
            .map(|d| document(d).chunks[0].text.clone())
            .collect()
    };
    let good = codec_row(&path);
    let last = 299;

    // The table's format byte changed: it does not read.
    let mut bad = good.clone();
    bad[0] ^= 0x40;
    set_codec_row(&path, &bad);
    {
        let store =
            support::no_panic("open", || Store::open(&path, options.clone())).expect("open");
        let read = support::no_panic("get", || store.get("notes", &format!("n{last:03}")));
        assert!(
            matches!(&read, Err(ReadError::Corrupted { what, detail, .. })
                if what == "chunk text" && detail.contains("text codec")),
            "{read:?}"
        );
        // The text index's terms written since the table was trained are compressed with
        // it (schema 10): a text search is corrupted too, never a panic or a partial answer.
        let search = support::no_panic("search_text", || {
            store.search_text("pipeline", 10, &SearchOptions::default())
        });
        assert!(
            matches!(&search, Err(ReadError::Corrupted { what, detail, .. })
                if what == "text row" && detail.contains("text codec")),
            "{search:?}"
        );
        let hybrid = support::no_panic("search_hybrid", || {
            store.search_hybrid(
                "pipeline",
                &support::minilm_like(3, DIMENSION),
                10,
                &SearchOptions::default(),
            )
        });
        // (Its vector half meets a compressed chunk text first.)
        assert!(
            matches!(&hybrid, Err(ReadError::Corrupted { detail, .. })
                if detail.starts_with("compressed, and the file's text codec")),
            "{hybrid:?}"
        );
        // The first texts, written before the table was trained, are raw: they still read.
        let first = store.get("notes", "n000").expect("a raw text reads");
        assert_eq!(first.expect("present").chunks[0].text, texts[0]);
        let report = support::no_panic("verify", || store.verify()).expect("verify");
        assert!(
            report
                .violations
                .iter()
                .any(|v| v.problem.contains("text codec")),
            "{report:?}"
        );
        // A new document is written raw, and the damaged row is left as it is.
        support::no_panic("upsert", || store.upsert(document(1000))).expect("upsert");
        let doc = store.get("notes", "n1000").expect("get").expect("present");
        assert_eq!(doc.chunks[0].text, document(1000).chunks[0].text);
        let gone = store.delete("notes", &format!("n{last:03}"), Version::number(2));
        assert!(gone.is_ok(), "{gone:?}");
    }
    assert_eq!(
        codec_row(&path),
        bad,
        "a codec was trained over the damaged row"
    );

    // Every byte changed in turn, and every cut: a read answers the text or an error.
    for at in 0..good.len() + 1 {
        let row = if at == good.len() {
            good[..good.len() / 2].to_vec()
        } else {
            let mut row = good.clone();
            row[at] ^= 0x5A;
            row
        };
        set_codec_row(&path, &row);
        let store = Store::open_read_only(&path).expect("read-only");
        // (n299 was deleted above; n298's text is compressed.)
        for d in [0, last - 1] {
            let read = support::no_panic("get", || store.get("notes", &format!("n{d:03}")));
            match read {
                Ok(Some(doc)) => {
                    // A table that still reads may decode a compressed text to other bytes
                    // only where those are still UTF-8; `verify` cannot tell them from the
                    // text (no checksum), so only the raw first texts must come back whole.
                    if d == 0 {
                        assert_eq!(doc.chunks[0].text, texts[d as usize], "byte {at}");
                    }
                }
                Ok(None) => panic!("byte {at}: n{d:03} missing"),
                Err(ReadError::Corrupted { .. }) => {}
                Err(e) => panic!("byte {at}: {e}"),
            }
        }
        let search = support::no_panic("search_text", || {
            store.search_text("pipeline", 10, &SearchOptions::default())
        });
        assert!(
            matches!(search, Ok(_) | Err(ReadError::Corrupted { .. })),
            "byte {at}: {search:?}"
        );
        support::no_panic("verify", || store.verify()).expect("verify");
    }
    set_codec_row(&path, &good);
    let store = Store::open(&path, options).expect("open");
    let doc = store
        .get("notes", &format!("n{:03}", last - 1))
        .expect("get")
        .expect("present");
    assert_eq!(doc.chunks[0].text, texts[last as usize - 1]);
    let hits = store
        .search_text("pipeline", 300, &SearchOptions::default())
        .expect("search_text");
    assert_eq!(hits.len(), 300, "every live note has the word");
    assert!(store.verify().expect("verify").is_ok());
}
