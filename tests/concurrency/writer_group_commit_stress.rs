//! Many producers hammer overlapping documents through one `Writer` with random versions,
//! redeliveries and deletes, while readers watch. The final state must equal the reference
//! model (each document in the state of its highest-versioned delivery, deletes winning
//! ties), `verify()` must be clean, and no reader may ever see a document with chunks of two
//! revisions or a live document vanish (I2, I3, I4).

use ratchetdb::{Chunk, Document, Op, OpOutcome, Options, Store, Version, WriterOptions};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

const PRODUCERS: u64 = 8;
const OPS_PER_PRODUCER: u64 = 300;
const DOCS: u64 = 12;

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The content of a revision is a function of (doc, version): equal versions never conflict.
fn revision(doc: u64, version: u64) -> Document {
    let chunks = (version % 5) + 1;
    let mut d = Document::new("s", format!("d{doc}"), Version::number(version));
    for c in 0..chunks {
        let x = (doc * 31 + version * 7 + c) as f32;
        d = d.with_chunk(Chunk::new(
            format!("d{doc} v{version} c{c}"),
            vec![1.0, x.sin(), x.cos()],
        ));
    }
    d
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Delivery {
    Upsert(u64, u64),
    Delete(u64, u64),
}

#[test]
fn eight_producers_overlapping_documents_end_in_the_model_state() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path().join("db.redb"), Options::default()).expect("open");
    let writer = store.writer_with(WriterOptions::for_store(&store).max_batch_ops(64));
    let stop = Arc::new(AtomicBool::new(false));

    let readers: Vec<_> = (0..2)
        .map(|_| {
            let store = store.clone();
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut seen_live: BTreeMap<String, bool> = BTreeMap::new();
                let mut checks = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let snapshot = store.snapshot().expect("snapshot");
                    let mut present = 0usize;
                    for doc in snapshot.documents(false).expect("documents") {
                        let doc = doc.expect("document");
                        checks += 1;
                        let marker = format!("v{}", doc.version.value);
                        for (i, chunk) in doc.chunks.iter().enumerate() {
                            assert_eq!(
                                chunk.position as usize, i,
                                "{}: positions not dense",
                                doc.id
                            );
                            assert_eq!(
                                chunk.generation, doc.generation,
                                "{}: mixed generations",
                                doc.id
                            );
                            assert!(
                                chunk.text.contains(&format!("{} {marker} ", doc.id)),
                                "{}: chunk {:?} is not of revision {marker}",
                                doc.id,
                                chunk.text
                            );
                        }
                        seen_live.insert(doc.id.clone(), !doc.deleted);
                        present += 1;
                    }
                    // A document, once written, never vanishes: it is live or a tombstone.
                    assert_eq!(
                        present,
                        seen_live.len(),
                        "a document vanished from a snapshot"
                    );
                }
                checks
            })
        })
        .collect();

    let producers: Vec<_> = (0..PRODUCERS)
        .map(|p| {
            let writer = writer.clone();
            std::thread::spawn(move || {
                let mut rng = 0xC0FFEE ^ p;
                let mut delivered = Vec::new();
                for _ in 0..OPS_PER_PRODUCER {
                    let doc = splitmix(&mut rng) % DOCS;
                    let version = splitmix(&mut rng) % 40 + 1;
                    let roll = splitmix(&mut rng) % 10;
                    let (delivery, op) = if roll == 0 {
                        (
                            Delivery::Delete(doc, version),
                            Op::Delete {
                                source: "s".into(),
                                id: format!("d{doc}"),
                                version: Version::number(version),
                            },
                        )
                    } else {
                        (
                            Delivery::Upsert(doc, version),
                            Op::Upsert(revision(doc, version)),
                        )
                    };
                    let pending = writer.submit(op).expect("submit");
                    let outcome = pending.wait().expect("outcome");
                    assert!(matches!(outcome, OpOutcome::Document(_)));
                    delivered.push(delivery);
                    // A redelivery now and then.
                    if roll == 1 {
                        writer.upsert(revision(doc, version)).expect("redelivery");
                    }
                }
                delivered
            })
        })
        .collect();

    let mut deliveries = Vec::new();
    for producer in producers {
        deliveries.extend(producer.join().expect("producer"));
    }
    stop.store(true, Ordering::Relaxed);
    for reader in readers {
        assert!(reader.join().expect("reader") > 0);
    }
    let stats = writer.stats();
    writer.shutdown();

    // The model: highest version wins; at an equal version a delete beats a live revision.
    let mut model: BTreeMap<u64, (u64, bool)> = BTreeMap::new();
    for delivery in deliveries {
        let (doc, version, deleted) = match delivery {
            Delivery::Upsert(d, v) => (d, v, false),
            Delivery::Delete(d, v) => (d, v, true),
        };
        let entry = model.entry(doc).or_insert((version, deleted));
        if (version, deleted) > *entry {
            *entry = (version, deleted);
        }
    }
    for (doc, (version, deleted)) in &model {
        let stored = store
            .get("s", &format!("d{doc}"))
            .expect("get")
            .expect("present");
        assert_eq!(stored.version.value, *version, "d{doc}");
        assert_eq!(stored.deleted, *deleted, "d{doc}");
        if !deleted {
            let expected: Vec<String> = revision(*doc, *version)
                .chunks
                .into_iter()
                .map(|c| c.text)
                .collect();
            let texts: Vec<String> = stored.chunks.into_iter().map(|c| c.text).collect();
            assert_eq!(texts, expected, "d{doc}");
        }
    }
    let report = store.verify().expect("verify");
    assert!(report.is_ok(), "{:?}", report.violations);
    // Group commit happened: fewer transactions than operations.
    assert!(stats.batches < stats.ops, "{stats:?}");
}
