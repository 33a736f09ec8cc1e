//! One `Store` API over every backend: guarded writes (upsert, a stale retry refused,
//! delete, retain, purge, batches, tickets, sync), reads (get, documents, stats, search,
//! search_many with errors naming `queries[i]`, plan), the index's lifecycle calls, verify,
//! and text and hybrid search finding the live chunks that hold the query's word. What a
//! backend does not offer (`snapshot` and `backup` on PostgreSQL) is a typed `Unsupported`
//! error naming the backend, never a panic.

use crate::common::assert_verified;
use crate::fixture::Fixture;
use ratchetdb::{
    BackupError, Chunk, Document, Op, OpOutcome, Options, Outcome, PlannedAction, ReadError,
    SearchOptions, SkipReason, Store, Version,
};

crate::conformance!(one_store_api_writes_reads_and_searches);

fn doc(id: &str, version: u64, texts: &[&str]) -> Document {
    let mut d = Document::new("wiki", id, Version::number(version));
    for (i, text) in texts.iter().enumerate() {
        d = d.with_chunk(Chunk::new(*text, vec![1.0, i as f32, 0.5]));
    }
    d
}

fn one_store_api_writes_reads_and_searches(b: &dyn Fixture) {
    let store = b.open_with("db", Options::default());
    assert_eq!(store.is_postgres(), b.is_postgres());
    assert!(!store.is_read_only());

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
    store.sync().expect("sync (a no-op on the server)");

    let a = store.get("wiki", "a").expect("get").expect("a is stored");
    assert_eq!(a.chunks.len(), 2);
    assert_eq!(a.version, Version::number(2));
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

    assert_verified(&store);
    // The server keeps its index in step with every commit: nothing to wait for or build.
    let settle = if b.is_postgres() {
        std::time::Duration::ZERO
    } else {
        std::time::Duration::from_secs(60)
    };
    assert!(store.wait_for_index(settle));
    assert!(store.index_info().loaded);
    store.build_index().expect("build the index");

    // A snapshot: a redb read transaction; on the server a typed error naming the operation.
    match store.snapshot() {
        Ok(snapshot) => {
            assert!(!b.is_postgres());
            let read = snapshot.get("wiki", "a").expect("get").expect("a");
            assert_eq!(read.content_hash, a.content_hash);
        }
        Err(error) => assert!(
            b.is_postgres()
                && matches!(
                    error,
                    ReadError::Unsupported {
                        operation: "Store::snapshot",
                        backend: "PostgreSQL",
                    }
                ),
            "{error:?}"
        ),
    }
    // A backup: a copy of the file that opens as a store of its own; on the server the
    // same typed error (the server's own backups apply).
    let dir = tempfile::tempdir().expect("tempdir");
    let copy = dir.path().join("copy.redb");
    match store.backup(&copy) {
        Ok(_) => {
            assert!(!b.is_postgres());
            let restored = Store::open_read_only(&copy).expect("open the copy");
            assert_eq!(
                restored.documents(true).expect("documents"),
                store.documents(true).expect("documents")
            );
        }
        Err(error) => assert!(
            b.is_postgres()
                && matches!(
                    error,
                    BackupError::Read(ReadError::Unsupported {
                        backend: "PostgreSQL",
                        ..
                    })
                ),
            "{error:?}"
        ),
    }
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
    assert_verified(&store);
}
