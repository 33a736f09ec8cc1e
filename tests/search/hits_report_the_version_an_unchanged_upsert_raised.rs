//! Regression: once a search hit took its document's version from the chunks row (schema 4,
//! issue 17), an upsert of a newer version with the same content (`Outcome::Unchanged`,
//! which raises the stored version and touches no chunk) left the chunks row at the old
//! version, and hits reported it (`verify` reported the disagreement). The Unchanged path
//! now writes the chunks row again: vector and text hits report the raised version, for a
//! document whose chunks row fits a page and for one split into its vectors row's pages
//! (384-d vectors, eight chunks), and `verify` stays clean.

use crate::search_support;

use ratchetdb::{Chunk, Document, Outcome, SearchOptions, Store, Version};
use search_support::{assert_verified, normalized, open, random_vector, settle, Rng};

const DIM: usize = 384;

fn document(id: &str, version: u64, vectors: &[Vec<f32>]) -> Document {
    let mut doc = Document::new("notes", id, Version::number(version));
    for (p, v) in vectors.iter().enumerate() {
        doc = doc.with_chunk(Chunk::new(
            format!("{id} chunk {p} ratchet pawl ").repeat(20),
            v.clone(),
        ));
    }
    doc
}

fn assert_hits_report(store: &Store, id: &str, vectors: &[Vec<f32>], version: u64) {
    for (p, v) in vectors.iter().enumerate() {
        for options in [
            SearchOptions::default(),
            SearchOptions::default().exact(true),
        ] {
            let hits = store.search(v, 1, &options).expect("search");
            let hit = hits.first().expect("a hit");
            assert_eq!(
                (hit.id.as_str(), hit.position, hit.version),
                (id, p as u32, Version::number(version)),
                "vector hit of {id} chunk {p}"
            );
        }
    }
    let hits = store
        .search_text(id, 50, &SearchOptions::default())
        .expect("text search");
    let mine: Vec<_> = hits.iter().filter(|h| h.id == id).collect();
    assert_eq!(mine.len(), vectors.len(), "text hits of {id}");
    assert!(
        mine.iter().all(|h| h.version == Version::number(version)),
        "text hits of {id}: {mine:?}"
    );
}

#[test]
fn hits_report_the_version_an_unchanged_upsert_raised() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(dir.path());
    let mut rng = Rng::new(17);
    let docs: Vec<(&str, Vec<Vec<f32>>)> = [("small", 1usize), ("spilled", 8)]
        .into_iter()
        .map(|(id, n)| {
            let vectors = (0..n)
                .map(|_| normalized(random_vector(&mut rng, DIM)))
                .collect();
            (id, vectors)
        })
        .collect();
    for (id, vectors) in &docs {
        store.upsert(document(id, 3, vectors)).expect("write");
    }
    settle(&store);
    for (id, vectors) in &docs {
        assert_hits_report(&store, id, vectors, 3);
        // 3 -> 1000: the version's encoding grows from one byte to three, so the chunks row
        // is encoded again; 1000 -> 2000: as long, so only its header's bytes change.
        for version in [1000, 2000] {
            let outcome = store
                .upsert(document(id, version, vectors))
                .expect("redeliver");
            assert!(matches!(outcome, Outcome::Unchanged { .. }), "{outcome:?}");
            settle(&store);
            assert_hits_report(&store, id, vectors, version);
        }
    }
    assert_verified(&store, "after the redeliveries");
}
