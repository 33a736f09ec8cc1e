//! Model-based property test of the version guard (invariants I1, I2, I3, I7).
//!
//! Random delivery schedules over 3 sources × 4 document ids — upserts, deletes, `retain`
//! listings, exact redeliveries, shuffled order, `write_batch` groups, close/reopen — run
//! against the store and against the crate's one reference model of the guard
//! (`ratchetdb::testkit::Model`, shared with the fuzz targets, written from the semantics
//! alone):
//!
//! * per document: its version, tombstone flag, content and chunk count, the row the store
//!   should hold;
//! * per `(source, version)`: the listing, because a listing that omits an id the store has
//!   never seen writes no row, yet refuses a later upsert of that id not newer than it;
//! * the counters.
//!
//! Content is a function of `(document, version)` and a listing's ids a function of
//! `(source, version)`, so no equal-version conflict arises (I8 is covered elsewhere) and the
//! final state must not depend on the order of delivery. Chunk counts vary between 0 and 5,
//! chunk texts come from a small per-document pool (so revisions grow, shrink, move and reuse
//! texts), and every vector is derived from its text.
//!
//! After every step: every outcome as the model predicts; every document's row (version,
//! deleted flag, chunk texts in order, metadata, vectors) as the model holds it; no other
//! document; the gauges and counters; `verify()`; and no stored version ever went down (I1).
//! At the end (I2): the state equals the state that each document's highest-versioned
//! delivery defines, and equals the states of two more stores, one fed each document's
//! highest delivery only, one fed the deduplicated schedule sorted by version.
//!
//! 1000 cases by default; `RATCHET_PROPTEST_CASES=N` runs N (for long runs).

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use ratchetdb::testkit::{self, Model, ModelCounters, ModelOutcome, ModelRow};
use ratchetdb::{
    Chunk, Document, Durability, Op, OpOutcome, Options, PlannedAction, SkipReason, Store,
    StoredDocument, Version,
};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

const SOURCES: u8 = 3;
const DOCS_PER_SOURCE: u8 = 4;
const MAX_VERSION: u64 = 12;
const DIMENSION: usize = 4;

type Key = (u8, u8);

fn source_name(source: u8) -> String {
    format!("s{source}")
}

fn doc_name(doc: u8) -> String {
    format!("d{doc}")
}

fn all_keys() -> impl Iterator<Item = Key> {
    (0..SOURCES).flat_map(|s| (0..DOCS_PER_SOURCE).map(move |d| (s, d)))
}

// ---------------------------------------------------------------------------------------------
// Deterministic content.

fn mix(x: u64) -> u64 {
    // One SplitMix64 step from `x`: a well-mixed function of it.
    ratchetdb::testkit::SplitMix64::new(x).next_u64()
}

/// One revision's content: what the store must give back.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Content {
    meta: Value,
    texts: Vec<String>,
}

/// The content of `(source, doc)` at `version`: a function, so an equal version always carries
/// equal content. Only five variants per document, so a newer version often repeats the
/// content (an `Unchanged` bump); texts from a pool of four, so revisions share texts and a
/// revision may hold the same text twice.
fn content_of(source: u8, doc: u8, version: u64) -> Content {
    let key = (u64::from(source) << 8) | u64::from(doc);
    let variant = mix((key << 32) ^ version) % 5;
    let seed = mix((key << 40) ^ (variant << 1) ^ 0x5eed);
    let count = seed % 6;
    let texts = (0..count)
        .map(|i| format!("s{source}/d{doc} text {}", mix(seed ^ (i + 1)) % 4))
        .collect();
    let meta = if variant.is_multiple_of(2) {
        Value::Null
    } else {
        json!({ "variant": variant })
    };
    Content { meta, texts }
}

fn vector_of(text: &str) -> Vec<f32> {
    // FNV-1a, then four 16-bit lanes; every component is positive, so never a zero vector.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    (0..DIMENSION)
        .map(|lane| ((hash >> (16 * lane)) & 0xffff) as f32 / 65535.0 + 0.1)
        .collect()
}

fn unit(vector: &[f32]) -> Vec<f32> {
    let norm = vector
        .iter()
        .map(|x| f64::from(*x) * f64::from(*x))
        .sum::<f64>()
        .sqrt();
    vector
        .iter()
        .map(|x| (f64::from(*x) / norm) as f32)
        .collect()
}

