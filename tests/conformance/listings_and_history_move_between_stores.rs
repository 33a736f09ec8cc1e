//! A store's history: `listings` returns every listing `retain` recorded, with the ids it
//! lists (sorted), by `(source, version)`, until `purge` removes it; `restore_history` sets
//! another store's outcome counters (all but `commits`) to the first store's and appends its
//! refusals to the skip log, leaving documents and listings alone; a counter above 2^63 − 1
//! is refused naming its field, and nothing is restored.

use crate::common::assert_verified;
use crate::fixture::Fixture;
use ratchetdb::{Chunk, Counters, Document, Listing, Options, SkipRecord, Version, WriteError};

crate::conformance!(listings_and_history_move_between_stores);

fn doc(source: &str, id: &str, version: u64) -> Document {
    Document::new(source, id, Version::number(version)).with_chunk(Chunk::new(
        format!("{id} at {version}"),
        vec![1.0, version as f32],
    ))
}

/// The refusals without their position in the log (each log numbers its own).
fn refusals(skips: &[SkipRecord]) -> Vec<(String, String, String, Version, Version)> {
    skips
        .iter()
        .map(|s| {
            let reason = format!("{:?}", s.reason);
            let (source, id) = (s.source.clone(), s.id.clone());
            (source, id, reason, s.stored_version, s.incoming_version)
        })
        .collect()
}

/// The listings as `(source, version, present)`.
fn listed(listings: &[Listing]) -> Vec<(String, Version, Vec<String>)> {
    listings
        .iter()
        .map(|l| (l.source.clone(), l.version, l.present.clone()))
        .collect()
}

/// The counters but `commits`.
fn outcomes(counters: &Counters) -> Counters {
    let mut counters = counters.clone();
    counters.commits = 0;
    counters
}

fn listings_and_history_move_between_stores(b: &dyn Fixture) {
    let from = b.open_with("from", Options::default());
    for id in ["a", "b", "c"] {
        from.upsert(doc("wiki", id, 2)).expect("upsert");
    }
    from.upsert(doc("mail", "m", 1)).expect("upsert");
    from.upsert(doc("wiki", "a", 1))
        .expect("a stale retry, refused");
    from.retain("wiki", ["b", "a", "x"], Version::number(3))
        .expect("retain");
    from.retain("mail", Vec::<String>::new(), Version::number(5))
        .expect("retain");
    from.upsert(doc("wiki", "c", 2))
        .expect("refused: tombstoned");
    let expected = vec![
        ("mail".to_string(), Version::number(5), vec![]),
        (
            "wiki".to_string(),
            Version::number(3),
            vec!["a".to_string(), "b".to_string(), "x".to_string()],
        ),
    ];
    assert_eq!(listed(&from.listings().expect("listings")), expected);

    let stats = from.stats().expect("stats");
    assert_eq!(stats.counters.skipped(), 2);
    assert_eq!(stats.recent_skips.len(), 2);
    let to = b.open_with("to", Options::default());
    to.upsert(doc("wiki", "z", 1)).expect("upsert");
    let documents = to.documents(true).expect("documents");

    // A counter too large for a signed 64-bit column: refused, nothing restored.
    let mut too_large = stats.counters.clone();
    too_large.written_new = 1 << 63;
    let error = to
        .restore_history(&too_large, &stats.recent_skips)
        .expect_err("refused");
    assert!(
        matches!(&error, WriteError::Input(e) if e.field == "counters.written_new"),
        "{error:?}"
    );
    let untouched = to.stats().expect("stats");
    assert_eq!(untouched.counters.written_new, 1);
    assert!(untouched.recent_skips.is_empty());

    to.restore_history(&stats.counters, &stats.recent_skips)
        .expect("restore");
    let restored = to.stats().expect("stats");
    assert_eq!(outcomes(&restored.counters), outcomes(&stats.counters));
    assert_eq!(
        refusals(&restored.recent_skips),
        refusals(&stats.recent_skips)
    );
    assert_eq!(to.documents(true).expect("documents"), documents);
    assert!(to.listings().expect("listings").is_empty());
    assert_verified(&to);

    // purge removes the listings (and tombstones) below its version, and only those.
    let purged = from.purge("wiki", Version::number(4)).expect("purge");
    assert_eq!(purged.listings_purged, 1, "{purged:?}");
    assert_eq!(purged.tombstones_purged, 1, "c: {purged:?}");
    assert_eq!(listed(&from.listings().expect("listings")), expected[..1]);
    assert_verified(&from);
}
