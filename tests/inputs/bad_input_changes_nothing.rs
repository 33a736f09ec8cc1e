//! I9: bad input changes nothing.
//!
//! Every invalid input gets a typed error naming the field (or the position, or the kinds
//! that cannot be compared), and the store is exactly as before: the same export, the same
//! stats (every counter, the skip log, the totals), and the same file bytes. A bad operation
//! inside a batch gets its own error while the other operations of the batch apply.
//!
//! Regression: errors found inside the write transaction (version kind mismatch, missing
//! vector, a listing whose kind differs from the documents it omits) and batches made only of
//! bad operations used to commit an otherwise empty transaction, moving `counters.commits`
//! and changing the file. `Store::run_batch` now aborts a batch in which every operation was
//! refused.

use ratchetdb::{
    Chunk, Document, InputError, Limits, Op, OpOutcome, Options, Outcome, Stats, Store,
    StoredDocument, Version, VersionKind, WriteError,
};
use std::path::{Path, PathBuf};

fn limits() -> Limits {
    let mut limits = Limits::default();
    limits.max_id_bytes = 16;
    limits.max_chunks_per_document = 4;
    limits.max_chunk_text_bytes = 32;
    limits.max_meta_bytes = 64;
    limits
}

fn open(path: &Path) -> Store {
    Store::open(path, Options::default().dimension(3).limits(limits())).unwrap()
}

fn doc(source: &str, id: &str, version: Version, texts: &[&str]) -> Document {
    let mut doc = Document::new(source, id, version);
    for (i, text) in texts.iter().enumerate() {
        doc = doc.with_chunk(Chunk::new(*text, vec![1.0, i as f32, 2.0]));
    }
    doc
}

fn good(id: &str) -> Document {
    doc("src", id, Version::number(9), &["one", "two"])
}

/// Everything a caller can observe: the export with vectors, all stats, the file bytes.
fn observe(store: &Store, path: &PathBuf) -> (Vec<StoredDocument>, Stats, Vec<u8>) {
    let snapshot = store.snapshot().unwrap();
    let docs = snapshot.documents(true).unwrap();
    let export = docs.collect::<Result<_, _>>().unwrap();
    (
        export,
        snapshot.stats().unwrap(),
        std::fs::read(path).unwrap(),
    )
}