fn document_of(source: u8, doc: u8, version: u64) -> Document {
    let content = content_of(source, doc, version);
    let mut document = Document::new(source_name(source), doc_name(doc), Version::number(version))
        .with_meta(content.meta);
    for text in content.texts {
        let vector = vector_of(&text);
        document = document.with_chunk(Chunk::new(text, vector));
    }
    document
}

// ---------------------------------------------------------------------------------------------
// Schedules.

/// Bit `d` of `masks[source][version]` set: document `d` is present in the listing of
/// `source` at `version`. A function of `(source, version)`, like content.
type ListingMasks = [[u8; MAX_VERSION as usize + 1]; SOURCES as usize];

fn present_ids(masks: &ListingMasks, source: u8, version: u64) -> Vec<String> {
    let mask = masks[source as usize][version as usize];
    (0..DOCS_PER_SOURCE)
        .filter(|d| mask & (1 << d) != 0)
        .map(doc_name)
        .collect()
}

fn is_present(masks: &ListingMasks, source: u8, version: u64, doc: u8) -> bool {
    masks[source as usize][version as usize] & (1 << doc) != 0
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Delivery {
    Upsert { source: u8, doc: u8, version: u64 },
    Delete { source: u8, doc: u8, version: u64 },
    Retain { source: u8, version: u64 },
}

impl Delivery {
    fn version(self) -> u64 {
        match self {
            Delivery::Upsert { version, .. }
            | Delivery::Delete { version, .. }
            | Delivery::Retain { version, .. } => version,
        }
    }

    fn op(self, masks: &ListingMasks) -> Op {
        match self {
            Delivery::Upsert {
                source,
                doc,
                version,
            } => Op::Upsert(document_of(source, doc, version)),
            Delivery::Delete {
                source,
                doc,
                version,
            } => Op::Delete {
                source: source_name(source),
                id: doc_name(doc),
                version: Version::number(version),
            },
            Delivery::Retain { source, version } => Op::Retain {
                source: source_name(source),
                present: present_ids(masks, source, version),
                version: Version::number(version),
            },
        }
    }
}

impl fmt::Debug for Delivery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Delivery::Upsert {
                source,
                doc,
                version,
            } => write!(f, "upsert s{source}/d{doc}@{version}"),
            Delivery::Delete {
                source,
                doc,
                version,
            } => write!(f, "delete s{source}/d{doc}@{version}"),
            Delivery::Retain { source, version } => write!(f, "retain s{source}@{version}"),
        }
    }
}

#[derive(Clone, Debug)]
enum Step {
    /// One operation through `upsert` / `delete` / `retain`.
    One(Delivery),
    /// Several operations through one `write_batch`.
    Batch(Vec<Delivery>),
    /// Drop the store and open the file again.
    Reopen,
}

#[derive(Clone)]
struct Schedule {
    masks: ListingMasks,
    steps: Vec<Step>,
}

impl Schedule {
    fn reopens(&self) -> bool {
        self.steps.iter().any(|s| matches!(s, Step::Reopen))
    }

    fn deliveries(&self) -> impl Iterator<Item = Delivery> + '_ {
        self.steps.iter().flat_map(|step| match step {
            Step::One(delivery) => vec![*delivery],
            Step::Batch(deliveries) => deliveries.clone(),
            Step::Reopen => Vec::new(),
        })
    }
}

impl fmt::Debug for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Only the listings the schedule uses, as the ids they name.
        let mut listings = BTreeMap::new();
        for delivery in self.deliveries() {
            if let Delivery::Retain { source, version } = delivery {
                listings.insert(
                    format!("s{source}@{version}"),
                    present_ids(&self.masks, source, version),
                );
            }
        }
        f.debug_struct("Schedule")
            .field("listings", &listings)
            .field("steps", &self.steps)
            .finish()
    }
}

fn delivery() -> impl Strategy<Value = Delivery> {
    let version = 1..=MAX_VERSION;
    prop_oneof![
        5 => (0..SOURCES, 0..DOCS_PER_SOURCE, version.clone()).prop_map(|(source, doc, version)| {
            Delivery::Upsert { source, doc, version }
        }),
        2 => (0..SOURCES, 0..DOCS_PER_SOURCE, version.clone()).prop_map(|(source, doc, version)| {
            Delivery::Delete { source, doc, version }
        }),
        1 => (0..SOURCES, version).prop_map(|(source, version)| Delivery::Retain { source, version }),
    ]
}

