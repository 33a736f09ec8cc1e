//! Model-based schedules (invariants I1, I2, I3, I7, I8 refusals): random batches of
//! upserts (growing, shrinking, reusing and moving chunk texts, equal versions with other
//! content), deletes and `retain` listings over 2 sources × 4 ids run against the backend's
//! store, against the crate's reference model of the guard (`ratchetdb::testkit::Model`)
//! and against an embedded store (the reference implementation). After every batch: each
//! outcome as the model predicts and exactly as the embedded store answers (chunks written,
//! reused, removed; generations aside); every row as the model holds it; the counters; and
//! `verify()` clean.
//!
//! 30 cases by default; `RATCHET_PG_CASES=N` runs N. (The embedded store's own schedules,
//! with crashes and readers, are `tests/concurrency/model_based_schedules.rs`.)

use crate::common::assert_verified;
use crate::fixture::Fixture;
use ratchetdb::testkit::{self, Model, ModelCounters, ModelOutcome, ModelRow, SplitMix64};
use ratchetdb::{
    Chunk, Document, Durability, Op, OpOutcome, Options, Outcome, Store, StoredDocument, Version,
};
use serde_json::json;
use std::collections::BTreeMap;

crate::conformance!(model_schedules);

const TEXTS: [&str; 5] = ["alpha", "beta", "gamma", "delta", "epsilon"];

/// A vector derived from the text alone, so identical texts carry identical vectors.
fn vector_of(text: &str) -> Vec<f32> {
    let mut rng = SplitMix64::new(text.bytes().fold(7, |h, b| h * 31 + u64::from(b)));
    (0..4).map(|_| 1.0 + rng.below(100) as f32).collect()
}

fn random_op(rng: &mut SplitMix64) -> Op {
    let source = format!("s{}", rng.below(2));
    let id = format!("d{}", rng.below(4));
    let version = Version::number(1 + rng.below(10));
    match rng.below(10) {
        0..=5 => {
            let lang = ["en", "de"][rng.below(2) as usize];
            let mut doc = Document::new(source, id, version).with_meta(json!({ "lang": lang }));
            for _ in 0..rng.below(5) {
                let text = TEXTS[rng.below(TEXTS.len() as u64) as usize];
                let chunk = if rng.one_in(4) {
                    // Asks for the stored vector of identical text (MissingVector if none).
                    Chunk::without_vector(text)
                } else {
                    Chunk::new(text, vector_of(text))
                };
                doc = doc.with_chunk(chunk.with_meta(json!({"n": rng.below(3)})));
            }
            Op::Upsert(doc)
        }
        6..=7 => Op::Delete {
            source,
            id,
            version,
        },
        _ => Op::Retain {
            source,
            present: (0..4)
                .filter(|_| rng.one_in(2))
                .map(|d| format!("d{d}"))
                .collect(),
            version,
        },
    }
}

/// The outcome with its generation zeroed (the two backends number generations apart).
fn comparable(outcome: &OpOutcome) -> OpOutcome {
    match outcome {
        OpOutcome::Document(Outcome::Written {
            chunks_written,
            chunks_reused,
            chunks_removed,
            ..
        }) => OpOutcome::Document(Outcome::Written {
            generation: 0,
            chunks_written: *chunks_written,
            chunks_reused: *chunks_reused,
            chunks_removed: *chunks_removed,
        }),
        other => other.clone(),
    }
}

/// Every document of the store as the model represents it.
fn rows(store: &Store) -> BTreeMap<(String, String), ModelRow> {
    store
        .documents(false)
        .expect("export")
        .into_iter()
        .map(|doc| ((doc.source.clone(), doc.id.clone()), model_row(&doc)))
        .collect()
}

/// One document as the model represents it.
fn model_row(doc: &StoredDocument) -> ModelRow {
    let content = if doc.deleted {
        "null".to_string()
    } else {
        let chunks: Vec<(String, serde_json::Value)> = doc
            .chunks
            .iter()
            .map(|c| (c.text.clone(), c.meta.clone()))
            .collect();
        testkit::content_of(&doc.meta, &chunks)
    };
    ModelRow {
        version: doc.version.value,
        deleted: doc.deleted,
        content,
        chunks: if doc.deleted {
            0
        } else {
            doc.chunks.len() as u64
        },
    }
}

fn model_schedules(b: &dyn Fixture) {
    let cases: u64 = std::env::var("RATCHET_PG_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30);
    for case in 0..cases {
        // A store of its own per case. Commits are not fsynced (what a crash keeps is not
        // this property; a server keeps its own durability).
        let options = Options::default().durability(Durability::None);
        let store = b.open_with(&format!("case{case}"), options.clone());
        let dir = tempfile::tempdir().expect("tempdir");
        let embedded = Store::open(dir.path().join("s.redb"), options).expect("open");
        let mut model = Model::new();
        let mut rng = SplitMix64::new(0x5eed_0000 + case);
        for step in 0..25 {
            let ops: Vec<Op> = (0..1 + rng.below(4)).map(|_| random_op(&mut rng)).collect();
            let from_store = store.write_batch(ops.clone()).expect("batch");
            let from_embedded = embedded.write_batch(ops.clone()).expect("embedded batch");
            for ((op, result), embedded_result) in ops.iter().zip(&from_store).zip(&from_embedded) {
                let context = format!("case {case} step {step}: {op:?}");
                match (result, embedded_result) {
                    (Ok(p), Ok(e)) => {
                        assert_eq!(comparable(p), comparable(e), "{context}");
                        let expected = model.apply(op).expect("model");
                        assert_eq!(ModelOutcome::of(p), expected, "{context}");
                    }
                    (Err(p), Err(e)) => {
                        assert_eq!(p.to_string(), e.to_string(), "{context}");
                    }
                    (p, e) => panic!("{context}: {} {p:?}, embedded {e:?}", b.backend()),
                }
            }
            assert_eq!(rows(&store), model.rows, "case {case} step {step}");
            let stats = store.stats().expect("stats");
            assert_eq!(
                ModelCounters::of(&stats.counters),
                model.counters,
                "case {case} step {step}"
            );
        }
        assert_verified(&store);
        let embedded_stats = embedded.stats().expect("stats");
        let stats = store.stats().expect("stats");
        assert_eq!(
            (stats.documents, stats.tombstones, stats.chunks),
            (
                embedded_stats.documents,
                embedded_stats.tombstones,
                embedded_stats.chunks
            ),
            "case {case}"
        );
        assert_eq!(stats.counters, embedded_stats.counters, "case {case}");
    }
}
