//! A coded vectors row (schema 8) carrying the tail of its chunks row (the spill) keeps
//! serving the latest revision: a six-chunk document of MiniLM-like vectors (its row over a
//! page, coded, carrying part of its chunks row) and a three-chunk one (its row within a
//! page, coded, carrying its whole chunks row) are revised twice, keeping their vectors:
//! (a) new document metadata only, (b) a new text for the last chunk (the part in the
//! spill). After each step the rows are still coded and carry the spill the layout
//! promises, the six-chunk row is left as it was by (a), the vectors come back bit for bit
//! (under the same ids, but for (b)'s new chunk, which takes a new slot), `get`, exact and
//! graph hits and text hits show only the latest texts, and `verify` is clean, before and
//! after a reopen.

use crate::support;
use ratchetdb::{Chunk, Document, Options, SearchOptions, Store, Version};
use serde_json::json;
use std::collections::BTreeMap;
use std::path::Path;

const DIMENSION: usize = 384;

/// The chunks' texts of document `id` (`chunks` of them) whose last chunk is at `edit`.
fn texts(id: &str, chunks: usize, edit: u64) -> Vec<String> {
    (0..chunks)
        .map(|c| {
            let mut text = if id == "big" {
                format!("ratchet {id} chunk {c}: {}", "pawl and gear. ".repeat(4))
            } else {
                format!("ratchet {c}")
            };
            if c == chunks - 1 {
                text.push_str(&format!(" e{edit}"));
            }
            text
        })
        .collect()
}

fn vectors(id: &str, chunks: usize) -> Vec<Vec<f32>> {
    let base = if id == "big" { 100 } else { 200 };
    (0..chunks)
        .map(|c| support::minilm_like(base + c as u64, DIMENSION))
        .collect()
}

fn revision(id: &str, chunks: usize, version: u64, meta: u64, edit: u64) -> Document {
    let doc = Document::new("s", id, Version::number(version)).with_meta(json!({ "m": meta }));
    texts(id, chunks, edit)
        .into_iter()
        .zip(vectors(id, chunks))
        .fold(doc, |doc, (text, v)| doc.with_chunk(Chunk::new(text, v)))
}

/// What a document must show: its chunk count, version, metadata and last edit.
#[derive(Clone, Copy)]
struct Expected {
    chunks: usize,
    version: u64,
    meta: u64,
    edit: u64,
}

/// Each document's stored vectors as (vector id, bits), read back.
type Stored = BTreeMap<String, Vec<(u64, Vec<u32>)>>;

fn stored_vectors(store: &Store) -> Stored {
    let snapshot = store.snapshot().expect("snapshot");
    ["big", "small"]
        .iter()
        .map(|id| {
            let doc = snapshot
                .get_with_vectors("s", id)
                .expect("get")
                .expect("live");
            let vectors = doc
                .chunks
                .iter()
                .map(|c| {
                    (
                        c.vector_id,
                        support::bits(c.vector.as_deref().expect("vector")),
                    )
                })
                .collect();
            (id.to_string(), vectors)
        })
        .collect()
}

/// The store shows exactly `want` of each document, with the vectors `first` read.
fn shows(store: &Store, want: &BTreeMap<&str, Expected>, first: &Stored, when: &str) {
    let stored = stored_vectors(store);
    for (id, e) in want {
        let (now, then) = (&stored[*id], &first[*id]);
        assert_eq!(now.len(), then.len(), "{when}: {id}'s vectors");
        for (c, ((now_id, now_bits), (then_id, then_bits))) in now.iter().zip(then).enumerate() {
            assert!(
                now_bits == then_bits,
                "{when}: {id}#{c}'s vector, bit for bit"
            );
            if c + 1 < e.chunks || e.edit == 1 {
                assert_eq!(now_id, then_id, "{when}: {id}#{c} keeps its vector id");
            } else {
                // A new text is a new chunk: its vector (the same floats) takes a new slot.
                assert!(
                    then.iter().all(|(old, _)| old != now_id),
                    "{when}: {id}#{c}'s new chunk reuses the id {now_id}"
                );
            }
        }
    }
    let current = |id: &str, position: u32| -> String {
        let e = want[id];
        texts(id, e.chunks, e.edit)[position as usize].clone()
    };
    for (id, e) in want {
        let doc = store.get("s", id).expect("get").expect("live");
        assert_eq!(doc.version, Version::number(e.version), "{when}: {id}");
        assert_eq!(doc.meta, json!({ "m": e.meta }), "{when}: {id}");
        let got: Vec<&str> = doc.chunks.iter().map(|c| c.text.as_str()).collect();
        assert_eq!(got, texts(id, e.chunks, e.edit), "{when}: {id}'s texts");
    }
    let total: usize = want.values().map(|e| e.chunks).sum();
    for (id, e) in want {
        for (c, query) in vectors(id, e.chunks).iter().enumerate() {
            for options in [
                SearchOptions::default().exact(true),
                SearchOptions::default().ef(64),
            ] {
                let hits = store.search(query, 10, &options).expect("search");
                assert_eq!(hits.len(), total, "{when}");
                assert_eq!((hits[0].id.as_str(), hits[0].position), (*id, c as u32));
                for hit in &hits {
                    assert_eq!(hit.text, current(&hit.id, hit.position), "{when}: a hit");
                    assert_eq!(hit.version, Version::number(want[hit.id.as_str()].version));
                }
            }
        }
    }
    let text_hits = store
        .search_text("ratchet", 20, &SearchOptions::default())
        .expect("text search");
    assert_eq!(text_hits.len(), total, "{when}: text hits");
    for hit in &text_hits {
        assert_eq!(
            hit.text,
            current(&hit.id, hit.position),
            "{when}: a text hit"
        );
    }
    for (id, e) in want {
        let hits = store
            .search_text(&format!("e{}", e.edit), 20, &SearchOptions::default())
            .expect("text search");
        assert!(
            hits.iter()
                .any(|h| h.id == *id && h.position as usize == e.chunks - 1),
            "{when}: {id}'s edit e{} not found: {hits:?}",
            e.edit
        );
        if e.edit > 1 {
            let old = store
                .search_text("e1", 20, &SearchOptions::default())
                .expect("text search");
            assert!(
                old.iter().all(|h| h.id != *id),
                "{when}: {id}'s old text: {old:?}"
            );
        }
    }
    let report = store.verify().expect("verify");
    assert!(report.is_ok(), "{when}: {:#?}", report.violations);
}

