//! Regression: a vector the store refuses, made by the embedder during a re-embed (a NaN,
//! or all zeros under the cosine metric), came back as the guarded write's input error on
//! `vectors[i].vector`: the position in a batch the caller never saw, naming no chunk. Now
//! it is `ReembedError::Vector` naming the chunk's document (source and id) and position,
//! with the store's problem, and nothing of that batch is written.

use super::{open, revision, wide, WIDE};
use ratchetdb::{EmbedError, Embedder, ReembedError};

/// [`wide`], except for the text `bad`: `vector` for it.
struct BadFor {
    bad: String,
    vector: Vec<f32>,
}

impl Embedder for BadFor {
    fn name(&self) -> &str {
        "bad-for-one"
    }

    fn dimension(&self) -> usize {
        WIDE
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(texts
            .iter()
            .map(|t| {
                if *t == self.bad {
                    self.vector.clone()
                } else {
                    wide(t)
                }
            })
            .collect())
    }
}

#[test]
fn a_vector_the_store_refuses_names_the_chunk_it_was_made_for() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(dir.path());
    for d in 0..4 {
        store
            .upsert(revision(&format!("d{d}"), 1, 3))
            .expect("write");
    }
    store.add_space("wide", "bad-for-one", WIDE).expect("add");
    let mut nan = vec![1.0; WIDE];
    nan[2] = f32::NAN;
    for (what, vector) in [("NaN", nan), ("zero", vec![0.0; WIDE])] {
        let embedder = BadFor {
            // Revision texts are "{id} v{version} c{position}".
            bad: "d2 v1 c1".into(),
            vector,
        };
        match store.reembed("wide", &embedder, 100, &mut |_| {}) {
            Err(ReembedError::Vector {
                source_name,
                id,
                position,
                problem,
            }) => {
                assert_eq!(
                    (source_name.as_str(), id.as_str(), position),
                    ("s", "d2", 1),
                    "{what}"
                );
                assert!(problem.field.starts_with("vectors["), "{what}: {problem}");
            }
            other => panic!("a {what} vector: {other:?}"),
        }
        let space = store
            .spaces()
            .expect("spaces")
            .into_iter()
            .find(|s| s.name == "wide")
            .expect("wide");
        assert_eq!(space.vectors, 0, "{what}: the batch is not written");
    }
    let report = store.verify().expect("verify");
    assert!(report.is_ok(), "{:#?}", report.violations);
}
