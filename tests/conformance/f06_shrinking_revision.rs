//! F6: a new revision of a document has fewer chunks than the stored one.
//!
//! A naive store upserts the new chunks by position and leaves the surplus old ones in place:
//! positions 5..8 of the old text stay retrievable forever. ratchetdb stamps every chunk of a
//! revision with a new generation and removes the surplus positions and their vectors in the
//! same transaction (I3: a live document with `chunk_count = n` has exactly positions
//! `0..n`, all of its current generation). Unchanged chunks keep their stored vector.

use crate::common;
use crate::fixture::Fixture;

use common::{assert_verified, counters};
use ratchetdb::{Document, Outcome, Store, Version};

crate::conformance!(
    nine_chunks_then_five_leaves_exactly_five,
    shrinking_to_no_chunks_removes_every_chunk_but_keeps_the_document
);

fn doc(version: u64, texts: &[String]) -> Document {
    common::document("handbook", "leave-policy", Version::number(version), texts)
}

fn stored(store: &Store) -> ratchetdb::StoredDocument {
    common::stored_with_vectors(store, "handbook", "leave-policy")
}

fn nine_chunks_then_five_leaves_exactly_five(backend: &dyn Fixture) {
    let store = backend.open("db");
    let old: Vec<String> = (0..9).map(|p| format!("section {p}")).collect();
    assert!(matches!(
        store.upsert(doc(1, &old)).unwrap(),
        Outcome::Written {
            chunks_written: 9,
            ..
        }
    ));
    assert_verified(&store);
    let first = stored(&store);
    assert_eq!(first.chunks.len(), 9);
    let stats = store.stats().unwrap();
    assert_eq!((stats.chunks, stats.vectors), (9, 9));

    // Revision 2: sections 0..5 with section 2 rewritten; sections 5..8 are gone.
    let mut new: Vec<String> = old[..5].to_vec();
    new[2] = "section 2, rewritten".to_string();
    let before = counters(&store);
    let outcome = store.upsert(doc(2, &new)).unwrap();
    let Outcome::Written { generation, .. } = outcome else {
        panic!("{outcome:?}")
    };
    assert!(generation > first.generation);
    assert_eq!(
        outcome,
        Outcome::Written {
            generation,
            chunks_written: 1,
            chunks_reused: 4,
            chunks_removed: 4,
        }
    );
    let mut expected = before;
    expected.written_newer += 1;
    expected.chunks_written += 1;
    expected.chunks_reused += 4;
    expected.chunks_removed += 4;
    expected.commits += 1;
    assert_eq!(counters(&store), expected);
    assert_verified(&store);

    let second = stored(&store);
    assert_eq!(second.version, Version::number(2));
    assert!(!second.deleted);
    assert_eq!(second.generation, generation);
    let texts: Vec<String> = second.chunks.iter().map(|c| c.text.clone()).collect();
    assert_eq!(texts, new);
    for (position, chunk) in second.chunks.iter().enumerate() {
        assert_eq!(chunk.position as usize, position);
        assert_eq!(chunk.generation, generation, "position {position}");
    }
    // Unchanged sections kept their vector row; the rewritten one has a new one.
    for position in [0, 1, 3, 4] {
        assert_eq!(
            second.chunks[position].vector_id, first.chunks[position].vector_id,
            "position {position}"
        );
        assert_eq!(
            second.chunks[position].vector,
            first.chunks[position].vector
        );
    }
    let old_ids: Vec<u64> = first.chunks.iter().map(|c| c.vector_id).collect();
    assert!(!old_ids.contains(&second.chunks[2].vector_id));
    // The surplus vectors are gone: only the five live ones remain anywhere in the file.
    let stats = store.stats().unwrap();
    assert_eq!((stats.documents, stats.chunks, stats.vectors), (1, 5, 5));
    let report = store.verify().unwrap();
    assert_eq!((report.chunks, report.vectors), (5, 5));
}

fn shrinking_to_no_chunks_removes_every_chunk_but_keeps_the_document(backend: &dyn Fixture) {
    let store = backend.open("db");
    let old: Vec<String> = (0..5).map(|p| format!("line {p}")).collect();
    store.upsert(doc(1, &old)).unwrap();
    assert_verified(&store);

    let before = counters(&store);
    let outcome = store.upsert(doc(2, &[])).unwrap();
    let Outcome::Written { generation, .. } = outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(
        outcome,
        Outcome::Written {
            generation,
            chunks_written: 0,
            chunks_reused: 0,
            chunks_removed: 5,
        }
    );
    let mut expected = before;
    expected.written_newer += 1;
    expected.chunks_removed += 5;
    expected.commits += 1;
    assert_eq!(counters(&store), expected);
    assert_verified(&store);
    let empty = stored(&store);
    assert_eq!((empty.version, empty.deleted), (Version::number(2), false));
    assert!(empty.chunks.is_empty());
    let stats = store.stats().unwrap();
    assert_eq!((stats.documents, stats.chunks, stats.vectors), (1, 0, 0));
}
