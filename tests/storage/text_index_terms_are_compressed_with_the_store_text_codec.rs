//! Schema 10: the text index's terms are compressed with the store's text codec (the FSST
//! table its chunk texts are compressed with). A store written a document a commit keeps
//! its first documents' terms raw (no table yet) and compresses the terms of those written
//! after the table is trained; every text and hybrid search answers from both kinds, and
//! `verify` (which re-analyses every live chunk and compares its stored terms) is clean.
//! Rebuilding the text index (opened once without it, then with it) compresses every row:
//! no row grows, the early ones shrink, and every search answers exactly as before, from a
//! read-only open too. The batch that trains the table compresses its later revisions'
//! terms. A schema-9 file (raw terms beside a trained table) reads as it is, then is
//! stamped 10 with a backup; its raw terms read as they are. A text row damaged on disk
//! gives `Corrupted` or an answer from text and hybrid search, never a panic, and `verify`
//! reports it.

use crate::support;
use ratchetdb::testkit;
use ratchetdb::{Chunk, Document, Hit, Op, Options, ReadError, SearchOptions, Store, Version};
use redb::{ReadableDatabase, ReadableTable, TableDefinition};
use std::collections::BTreeMap;
use std::path::Path;

const DIMENSION: usize = 8;
const TEXT_DOCS: TableDefinition<u64, &[u8]> = TableDefinition::new("text_docs");
const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");
const WORDS: [&str; 16] = [
    "pipeline",
    "redelivery",
    "revision",
    "tombstone",
    "generation",
    "ingestion",
    "consumer",
    "backfill",
    "ratchet",
    "transaction",
    "embedding",
    "retrieval",
    "superseded",
    "orphaned",
    "duplicated",
    "versioned",
];

/// Document `d`'s text: drawn words, and a tag no other document has.
fn text(d: u64) -> String {
    let mut state = d.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut words = Vec::new();
    for _ in 0..18 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        words.push(WORDS[(state % WORDS.len() as u64) as usize]);
    }
    format!("Note {d} tag{d}x: {}.", words.join(" "))
}

fn document(d: u64) -> Document {
    Document::new("notes", format!("n{d:03}"), Version::number(1))
        .with_chunk(Chunk::new(text(d), support::minilm_like(d, DIMENSION)))
}

/// Each text row's length, by document.
fn text_rows(path: &Path) -> BTreeMap<u64, usize> {
    let db = redb::Database::open(path).expect("redb");
    let txn = db.begin_read().expect("read");
    let rows = txn.open_table(TEXT_DOCS).expect("text_docs");
    rows.iter()
        .expect("iter")
        .map(|entry| {
            let (key, value) = entry.expect("row");
            (key.value(), value.value().len())
        })
        .collect()
}

fn has_codec(path: &Path) -> bool {
    let db = redb::Database::open(path).expect("redb");
    let txn = db.begin_read().expect("read");
    let meta = txn.open_table(META).expect("meta");
    meta.get("text_codec").expect("get").is_some()
}

type Answer = Vec<(String, u32, String, u32)>;

/// What each query answers: the hits' ids, positions, texts and scores (bit for bit).
fn answers(store: &Store, documents: u64) -> Vec<Answer> {
    let options = SearchOptions::default();
    let shape = |hits: Vec<Hit>| -> Answer {
        hits.into_iter()
            .map(|h| (h.id, h.position, h.text, h.score.to_bits()))
            .collect()
    };
    let mut out = Vec::new();
    for word in WORDS {
        out.push(shape(store.search_text(word, 10, &options).expect("text")));
    }
    for d in (0..documents).step_by(37) {
        let tag = format!("tag{d}x");
        let hits = store.search_text(&tag, 10, &options).expect("tag");
        assert_eq!(hits.len(), 1, "{tag}: {hits:?}");
        assert_eq!(hits[0].id, format!("n{d:03}"));
        assert_eq!(hits[0].text, text(d));
        out.push(shape(hits));
        let hybrid = store
            .search_hybrid(
                &format!("{tag} pipeline"),
                &support::minilm_like(d, DIMENSION),
                5,
                &options,
            )
            .expect("hybrid");
        assert_eq!(hybrid[0].id, format!("n{d:03}"), "{hybrid:?}");
        out.push(shape(hybrid));
    }
    out
}

