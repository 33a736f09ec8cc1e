//! A file written by the schema-1 build (a row per chunk and a row per vector) is converted
//! to schema 2 when this build opens it: every document, version, generation, content hash,
//! chunk text and metadata, every vector bit for bit, every counter, listing and skip-log
//! row survive; only vector ids change. The guard goes on deciding against the converted
//! rows, searches find the converted vectors, and the conversion is one transaction: an I/O
//! failure at any point of it leaves a file that opens (converted or still schema 1, then
//! converted) with the same contents. The fixture and how it was made:
//! `tests/fixtures/schema1-README.md`.

mod support;

use ratchetdb::fuzzing::{Disk, FaultMode};
use ratchetdb::{Chunk, Document, Options, Outcome, SearchOptions, SkipReason, Store, Version};
use serde_json::Value;
use support::no_panic;

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/schema1-store.redb"
);
const EXPORT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/schema1-export.json"
);

/// The export with the vector ids taken out (they are the one thing that changes), and each
/// vector element as the f32 it stands for (serde_json's default float parsing may be an
/// ulp off in f64; the f32 is exact).
fn without_vector_ids(mut documents: Value) -> Value {
    if let Some(docs) = documents.as_array_mut() {
        for doc in docs {
            if let Some(chunks) = doc.get_mut("chunks").and_then(Value::as_array_mut) {
                for chunk in chunks {
                    if let Some(chunk) = chunk.as_object_mut() {
                        chunk.remove("vector_id");
                        if let Some(vector) = chunk.get_mut("vector").and_then(Value::as_array_mut)
                        {
                            for x in vector {
                                let bits = x.as_f64().map(|x| (x as f32).to_bits());
                                *x = Value::from(bits);
                            }
                        }
                    }
                }
            }
        }
    }
    documents
}

fn expected() -> (Value, Value) {
    let export: Value =
        serde_json::from_str(&std::fs::read_to_string(EXPORT).expect("read the export"))
            .expect("parse the export");
    (
        without_vector_ids(export["documents"].clone()),
        export["stats"].clone(),
    )
}

fn exported(store: &Store) -> (Value, Value) {
    let snapshot = store.snapshot().expect("snapshot");
    let documents: Vec<Value> = snapshot
        .documents(true)
        .expect("documents")
        .map(|d| serde_json::to_value(d.expect("document")).expect("json"))
        .collect();
    let stats = serde_json::to_value(store.stats().expect("stats")).expect("stats json");
    (without_vector_ids(Value::Array(documents)), stats)
}

fn assert_same_contents(store: &Store, when: &str) {
    let (documents, stats) = exported(store);
    let (want_documents, want_stats) = expected();
    assert_eq!(documents, want_documents, "{when}: the documents changed");
    for field in [
        "documents",
        "tombstones",
        "chunks",
        "vectors",
        "listings",
        "counters",
        "recent_skips",
        "dimension",
        "model",
        "metric",
    ] {
        assert_eq!(
            stats[field], want_stats[field],
            "{when}: stats.{field} changed"
        );
    }
    let report = store.verify().expect("verify");
    assert!(
        report.is_ok(),
        "{when}: verify found {:#?}",
        report.violations
    );
}