/// A document's stored rows: the chunks table's part and the vectors row, by chunk count.
type Rows = BTreeMap<u32, (Vec<u8>, Vec<u8>)>;

/// The chunks and vectors rows of the closed file at `path`, keyed by their vector count.
fn rows(path: &Path) -> Rows {
    use redb::{ReadableDatabase, ReadableTable};
    const CHUNKS: redb::TableDefinition<u64, &[u8]> = redb::TableDefinition::new("doc_chunks");
    const VECTORS: redb::TableDefinition<u64, &[u8]> = redb::TableDefinition::new("doc_vectors");
    let db = redb::Database::open(path).expect("open with redb");
    let txn = db.begin_read().expect("read");
    let chunks = txn.open_table(CHUNKS).expect("chunks");
    let vectors = txn.open_table(VECTORS).expect("vectors");
    vectors
        .iter()
        .expect("iter")
        .map(|entry| {
            let (key, row) = entry.expect("row");
            let row = row.value().to_vec();
            let chunks = chunks
                .get(key.value())
                .expect("get")
                .expect("a chunks row")
                .value()
                .to_vec();
            let count = u32::from_le_bytes(row[0..4].try_into().expect("4 bytes"));
            (count, (chunks, row))
        })
        .collect()
}

/// The rows are coded and carry the spill the layout promises: part of the six-chunk
/// document's chunks row, all of the three-chunk one's.
fn assert_layout(rows: &Rows, first: &Stored, when: &str) {
    for (id, chunks, whole) in [("big", 6u32, false), ("small", 3, true)] {
        let (kept, row) = &rows[&chunks];
        let word = u32::from_le_bytes(row[4..8].try_into().expect("4 bytes"));
        assert_ne!(word & (1 << 31), 0, "{when}: {id}'s row is coded");
        let floats: Vec<Vec<f32>> = first[id]
            .iter()
            .map(|(_, bits)| bits.iter().map(|b| f32::from_bits(*b)).collect())
            .collect();
        let (alone, coded) = ratchetdb::testkit::vectors_row(&floats, true).expect("encode");
        assert!(coded);
        let spill = row.len() - alone.len();
        // The same coded vectors (the slots, which a new chunk changes, aside).
        let slots = 8 + 4 * chunks as usize;
        assert_eq!(row[..8], alone[..8], "{when}: {id}'s count and dimension");
        assert!(
            row[slots..alone.len()] == alone[slots..],
            "{when}: {id}'s coded vectors"
        );
        assert!(spill > 0, "{when}: {id}'s row carries a spill");
        assert_eq!(
            ratchetdb::testkit::spill_len(alone.len(), kept.len() + spill),
            spill,
            "{when}: {id}'s spill"
        );
        if whole {
            assert!(kept.is_empty(), "{when}: {id}'s whole chunks row rides");
        } else {
            assert!(!kept.is_empty(), "{when}: {id}'s chunks row rides in part");
        }
    }
}

#[test]
fn a_coded_vectors_row_carrying_a_spill_is_revised_in_place() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("db.redb");
    let mut want = BTreeMap::from([
        (
            "big",
            Expected {
                chunks: 6,
                version: 1,
                meta: 1,
                edit: 1,
            },
        ),
        (
            "small",
            Expected {
                chunks: 3,
                version: 1,
                meta: 1,
                edit: 1,
            },
        ),
    ]);
    let write = |want: &BTreeMap<&str, Expected>| {
        let store = Store::open(&path, Options::default()).expect("open");
        for (id, e) in want {
            store
                .upsert(revision(id, e.chunks, e.version, e.meta, e.edit))
                .expect("write");
        }
        store
    };

    let store = write(&want);
    let first = stored_vectors(&store);
    shows(&store, &want, &first, "first revision");
    drop(store);
    let initial = rows(&path);
    assert_layout(&initial, &first, "first revision");

    // (a) The documents' metadata only.
    for e in want.values_mut() {
        e.version = 2;
        e.meta = 2;
    }
    let store = write(&want);
    shows(&store, &want, &first, "metadata revision");
    drop(store);
    let after_meta = rows(&path);
    assert_layout(&after_meta, &first, "metadata revision");
    assert_eq!(
        after_meta[&6].1, initial[&6].1,
        "the six-chunk row's spill is its chunks row's tail, which new metadata leaves as it was"
    );

    // (b) A new text for each document's last chunk, the same vectors.
    for e in want.values_mut() {
        e.version = 3;
        e.edit = 2;
    }
    let store = write(&want);
    shows(&store, &want, &first, "new last text");
    drop(store);
    assert_layout(&rows(&path), &first, "new last text");

    let store = Store::open(&path, Options::default()).expect("reopen");
    shows(&store, &want, &first, "after reopening");
}
