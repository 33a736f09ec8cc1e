//! Regression: a re-embed followed its space by name alone. Dropped meanwhile and another
//! space added under the same name (another model, the same dimension), the running
//! re-embed went on writing its vectors into the new space: vectors of one model in a
//! space recorded as another's, which searches of it would score as if they were.
//!
//! Now a re-embed records the space's id when it begins and every guarded write checks it
//! in its own transaction: here the space is replaced from inside the embedder (between the
//! walk and the write of the second batch, the narrowest window there is), and from the
//! progress callback (between two batches); each time the re-embed stops with
//! `ReembedError::SpaceReplaced` naming the space, and the new space holds no vector.

use super::{open, revision, wide, Wide, WIDE};
use ratchetdb::{EmbedError, Embedder, ReembedError, Store};
use std::sync::atomic::{AtomicUsize, Ordering};

/// [`Wide`], that replaces space `s` (drop, then add under the same name for another
/// model) during its `replace_on`-th call.
struct Replacing {
    store: Store,
    calls: AtomicUsize,
    replace_on: usize,
}

fn replace(store: &Store) {
    store.drop_space("s").expect("drop");
    store
        .add_space("s", "another-model", WIDE)
        .expect("add again");
}

impl Embedder for Replacing {
    fn name(&self) -> &str {
        Wide.name()
    }

    fn dimension(&self) -> usize {
        WIDE
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if self.calls.fetch_add(1, Ordering::SeqCst) + 1 == self.replace_on {
            replace(&self.store);
        }
        Ok(texts.iter().map(|t| wide(t)).collect())
    }
}

fn new_space(store: &Store) -> ratchetdb::SpaceInfo {
    store
        .spaces()
        .expect("spaces")
        .into_iter()
        .find(|s| s.name == "s")
        .expect("the space")
}

#[test]
fn a_reembed_never_writes_into_a_space_added_again_under_its_name() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(dir.path());
    for d in 0..10 {
        store
            .upsert(revision(&format!("d{d}"), 1, 2))
            .expect("write");
    }

    // Replaced between the walk and the write of the second batch.
    store.add_space("s", "wide-test", WIDE).expect("add");
    let embedder = Replacing {
        store: store.clone(),
        calls: AtomicUsize::new(0),
        replace_on: 2,
    };
    match store.reembed("s", &embedder, 4, &mut |_| {}) {
        Err(ReembedError::SpaceReplaced { space }) => assert_eq!(space, "s"),
        other => panic!("a re-embed whose space was replaced mid-batch: {other:?}"),
    }
    let replaced = new_space(&store);
    assert_eq!(replaced.model, "another-model");
    assert_eq!(replaced.vectors, 0, "{replaced:?}");
    let report = store.verify().expect("verify");
    assert!(report.is_ok(), "{:#?}", report.violations);

    // Replaced between two batches, from the progress callback.
    store.drop_space("s").expect("drop");
    store.add_space("s", "wide-test", WIDE).expect("add");
    let other = store.clone();
    let mut batches = 0;
    let result = store.reembed("s", &Wide, 4, &mut |_| {
        batches += 1;
        if batches == 1 {
            replace(&other);
        }
    });
    match result {
        Err(ReembedError::SpaceReplaced { space }) => assert_eq!(space, "s"),
        other => panic!("a re-embed whose space was replaced between batches: {other:?}"),
    }
    assert_eq!(batches, 1);
    let replaced = new_space(&store);
    assert_eq!(replaced.model, "another-model");
    assert_eq!(replaced.vectors, 0, "{replaced:?}");
    let report = store.verify().expect("verify");
    assert!(report.is_ok(), "{:#?}", report.violations);
}