/// A multiset of deliveries (each delivered once, or redelivered up to twice more) in a
/// random order, cut into single operations and `write_batch` groups, with reopens between
/// groups in about a fifth of the cases.
fn schedule() -> impl Strategy<Value = Schedule> {
    // One sort key per copy: sorting every copy by its key shuffles the multiset, and shrinks
    // towards the generated order (all keys 0).
    let copies = prop_oneof![
        4 => prop::collection::vec(any::<u16>(), 1..=1),
        1 => prop::collection::vec(any::<u16>(), 2..=3),
    ];
    let group = (
        prop_oneof![5 => Just(1usize), 2 => 2..=4usize],
        prop::bool::weighted(0.15),
    );
    let masks = prop::array::uniform3(prop::array::uniform13(0u8..16));
    (
        masks,
        prop::collection::vec((delivery(), copies), 1..40),
        prop::collection::vec(group, 0..40),
        prop::bool::weighted(0.2),
    )
        .prop_map(|(masks, deliveries, groups, reopens)| {
            let mut shuffled: Vec<(u16, usize, Delivery)> = Vec::new();
            for (index, (delivery, keys)) in deliveries.into_iter().enumerate() {
                for key in keys {
                    shuffled.push((key, index, delivery));
                }
            }
            shuffled.sort_by_key(|&(key, index, _)| (key, index));
            let mut order = shuffled.into_iter().map(|(_, _, d)| d).peekable();
            let mut steps = Vec::new();
            let mut groups = groups.into_iter();
            while order.peek().is_some() {
                let (size, reopen) = groups.next().unwrap_or((1, false));
                let group: Vec<Delivery> = order.by_ref().take(size).collect();
                steps.push(match group.as_slice() {
                    [one] => Step::One(*one),
                    _ => Step::Batch(group),
                });
                if reopens && reopen {
                    steps.push(Step::Reopen);
                }
            }
            Schedule { masks, steps }
        })
}

// ---------------------------------------------------------------------------------------------
// The reference model is the crate's one model of the guard (`ratchetdb::testkit::Model`),
// shared with the fuzz targets: it takes the same `Op`s the store does.

// ---------------------------------------------------------------------------------------------
// Running a schedule.

enum Backing {
    Memory,
    File(tempfile::TempDir),
}

impl Backing {
    fn open(&self) -> Store {
        match self {
            Backing::Memory => {
                Store::open_with_backend(redb::backends::InMemoryBackend::new(), Options::default())
            }
            // Commits without fsync (at ~7 ms an fsync, the reopening cases would dominate the
            // run); dropping the store closes the file cleanly, which must keep every commit.
            Backing::File(dir) => Store::open(
                dir.path().join("index.redb"),
                Options::default().durability(Durability::None),
            ),
        }
        .unwrap_or_else(|e| panic!("open: {e}"))
    }
}

/// Delivers one operation through the single-operation entry points.
fn deliver_one(store: &Store, delivery: Delivery, masks: &ListingMasks) -> OpOutcome {
    let result = match delivery.op(masks) {
        Op::Upsert(doc) => store.upsert(doc).map(OpOutcome::Document),
        Op::Delete {
            source,
            id,
            version,
        } => store.delete(&source, &id, version).map(OpOutcome::Document),
        Op::Retain {
            source,
            present,
            version,
        } => store
            .retain(&source, present, version)
            .map(OpOutcome::Retain),
        other => panic!("an operation the test does not make: {other:?}"),
    };
    result.unwrap_or_else(|e| panic!("{delivery:?}: {e}"))
}

fn deliver_batch(store: &Store, deliveries: &[Delivery], masks: &ListingMasks) -> Vec<OpOutcome> {
    let ops = deliveries.iter().map(|d| d.op(masks)).collect();
    let results = store
        .write_batch(ops)
        .unwrap_or_else(|e| panic!("batch {deliveries:?}: {e}"));
    assert_eq!(results.len(), deliveries.len(), "one result per operation");
    results
        .into_iter()
        .zip(deliveries)
        .map(|(result, delivery)| result.unwrap_or_else(|e| panic!("{delivery:?}: {e}")))
        .collect()
}