#[derive(Debug)]
enum Expected {
    Input(&'static str),
    Dimension(usize, usize, usize),
    KindMismatch(&'static str, VersionKind, VersionKind),
    MissingVector(usize),
}

fn check(case: &str, error: &WriteError, expected: &Expected) {
    let ok = match (error, expected) {
        (WriteError::Input(InputError { field, .. }), Expected::Input(want)) => field == want,
        (
            WriteError::DimensionMismatch {
                position,
                expected,
                found,
            },
            Expected::Dimension(p, e, f),
        ) => (*position, *expected, *found) == (*p, *e, *f),
        (
            WriteError::VersionKindMismatch {
                id,
                stored,
                incoming,
                ..
            },
            Expected::KindMismatch(want_id, s, i),
        ) => (id.as_str(), *stored, *incoming) == (*want_id, *s, *i),
        (WriteError::MissingVector { position }, Expected::MissingVector(p)) => position == p,
        _ => false,
    };
    assert!(ok, "{case}: got {error:?}, expected {expected:?}");
}

fn with_vector(mut doc: Document, chunk: usize, vector: Vec<f32>) -> Document {
    doc.chunks[chunk].vector = Some(vector);
    doc
}

type Attempt = Box<dyn Fn(&Store) -> Result<(), WriteError>>;

fn upsert(doc: Document) -> Attempt {
    Box::new(move |store| store.upsert(doc.clone()).map(drop))
}

#[test]
fn every_bad_input_gets_its_typed_error_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.redb");
    let store = open(&path);
    // Some state to leave untouched: a live document, a tombstone, a listing, a skip.
    store.upsert(good("existing")).unwrap();
    store.delete("src", "gone", Version::number(3)).unwrap();
    store
        .retain("src", ["existing"], Version::number(4))
        .unwrap();
    store
        .upsert(doc("src", "existing", Version::number(1), &["old"]))
        .unwrap();
    assert!(store.verify().unwrap().is_ok());

    let long = "x".repeat(17);
    let big_meta = serde_json::json!({ "note": "m".repeat(64) });
    let number = Version::number(10);
    let cases: Vec<(&str, Attempt, Expected)> = vec![
        (
            "empty source",
            upsert(doc("", "a", number, &["t"])),
            Expected::Input("source"),
        ),
        (
            "empty id",
            upsert(doc("src", "", number, &["t"])),
            Expected::Input("id"),
        ),
        (
            "id with NUL",
            upsert(doc("src", "a\0b", number, &["t"])),
            Expected::Input("id"),
        ),
        (
            "over-long id",
            upsert(doc("src", &long, number, &["t"])),
            Expected::Input("id"),
        ),
        (
            "over-long source",
            upsert(doc(&long, "a", number, &["t"])),
            Expected::Input("source"),
        ),
        (
            "too many chunks",
            upsert(doc("src", "a", number, &["1", "2", "3", "4", "5"])),
            Expected::Input("chunks"),
        ),
        (
            "over-long text",
            upsert(doc("src", "a", number, &["t", &"y".repeat(33)])),
            Expected::Input("chunks[1].text"),
        ),
        (
            "oversized document meta",
            upsert(doc("src", "a", number, &["t"]).with_meta(big_meta.clone())),
            Expected::Input("meta"),
        ),
        (
            "oversized chunk meta",
            upsert({
                let mut d = doc("src", "a", number, &["t", "u"]);
                d.chunks[1].meta = big_meta.clone();
                d
            }),
            Expected::Input("chunks[1].meta"),
        ),
        (
            "NaN in a vector",
            upsert(with_vector(
                doc("src", "a", number, &["t"]),
                0,
                vec![1.0, 2.0, f32::NAN],
            )),
            Expected::Input("chunks[0].vector[2]"),
        ),
        (
            "+inf in a vector",
            upsert(with_vector(
                doc("src", "a", number, &["t", "u"]),
                1,
                vec![f32::INFINITY, 2.0, 3.0],
            )),
            Expected::Input("chunks[1].vector[0]"),
        ),
        (
            "-inf in a vector",
            upsert(with_vector(
                doc("src", "a", number, &["t"]),
                0,
                vec![1.0, f32::NEG_INFINITY, 3.0],
            )),
            Expected::Input("chunks[0].vector[1]"),
        ),
        (
            "zero vector under cosine",
            upsert(with_vector(
                doc("src", "a", number, &["t"]),
                0,
                vec![0.0; 3],
            )),
            Expected::Input("chunks[0].vector"),
        ),
        (
            "wrong dimension",
            upsert(with_vector(
                doc("src", "a", number, &["t", "u"]),
                1,
                vec![1.0; 4],
            )),
            Expected::Dimension(1, 3, 4),
        ),
        (
            // With the dimension fixed, an empty vector is a dimension mismatch (found 0);
            // see `an_empty_vector_is_refused_before_the_dimension_is_fixed`.
            "empty vector",
            upsert(with_vector(doc("src", "a", number, &["t"]), 0, vec![])),
            Expected::Dimension(0, 3, 0),
        ),
        (
            "version kind mismatch on an existing document",
            upsert(doc("src", "existing", Version::ticket(10), &["t"])),
            Expected::KindMismatch("existing", VersionKind::Number, VersionKind::Ticket),
        ),
        (
            "version kind mismatch on a tombstone (delete)",
            Box::new(|store: &Store| {
                store
                    .delete("src", "gone", Version::timestamp_micros(10))
                    .map(drop)
            }),
            Expected::KindMismatch("gone", VersionKind::Number, VersionKind::TimestampMicros),
        ),
        (
            "chunk without vector, nothing to reuse (new document)",
            upsert(Document::new("src", "a", number).with_chunk(Chunk::without_vector("t"))),
            Expected::MissingVector(0),
        ),
        (
            "chunk without vector, nothing to reuse (existing document)",
            upsert(
                Document::new("src", "existing", number)
                    .with_chunk(Chunk::without_vector("one"))
                    .with_chunk(Chunk::without_vector("new text")),
            ),
            Expected::MissingVector(1),
        ),
        (
            "delete with an empty id",
            Box::new(|store: &Store| store.delete("src", "", Version::number(10)).map(drop)),
            Expected::Input("id"),
        ),
        (
            "retain with an empty id in the list",
            Box::new(|store: &Store| {
                store
                    .retain("src", ["existing", ""], Version::number(10))
                    .map(drop)
            }),
            Expected::Input("ids[1]"),
        ),
        (
            "retain with an empty source",
            Box::new(|store: &Store| store.retain("", ["a"], Version::number(10)).map(drop)),
            Expected::Input("source"),
        ),
        (
            "retain whose version kind differs from the documents it omits",
            Box::new(|store: &Store| {
                store
                    .retain("src", Vec::<String>::new(), Version::ticket(10))
                    .map(drop)
            }),
            Expected::KindMismatch("existing", VersionKind::Number, VersionKind::Ticket),
        ),
        (
            "purge with an empty source",
            Box::new(|store: &Store| store.purge("", Version::number(10)).map(drop)),
            Expected::Input("source"),
        ),
        (
            "a batch of only bad operations",
            Box::new(move |store: &Store| {
                let results = store
                    .write_batch(vec![
                        Op::Upsert(doc("src", "", number, &["t"])),
                        Op::Upsert(doc("src", "existing", Version::ticket(10), &["t"])),
                    ])
                    .unwrap();
                check(
                    "batch op 1",
                    results[1].as_ref().unwrap_err(),
                    &Expected::KindMismatch("existing", VersionKind::Number, VersionKind::Ticket),
                );
                results.into_iter().next().unwrap().map(drop)
            }),
            Expected::Input("id"),
        ),
    ];

    let mut failures = Vec::new();
    for (case, attempt, expected) in cases {
        let before = observe(&store, &path);
        let error = match attempt(&store) {
            Ok(()) => panic!("{case}: accepted"),
            Err(error) => error,
        };
        check(case, &error, &expected);
        let after = observe(&store, &path);
        if after.0 != before.0 {
            failures.push(format!("{case}: the export changed"));
        }
        if after.1 != before.1 {
            failures.push(format!(
                "{case}: stats changed: {:?} -> {:?}",
                before.1.counters, after.1.counters
            ));
        }
        if after.2 != before.2 {
            failures.push(format!("{case}: the file bytes changed"));
        }
        let report = store.verify().unwrap();
        assert!(report.is_ok(), "{case}: {:?}", report.violations);
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn an_empty_vector_is_refused_before_the_dimension_is_fixed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.redb");
    let store = Store::open(&path, Options::default()).unwrap();
    let before = observe(&store, &path);
    let error = store
        .upsert(with_vector(
            doc("src", "a", Version::number(1), &["t"]),
            0,
            vec![],
        ))
        .unwrap_err();
    check("empty vector", &error, &Expected::Input("chunks[0].vector"));
    assert_eq!(store.dimension(), None);
    assert!(observe(&store, &path) == before);
}

#[test]
fn a_bad_operation_in_a_batch_gets_its_error_and_the_others_apply() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.redb");
    let store = open(&path);
    store.upsert(good("existing")).unwrap();
    let before = store.stats().unwrap().counters;

    let results = store
        .write_batch(vec![
            Op::Upsert(good("first")),
            Op::Upsert(with_vector(good("nan"), 1, vec![f32::NAN, 1.0, 1.0])),
            Op::Upsert(doc("src", "existing", Version::ticket(10), &["t"])),
            Op::Delete {
                source: "src".into(),
                id: "existing".into(),
                version: Version::number(10),
            },
            Op::Retain {
                source: "src".into(),
                present: vec!["first".into(), "".into()],
                version: Version::number(11),
            },
            Op::Upsert(good("last")),
        ])
        .unwrap();
    assert_eq!(results.len(), 6);
    assert!(matches!(
        results[0],
        Ok(OpOutcome::Document(Outcome::Written { .. }))
    ));
    check(
        "op 1",
        results[1].as_ref().unwrap_err(),
        &Expected::Input("chunks[1].vector[0]"),
    );
    check(
        "op 2",
        results[2].as_ref().unwrap_err(),
        &Expected::KindMismatch("existing", VersionKind::Number, VersionKind::Ticket),
    );
    assert_eq!(
        results[3].as_ref().unwrap(),
        &OpOutcome::Document(Outcome::Deleted { chunks_removed: 2 })
    );
    check(
        "op 4",
        results[4].as_ref().unwrap_err(),
        &Expected::Input("ids[1]"),
    );
    assert!(matches!(
        results[5],
        Ok(OpOutcome::Document(Outcome::Written { .. }))
    ));

    let stats = store.stats().unwrap();
    let mut expected = before;
    expected.written_new += 2;
    expected.chunks_written += 4;
    expected.deleted += 1;
    expected.chunks_removed += 2;
    expected.commits += 1;
    assert_eq!(stats.counters, expected);
    assert_eq!(
        (
            stats.documents,
            stats.tombstones,
            stats.chunks,
            stats.listings
        ),
        (2, 1, 4, 0)
    );
    assert_eq!(store.get("src", "nan").unwrap(), None);
    assert!(store.get("src", "existing").unwrap().unwrap().deleted);
    let report = store.verify().unwrap();
    assert!(report.is_ok(), "{:?}", report.violations);
}

/// Bad filters and out-of-bounds searches (issue 19): a typed `InputError` naming the place
/// in the filter (rooted at `where`) or the parameter, and the store exactly as before —
/// including after a valid filtered search, which builds the in-memory filter index only.
#[test]
fn bad_filters_and_search_bounds_are_refused_and_change_nothing() {
    use ratchetdb::{Filter, ReadError, SearchOptions};
    use serde_json::json;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.redb");
    let store = open(&path);
    store
        .upsert(good("a").with_meta(json!({"lang": "en", "year": 2021})))
        .unwrap();
    let before = observe(&store, &path);
    let bad_filters = [
        (json!("lang"), "where"),
        (json!({"lang": ["en"]}), "where.lang"),
        (
            json!({"$and": [{"lang": "en"}, {"year": {"$gte": {}}}]}),
            "where.$and[1].year.$gte",
        ),
        (json!({"$or": "x"}), "where.$or"),
        (json!({"$not": [1]}), "where.$not"),
        (json!({"year": {"$between": [1, 2]}}), "where.year.$between"),
        (json!({"year": {"$in": [1, {"a": 1}]}}), "where.year.$in[1]"),
        (json!({"year": {"$exists": "yes"}}), "where.year.$exists"),
        (json!({"author.": "x"}), "where.author."),
        (json!({"$where": "1"}), "where.$where"),
        (json!({"year": {}}), "where.year"),
    ];
    for (filter, field) in bad_filters {
        let error = Filter::parse(&filter).expect_err("malformed filter");
        assert_eq!(error.field, field, "{filter}");
        // The same filter arriving through serde (a config file), refused with the same
        // error: the one naming its field.
        let through_serde = serde_json::from_value::<SearchOptions>(json!({"filter": filter}))
            .expect_err("malformed filter through serde");
        assert_eq!(through_serde.to_string(), error.to_string(), "{filter}");
    }
    // Bug: this loop once passed without testing anything: `{"filter": ...}` failed to
    // deserialize whatever the filter, because `exact`, `sources` and `documents` had no
    // serde default. A good filter alone must deserialize.
    let good_options: SearchOptions =
        serde_json::from_value(json!({"filter": {"lang": "en"}})).expect("a good filter alone");
    assert!(good_options.filter.is_some());
    // A misspelt option is refused naming it, not read as the default.
    let misspelt = serde_json::from_value::<SearchOptions>(json!({"filtr": {"lang": "en"}}))
        .expect_err("an unknown option");
    assert!(misspelt.to_string().contains("`filtr`"), "{misspelt}");
    let mut deep = json!({"lang": "en"});
    for _ in 0..100 {
        deep = json!({ "$not": deep });
    }
    assert!(Filter::parse(&deep).is_err(), "nesting is bounded");
    let huge: Vec<u32> = (0..20_000).collect();
    let error = Filter::parse(&json!({"year": {"$in": huge}})).expect_err("too many terms");
    assert!(
        error.field.starts_with("where.year.$in["),
        "{}",
        error.field
    );

    let query = [1.0, 1.0, 2.0];
    let input_field = |result: Result<Vec<ratchetdb::Hit>, ReadError>| match result {
        Err(ReadError::Input(e)) => e.field,
        other => panic!("expected an InputError, got {other:?}"),
    };
    let max_k = ratchetdb::Limits::default().max_k;
    assert_eq!(
        input_field(store.search(&query, max_k + 1, &SearchOptions::default())),
        "k"
    );
    assert_eq!(
        input_field(store.search(&query, usize::MAX, &SearchOptions::default())),
        "k"
    );
    assert_eq!(
        input_field(store.search(&query, 3, &SearchOptions::default().ef(0))),
        "ef"
    );
    assert_eq!(
        input_field(store.search(&query, 3, &SearchOptions::default().ef(usize::MAX))),
        "ef"
    );
    assert_eq!(
        input_field(store.search(&query, 3, &SearchOptions::default().source("nope"))),
        "sources[0]"
    );
    assert_eq!(
        input_field(
            store
                .search_many(&[query.to_vec(), vec![1.0]], 3, &SearchOptions::default())
                .map(|_| Vec::new())
        ),
        "queries[1]"
    );
    // A valid filtered search answers, and writes nothing.
    let filter = Filter::parse(&json!({"lang": "en", "year": {"$gte": 2020}})).unwrap();
    let hits = store
        .search(&query, 3, &SearchOptions::default().filter(filter))
        .unwrap();
    assert_eq!(hits.len(), 2);
    assert!(observe(&store, &path) == before);
}
