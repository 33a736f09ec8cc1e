//! A document rewritten (or deleted) between the walk that read its chunks and the write of
//! their re-embedded vectors is never given the old texts' vectors: those writes are counted
//! as `superseded` and write nothing; the new revision's chunks come back to the walk (or
//! bring their own vectors, in a complete space), and a chunk the rewrite kept keeps the
//! vector written for it. No search of the space ever returns the old text.

use super::{open, revision, wide, WIDE};
use ratchetdb::{Chunk, Document, SearchOptions, SpaceVector, Version};

#[test]
fn a_rewrite_during_a_reembed_is_never_overwritten_by_an_older_vector() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(dir.path());
    store.upsert(revision("a", 1, 3)).expect("a");
    store.upsert(revision("b", 1, 2)).expect("b");
    store.upsert(revision("c", 1, 1)).expect("c");
    store.add_space("wide", "wide-test", WIDE).expect("add");
    let read = store
        .chunks_missing_vectors("wide", None, 100)
        .expect("walk");
    assert_eq!(read.len(), 6);

    // Meanwhile: "a" rewritten (chunk 0 kept, the others new), "b" deleted.
    let kept = "a v1 c0".to_owned();
    store
        .upsert(
            Document::new("s", "a", Version::number(2))
                .with_chunk(Chunk::new(kept.clone(), crate::common::vector(&kept)))
                .with_chunk(Chunk::new("a v2 c1", crate::common::vector("a v2 c1"))),
        )
        .expect("rewrite a");
    store
        .delete("s", "b", Version::number(2))
        .expect("delete b");

    let vectors: Vec<SpaceVector> = read
        .iter()
        .map(|c| SpaceVector::for_chunk(c, wide(&c.text)))
        .collect();
    let outcome = store.write_space_vectors("wide", vectors).expect("write");
    // a's c1 and c2, b's two: superseded. a's kept c0 and c: written.
    assert_eq!(
        (outcome.written, outcome.superseded, outcome.present),
        (2, 4, 0)
    );
    let missing = store
        .chunks_missing_vectors("wide", None, 100)
        .expect("walk");
    let texts: Vec<&str> = missing.iter().map(|c| c.text.as_str()).collect();
    assert_eq!(texts, ["a v2 c1"], "only the new chunk lacks a vector");
    // The old texts are in no answer of the space.
    let hits = store
        .search(
            &wide("a v1 c1"),
            10,
            &SearchOptions::default().space("wide"),
        )
        .expect("search");
    let texts: Vec<&str> = hits.iter().map(|h| h.text.as_str()).collect();
    assert_eq!(texts.len(), 2, "{texts:?}");
    assert!(
        texts.contains(&kept.as_str()) && texts.contains(&"c v1 c0"),
        "{texts:?}"
    );
    let report = store.verify().expect("verify");
    assert!(report.is_ok(), "{:#?}", report.violations);

    // A late write of the superseded vectors, after the space is filled: still nothing.
    let fill: Vec<SpaceVector> = missing
        .iter()
        .map(|c| SpaceVector::for_chunk(c, wide(&c.text)))
        .collect();
    assert_eq!(
        store
            .write_space_vectors("wide", fill)
            .expect("fill")
            .written,
        1
    );
    let late: Vec<SpaceVector> = read
        .iter()
        .map(|c| SpaceVector::for_chunk(c, wide(&c.text)))
        .collect();
    let outcome = store.write_space_vectors("wide", late).expect("late");
    assert_eq!(
        (outcome.written, outcome.superseded, outcome.present),
        (0, 4, 2)
    );
    let report = store.verify().expect("verify");
    assert!(report.is_ok(), "{:#?}", report.violations);
}
