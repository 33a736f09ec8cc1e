//! `verify()` on PostgreSQL checks the text index against the chunks: a healthy store
//! (after revisions and a delete) passes; a deleted `chunk_terms` row, a changed term count
//! and a deleted `chunk_lengths` row (raw SQL on the server) are each reported as a text
//! index violation naming the document; putting the row back makes verify pass again.

use crate::pg;
use ratchetdb::{Chunk, Document, Options, Store, Version};

fn doc(id: &str, version: u64, texts: &[&str]) -> Document {
    let mut doc = Document::new("wiki", id, Version::number(version));
    for (n, text) in texts.iter().enumerate() {
        doc = doc.with_chunk(Chunk::new(*text, vec![1.0, n as f32, 0.5]));
    }
    doc
}

/// The text-index violations of `store`'s verify, as (source, id, problem).
fn text_violations(store: &Store) -> Vec<(Option<String>, Option<String>, String)> {
    store
        .verify()
        .expect("verify")
        .violations
        .into_iter()
        .filter(|v| v.problem.starts_with("text index:"))
        .map(|v| (v.source, v.id, v.problem))
        .collect()
}

#[test]
fn verify_on_postgres_checks_the_text_index() {
    let Some(store_url) = pg::fresh_url("verify_text") else {
        return;
    };
    let url = pg::url("verify_text").expect("url");
    let schema = pg::schema("verify_text");
    let store = Store::open(&store_url, Options::default().dimension(3)).expect("open");
    store
        .upsert(doc("a", 1, &["ratchets turn one way", "pawls stop them"]))
        .expect("upsert");
    store
        .upsert(doc(
            "b",
            1,
            &["gears turn both ways", "springs push", "old words"],
        ))
        .expect("upsert");
    store
        .upsert(doc("b", 2, &["gears turn both ways"]))
        .expect("shrinking revision");
    store.upsert(doc("c", 1, &["doomed text"])).expect("upsert");
    store
        .delete("wiki", "c", Version::number(2))
        .expect("delete");
    pg::assert_store_verified(&store);

    let mut client = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
    let row = client
        .query_one(
            &format!(
                "SELECT t.vector_id, t.term, t.tf FROM {schema}.chunk_terms t
                 JOIN {schema}.chunks c ON c.vector_id = t.vector_id
                 WHERE c.id = 'a' AND c.position = 0 AND t.term LIKE 'ratchet%'"
            ),
            &[],
        )
        .expect("the term row of a's first chunk");
    let (vector_id, term, tf): (i64, String, i32) = (row.get(0), row.get(1), row.get(2));
    let a = (Some("wiki".to_string()), Some("a".to_string()));

    // A missing term row.
    client
        .execute(
            &format!("DELETE FROM {schema}.chunk_terms WHERE vector_id = $1 AND term = $2"),
            &[&vector_id, &term],
        )
        .expect("delete a term row");
    let found = text_violations(&store);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!((found[0].0.clone(), found[0].1.clone()), a, "{found:?}");
    client
        .execute(
            &format!("INSERT INTO {schema}.chunk_terms (term, vector_id, tf) VALUES ($1, $2, $3)"),
            &[&term, &vector_id, &tf],
        )
        .expect("put it back");
    pg::assert_store_verified(&store);

    // A wrong term count.
    client
        .execute(
            &format!(
                "UPDATE {schema}.chunk_terms SET tf = tf + 1 WHERE vector_id = $1 AND term = $2"
            ),
            &[&vector_id, &term],
        )
        .expect("alter a term row");
    let found = text_violations(&store);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!((found[0].0.clone(), found[0].1.clone()), a, "{found:?}");
    client
        .execute(
            &format!("UPDATE {schema}.chunk_terms SET tf = $3 WHERE vector_id = $1 AND term = $2"),
            &[&vector_id, &term, &tf],
        )
        .expect("put it back");
    pg::assert_store_verified(&store);

    // A missing length row (its terms kept).
    let length: i32 = client
        .query_one(
            &format!("DELETE FROM {schema}.chunk_lengths WHERE vector_id = $1 RETURNING length"),
            &[&vector_id],
        )
        .expect("delete a length row")
        .get(0);
    let found = text_violations(&store);
    assert!(!found.is_empty(), "a missing length row passed verify");
    assert!(
        found
            .iter()
            .any(|v| (v.0.clone(), v.1.clone()) == a && v.2.contains("no chunk_lengths row")),
        "{found:?}"
    );
    client
        .execute(
            &format!("INSERT INTO {schema}.chunk_lengths (vector_id, length) VALUES ($1, $2)"),
            &[&vector_id, &length],
        )
        .expect("put it back");
    pg::assert_store_verified(&store);
}
