//! A read-only store opened beside a writer (another redb handle on the file, locked as
//! another process's would be) follows the writer's commits: it learns the dimension and
//! model the writer records after the reader opened, each read sees every commit the
//! writer acknowledged before it started, its vector index follows the changelog in commit
//! order (a search never returns a chunk a commit in its snapshot superseded, and the index
//! agrees with the rows), it keeps reading the last commit after the writer closes, and it
//! follows the next writer that opens the file.

use ratchetdb::{Chunk, Document, Options, SearchOptions, Store, Version};
use std::collections::BTreeMap;
use std::time::Duration;

fn vector(seed: u64) -> Vec<f32> {
    (0..4)
        .map(|d| 1.0 + ((seed * 7 + d * 5) % 11) as f32)
        .collect()
}

/// Document `id` at `version`: `chunks` chunks whose texts name the version.
fn doc(id: &str, version: u64, chunks: usize) -> Document {
    let mut d = Document::new("s", id, Version::number(version));
    for c in 0..chunks {
        d = d.with_chunk(Chunk::new(
            format!("{id} v{version} c{c}"),
            vector(version * 10 + c as u64),
        ));
    }
    d
}

/// Every live chunk a search can return, as (id, version named in the text).
fn searched(store: &Store) -> BTreeMap<String, Vec<u64>> {
    let hits = store
        .search(&vector(1), 1000, &SearchOptions::default())
        .unwrap();
    let mut by_doc: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for hit in hits {
        let version: u64 = hit.text.split(' ').nth(1).unwrap()[1..].parse().unwrap();
        assert_eq!(hit.version, Version::number(version), "{hit:?}");
        by_doc.entry(hit.id).or_default().push(version);
    }
    by_doc
}

#[test]
fn a_reader_follows_the_writers_commits_and_the_next_writer() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.redb");
    let writer = Store::open(&path, Options::default()).unwrap();
    let reader = Store::open_read_only(&path).unwrap();
    assert_eq!(reader.dimension(), None);
    assert_eq!(reader.model(), None);
    assert!(reader
        .search(&vector(1), 5, &SearchOptions::default())
        .unwrap()
        .is_empty());

    // The writer fixes the dimension and records a model after the reader opened.
    drop(writer);
    let writer = Store::open(&path, Options::default().model("m")).unwrap();
    writer.upsert(doc("a", 1, 3)).unwrap();
    let hits = reader
        .search(&vector(1), 5, &SearchOptions::default())
        .unwrap();
    assert_eq!(hits.len(), 3);
    assert_eq!(reader.dimension(), Some(4));
    assert_eq!(reader.model(), Some("m"));

    // Each acknowledged commit is visible to the next read, and searches see exactly the
    // live revision of every document: one version, all of its chunks.
    let mut latest: BTreeMap<String, (u64, usize)> = BTreeMap::new();
    latest.insert("a".into(), (1, 3));
    for step in 2..120u64 {
        let id = ["a", "b", "c", "d"][(step % 4) as usize];
        let chunks = 1 + (step % 5) as usize;
        if step % 9 == 0 {
            writer.delete("s", id, Version::number(step)).unwrap();
            latest.remove(id);
        } else {
            writer.upsert(doc(id, step, chunks)).unwrap();
            latest.insert(id.to_string(), (step, chunks));
        }
        let stored = reader.get("s", id).unwrap().unwrap();
        assert_eq!(
            stored.version,
            Version::number(step),
            "get after commit {step}"
        );
        let found = searched(&reader);
        let expected: BTreeMap<String, Vec<u64>> = latest
            .iter()
            .map(|(id, &(version, chunks))| (id.clone(), vec![version; chunks]))
            .collect();
        assert_eq!(found, expected, "search after commit {step}");
    }
    assert!(reader.wait_for_index(Duration::from_secs(30)));
    let info = reader.index_info();
    let writer_info = {
        assert!(writer.wait_for_index(Duration::from_secs(30)));
        writer.index_info()
    };
    assert!(info.loaded);
    assert_eq!(info.applied_commit, writer_info.applied_commit);
    assert_eq!(info.live_vectors, writer_info.live_vectors);
    let report = reader.verify().unwrap();
    assert!(report.is_ok(), "{:?}", report.violations);

    // The writer closes: the reader goes on reading its last commit.
    drop(writer);
    let before = searched(&reader);
    assert_eq!(reader.stats().unwrap().documents as usize, latest.len());
    // A new writer takes over; the reader follows it.
    let next = Store::open(&path, Options::default()).unwrap();
    next.upsert(doc("e", 500, 2)).unwrap();
    next.delete("s", "b", Version::number(501)).unwrap();
    let after = searched(&reader);
    assert_eq!(after.get("e"), Some(&vec![500, 500]));
    assert!(!after.contains_key("b"));
    assert_eq!(before.get("a"), after.get("a"));
    let report = reader.verify().unwrap();
    assert!(report.is_ok(), "{:?}", report.violations);
}

#[test]
fn the_follower_brings_the_index_up_without_a_search() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.redb");
    let writer = Store::open(&path, Options::default().dimension(4)).unwrap();
    writer.upsert(doc("a", 1, 2)).unwrap();
    let reader = Store::open_read_only(&path).unwrap();
    assert!(reader.wait_for_index(Duration::from_secs(30)));
    for version in 2..40 {
        writer.upsert(doc("a", version, 3)).unwrap();
    }
    let target = {
        assert!(writer.wait_for_index(Duration::from_secs(30)));
        writer.index_info().applied_commit
    };
    // No read on the reader: its follower alone brings the index to the writer's commit.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while reader.index_info().applied_commit < target {
        assert!(
            std::time::Instant::now() < deadline,
            "the follower did not catch up"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(reader.index_info().live_vectors, 3);
}
