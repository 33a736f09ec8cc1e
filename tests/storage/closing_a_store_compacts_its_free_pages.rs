//! Closing a store compacts its file when enough of it is free (`Options::compact_on_close`,
//! the default): redb grows a file by doubling it and keeps the pages copy-on-write frees
//! inside it, so after a bulk load and a large delete much of the file is free. The file
//! shrinks on close, and everything in it reads as before: every live document, no deleted
//! one, a clean `verify`, vector and text searches. With the option off the free pages stay,
//! and a later session that does not grow the file leaves them too;
//! a reader beside the writer reads the same contents after the writer compacted; a
//! snapshot alive when the store is dropped errs (the store is closed, as before) and the
//! file stays whole; the snapshot the store's searches share (kept until the next commit)
//! does not keep the file from compacting when the store closes right after a search.

use crate::support::free_bytes;
use ratchetdb::{
    Chunk, Document, Op, Options, SearchOptions, Store, Version, COMPACT_ON_CLOSE_MIN_FREE,
};
use std::collections::BTreeMap;
use std::path::Path;

const DOCS: u64 = 1200;
const DIM: usize = 16;

fn vector(seed: u64) -> Vec<f32> {
    (0..DIM as u64)
        .map(|d| 1.0 + ((seed * 31 + d * 7) % 13) as f32)
        .collect()
}

/// Document `n` at version 1: two chunks of about 2 KB each.
fn doc(n: u64) -> Document {
    let mut d = Document::new("s", format!("doc-{n:05}"), Version::number(1));
    for c in 0..2 {
        let words: Vec<String> = (0..300)
            .map(|w| format!("w{}", (n * 7 + c * 3 + w) % 997))
            .collect();
        d = d.with_chunk(Chunk::new(
            format!("doc {n} chunk {c} {}", words.join(" ")),
            vector(n * 2 + c),
        ));
    }
    d
}

fn file_len(path: &Path) -> u64 {
    std::fs::metadata(path).expect("file").len()
}

/// The file at `path`, `open_len` bytes while its store was open, shrank on close and keeps
/// less free than compaction looks for.
fn assert_compacted(path: &Path, open_len: u64, when: &str) {
    let closed_len = file_len(path);
    let free = free_bytes(path);
    println!("{when}: file while open {open_len} bytes, after close {closed_len} ({free} free)");
    assert!(
        closed_len < open_len,
        "{when}: the file did not shrink: {open_len} -> {closed_len}"
    );
    assert!(
        free < COMPACT_ON_CLOSE_MIN_FREE && free * 8 < closed_len,
        "{when}: {free} of {closed_len} bytes still free"
    );
}

/// Writes every document, then deletes all but every fourth: returns what is left, by id,
/// with each document's first chunk's text.
fn load_then_delete(store: &Store) -> BTreeMap<String, String> {
    let all: Vec<Document> = (0..DOCS).map(doc).collect();
    for batch in all.chunks(200) {
        let ops = batch.iter().cloned().map(Op::Upsert).collect();
        for outcome in store.write_batch(ops).expect("batch") {
            outcome.expect("upsert");
        }
    }
    let deletes: Vec<Op> = (0..DOCS)
        .filter(|n| n % 4 != 0)
        .map(|n| Op::Delete {
            source: "s".into(),
            id: format!("doc-{n:05}"),
            version: Version::number(2),
        })
        .collect();
    for outcome in store.write_batch(deletes).expect("deletes") {
        outcome.expect("delete");
    }
    all.iter()
        .enumerate()
        .filter(|(n, _)| n % 4 == 0)
        .map(|(_, d)| (d.id.clone(), d.chunks[0].text.clone()))
        .collect()
}

/// The store at `path` holds exactly `live` (and no deleted document), `verify` is clean,
/// and vector and text searches find a live document's chunk.
fn assert_contents(path: &Path, live: &BTreeMap<String, String>) {
    let store = Store::open(path, Options::default().compact_on_close(false)).expect("reopen");
    for n in 0..DOCS {
        let id = format!("doc-{n:05}");
        let got = store.get("s", &id).expect("get");
        match live.get(&id) {
            Some(text) => {
                let got = got.unwrap_or_else(|| panic!("{id} lost"));
                assert_eq!(&got.chunks[0].text, text, "{id}");
            }
            None => assert!(
                got.is_none_or(|d| d.deleted),
                "{id} was deleted, reads as live"
            ),
        }
    }
    let report = store.verify().expect("verify");
    assert!(report.violations.is_empty(), "{report:?}");
    assert_eq!(report.documents, live.len() as u64);
    assert!(store.wait_for_index(std::time::Duration::from_secs(60)));
    let hit = &store
        .search(&vector(8 * 2), 1, &SearchOptions::default().exact(true))
        .expect("search")[0];
    assert!(live.contains_key(&hit.id), "{hit:?}");
    let text_hits = store
        .search_text("doc 8 chunk 0", 3, &SearchOptions::default())
        .expect("text search");
    assert!(text_hits.iter().all(|h| live.contains_key(&h.id)));
    assert_eq!(text_hits[0].id, "doc-00008");
}

