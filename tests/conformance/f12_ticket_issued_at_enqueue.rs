//! F12: a pipeline versions its jobs by a ticket, and a retry mints a new ticket when it is
//! sent instead of carrying the one its job got at enqueue.
//!
//! Old content then carries the newest ticket and re-commits as if it were fresh,
//! overwriting the edit that was enqueued after it. ratchetdb issues tickets itself
//! (`Store::ticket`): strictly increasing, persisted across restarts (allocated in blocks, so
//! a ticket costs no commit of its own), to be taken when the job is enqueued and carried
//! unchanged by every retry; the retry is then refused as `Older`.

use crate::common;
use crate::fixture::Fixture;

use common::{assert_verified, counters, vector, CountingBackend};
use ratchetdb::{Chunk, Document, Options, Outcome, SkipReason, Store, Version};
use std::sync::atomic::Ordering;

crate::conformance!(
    tickets_strictly_increase_across_reopen,
    a_retry_carrying_its_enqueue_ticket_is_refused_after_a_newer_job
);

/// A job: the document content, versioned by the ticket taken when it was enqueued.
fn job(ticket: Version, text: &str) -> Document {
    Document::new("jobs", "profile", ticket).with_chunk(Chunk::new(text, vector(text)))
}

fn text(store: &Store) -> String {
    let stored = store.get("jobs", "profile").unwrap().unwrap();
    assert!(!stored.deleted);
    assert_eq!(stored.chunks.len(), 1);
    assert_eq!(stored.chunks[0].generation, stored.generation);
    stored.chunks[0].text.clone()
}

fn tickets_strictly_increase_across_reopen(backend: &dyn Fixture) {
    let mut issued = Vec::new();
    for _ in 0..3 {
        let store = backend.open("db");
        for _ in 0..5 {
            let ticket = store.ticket().unwrap();
            assert_eq!(ticket.kind, ratchetdb::VersionKind::Ticket);
            issued.push(ticket.value);
        }
        drop(store);
    }
    assert!(issued[0] > 0);
    assert!(
        issued.windows(2).all(|w| w[0] < w[1]),
        "not strictly increasing: {issued:?}"
    );

    // Clones share the sequence: concurrent producers never get the same ticket.
    let store = backend.open("db");
    let mut concurrent: Vec<u64> = std::thread::scope(|scope| {
        let takers: Vec<_> = (0..4)
            .map(|_| {
                let store = store.clone();
                scope.spawn(move || {
                    (0..500)
                        .map(|_| store.ticket().unwrap().value)
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        takers.into_iter().flat_map(|t| t.join().unwrap()).collect()
    });
    concurrent.sort_unstable();
    concurrent.dedup();
    assert_eq!(concurrent.len(), 2000);
    assert!(concurrent[0] > *issued.last().unwrap());
}

fn a_retry_carrying_its_enqueue_ticket_is_refused_after_a_newer_job(backend: &dyn Fixture) {
    let store = backend.open("db");

    // Job A is enqueued, then job B with a later edit of the same profile.
    let ticket_a = store.ticket().unwrap();
    // The producer restarts between the two enqueues: tickets still increase.
    drop(store);
    let store = backend.open("db");
    let ticket_b = store.ticket().unwrap();
    assert!(ticket_b.value > ticket_a.value);

    // A's first attempt fails; B is written.
    assert!(matches!(
        store
            .upsert(job(ticket_b, "title: staff engineer"))
            .unwrap(),
        Outcome::Written { .. }
    ));
    assert_verified(&store);

    // A's retry carries A's ticket: refused, counted, logged.
    let before = counters(&store);
    assert_eq!(
        store.upsert(job(ticket_a, "title: engineer")).unwrap(),
        Outcome::Skipped {
            reason: SkipReason::Older,
            stored_version: ticket_b,
            incoming_version: ticket_a,
        }
    );
    let mut expected = before;
    expected.skipped_older += 1;
    expected.commits += 1;
    assert_eq!(counters(&store), expected);
    assert_verified(&store);
    assert_eq!(text(&store), "title: staff engineer");
    let stored = store.get("jobs", "profile").unwrap().unwrap();
    assert_eq!(stored.version, ticket_b);

    // What F12 is about: had the retry minted a ticket at send time, the store could not
    // tell the old content from a new edit. It is written, and the newer edit is lost.
    // (This is the pipeline's bug, shown so that the rule above is not mistaken for luck.)
    let minted_at_send = store.ticket().unwrap();
    assert!(matches!(
        store
            .upsert(job(minted_at_send, "title: engineer"))
            .unwrap(),
        Outcome::Written { .. }
    ));
    assert_eq!(text(&store), "title: engineer");
    assert_verified(&store);
}

#[test]
fn ten_thousand_tickets_cost_a_few_commits() {
    let backend = CountingBackend::default();
    let syncs = backend.syncs.clone();
    let store = Store::open_with_backend(backend, Options::default().dimension(3)).unwrap();
    store
        .upsert(job(store.ticket().unwrap(), "warm-up"))
        .unwrap();

    // What one durable commit costs in syncs on this backend.
    let start = syncs.load(Ordering::SeqCst);
    store.sync().unwrap();
    let per_commit = syncs.load(Ordering::SeqCst) - start;
    assert!(per_commit >= 1);

    let before = store.stats().unwrap();
    let start = syncs.load(Ordering::SeqCst);
    let mut last = 0;
    for _ in 0..10_000 {
        let ticket = store.ticket().unwrap().value;
        assert!(ticket > last);
        last = ticket;
    }
    let ticket_syncs = syncs.load(Ordering::SeqCst) - start;
    let ticket_commits = ticket_syncs / per_commit;
    eprintln!("10,000 tickets: {ticket_syncs} syncs, {per_commit} per commit");
    // Tickets are reserved in blocks: a handful of durable commits, not 10,000.
    assert!(
        (1..=5).contains(&ticket_commits),
        "10,000 tickets took {ticket_commits} durable commits"
    );
    // `counters.commits` counts batch commits (document writes, deletes, listings, purges);
    // ticket reservations are not batches, so it does not move, and neither does anything
    // else the store reports.
    assert_eq!(store.stats().unwrap(), before);
    assert_verified(&store);
}
