//! Regression: once a search hit took its document's version from the chunks row (schema 4,
//! issue 17), an upsert of a newer version with the same content (`Outcome::Unchanged`,
//! which raises the stored version and touches no chunk) left the chunks row at the old
//! version, and hits reported it (`verify` reported the disagreement). The Unchanged path
//! now writes the chunks row again: vector and text hits report the raised version, for a
//! document whose chunks row fits a page, for one split into its vectors row's pages
//! (384-d vectors, eight chunks), and for one that rides whole in its vectors row's pages
//! (1024-d vectors, short texts: the vectors row is written again when the row grows), and
//! `verify` stays clean.

use crate::search_support;

use ratchetdb::{Chunk, Document, Outcome, SearchOptions, Store, Version};
use search_support::{assert_verified, normalized, open, random_vector, settle, Rng};

const DIM: usize = 384;

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
    redeliver(DIM, &[("small", 1), ("spilled", 8)], 20);
}

#[test]
fn hits_report_the_raised_version_of_a_row_riding_whole_in_its_vectors_row() {
    redeliver(1024, &[("riding", 2)], 1);
}

/// Writes each of `docs` (id, chunks) of `dim`-d vectors and texts `repeat` phrases long at
/// version 3, then redelivers the same content at 1000 and 2000.
fn redeliver(dim: usize, docs: &[(&'static str, usize)], repeat: usize) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(dir.path());
    let mut rng = Rng::new(17);
    let docs: Vec<(&str, Vec<Vec<f32>>)> = docs
        .iter()
        .map(|&(id, n)| {
            let vectors = (0..n)
                .map(|_| normalized(random_vector(&mut rng, dim)))
                .collect();
            (id, vectors)
        })
        .collect();
    let document = |id: &str, version: u64, vectors: &[Vec<f32>]| {
        let mut doc = Document::new("notes", id, Version::number(version));
        for (p, v) in vectors.iter().enumerate() {
            doc = doc.with_chunk(Chunk::new(
                format!("{id} chunk {p} ratchet pawl ").repeat(repeat),
                v.clone(),
            ));
        }
        doc
    };
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
