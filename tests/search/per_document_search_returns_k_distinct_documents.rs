//! Issue 45, item 5: the top `k` could be `k` chunks of one file. With
//! `SearchOptions::per_document(true)`, vector, text and hybrid search (exact and graph,
//! with and without a filter or a source restriction) return each document's best chunk
//! and `k` distinct documents, even where one document's chunks fill the first hundreds of
//! places of every ranking: the same hits, in the same order, as the whole ranking computed
//! by exact search and reduced to each document's first hit. Asked for more documents than
//! match, every matching document comes back.

use crate::per_document_scenario;
use ratchetdb::{Options, Store};

#[test]
fn per_document_search_returns_k_distinct_documents() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path().join("docs.redb"), Options::default()).expect("open");
    per_document_scenario::check(&store);
}
