//! F7: a document is rewritten as delete-then-write, and queries arrive in between.
//!
//! A naive store deletes the old chunks, then writes the new ones: a query in that window
//! misses the document entirely, or sees some chunks of each revision. In ratchetdb a rewrite
//! is one write transaction and every read runs on an MVCC snapshot, so a reader sees the old
//! revision or the new one, whole, and never neither (I4).

use crate::common;
use crate::fixture::Fixture;

use ratchetdb::{Document, StoredDocument, Version};
use std::sync::atomic::{AtomicBool, Ordering};

crate::conformance!(readers_see_the_old_or_the_new_revision_never_neither);

const REVISIONS: u64 = 200;

fn chunk_count(version: u64) -> usize {
    1 + (version % 7) as usize
}

/// Revision `version`: its chunk count varies from 1 to 7 and every text names the version.
fn revision(version: u64) -> Document {
    let texts: Vec<String> = (0..chunk_count(version))
        .map(|position| format!("v{version} part {position}"))
        .collect();
    common::document("kb", "status-page", Version::number(version), &texts)
}

/// The document as one whole revision: present, live, the right chunks, one generation.
fn assert_whole(doc: Option<StoredDocument>) -> u64 {
    let doc = doc.expect("the document was absent");
    assert!(!doc.deleted, "{doc:?}");
    let version = doc.version.value;
    assert_eq!(doc.chunks.len(), chunk_count(version), "{doc:?}");
    for (position, chunk) in doc.chunks.iter().enumerate() {
        assert_eq!(chunk.text, format!("v{version} part {position}"), "{doc:?}");
        assert_eq!(chunk.generation, doc.generation, "{doc:?}");
    }
    version
}

fn readers_see_the_old_or_the_new_revision_never_neither(backend: &dyn Fixture) {
    let store = backend.open("db");
    store.upsert(revision(1)).unwrap();
    let done = AtomicBool::new(false);
    // Readers of their own: on PostgreSQL another connection each (a second opening of the
    // store), on a file clones of the writer's store (one writer per file).
    let reader = || {
        if backend.is_postgres() {
            backend.open("db")
        } else {
            store.clone()
        }
    };
    let (polling_store, snapshot_store) = (reader(), reader());

    let reads = std::thread::scope(|scope| {
        // A reader polling get(): each read is its own snapshot, so versions never go down.
        let polling = scope.spawn(|| {
            let (mut reads, mut last) = (0u64, 0u64);
            while !done.load(Ordering::Acquire) {
                let version = assert_whole(polling_store.get("kb", "status-page").unwrap());
                assert!(version >= last, "read v{version} after v{last}");
                last = version;
                reads += 1;
            }
            reads
        });
        // A reader holding snapshots: everything read through one agrees with itself.
        let snapshots = scope.spawn(|| {
            let mut reads = 0u64;
            while !done.load(Ordering::Acquire) {
                if snapshot_store.is_postgres() {
                    // No `Store::snapshot` on PostgreSQL: `documents` reads the document
                    // and chunk rows in one REPEATABLE READ snapshot.
                    let documents = snapshot_store.documents(false).unwrap();
                    assert_eq!(documents.len(), 1);
                    assert_whole(documents.into_iter().next());
                    reads += 1;
                    continue;
                }
                let snapshot = snapshot_store.snapshot().unwrap();
                let first = snapshot.get("kb", "status-page").unwrap();
                let version = assert_whole(first.clone());
                let stats = snapshot.stats().unwrap();
                assert_eq!(stats.documents, 1);
                assert_eq!(stats.chunks as usize, chunk_count(version));
                assert_eq!(snapshot.get("kb", "status-page").unwrap(), first);
                reads += 1;
            }
            reads
        });

        for version in 2..=REVISIONS {
            store.upsert(revision(version)).unwrap();
        }
        done.store(true, Ordering::Release);
        (polling.join().unwrap(), snapshots.join().unwrap())
    });
    assert!(reads.0 > 0 && reads.1 > 0, "{reads:?}");
    eprintln!("reads during {REVISIONS} rewrites: {reads:?}");

    assert_eq!(
        assert_whole(store.get("kb", "status-page").unwrap()),
        REVISIONS
    );
    let counters = store.stats().unwrap().counters;
    assert_eq!(
        (
            counters.written_new,
            counters.written_newer,
            counters.skipped()
        ),
        (1, REVISIONS - 1, 0)
    );
    let report = store.verify().unwrap();
    assert!(report.is_ok(), "{:?}", report.violations);
}
