//! Text and hybrid searches refuse bad parameters with an `InputError` naming the field
//! (BM25's k1 and b, the fusion's k and weight, `k`, an over-long query) and change nothing.

use ratchetdb::{Chunk, Document, Fusion, Options, ReadError, SearchOptions, Store, Version};

fn field(result: Result<Vec<ratchetdb::Hit>, ReadError>) -> String {
    match result {
        Err(ReadError::Input(e)) => e.field,
        other => panic!("expected an input error, got {other:?}"),
    }
}

#[test]
fn text_search_bad_input_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path().join("bad.redb"), Options::default()).expect("open");
    store
        .upsert(
            Document::new("s", "a", Version::number(1))
                .with_chunk(Chunk::new("ratchet and pawl", vec![1.0, 0.0])),
        )
        .expect("upsert");
    let base = SearchOptions::default();
    let text = |options: &SearchOptions| store.search_text("ratchet", 3, options);
    assert_eq!(field(text(&base.clone().bm25(-1.0, 0.75))), "bm25.k1");
    assert_eq!(field(text(&base.clone().bm25(f32::NAN, 0.75))), "bm25.k1");
    assert_eq!(field(text(&base.clone().bm25(1.2, 1.5))), "bm25.b");
    assert_eq!(field(store.search_text("ratchet", usize::MAX, &base)), "k");
    let long = "word ".repeat(Options::default().limits.max_chunk_text_bytes);
    assert_eq!(field(store.search_text(&long, 3, &base)), "query");
    let hybrid = |options: &SearchOptions| store.search_hybrid("ratchet", &[1.0, 0.0], 3, options);
    assert_eq!(
        field(hybrid(&base.clone().fusion(Fusion::Rrf { k: 0 }))),
        "fusion.k"
    );
    assert_eq!(
        field(hybrid(
            &base.clone().fusion(Fusion::Weighted { vector_weight: 2.0 })
        )),
        "fusion.vector_weight"
    );
    assert_eq!(
        field(store.search_hybrid("ratchet", &[1.0, 0.0, 0.0], 3, &base)),
        "query"
    );
    // Nothing changed, and good input still works.
    assert!(store.verify().expect("verify").is_ok());
    assert_eq!(text(&base).expect("search").len(), 1);
    assert_eq!(hybrid(&base).expect("hybrid").len(), 1);
}
