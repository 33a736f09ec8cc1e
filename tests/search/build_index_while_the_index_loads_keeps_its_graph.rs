//! Regression: `Store::build_index` called while the background loader was still loading
//! the index (it starts with the first commit) loaded and published an index of its own,
//! built the graph on it, and then the loader published its own index over it: the built
//! graph was gone (`graph_ready` false right after `build_index` returned Ok). Seen as a
//! rare failure of `search_filters_and_errors.rs` under the parallel test run. Now whichever
//! index is published first is kept, and the other is dropped.

use crate::search_support;

use ratchetdb::{Chunk, Document, Op, Store, Version};
use search_support::{normalized, open, random_vector, settle, Rng};

#[test]
fn build_index_while_the_index_loads_keeps_its_graph() {
    let mut rng = Rng::new(91);
    for round in 0..40 {
        let dir = tempfile::tempdir().expect("tempdir");
        let store: Store = open(dir.path());
        let ops: Vec<Op> = (0..120)
            .map(|d| {
                Op::Upsert(
                    Document::new("s", format!("d{d}"), Version::number(1)).with_chunk(Chunk::new(
                        format!("t{d}"),
                        normalized(random_vector(&mut rng, 8)),
                    )),
                )
            })
            .collect();
        // The first commit starts the background loader; build at once, racing it.
        for result in store.write_batch(ops).expect("batch") {
            result.expect("op");
        }
        store.build_index().expect("build");
        assert!(
            store.index_info().graph_ready,
            "round {round}: the built graph is gone"
        );
        settle(&store);
        assert!(
            store.index_info().graph_ready,
            "round {round}: the graph is gone after settling"
        );
        let report = store.verify().expect("verify");
        assert!(report.is_ok(), "round {round}: {:#?}", report.violations);
    }
}
