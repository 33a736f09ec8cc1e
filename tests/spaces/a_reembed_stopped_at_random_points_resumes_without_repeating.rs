//! A re-embed stopped at random points (an embedder failing after a random number of
//! batches, 25 times, or the store dropped mid-walk) loses nothing it wrote and repeats
//! nothing: every later run embeds only what is still missing, the vectors written over all
//! runs are exactly the live chunks, each once (none written twice, none `present`), the
//! space is complete and `verify` is clean; the space's vectors are the embedder's for each
//! chunk's text.

use super::{open, revision, wide, Wide, WIDE};
use ratchetdb::{EmbedError, Embedder, SearchOptions};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Texts embedded by every run, all told.
static EMBEDDED: AtomicUsize = AtomicUsize::new(0);

/// `Wide`, failing from its `fail_at`-th batch on, counting what it embeds in `EMBEDDED`.
struct Failing {
    calls: AtomicUsize,
    fail_at: usize,
}

impl Embedder for Failing {
    fn name(&self) -> &str {
        "wide-test"
    }

    fn dimension(&self) -> usize {
        WIDE
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if self.calls.fetch_add(1, Ordering::SeqCst) >= self.fail_at {
            return Err(EmbedError::Inference {
                what: "stopped by the test".into(),
                source: None,
            });
        }
        EMBEDDED.fetch_add(texts.len(), Ordering::SeqCst);
        Wide.embed_batch(texts)
    }
}

#[test]
fn a_reembed_stopped_at_random_points_resumes_without_repeating() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut store = open(dir.path());
    let mut ops = Vec::new();
    for d in 0..60 {
        ops.push(ratchetdb::Op::Upsert(revision(
            &format!("d{d}"),
            1,
            1 + d % 7,
        )));
    }
    store.write_batch(ops).expect("write");
    let live = store.stats().expect("stats").chunks;
    store.add_space("wide", "wide-test", WIDE).expect("add");

    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut written = 0;
    let mut stops = 0;
    while stops < 25 {
        let failing = Failing {
            calls: AtomicUsize::new(0),
            fail_at: (next() % 4) as usize,
        };
        let batch = 1 + (next() % 9) as usize;
        let mut last = 0;
        let result = store.reembed("wide", &failing, batch, &mut |p| {
            assert!(p.embedded > last, "progress after every batch");
            last = p.embedded;
        });
        match result {
            Ok(outcome) => {
                written += outcome.writes.written;
                assert_eq!(outcome.writes.present, 0, "nothing embedded twice");
                assert!(outcome.complete);
                break;
            }
            Err(ratchetdb::ReembedError::Embed(_)) => {
                stops += 1;
                // What the stopped run wrote is there: the space's count moved by it.
                let space = &store.spaces().expect("spaces")[1];
                written = space.vectors;
                // Every few stops, the store itself goes away mid-walk and is reopened.
                if stops % 5 == 0 {
                    drop(store);
                    store = open(dir.path());
                }
            }
            Err(other) => panic!("{other:?}"),
        }
    }
    // Whatever is left, to the end.
    let finish = Failing {
        calls: AtomicUsize::new(0),
        fail_at: usize::MAX,
    };
    let outcome = store
        .reembed("wide", &finish, 7, &mut |_| {})
        .expect("finish");
    assert_eq!(outcome.writes.present, 0);
    written += outcome.writes.written;
    assert!(stops >= 20, "{stops} stops");
    assert_eq!(written, live, "every live chunk written");
    assert_eq!(
        EMBEDDED.load(Ordering::SeqCst) as u64,
        live,
        "every live chunk embedded exactly once over all the runs"
    );
    let space = &store.spaces().expect("spaces")[1];
    assert_eq!((space.vectors, space.live_chunks), (live, live));
    let report = store.verify().expect("verify");
    assert!(report.is_ok(), "{:#?}", report.violations);
    // Each chunk's vector is its text's.
    for text in ["d3 v1 c2", "d59 v1 c0"] {
        let hits = store
            .search(
                &wide(text),
                1,
                &SearchOptions::default().space("wide").exact(true),
            )
            .expect("search");
        assert_eq!(hits[0].text, text);
    }
}
