//! Regression: `Store::reembed` zipped each batch's chunks with the vectors the embedder
//! returned, so an embedder (a trait anyone implements) returning fewer vectors than texts
//! had the batch's last chunks dropped without a word; the walk then handed them out
//! again, and again: the re-embed never returned. Now a count other than the texts' is
//! `ReembedError::VectorCount` (the embedder's name, both counts), and nothing of that
//! batch is written. The re-embed runs on a thread of its own here, so a loop fails the
//! test instead of hanging it.

use super::{open, reembed_within_a_minute, revision, wide, WIDE};
use ratchetdb::{EmbedError, Embedder, ReembedError};

/// Returns one vector fewer than it is given texts.
struct OneShort;

impl Embedder for OneShort {
    fn name(&self) -> &str {
        "one-short"
    }

    fn dimension(&self) -> usize {
        WIDE
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(texts.iter().skip(1).map(|t| wide(t)).collect())
    }
}

#[test]
fn an_embedder_returning_too_few_vectors_stops_the_reembed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(dir.path());
    for d in 0..6 {
        store
            .upsert(revision(&format!("d{d}"), 1, 3))
            .expect("write");
    }
    store.add_space("wide", "one-short", WIDE).expect("add");

    let result = reembed_within_a_minute(
        &store,
        "wide",
        OneShort,
        5,
        "it looped handing out the dropped chunks for ever",
    );
    match result {
        Err(ReembedError::VectorCount {
            embedder,
            texts,
            vectors,
        }) => {
            assert_eq!(embedder, "one-short");
            assert_eq!((texts, vectors), (5, 4));
        }
        other => panic!("too few vectors: {other:?}"),
    }
    let space = store
        .spaces()
        .expect("spaces")
        .into_iter()
        .find(|s| s.name == "wide")
        .expect("wide");
    assert_eq!(
        space.vectors, 0,
        "nothing of the batch is written: {space:?}"
    );
    let report = store.verify().expect("verify");
    assert!(report.is_ok(), "{:#?}", report.violations);
}
