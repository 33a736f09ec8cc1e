//! Regression: a read-only store has two kinds of index pass, its follower's (every 20 ms)
//! and its applier's (woken when one of its snapshots learns a new recorded dimension, as
//! after a promotion). The two could overlap and finish out of order, the later one
//! recording that it covered fewer requests than the earlier one had: `wait_for_index`
//! then waited a minute for a pass that had already run and returned `false`
//! (`a_reader_opened_before_a_promotion_follows_it` failed so about once in a hundred runs).
//! Here a reader follows a writer through many promotions, each to another dimension, and
//! must settle after each: its index loaded, covering the writer's last commit, with every
//! live vector, and its searches answering in the new dimension. And a second bug the same
//! run showed: the reader kept every promoted space's index loaded (its vectors in memory
//! twice, growing with each promotion) until a `verify`; it is forgotten as the reader
//! catches up.

use super::{live_texts, moved_to_wide};
use ratchetdb::{EmbedError, Embedder, SearchOptions, Store};
use std::time::Duration;

/// An embedder of `dimension` dimensions (a different one for each promotion).
struct Width(usize);

impl Width {
    fn vector(&self, text: &str) -> Vec<f32> {
        let mut v = vec![0.5f32; self.0];
        for (i, b) in text.bytes().enumerate() {
            v[(i * 5 + usize::from(b)) % self.0] += 1.0 + f32::from(b) / 255.0;
        }
        v
    }
}

impl Embedder for Width {
    fn name(&self) -> &str {
        "width-test"
    }

    fn dimension(&self) -> usize {
        self.0
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(texts.iter().map(|t| self.vector(t)).collect())
    }
}

#[test]
fn a_reader_settles_after_each_of_many_promotions() {
    let dir = tempfile::tempdir().expect("tempdir");
    let writer = moved_to_wide(dir.path(), 30);
    writer.drop_space("default").expect("first promotion");
    let reader = Store::open_read_only(dir.path().join("db.redb")).expect("reader");
    let live = live_texts(&reader).len() as u64;
    for round in 0..20 {
        let width = Width(10 + round);
        let name = format!("w{round}");
        writer.add_space(&name, "width-test", width.0).expect("add");
        writer
            .reembed(&name, &width, 64, &mut |_| {})
            .expect("fill");
        writer.activate(&name).expect("activate");
        // The reader searches the new space before it is promoted (its index loads).
        for text in live_texts(&reader).iter().take(8) {
            is_a_best_hit(&reader, &width, text, round);
        }
        writer.drop_space("default").expect("promote");

        // Searches at once, as an application would: the first snapshot that learns the
        // new dimension wakes the applier while the follower runs its own pass.
        for text in live_texts(&reader).iter().take(8) {
            is_a_best_hit(&reader, &width, text, round);
        }
        assert!(
            reader.wait_for_index(Duration::from_secs(60)),
            "round {round}: the reader's index did not settle: {:?}",
            reader.index_info()
        );
        assert_eq!(reader.dimension(), Some(width.0), "round {round}");
        assert_eq!(reader.index_info().live_vectors, live, "round {round}");
        // The promoted space's own index (loaded by the searches before the promotion) is
        // gone: its vectors are the default index's now, not held twice.
        assert_eq!(reader.index_info().space_vectors, 0, "round {round}");
        for text in live_texts(&reader).iter().take(8) {
            is_a_best_hit(&reader, &width, text, round);
        }
    }
}

/// `text` is among the best hits of a search with its own vector (ties allowed: a short
/// vector gives some texts the same one).
fn is_a_best_hit(reader: &Store, width: &Width, text: &str, round: usize) {
    let hits = reader
        .search(&width.vector(text), 20, &SearchOptions::default())
        .expect("search");
    let best = hits.first().map(|h| h.score).expect("a hit");
    assert!(
        hits.iter()
            .any(|h| h.text == text && (h.score - best).abs() <= 1e-5),
        "round {round}: {text:?} is not a best hit of its own vector"
    );
}
