//! Regression: a budget too small for the codes of a store's first vectors was accepted and
//! then silently exceeded. A store opened under 2 MiB with no dimension took 1536-d vectors
//! (the quantiser's centroids and lookup table alone are 256 x 1536 x 6 bytes, 2.36 MB): its
//! budgeted index was planned at the smallest budget that works instead (over the budget),
//! and the next open under the same budget was refused. Now the write that would fix such a
//! dimension is refused with an `InputError` on `memory_budget` naming the smallest budget
//! that works, through every write path (`upsert`, `write_batch`, the concurrent `Writer`),
//! and nothing is written; a dimension the budget holds is taken, and the store reopens
//! under the same budget.

use ratchetdb::{Chunk, Document, Op, Options, Store, Version, WriteError};

const BUDGET: u64 = 2 << 20;

fn doc(id: &str, dim: usize) -> Document {
    Document::new("s", id, Version::number(1))
        .with_chunk(Chunk::new(format!("text of {id}"), vec![0.25; dim]))
}

/// The smallest budget a refusal on `memory_budget` names, in bytes.
fn refused_naming_the_smallest(result: Result<impl std::fmt::Debug, WriteError>) -> u64 {
    match result {
        Err(WriteError::Input(error)) => {
            assert_eq!(error.field, "memory_budget");
            let smallest = error
                .problem
                .split("smallest budget that works is ")
                .nth(1)
                .and_then(|t| t.split(' ').next())
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("no smallest budget in {:?}", error.problem));
            assert!(smallest > BUDGET, "{}", error.problem);
            smallest
        }
        other => panic!("expected an InputError on memory_budget, got {other:?}"),
    }
}

#[test]
fn a_first_vector_the_budget_cannot_hold_is_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("store.redb");
    let options = Options::default()
        .durability(ratchetdb::Durability::None)
        .memory_budget(BUDGET);
    let store = Store::open(&path, options.clone()).expect("no dimension yet: it opens");

    let smallest = refused_naming_the_smallest(store.upsert(doc("a", 1536)));
    // A batch: the refused operation keeps its place, the others are applied.
    let outcomes = store
        .write_batch(vec![
            Op::Upsert(Document::new("s", "empty", Version::number(1))),
            Op::Upsert(doc("b", 1536)),
        ])
        .expect("write a batch");
    assert_eq!(outcomes.len(), 2);
    let mut outcomes = outcomes.into_iter();
    let first = outcomes.next().expect("the first outcome");
    first.expect("a document without chunks");
    let second = outcomes.next().expect("the second outcome");
    assert_eq!(refused_naming_the_smallest(second), smallest);
    // The concurrent writer refuses it as it validates.
    assert_eq!(
        refused_naming_the_smallest(store.writer().upsert(doc("c", 1536))),
        smallest
    );
    assert_eq!(
        store.dimension(),
        None,
        "a refused write fixed the dimension"
    );
    assert_eq!(store.stats().expect("stats").documents, 1);

    // A dimension the budget holds is taken.
    store.upsert(doc("d", 64)).expect("64 dimensions fit");
    assert_eq!(store.dimension(), Some(64));
    drop(store);
    let store = Store::open(&path, options).expect("reopen under the same budget");
    assert_eq!(store.stats().expect("stats").documents, 2);
}
