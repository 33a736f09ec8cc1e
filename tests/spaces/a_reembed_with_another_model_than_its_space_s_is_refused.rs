//! Regression: `Store::reembed` checked only the embedder's dimension against the space's,
//! never its name against the model the space was added for, so an embedder of another
//! model of the same width filled the space with its vectors under the recorded model's
//! name (and any mix of the two, over a stopped and resumed re-embed). Now it is refused
//! before anything is embedded, with an `InputError` naming `embedder`, and the space and
//! the store are left as they were.

use super::{open, revision, Wide, WIDE};
use ratchetdb::{EmbedError, Embedder, ReadError, ReembedError};
use std::sync::atomic::{AtomicUsize, Ordering};

/// An embedder of another model, as wide as the space.
struct Impostor(AtomicUsize);

impl Embedder for Impostor {
    fn name(&self) -> &str {
        "impostor-model"
    }

    fn dimension(&self) -> usize {
        WIDE
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(texts.iter().map(|_| vec![1.0; WIDE]).collect())
    }
}

#[test]
fn a_reembed_with_another_model_than_its_space_s_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(dir.path());
    for d in 0..5 {
        store
            .upsert(revision(&format!("d{d}"), 1, 2))
            .expect("write");
    }
    store.add_space("wide", Wide.name(), WIDE).expect("add");
    let before = format!("{:?}", store.spaces().expect("spaces"));

    let impostor = Impostor(AtomicUsize::new(0));
    match store.reembed("wide", &impostor, 4, &mut |_| {}) {
        Err(ReembedError::Read(ReadError::Input(e))) => {
            assert_eq!(e.field, "embedder");
            assert!(
                e.problem.contains("impostor-model") && e.problem.contains("wide-test"),
                "{}",
                e.problem
            );
        }
        other => panic!("an embedder of another model: {other:?}"),
    }
    assert_eq!(impostor.0.load(Ordering::SeqCst), 0, "nothing is embedded");
    assert_eq!(format!("{:?}", store.spaces().expect("spaces")), before);

    // The space's own model fills it.
    let outcome = store
        .reembed("wide", &Wide, 4, &mut |_| {})
        .expect("reembed");
    assert!(outcome.complete);
}
