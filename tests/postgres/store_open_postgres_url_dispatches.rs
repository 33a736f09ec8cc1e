//! `Store::open("postgres://...")` is the PostgreSQL backend behind the same `Store` API:
//! guarded writes (upsert, a stale retry refused, delete, retain, purge, batches, tickets),
//! reads (get, documents, stats, search, search_many, plan) and verify all act on the
//! server's tables (read back through a second, independent `PgStore`), and what the
//! server backend does not offer (`snapshot`) is a typed `Unsupported` error naming the
//! operation, never a panic; text and hybrid search find the live chunks that hold the
//! query's word.

use crate::pg;
use ratchetdb::{
    Chunk, Document, Op, OpOutcome, Options, Outcome, PgStore, PlannedAction, ReadError,
    SearchOptions, SkipReason, Store, Version,
};

fn doc(id: &str, version: u64, texts: &[&str]) -> Document {
    let mut d = Document::new("wiki", id, Version::number(version));
    for (i, text) in texts.iter().enumerate() {
        d = d.with_chunk(Chunk::new(*text, vec![1.0, i as f32, 0.5]));
    }
    d
}

#[test]
fn store_open_postgres_url_dispatches() {
    let Some(url) = pg::fresh_url("facade") else {
        return;
    };
    let store = Store::open(&url, Options::default()).expect("open by URL");
    assert!(store.is_postgres());
    assert!(!store.is_read_only());
    assert!(store.path().to_str().unwrap().starts_with("postgres"));

    // Guarded writes.
    let written = store
        .upsert(doc("a", 2, &["alpha one", "alpha two"]))
        .expect("upsert");
    assert!(matches!(written, Outcome::Written { .. }), "{written:?}");
    assert_eq!(store.dimension(), Some(3));
    let stale = store.upsert(doc("a", 1, &["old"])).expect("stale upsert");
    assert_eq!(stale.skip_reason(), Some(SkipReason::Older));
    store.upsert(doc("b", 1, &["beta"])).expect("upsert b");
    store.upsert(doc("c", 1, &["gamma"])).expect("upsert c");
    let deleted = store
        .delete("wiki", "b", Version::number(2))
        .expect("delete");
    assert!(matches!(deleted, Outcome::Deleted { .. }), "{deleted:?}");
    let retained = store
        .retain("wiki", ["a", "b"], Version::number(3))
        .expect("retain");
    assert_eq!(retained.documents_removed, 1, "c is not in the listing");
    let outcomes = store
        .write_batch(vec![
            Op::Upsert(doc("d", 5, &["delta"])),
            Op::Upsert(doc("a", 1, &["stale in a batch"])),
        ])
        .expect("batch");
    assert!(matches!(
        outcomes[0],
        Ok(OpOutcome::Document(Outcome::Written { .. }))
    ));
    assert!(matches!(
        &outcomes[1],
        Ok(OpOutcome::Document(outcome)) if outcome.skip_reason() == Some(SkipReason::Older)
    ));
    let t1 = store.ticket().expect("ticket");
    let t2 = store.ticket().expect("ticket");
    assert!(t2.value > t1.value);
    store.sync().expect("sync is a no-op on the server");

    // Reads through the façade agree with an independent connection to the same tables.
    let independent = PgStore::open_in(
        &pg::url("facade").unwrap(),
        &pg::schema("facade"),
        Options::default(),
    )
    .expect("second connection");
    let a = store.get("wiki", "a").expect("get").expect("a is stored");
    assert_eq!(a.chunks.len(), 2);
    assert_eq!(a.version, Version::number(2));
    assert_eq!(
        independent
            .get("wiki", "a")
            .expect("get")
            .expect("a")
            .content_hash,
        a.content_hash
    );
    assert!(store.get("wiki", "b").expect("get").expect("b").deleted);
    let ids: Vec<String> = store
        .documents(false)
        .expect("documents")
        .into_iter()
        .map(|d| d.id)
        .collect();
    assert_eq!(ids, ["a", "b", "c", "d"]);
    let stats = store.stats().expect("stats");
    assert_eq!((stats.documents, stats.tombstones), (2, 2));
    assert_eq!(stats.counters.skipped(), 2);
    assert_eq!(independent.stats().expect("stats").documents, 2);

    let hits = store
        .search(&[1.0, 0.0, 0.5], 10, &SearchOptions::default())
        .expect("search");
    let mut texts: Vec<&str> = hits.iter().map(|h| h.text.as_str()).collect();
    texts.sort_unstable();
    assert_eq!(texts, ["alpha one", "alpha two", "delta"]);
    let many = store
        .search_many(
            &[vec![1.0, 0.0, 0.5], vec![1.0, 1.0, 0.5]],
            1,
            &SearchOptions::default(),
        )
        .expect("search_many");
    assert_eq!(many.len(), 2);
    let bad = store
        .search_many(
            &[vec![1.0, 0.0, 0.5], vec![1.0]],
            1,
            &SearchOptions::default(),
        )
        .unwrap_err();
    assert!(
        matches!(&bad, ReadError::Input(e) if e.field.starts_with("queries[1]")),
        "{bad:?}"
    );

    // plan: the guard's decision and the reusable vectors, from the server's rows.
    let plan = store
        .plan(
            &Document::new("wiki", "a", Version::number(3))
                .with_chunk(Chunk::new("alpha two", vec![]))
                .with_chunk(Chunk::new("alpha three", vec![])),
        )
        .expect("plan");
    assert_eq!(plan.action, PlannedAction::Write);
    assert_eq!((plan.reusable, plan.to_embed), (vec![0], vec![1]));
    let plan = store
        .plan(&Document::new("wiki", "c", Version::number(2)).with_chunk(Chunk::new("x", vec![])))
        .expect("plan");
    assert!(
        matches!(
            plan.action,
            PlannedAction::Skip {
                reason: SkipReason::Tombstoned,
                ..
            }
        ),
        "the listing at 3 deleted c: {plan:?}"
    );

    pg::assert_store_verified(&store);
    assert!(store.index_info().loaded);
    assert!(store.wait_for_index(std::time::Duration::ZERO));
    store.build_index().expect("nothing to build");

    // What the server backend does not offer is a typed error naming the operation.
    let error = store.snapshot().err().expect("snapshot is unsupported");
    assert!(
        matches!(
            error,
            ReadError::Unsupported {
                backend: "PostgreSQL",
                ..
            }
        ),
        "{error:?}"
    );
    // Text and hybrid search act on the server's text index: a's two live chunks hold
    // "alpha" (the stale writes' chunks were never stored).
    assert!(store.has_text_index());
    let mut texts: Vec<String> = store
        .search_text("alpha", 5, &SearchOptions::default())
        .expect("text search")
        .into_iter()
        .map(|h| h.text)
        .collect();
    texts.sort();
    assert_eq!(texts, ["alpha one", "alpha two"]);
    let hybrid = store
        .search_hybrid("alpha", &[1.0, 0.0, 0.5], 5, &SearchOptions::default())
        .expect("hybrid search");
    assert!(
        hybrid.iter().take(2).all(|h| h.text.starts_with("alpha")),
        "both rankings put a's chunks first: {hybrid:?}"
    );

    // purge removes the tombstones below the version.
    let purged = store.purge("wiki", Version::number(10)).expect("purge");
    assert_eq!(purged.tombstones_purged, 2, "{purged:?}");
    assert_eq!(store.stats().expect("stats").tombstones, 0);
    pg::assert_store_verified(&store);
}
