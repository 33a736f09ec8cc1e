//! The adversarial delivery schedule, and the in-order delivery it must end equal to.
//!
//! Everything here is decided by the seed. (What the two concurrent consumers of the first
//! phase do is not: they race for real. That changes which of two racing revisions is
//! refused as older, never the final state.)

use super::corpus::{listing_version, revision_version, CorpusDocument, End};
use ratchetdb::Version;

/// SplitMix64: small, fast, and the same on every platform.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            items.swap(i, j);
        }
    }
}

/// What a message asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Payload {
    /// Write revision `revision` (1-based) of document `doc`.
    Upsert { doc: usize, revision: usize },
    /// The source deleted document `doc` (the time of its revision number `revision`).
    Delete { doc: usize, revision: usize },
    /// The listing of every document that exists at the end.
    Retain,
}

impl Payload {
    pub fn version(self) -> Version {
        match self {
            Payload::Upsert { doc, revision } | Payload::Delete { doc, revision } => {
                revision_version(doc, revision)
            }
            Payload::Retain => listing_version(),
        }
    }
}

/// One message as a consumer receives it.
#[derive(Clone, Copy, Debug)]
pub struct Delivery {
    pub payload: Payload,
    /// A second (or later) delivery of a message: a retry after a lost acknowledgement, a
    /// dead-letter replay.
    pub redelivered: bool,
}

/// A stage of the schedule: one or more consumers, each with its own messages.
pub struct Phase {
    pub title: &'static str,
    pub consumers: Vec<Vec<Delivery>>,
}

/// Every event once, in version order: revisions, deletes, then the listing.
pub fn in_order(corpus: &[CorpusDocument]) -> Vec<Payload> {
    let mut events = source_events(corpus);
    events.push(Payload::Retain);
    events
}

/// Revisions and delete events, sorted by version.
fn source_events(corpus: &[CorpusDocument]) -> Vec<Payload> {
    let mut events = Vec::new();
    for (doc, document) in corpus.iter().enumerate() {
        for revision in 1..=document.revisions.len() {
            events.push(Payload::Upsert { doc, revision });
        }
        if let End::Deleted(revision) = document.end {
            events.push(Payload::Delete { doc, revision });
        }
    }
    events.sort_by_key(|event| event.version().value);
    events
}

fn first(payload: Payload) -> Delivery {
    Delivery {
        payload,
        redelivered: false,
    }
}

fn again(payload: Payload) -> Delivery {
    Delivery {
        payload,
        redelivered: true,
    }
}

/// The adversarial schedule: five phases.
pub fn adversarial(corpus: &[CorpusDocument], seed: u64) -> Vec<Phase> {
    let mut rng = Rng::new(seed);

    // 1. Live traffic: every revision and delete, about a third of them delivered twice
    //    (F1), the queue shuffled within a window (F2: a retry overtaken by a newer
    //    revision), and two consumers taking from it at once (F3).
    let events = source_events(corpus);
    let mut queued: Vec<(u64, Delivery)> = Vec::new();
    // Revisions of one document are a document count apart in `events`: a window of about
    // that size lets the next revision overtake, and a retry arrive after it.
    let window = corpus.len() as u64 * 16;
    for (index, &payload) in events.iter().enumerate() {
        let position = index as u64 * 16;
        queued.push((position + rng.below(window), first(payload)));
        if rng.below(100) < 35 {
            queued.push((position + 16 + rng.below(2 * window), again(payload)));
        }
    }
    queued.sort_by_key(|(key, _)| *key);
    let mut live = vec![Vec::new(), Vec::new()];
    for (_, delivery) in queued {
        live[rng.below(2) as usize].push(delivery);
    }

    // 2. A dead-letter queue replayed: old payloads that failed hours ago (F4).
    let mut old: Vec<Payload> = events
        .iter()
        .copied()
        .filter(|event| match *event {
            Payload::Upsert { doc, revision } => revision < corpus[doc].revisions.len(),
            _ => false,
        })
        .collect();
    rng.shuffle(&mut old);
    old.truncate(16);
    let dead_letters = old.into_iter().map(again).collect();

    // 3. A backfill job: a snapshot of the source taken in week 1, before most edits (F5).
    let backfill = (0..corpus.len())
        .map(|doc| first(Payload::Upsert { doc, revision: 1 }))
        .collect();

    // 4. The sync: a listing of what exists now; documents gone without an event go (F11).
    let sync = vec![first(Payload::Retain)];

    // 5. Stuck retries of documents that were deleted or vanished since (F9, F11).
    let late = corpus
        .iter()
        .enumerate()
        .filter(|(_, document)| document.end != End::Live)
        .map(|(doc, document)| {
            again(Payload::Upsert {
                doc,
                revision: document.revisions.len(),
            })
        })
        .collect();

    vec![
        Phase {
            title: "live: shuffled, retried, 2 consumers at once",
            consumers: live,
        },
        Phase {
            title: "dead-letter replay of old payloads",
            consumers: vec![dead_letters],
        },
        Phase {
            title: "backfill of a week-1 snapshot",
            consumers: vec![backfill],
        },
        Phase {
            title: "sync: listing of what exists (retain)",
            consumers: vec![sync],
        },
        Phase {
            title: "late retries of deleted documents",
            consumers: vec![late],
        },
    ]
}