#[test]
fn closing_a_store_with_many_free_pages_compacts_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("db.redb");
    let store = Store::open(&path, Options::default()).expect("open");
    let live = load_then_delete(&store);
    let open_len = file_len(&path);
    drop(store);
    assert_compacted(&path, open_len, "after a bulk load and deletes");
    assert_contents(&path, &live);
}

#[test]
fn closing_with_compact_on_close_off_keeps_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("db.redb");
    let store = Store::open(&path, Options::default().compact_on_close(false)).expect("open");
    let live = load_then_delete(&store);
    drop(store);
    // redb's own close may trim free pages at the very end of the file; the rest stay.
    let closed_len = file_len(&path);
    let free = free_bytes(&path);
    assert!(
        free >= COMPACT_ON_CLOSE_MIN_FREE && free * 8 >= closed_len,
        "{free} of {closed_len} bytes free: compacted, or the scenario frees too little"
    );
    assert_contents(&path, &live);
}

#[test]
fn a_reader_beside_the_writer_reads_the_same_contents_after_the_writer_compacted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("db.redb");
    let writer = Store::open(&path, Options::default()).expect("open");
    let reader = Store::open_read_only(&path).expect("reader");
    let live = load_then_delete(&writer);
    let open_len = file_len(&path);
    drop(writer);
    let closed_len = file_len(&path);
    println!("beside a reader: file while open {open_len} bytes, after close {closed_len}");
    assert!(
        closed_len < open_len,
        "the writer did not compact beside an idle reader: {open_len} -> {closed_len}"
    );
    for n in (0..DOCS).step_by(7) {
        let id = format!("doc-{n:05}");
        let got = reader.get("s", &id).expect("reader get");
        match live.get(&id) {
            Some(text) => assert_eq!(&got.expect("live").chunks[0].text, text, "{id}"),
            None => assert!(got.is_none_or(|d| d.deleted), "{id}"),
        }
    }
    drop(reader);
    assert_contents(&path, &live);
}

#[test]
fn a_snapshot_alive_when_the_store_is_dropped_reads_or_errs_and_the_file_stays_whole() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("db.redb");
    let store = Store::open(&path, Options::default()).expect("open");
    let live = load_then_delete(&store);
    let snapshot = store.snapshot().expect("snapshot");
    drop(store);
    // The store closed under the snapshot: its reads are refused with a typed error (or,
    // were they served, would be the snapshot's contents), never a panic.
    let first = live.keys().next().expect("a live document");
    match snapshot.get("s", first) {
        Ok(got) => assert_eq!(&got.expect("live").chunks[0].text, &live[first]),
        Err(e) => println!("a snapshot read after the close: {e}"),
    }
    drop(snapshot);
    // The snapshot's read transaction was live at the close: redb refused the compaction.
    let free = free_bytes(&path);
    assert!(
        free >= COMPACT_ON_CLOSE_MIN_FREE,
        "compacted under a live snapshot ({free} bytes free)"
    );
    assert_contents(&path, &live);
}

/// Regression: the searches' shared snapshot is a live read transaction until the next
/// commit; the close must end it before compacting, or redb refuses the compaction.
#[test]
fn closing_right_after_a_search_still_compacts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("db.redb");
    let store = Store::open(&path, Options::default()).expect("open");
    let live = load_then_delete(&store);
    let open_len = file_len(&path);
    let hits = store
        .search(&vector(8 * 2), 3, &SearchOptions::default())
        .expect("search");
    assert!(hits.iter().all(|h| live.contains_key(&h.id)));
    let text_hits = store
        .search_text("doc 8 chunk 0", 3, &SearchOptions::default())
        .expect("text search");
    assert_eq!(text_hits[0].id, "doc-00008");
    drop(store);
    assert_compacted(&path, open_len, "closed right after a search");
    assert_contents(&path, &live);
}

/// A session that only reads (or writes without growing the file) does not look for free
/// pages: the free pages a bulk load left while the option was off stay until a session
/// grows the file.
#[test]
fn a_session_that_does_not_grow_the_file_leaves_it_as_it_is() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("db.redb");
    let store = Store::open(&path, Options::default().compact_on_close(false)).expect("open");
    let live = load_then_delete(&store);
    drop(store);
    let store = Store::open(&path, Options::default()).expect("reopen");
    let first = live.keys().next().expect("a live document");
    assert!(store.get("s", first).expect("get").is_some());
    drop(store);
    // (redb's own close may trim a few free pages at the very end; the bulk stays.)
    let (len, free) = (file_len(&path), free_bytes(&path));
    assert!(
        free >= COMPACT_ON_CLOSE_MIN_FREE && free * 8 >= len,
        "{free} of {len} bytes free: the read-only session compacted"
    );
    assert_contents(&path, &live);
}
