//! A document's vector ids are its internal id plus a slot that is never reused, so a
//! document rewritten millions of times runs out of slots. Its next revision then moves it
//! to a new internal id: every vector gets a new id (kept vectors too), every old id is gone
//! from the rows and the index, and nothing else changes for a reader. Reaching the end of
//! the slot space by writing takes ~16.7M new vectors, so the test sets the document's slot
//! counter near the end with `testkit::set_next_slot` while the store is closed.

use crate::search_support;

use ratchetdb::testkit::{set_next_slot, vector_owner, SLOTS_PER_DOC};
use ratchetdb::{Chunk, Document, Outcome, SearchOptions, Store, Version};
use search_support::{assert_verified, normalized, open, random_vector, settle, Rng};
use std::collections::HashSet;

const DIM: usize = 8;

fn doc(version: u64, chunks: &[(&str, &[f32])]) -> Document {
    let mut doc = Document::new("notes", "a", Version::number(version));
    for (text, vector) in chunks {
        doc = doc.with_chunk(Chunk::new(*text, vector.to_vec()));
    }
    doc
}

fn ids(store: &Store) -> Vec<u64> {
    let stored = store.get("notes", "a").expect("get").expect("document a");
    stored.chunks.iter().map(|c| c.vector_id).collect()
}

/// Every chunk of `a` is found by its own vector, in every search mode, and no hit carries
/// an id outside `live`.
fn assert_searchable(store: &Store, texts: &[(&str, Vec<f32>)], live: &HashSet<u64>, when: &str) {
    for options in [
        SearchOptions::default().exact(true),
        SearchOptions::default(),
        SearchOptions::default().ef(64),
    ] {
        for (text, vector) in texts {
            let hits = store.search(vector, 3, &options).expect("search");
            assert_eq!(
                hits.first().map(|h| h.text.as_str()),
                Some(*text),
                "{when}: {options:?} did not find {text:?} first"
            );
            for hit in &hits {
                assert!(
                    hit.source != "notes" || hit.text != "t2",
                    "{when}: removed chunk returned"
                );
            }
        }
        let all = store
            .search(&texts[0].1, 100, &options)
            .expect("search all");
        assert_eq!(
            all.len(),
            live.len() + 1,
            "{when}: every live chunk (and b's) found"
        );
    }
}

#[test]
fn slot_space_exhausted_moves_document_to_new_id() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("search.redb");
    let mut rng = Rng::new(7);
    let v: Vec<Vec<f32>> = (0..8)
        .map(|_| normalized(random_vector(&mut rng, DIM)))
        .collect();

    let store = open(dir.path());
    store
        .upsert(doc(1, &[("t0", &v[0]), ("t1", &v[1]), ("t2", &v[2])]))
        .expect("first revision");
    store
        .upsert(
            Document::new("other", "b", Version::number(1))
                .with_chunk(Chunk::new("b0", v[7].clone())),
        )
        .expect("b");
    let before = ids(&store);
    let old_owner = vector_owner(before[0]);
    assert!(before.iter().all(|id| vector_owner(*id) == old_owner));
    drop(store);

    // Three slots left; the next revision keeps two vectors and needs four new ones.
    let left = 3;
    let next_slot = u32::try_from(SLOTS_PER_DOC - left).expect("fits");
    set_next_slot(&path, "notes", "a", next_slot).expect("set the slot counter");
    let store = open(dir.path());
    assert_verified(&store, "after moving the slot counter");
    let old_snapshot = store.snapshot().expect("snapshot");

    // A revision that fits in the slots left keeps the internal id.
    let outcome = store
        .upsert(doc(2, &[("t0", &v[0]), ("t1", &v[1]), ("t3", &v[3])]))
        .expect("second revision");
    assert!(
        matches!(
            outcome,
            Outcome::Written {
                chunks_written: 1,
                chunks_reused: 2,
                ..
            }
        ),
        "{outcome:?}"
    );
    let second = ids(&store);
    assert_eq!(&second[..2], &before[..2], "kept vectors keep their ids");
    assert_eq!(vector_owner(second[2]), old_owner);

    // The next needs 4 new slots with 2 left: the document moves.
    let outcome = store
        .upsert(doc(
            3,
            &[
                ("t1", &v[1]),
                ("t4", &v[4]),
                ("t0", &v[0]),
                ("t5", &v[5]),
                ("t6", &v[6]),
                ("t3b", &v[3]),
            ],
        ))
        .expect("third revision");
    assert!(
        matches!(
            outcome,
            Outcome::Written {
                chunks_written: 4,
                chunks_reused: 2,
                chunks_removed: 0,
                ..
            }
        ),
        "{outcome:?}"
    );
    let third = ids(&store);
    let new_owner = vector_owner(third[0]);
    assert_ne!(new_owner, old_owner, "the document has a new internal id");
    assert!(third.iter().all(|id| vector_owner(*id) == new_owner));
    assert_eq!(
        third.iter().collect::<HashSet<_>>().len(),
        third.len(),
        "distinct ids"
    );
    assert!(
        third.iter().all(|id| !second.contains(id)),
        "no old id is reused"
    );
    let stored = store.get("notes", "a").expect("get").expect("a");
    let texts: Vec<&str> = stored.chunks.iter().map(|c| c.text.as_str()).collect();
    assert_eq!(texts, ["t1", "t4", "t0", "t5", "t6", "t3b"]);
    assert_eq!(stored.version, Version::number(3));
    let with_vectors = store
        .snapshot()
        .expect("snapshot")
        .get_with_vectors("notes", "a")
        .expect("get")
        .expect("a");
    for (chunk, expected) in with_vectors
        .chunks
        .iter()
        .zip([&v[1], &v[4], &v[0], &v[5], &v[6], &v[3]])
    {
        assert_eq!(
            chunk.vector.as_ref(),
            Some(expected),
            "{}: vector carried over bit for bit",
            chunk.text
        );
    }
    let stats = store.stats().expect("stats");
    assert_eq!(stats.chunks, 7);
    assert_eq!(stats.vectors, 7);
    assert_verified(&store, "after the move");
    settle(&store);
    let live: HashSet<u64> = third.iter().copied().collect();
    let queries: Vec<(&str, Vec<f32>)> = vec![
        ("t1", v[1].clone()),
        ("t4", v[4].clone()),
        ("t0", v[0].clone()),
    ];
    assert_searchable(&store, &queries, &live, "after the move");

    // The snapshot taken before still reads the first revision whole.
    let old = old_snapshot.get("notes", "a").expect("old get").expect("a");
    assert_eq!(
        old.chunks.iter().map(|c| c.vector_id).collect::<Vec<_>>(),
        before
    );
    drop(old_snapshot);

    // The move survives a reopen (the index reloads from the rows) and a later revision
    // continues in the new slot space.
    drop(store);
    let store = open(dir.path());
    assert_verified(&store, "after reopening");
    assert_eq!(ids(&store), third);
    settle(&store);
    assert_searchable(&store, &queries, &live, "after reopening");
    store
        .upsert(doc(4, &[("t0", &v[0]), ("t7", &v[2])]))
        .expect("fourth revision");
    let fourth = ids(&store);
    assert_eq!(fourth[0], third[2], "t0 keeps its new id");
    assert_eq!(vector_owner(fourth[1]), new_owner);
    assert_verified(&store, "after a revision in the new slot space");
}