#[test]
fn text_index_terms_are_compressed_with_the_store_text_codec() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("terms.redb");
    let options = Options::default().dimension(DIMENSION);
    let documents = 400u64;
    let before = {
        let store = Store::open(&path, options.clone()).expect("open");
        for d in 0..documents {
            store.upsert(document(d)).expect("upsert");
        }
        let report = store.verify().expect("verify");
        assert!(report.is_ok(), "{report:?}");
        answers(&store, documents)
    };
    assert!(has_codec(&path), "no table after {documents} documents");
    let mixed = text_rows(&path);
    assert_eq!(mixed.len(), documents as usize);
    let (compressed, raw) = testkit::text_row_segments(&path).expect("segments");
    assert!(
        compressed >= 200 && raw >= 20,
        "{compressed} compressed, {raw} raw"
    );

    // The index dropped, then rebuilt from the chunks: every row compressed.
    drop(Store::open(&path, options.clone().text_index(false)).expect("open without"));
    assert!(text_rows(&path).is_empty(), "the text index was kept");
    {
        let store = Store::open(&path, options.clone()).expect("rebuild");
        let report = store.verify().expect("verify");
        assert!(report.is_ok(), "{report:?}");
        assert_eq!(answers(&store, documents), before, "a search changed");
    }
    assert_eq!(
        testkit::text_row_segments(&path).expect("segments"),
        (documents, 0),
        "a rebuilt row kept raw terms"
    );
    let rebuilt = text_rows(&path);
    assert_eq!(
        rebuilt.keys().collect::<Vec<_>>(),
        mixed.keys().collect::<Vec<_>>()
    );
    let grew: Vec<_> = rebuilt.iter().filter(|(k, &n)| n > mixed[k]).collect();
    assert!(grew.is_empty(), "rows grew: {grew:?}");
    let shrank = rebuilt.iter().filter(|(k, &n)| n < mixed[k]).count();
    assert_eq!(
        shrank as u64, raw,
        "the rows that were raw shrank, and only they"
    );
    let (raw_bytes, compressed_bytes): (usize, usize) =
        (mixed.values().sum(), rebuilt.values().sum::<usize>());
    assert!(
        compressed_bytes < raw_bytes,
        "{compressed_bytes} >= {raw_bytes}"
    );

    let reader = Store::open_read_only(&path).expect("read-only");
    assert_eq!(
        answers(&reader, documents),
        before,
        "a read-only search changed"
    );
    drop(reader);

    // Regression (first build of schema 10): the batch that trains the table compressed
    // the terms of its later revisions only from the next batch on. All in one batch: the
    // revisions after the one that trains the table are compressed.
    let batched = dir.path().join("batched.redb");
    {
        let store = Store::open(&batched, options.clone()).expect("open");
        let ops = (0..documents).map(|d| Op::Upsert(document(d))).collect();
        for outcome in store.write_batch(ops).expect("write_batch") {
            assert!(outcome.is_ok(), "{outcome:?}");
        }
        assert_eq!(answers(&store, documents), before, "a search changed");
        assert!(store.verify().expect("verify").is_ok());
    }
    let (compressed, raw) = testkit::text_row_segments(&batched).expect("segments");
    assert!(
        compressed >= 200 && compressed + raw == documents,
        "one batch: {compressed} compressed, {raw} raw"
    );

    // A schema-9 file (raw terms beside a trained table and compressed texts: what a
    // schema-9 build wrote) reads as it is, then is stamped 10 with a backup kept; its raw
    // terms read as they are and new ones are compressed.
    let nine = dir.path().join("nine.redb");
    std::fs::copy(&path, &nine).expect("copy");
    assert_eq!(
        testkit::rewrite_as_schema_9(&nine).expect("rewrite"),
        documents
    );
    assert_eq!(
        testkit::text_row_segments(&nine).expect("segments"),
        (0, documents)
    );
    {
        let reader = Store::open_read_only(&nine).expect("read-only schema 9");
        assert_eq!(
            answers(&reader, documents),
            before,
            "a schema-9 read changed"
        );
    }
    assert_eq!(
        support::schema_version(&nine),
        9,
        "a read-only open converted"
    );
    {
        let store = Store::open(&nine, options).expect("open schema 9");
        assert_eq!(answers(&store, documents), before, "a search changed");
        for d in documents..documents + 50 {
            store.upsert(document(d)).expect("upsert");
        }
        assert!(store.verify().expect("verify").is_ok());
    }
    assert_eq!(support::schema_version(&nine), 10);
    assert!(
        dir.path().join("nine.redb.schema9-backup").exists(),
        "no backup of the schema-9 file"
    );
    assert_eq!(
        testkit::text_row_segments(&nine).expect("segments"),
        (50, documents)
    );

    // A text row damaged on disk: the last byte of every row (a code of its last
    // segment's terms) changed. Text and hybrid searches answer or are `Corrupted`, never
    // a panic, and `verify` reports the rows.
    let damaged = dir.path().join("damaged.redb");
    std::fs::copy(&path, &damaged).expect("copy");
    flip_last_byte_of_every_text_row(&damaged);
    let store = Store::open_read_only(&damaged).expect("read-only");
    for word in WORDS {
        let text = support::no_panic("search_text", || {
            store.search_text(word, 10, &SearchOptions::default())
        });
        assert!(
            matches!(text, Ok(_) | Err(ReadError::Corrupted { .. })),
            "{text:?}"
        );
        let hybrid = support::no_panic("search_hybrid", || {
            store.search_hybrid(
                word,
                &support::minilm_like(1, DIMENSION),
                10,
                &SearchOptions::default(),
            )
        });
        assert!(
            matches!(hybrid, Ok(_) | Err(ReadError::Corrupted { .. })),
            "{hybrid:?}"
        );
    }
    let report = support::no_panic("verify", || store.verify()).expect("verify");
    assert!(!report.is_ok(), "verify found no damaged text row");
}

fn flip_last_byte_of_every_text_row(path: &Path) {
    let db = redb::Database::open(path).expect("redb");
    let txn = db.begin_write().expect("write");
    {
        let mut rows = txn.open_table(TEXT_DOCS).expect("text_docs");
        let all: Vec<(u64, Vec<u8>)> = rows
            .iter()
            .expect("iter")
            .map(|entry| {
                let (key, value) = entry.expect("row");
                (key.value(), value.value().to_vec())
            })
            .collect();
        for (key, mut row) in all {
            if let Some(last) = row.last_mut() {
                *last ^= 0x01;
            }
            rows.insert(key, row.as_slice()).expect("insert");
        }
    }
    txn.commit().expect("commit");
}