/// Everything the store shows, against the model. `versions` is each document's stored
/// version after the previous step (I1).
fn check_state(
    store: &Store,
    model: &Model,
    versions: &mut BTreeMap<Key, u64>,
) -> Result<(), TestCaseError> {
    let snapshot = store
        .snapshot()
        .map_err(|e| fail(format!("snapshot: {e}")))?;
    for key @ (source, doc) in all_keys() {
        let (source_name, doc_name) = (source_name(source), doc_name(doc));
        let stored = snapshot
            .get_with_vectors(&source_name, &doc_name)
            .map_err(|e| fail(format!("get {source_name}/{doc_name}: {e}")))?;
        let expected = model.rows.get(&(source_name.clone(), doc_name.clone()));
        let Some(stored) = stored else {
            prop_assert!(
                expected.is_none(),
                "{source_name}/{doc_name} is missing; the model has {expected:?}"
            );
            prop_assert!(
                !versions.contains_key(&key),
                "{source_name}/{doc_name} had a row (version {:?}) and lost it",
                versions.get(&key)
            );
            continue;
        };
        let Some(row) = expected else {
            return Err(fail(format!(
                "{source_name}/{doc_name} is stored ({stored:?}) but the model has no row for it"
            )));
        };
        // I1: the stored version never decreases.
        if let Some(&previous) = versions.get(&key) {
            prop_assert!(
                stored.version.value >= previous,
                "I1: {source_name}/{doc_name} went from version {previous} to {}",
                stored.version
            );
        }
        versions.insert(key, stored.version.value);
        prop_assert_eq!(
            stored.version,
            Version::number(row.version),
            "{}/{} version",
            &source_name,
            &doc_name
        );
        if row.deleted {
            prop_assert!(stored.deleted, "{source_name}/{doc_name} should be deleted");
            prop_assert!(
                stored.chunks.is_empty(),
                "{source_name}/{doc_name}: a tombstone with chunks"
            );
            continue;
        }
        prop_assert!(!stored.deleted, "{source_name}/{doc_name} should be live");
        let chunks: Vec<(String, Value)> = stored
            .chunks
            .iter()
            .map(|c| (c.text.clone(), c.meta.clone()))
            .collect();
        prop_assert_eq!(
            testkit::content_of(&stored.meta, &chunks),
            row.content.clone(),
            "{}/{} content (metadata, chunk texts and metadata, in order)",
            &source_name,
            &doc_name
        );
        prop_assert_eq!(stored.chunks.len() as u64, row.chunks);
        for (position, chunk) in stored.chunks.iter().enumerate() {
            prop_assert_eq!(chunk.position as usize, position);
            prop_assert_eq!(
                chunk.generation,
                stored.generation,
                "I3: {}/{} chunk {} is of another generation",
                &source_name,
                &doc_name,
                position
            );
            let expected_vector = unit(&vector_of(&chunk.text));
            let vector = chunk.vector.as_deref().unwrap_or(&[]);
            prop_assert!(
                vector.len() == DIMENSION
                    && vector
                        .iter()
                        .zip(&expected_vector)
                        .all(|(a, b)| (a - b).abs() <= 1e-6),
                "{source_name}/{doc_name} chunk {position} ({:?}) has vector {vector:?}, \
                 its text's is {expected_vector:?}",
                chunk.text
            );
        }
    }

    // No document the model does not have.
    let mut listed = BTreeSet::new();
    for doc in snapshot
        .documents(false)
        .map_err(|e| fail(format!("documents: {e}")))?
    {
        let doc = doc.map_err(|e| fail(format!("documents: {e}")))?;
        listed.insert((doc.source, doc.id));
    }
    let modelled: BTreeSet<(String, String)> = model.rows.keys().cloned().collect();
    prop_assert_eq!(listed, modelled, "the documents listed");

    // Gauges and counters.
    let stats = snapshot.stats().map_err(|e| fail(format!("stats: {e}")))?;
    let live: Vec<&ModelRow> = model.rows.values().filter(|row| !row.deleted).collect();
    let live_chunks: u64 = live.iter().map(|row| row.chunks).sum();
    prop_assert_eq!(stats.documents, live.len() as u64, "stats.documents");
    prop_assert_eq!(
        stats.tombstones,
        (model.rows.len() - live.len()) as u64,
        "stats.tombstones"
    );
    prop_assert_eq!(stats.chunks, live_chunks, "stats.chunks");
    prop_assert_eq!(stats.vectors, live_chunks, "stats.vectors");
    prop_assert_eq!(
        stats.listings,
        model.listings.len() as u64,
        "stats.listings"
    );
    prop_assert_eq!(
        &ModelCounters::of(&stats.counters),
        &model.counters,
        "counters"
    );

    let report = snapshot
        .verify()
        .map_err(|e| fail(format!("verify: {e}")))?;
    prop_assert!(
        report.is_ok(),
        "verify found violations:\n{}",
        report
            .violations
            .iter()
            .map(|v| format!("  {v}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    Ok(())
}

fn fail(message: String) -> TestCaseError {
    TestCaseError::fail(message)
}

/// What a document amounts to, whatever rows the delivery order left: nothing, a live
/// revision, or deleted at a version (by a tombstone row, or by a listing that omitted an id
/// the store never had a row for).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Effective {
    Absent,
    Live { version: u64, content: Content },
    Deleted { version: u64 },
}

fn effective_state(store: &Store, (source, doc): Key) -> Effective {
    let (source_name, doc_name) = (source_name(source), doc_name(doc));
    let stored = store
        .get(&source_name, &doc_name)
        .unwrap_or_else(|e| panic!("get: {e}"));
    match stored {
        Some(stored) if stored.deleted => Effective::Deleted {
            version: stored.version.value,
        },
        Some(stored) => Effective::Live {
            version: stored.version.value,
            content: Content {
                meta: stored.meta,
                texts: stored.chunks.into_iter().map(|c| c.text).collect(),
            },
        },
        // No row: ask the guard what an upsert at the lowest version would meet.
        None => {
            let probe = Document::new(source_name, doc_name, Version::number(0));
            match store
                .plan(&probe)
                .unwrap_or_else(|e| panic!("plan: {e}"))
                .action
            {
                PlannedAction::Write => Effective::Absent,
                PlannedAction::Skip {
                    reason: SkipReason::Tombstoned,
                    stored_version,
                } => Effective::Deleted {
                    version: stored_version.value,
                },
                other => panic!("no row, yet the guard would {other:?}"),
            }
        }
    }
}

/// I2: each document's state as its highest-versioned delivery defines it; a delete (or a
/// listing omitting the id) wins over an upsert of the same version.
fn expected_final(
    deliveries: &BTreeSet<Delivery>,
    masks: &ListingMasks,
) -> BTreeMap<Key, Effective> {
    // Per document: the highest version delivered, and whether a delete came at it.
    let mut highest: BTreeMap<Key, (u64, bool)> = BTreeMap::new();
    let mut note = |key: Key, version: u64, is_delete: bool| {
        let entry = highest.entry(key).or_insert((version, is_delete));
        if version > entry.0 {
            *entry = (version, is_delete);
        } else if version == entry.0 {
            entry.1 |= is_delete;
        }
    };
    for &delivery in deliveries {
        match delivery {
            Delivery::Upsert {
                source,
                doc,
                version,
            } => note((source, doc), version, false),
            Delivery::Delete {
                source,
                doc,
                version,
            } => note((source, doc), version, true),
            Delivery::Retain { source, version } => {
                for doc in 0..DOCS_PER_SOURCE {
                    if !is_present(masks, source, version, doc) {
                        note((source, doc), version, true);
                    }
                }
            }
        }
    }
    all_keys()
        .map(|key| {
            let state = match highest.get(&key) {
                None => Effective::Absent,
                Some(&(version, true)) => Effective::Deleted { version },
                Some(&(version, false)) => Effective::Live {
                    version,
                    content: content_of(key.0, key.1, version),
                },
            };
            (key, state)
        })
        .collect()
}

/// The live documents as exported, generations and vector ids set to 0: those count the
/// history, not the state.
fn live_export(store: &Store) -> Vec<StoredDocument> {
    let snapshot = store.snapshot().unwrap_or_else(|e| panic!("snapshot: {e}"));
    let documents = snapshot
        .documents(true)
        .unwrap_or_else(|e| panic!("documents: {e}"));
    documents
        .map(|doc| doc.unwrap_or_else(|e| panic!("documents: {e}")))
        .filter(|doc| !doc.deleted)
        .map(|mut doc| {
            doc.generation = 0;
            for chunk in &mut doc.chunks {
                chunk.generation = 0;
                chunk.vector_id = 0;
            }
            doc
        })
        .collect()
}

fn run(schedule: &Schedule) -> Result<(), TestCaseError> {
    let masks = &schedule.masks;
    let backing = if schedule.reopens() {
        Backing::File(tempfile::tempdir().map_err(|e| fail(format!("tempdir: {e}")))?)
    } else {
        Backing::Memory
    };
    let mut store = backing.open();
    let mut model = Model::new();
    let mut versions = BTreeMap::new();
    for (index, step) in schedule.steps.iter().enumerate() {
        let at = || format!("step {index} ({step:?})");
        match step {
            Step::One(delivery) => {
                let expected = model.apply(&delivery.op(masks)).map_err(fail)?;
                let outcome = ModelOutcome::of(&deliver_one(&store, *delivery, masks));
                prop_assert_eq!(outcome, expected, "{}: outcome", at());
            }
            Step::Batch(deliveries) => {
                let outcomes = deliver_batch(&store, deliveries, masks);
                for (delivery, outcome) in deliveries.iter().zip(outcomes) {
                    let expected = model.apply(&delivery.op(masks)).map_err(fail)?;
                    prop_assert_eq!(
                        ModelOutcome::of(&outcome),
                        expected,
                        "{}: {:?}",
                        at(),
                        delivery
                    );
                }
            }
            Step::Reopen => {
                drop(store);
                store = backing.open();
            }
        }
        check_state(&store, &model, &mut versions)
            .map_err(|e| fail(format!("after {}: {e}", at())))?;
    }

    // I2: the same end whatever the order.
    let distinct: BTreeSet<Delivery> = schedule.deliveries().collect();
    let expected = expected_final(&distinct, masks);

    // A store fed each document's highest delivery only.
    let highest_only = Backing::Memory.open();
    for (&(source, doc), state) in &expected {
        match state {
            Effective::Absent => {}
            Effective::Live { version, .. } => {
                deliver_one(
                    &highest_only,
                    Delivery::Upsert {
                        source,
                        doc,
                        version: *version,
                    },
                    masks,
                );
            }
            Effective::Deleted { version } => {
                deliver_one(
                    &highest_only,
                    Delivery::Delete {
                        source,
                        doc,
                        version: *version,
                    },
                    masks,
                );
            }
        }
    }
    // A store fed the deduplicated schedule sorted by version.
    let sorted = Backing::Memory.open();
    let mut by_version: Vec<Delivery> = distinct.iter().copied().collect();
    by_version.sort_by_key(|d| (d.version(), *d));
    for delivery in by_version {
        deliver_one(&sorted, delivery, masks);
    }

    for key in all_keys() {
        let state = effective_state(&store, key);
        prop_assert_eq!(
            &state,
            &expected[&key],
            "I2: final state of s{}/d{}",
            key.0,
            key.1
        );
        prop_assert_eq!(
            &effective_state(&highest_only, key),
            &state,
            "I2: s{}/d{} fed only its highest delivery",
            key.0,
            key.1
        );
        prop_assert_eq!(
            &effective_state(&sorted, key),
            &state,
            "I2: s{}/d{} fed the schedule sorted by version",
            key.0,
            key.1
        );
    }
    let export = live_export(&store);
    prop_assert_eq!(
        &live_export(&highest_only),
        &export,
        "I2: live export vs highest-only store"
    );
    prop_assert_eq!(
        &live_export(&sorted),
        &export,
        "I2: live export vs sorted store"
    );
    for other in [&highest_only, &sorted] {
        let report = other.verify().map_err(|e| fail(format!("verify: {e}")))?;
        prop_assert!(report.is_ok(), "verify: {:?}", report.violations);
    }
    Ok(())
}

fn config() -> ProptestConfig {
    let cases = std::env::var("RATCHET_PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    ProptestConfig {
        cases,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "proptest-regressions/model_based_schedules.txt",
        ))),
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn random_schedules_match_the_model(schedule in schedule()) {
        run(&schedule)?;
    }
}