#[test]
fn schema_1_file_is_converted_on_open() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("old.redb");
    std::fs::copy(FIXTURE, &path).expect("copy the fixture");
    let store = Store::open(&path, Options::default()).expect("a schema-1 file opens");
    assert_same_contents(&store, "after the conversion");

    // Vectors keep their ids within a document from now on: slot = position.
    let a = store.get("notes", "a").expect("get").expect("a");
    let ids: Vec<u64> = a.chunks.iter().map(|c| c.vector_id).collect();
    assert_eq!(ids.len(), 3);
    assert!(
        ids.windows(2).all(|w| w[1] == w[0] + 1),
        "slots 0, 1, 2: {ids:?}"
    );

    // The guard decides against the converted rows.
    let stale = store
        .upsert(
            Document::new("notes", "b", Version::number(4))
                .with_chunk(Chunk::new("old", vec![1.0; 8])),
        )
        .expect("stale upsert");
    assert!(
        matches!(
            stale,
            Outcome::Skipped {
                reason: SkipReason::Older,
                ..
            }
        ),
        "{stale:?}"
    );
    let deleted = store
        .upsert(
            Document::new("notes", "c", Version::number(1))
                .with_chunk(Chunk::new("gone", vec![1.0; 8])),
        )
        .expect("write under a tombstone");
    assert!(
        matches!(
            deleted,
            Outcome::Skipped {
                reason: SkipReason::Tombstoned,
                ..
            }
        ),
        "{deleted:?}"
    );
    let listed_away = store
        .upsert(
            Document::new("web", "y", Version::number(10))
                .with_chunk(Chunk::new("page y", vec![1.0; 8])),
        )
        .expect("write under the listing");
    assert!(
        matches!(listed_away, Outcome::Skipped { .. }),
        "{listed_away:?}"
    );
    // A new revision reuses a converted vector for unchanged text (sent without one).
    let alpha = a.chunks.iter().find(|c| c.text == "alpha").expect("alpha");
    let revised = store
        .upsert(
            Document::new("notes", "a", Version::number(3))
                .with_chunk(Chunk::without_vector("alpha"))
                .with_chunk(Chunk::new("epsilon", vec![0.5; 8])),
        )
        .expect("revision");
    assert!(
        matches!(
            revised,
            Outcome::Written {
                chunks_reused: 1,
                chunks_written: 1,
                chunks_removed: 1,
                ..
            }
        ),
        "{revised:?}"
    );
    let a3 = store
        .snapshot()
        .expect("snapshot")
        .get_with_vectors("notes", "a")
        .expect("get")
        .expect("a");
    assert_eq!(
        a3.chunks[0].vector_id, alpha.vector_id,
        "the kept vector keeps its id"
    );
    let verified = store.verify().expect("verify");
    assert!(verified.is_ok(), "{:#?}", verified.violations);

    // Searches find converted vectors, exactly and through the index.
    // (b's vector is the converted one: the export comparison above checked it bit for bit.)
    let b_vector = store
        .snapshot()
        .expect("snapshot")
        .get_with_vectors("notes", "b")
        .expect("get")
        .and_then(|b| b.chunks.first().and_then(|c| c.vector.clone()))
        .expect("b's vector");
    for options in [
        SearchOptions::default().exact(true),
        SearchOptions::default(),
    ] {
        let hits = store.search(&b_vector, 1, &options).expect("search");
        assert_eq!(
            hits.first().map(|h| h.text.as_str()),
            Some("only"),
            "{options:?}"
        );
    }
    drop(store);
    let store = Store::open(&path, Options::default()).expect("reopen the converted file");
    let verified = store.verify().expect("verify");
    assert!(verified.is_ok(), "{:#?}", verified.violations);
}

/// The conversion is one transaction: fail each of its writes, syncs and length changes
/// in turn; whatever the durable image then is, it opens with the fixture's contents.
#[test]
fn a_failed_conversion_leaves_a_file_that_opens_whole() {
    let image = std::fs::read(FIXTURE).expect("read the fixture");
    // Count the conversion's I/O calls.
    let probe = Disk::from_image(image.clone());
    drop(Store::open_with_backend(probe.backend(), Options::default()).expect("converts"));
    let calls = probe.io_ops();
    assert!(calls > 0);
    let mut converted_after_failure = 0;
    for at in 0..calls {
        for mode in [FaultMode::Once, FaultMode::Forever] {
            let disk = Disk::from_image(image.clone());
            disk.fail_at(at, mode);
            let first = no_panic("open with a fault", || {
                Store::open_with_backend(disk.backend(), Options::default()).map(drop)
            });
            for reopened in [disk.durable_image(), disk.power_loss_image(at)] {
                let again = Disk::from_image(reopened);
                let store = Store::open_with_backend(again.backend(), Options::default())
                    .unwrap_or_else(|e| {
                        panic!("call {at} {mode:?}: the file no longer opens: {e}")
                    });
                assert_same_contents(&store, &format!("call {at} {mode:?}"));
            }
            if first.is_ok() {
                converted_after_failure += 1;
            }
        }
    }
    println!("conversion: {calls} I/O calls x 2 modes failed in turn, each image reopened whole ({converted_after_failure} opens succeeded despite the fault)");
}

/// A damaged schema-1 file: 400 flipped bits, each opened with the page checksums verified
/// (redb's own remedy for files damaged outside it, see `corrupt_flipped_bytes.rs`). The
/// conversion never panics: it converts, or refuses the file with a typed error.
#[test]
fn a_damaged_schema_1_file_is_converted_or_refused_never_a_panic() {
    let image = std::fs::read(FIXTURE).expect("read the fixture");
    let nonzero: Vec<usize> = (0..image.len()).filter(|&i| image[i] != 0).collect();
    let mut rng = ratchetdb::fuzzing::SplitMix64::new(0x5c1e);
    let (mut opened, mut refused) = (0, 0);
    for _ in 0..400 {
        let position = nonzero[rng.below(nonzero.len() as u64) as usize];
        let bit = 1u8 << rng.below(8);
        let mut damaged = image.clone();
        damaged[position] ^= bit;
        let disk = Disk::from_image(damaged);
        let result = support::catch(|| {
            Store::open_with_backend(
                disk.backend(),
                Options::default().check_integrity_on_open(true),
            )
            .map(|store| store.verify().map(|r| r.is_ok()))
        });
        match result {
            Ok(Ok(_)) => opened += 1,
            Ok(Err(_)) => refused += 1,
            Err(panic) => panic!("bit {bit:#04x} at {position}: panicked: {panic}"),
        }
    }
    println!("damaged schema-1 files: {opened} opened, {refused} refused, 0 panics");
}
