//! Issue 45, item 5, on PostgreSQL: `SearchOptions::per_document(true)` returns each
//! document's best chunk and `k` distinct documents from vector (pgvector's index and the
//! exact scan), text and hybrid search, with filters and a source restriction, where one
//! document's chunks fill the first hundreds of places of every ranking: the same hits as
//! the whole exact ranking reduced to each document's first hit (the scenario is the
//! embedded store's, `tests/search_support/per_document.rs`).

use crate::{per_document_scenario, pg};
use ratchetdb::{Options, Store};

#[test]
fn per_document_search_on_postgres() {
    let Some(url) = pg::fresh_url("per_document") else {
        return;
    };
    let store = Store::open(&url, Options::default()).expect("open by URL");
    per_document_scenario::check(&store);
}
