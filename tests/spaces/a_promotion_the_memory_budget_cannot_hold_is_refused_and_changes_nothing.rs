//! Regression (review, 2026-12-07): a promotion (`drop_space("default")` while another
//! space is active) on a store under `Options::memory_budget` committed whatever the new
//! space's dimension, so a budget that held the old vectors' codes but not the new ones'
//! left a store the same options could no longer open (the open refuses an impossible
//! budget). The promotion is now refused, an `InputError` naming `memory_budget` and the
//! smallest budget that works, and the store is as it was.

use super::revision;
use ratchetdb::{EmbedError, Embedder, Options, SearchOptions, Store, WriteError};

/// Wide enough that a 4 MiB budget cannot hold the quantiser of its vectors.
const HUGE: usize = 4096;
const BUDGET: u64 = 4 << 20;

struct Huge;

impl Embedder for Huge {
    fn name(&self) -> &str {
        "huge-test"
    }

    fn dimension(&self) -> usize {
        HUGE
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(texts
            .iter()
            .map(|t| {
                let mut v = vec![0.5f32; HUGE];
                for (i, b) in t.bytes().enumerate() {
                    v[(i * 31 + usize::from(b)) % HUGE] += 1.0;
                }
                v
            })
            .collect())
    }
}

#[test]
fn a_promotion_past_the_budget_is_refused_naming_memory_budget() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("db.redb");
    let options = || Options::default().memory_budget(BUDGET);
    let store = Store::open(&path, options().dimension(3)).expect("open");
    for d in 0..20 {
        store
            .upsert(revision(&format!("d{d}"), 1, 3))
            .expect("write");
    }
    store.add_space("huge", "huge-test", HUGE).expect("add");
    store
        .reembed("huge", &Huge, 64, &mut |_| {})
        .expect("reembed");
    store.activate("huge").expect("activate");
    match store.drop_space("default") {
        Err(WriteError::Input(e)) => {
            assert_eq!(e.field, "memory_budget", "{e}");
            assert!(e.problem.contains("smallest budget"), "{e}");
        }
        other => panic!("a promotion past the budget: {other:?}"),
    }
    // Nothing changed: the default space keeps its 3-d vectors, the other is still there.
    assert_eq!(store.dimension(), Some(3));
    let spaces = store.spaces().expect("spaces");
    assert!(spaces.iter().any(|s| s.name == "huge"), "{spaces:?}");
    let hits = store
        .search(
            &super::common::vector("d3 v1 c0"),
            1,
            &SearchOptions::default().space("default"),
        )
        .expect("search the default space");
    assert_eq!(hits[0].text, "d3 v1 c0");
    drop(store);
    Store::open(&path, options()).expect("the same options still open it");
}
