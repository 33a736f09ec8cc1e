//! `Options::index` (the graph's M and ef_construction): values out of range are refused
//! when the store is opened, with an `InputError` naming the field, and nothing is created;
//! values in range give a store that builds its graph with them and searches right.

use ratchetdb::{
    Chunk, Document, IndexOptions, InputError, OpenError, Options, SearchOptions, Store, Version,
    MAX_INDEX_EF_CONSTRUCTION, MAX_INDEX_M, MIN_INDEX_M,
};

fn refused(options: Options, field: &str) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.redb");
    match Store::open(&path, options) {
        Err(OpenError::Input(InputError { field: got, .. })) => assert_eq!(got, field),
        Err(other) => panic!("expected an InputError on {field}, got {other}"),
        Ok(_) => panic!("expected an InputError on {field}, the store opened"),
    }
    assert!(!path.exists(), "a refused open created the file");
}

#[test]
fn out_of_range_index_options_are_refused_naming_the_field() {
    let with = |index: IndexOptions| Options::default().index(index);
    refused(with(IndexOptions::default().m(MIN_INDEX_M - 1)), "index.m");
    refused(with(IndexOptions::default().m(MAX_INDEX_M + 1)), "index.m");
    refused(
        with(IndexOptions::default().ef_construction(0)),
        "index.ef_construction",
    );
    refused(
        with(IndexOptions::default().ef_construction(MAX_INDEX_EF_CONSTRUCTION + 1)),
        "index.ef_construction",
    );
}

#[test]
fn in_range_index_options_build_a_graph_that_finds_every_vector() {
    let dir = tempfile::tempdir().unwrap();
    let options = Options::default().index(IndexOptions::default().m(8).ef_construction(64));
    let store = Store::open(dir.path().join("store.redb"), options).unwrap();
    let n = 12_000; // above the size from which the store builds a graph
                    // Pseudo-random 16-d vectors (splitmix64): no two nearly parallel.
    let vector = |i: usize| -> Vec<f32> {
        let mut state = i as u64;
        (0..16)
            .map(|_| {
                state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
                let mut z = state;
                z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                ((z ^ (z >> 31)) >> 40) as f32 / (1u64 << 23) as f32 - 1.0
            })
            .collect()
    };
    let ops = (0..n)
        .map(|i| {
            ratchetdb::Op::Upsert(
                Document::new("s", format!("d{i}"), Version::number(1))
                    .with_chunk(Chunk::new(format!("t{i}"), vector(i))),
            )
        })
        .collect();
    for result in store.write_batch(ops).unwrap() {
        result.unwrap();
    }
    store.build_index().unwrap();
    assert!(store.index_info().graph_ready);
    for i in (0..n).step_by(97) {
        let hits = store
            .search(&vector(i), 1, &SearchOptions::default().ef(64))
            .unwrap();
        assert_eq!(
            hits[0].id,
            format!("d{i}"),
            "vector {i} did not find itself"
        );
    }
    assert!(store.verify().unwrap().is_ok());
}
