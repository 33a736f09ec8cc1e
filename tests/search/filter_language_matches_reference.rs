//! The filter language against a reference evaluator: random filters over random metadata.
//!
//! The reference below is written from the documented semantics (`Filter`'s doc comment),
//! independently of the library: a path is looked up in the chunk's metadata, then the
//! document's; values of different types never compare; `$ne`/`$nin` need the key present
//! with a value of the operand's type. Two properties:
//!
//! - `Filter::matches` agrees with the reference on random chunk and document metadata;
//! - a filtered search of a store (which evaluates the filter on its in-memory filter index,
//!   not on the rows) returns exactly the chunks the reference accepts, under every search
//!   strategy, including after revisions that change only metadata and after deletes.

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use ratchetdb::{
    Chunk, Document, Filter, FilterStrategy, Op, Options, SearchOptions, Store, Version,
};
use serde_json::{json, Map, Value};
use std::cmp::Ordering;
use std::collections::BTreeSet;
use std::sync::OnceLock;

const PATHS: [&str; 7] = ["a", "b", "c", "n", "n.x", "n.y", "z"];

// ---- the reference evaluator ----

fn lookup<'a>(meta: &'a Value, path: &str) -> Option<&'a Value> {
    let mut node = meta;
    for key in path.split('.') {
        node = node.as_object()?.get(key)?;
    }
    Some(node)
}

fn compare(a: &Value, b: &Value) -> Option<Ordering> {
    match (a, b) {
        (Value::Null, Value::Null) => Some(Ordering::Equal),
        (Value::Bool(x), Value::Bool(y)) => Some(x.cmp(y)),
        (Value::Number(x), Value::Number(y)) => x.as_f64()?.partial_cmp(&y.as_f64()?),
        (Value::String(x), Value::String(y)) => Some(x.as_bytes().cmp(y.as_bytes())),
        _ => None,
    }
}

fn same_type(a: &Value, b: &Value) -> bool {
    std::mem::discriminant(a) == std::mem::discriminant(b)
}

fn scalar(v: &Value) -> bool {
    !matches!(v, Value::Array(_) | Value::Object(_))
}

fn holds(op: &str, operand: &Value, value: Option<&Value>) -> bool {
    if op == "$exists" {
        return value.is_some() == operand.as_bool().unwrap();
    }
    let Some(value) = value else { return false };
    let eq = |x: &Value| scalar(value) && compare(value, x) == Some(Ordering::Equal);
    let ord = |x: &Value| {
        if scalar(value) {
            compare(value, x)
        } else {
            None
        }
    };
    match op {
        "$eq" => eq(operand),
        "$ne" => ord(operand).is_some_and(|o| o != Ordering::Equal),
        "$gt" => ord(operand) == Some(Ordering::Greater),
        "$gte" => ord(operand).is_some_and(|o| o != Ordering::Less),
        "$lt" => ord(operand) == Some(Ordering::Less),
        "$lte" => ord(operand).is_some_and(|o| o != Ordering::Greater),
        "$in" => operand.as_array().unwrap().iter().any(eq),
        "$nin" => {
            let list = operand.as_array().unwrap();
            scalar(value) && list.iter().any(|x| same_type(x, value)) && !list.iter().any(eq)
        }
        "$contains" => match (value, operand) {
            (Value::Array(items), x) => items
                .iter()
                .any(|item| scalar(item) && compare(item, x) == Some(Ordering::Equal)),
            (Value::String(s), Value::String(needle)) => s.contains(needle.as_str()),
            _ => false,
        },
        other => panic!("reference: no operator {other}"),
    }
}

fn reference(filter: &Value, chunk: &Value, doc: &Value) -> bool {
    filter
        .as_object()
        .unwrap()
        .iter()
        .all(|(key, cond)| match key.as_str() {
            "$and" => cond
                .as_array()
                .unwrap()
                .iter()
                .all(|f| reference(f, chunk, doc)),
            "$or" => cond
                .as_array()
                .unwrap()
                .iter()
                .any(|f| reference(f, chunk, doc)),
            "$not" => !reference(cond, chunk, doc),
            path => {
                let value = lookup(chunk, path).or_else(|| lookup(doc, path));
                match cond {
                    Value::Object(ops) => ops.iter().all(|(op, operand)| holds(op, operand, value)),
                    operand => holds("$eq", operand, value),
                }
            }
        })
}

// ---- generators ----

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (0i64..4).prop_map(|n| json!(n)),
        Just(json!(1.5)),
        Just(json!(2.0)),
        prop_oneof![Just(""), Just("x"), Just("y"), Just("xy"), Just("yx")].prop_map(|s| json!(s)),
    ]
}

fn field_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        3 => leaf(),
        1 => prop::collection::vec(leaf(), 0..3).prop_map(Value::Array),
    ]
}

fn meta() -> impl Strategy<Value = Value> {
    let nested = prop_oneof![
        2 => prop::collection::btree_map(
            prop_oneof![Just("x".to_string()), Just("y".to_string())],
            field_value(),
            0..3
        )
        .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>())),
        1 => field_value(),
    ];
    (
        prop::collection::btree_map(
            prop_oneof![Just("a"), Just("b"), Just("c")].prop_map(str::to_string),
            field_value(),
            0..4,
        ),
        prop::option::of(nested),
    )
        .prop_map(|(fields, n)| {
            let mut object: Map<String, Value> = fields.into_iter().collect();
            if let Some(n) = n {
                object.insert("n".into(), n);
            }
            Value::Object(object)
        })
}

fn condition() -> impl Strategy<Value = Value> {
    let scalar_op = (
        prop_oneof![Just("$eq"), Just("$ne"), Just("$contains")],
        leaf(),
    )
        .prop_map(|(op, v)| json!({ op: v }));
    let order_op = (
        prop_oneof![Just("$gt"), Just("$gte"), Just("$lt"), Just("$lte")],
        prop_oneof![
            (0i64..4).prop_map(|n| json!(n)),
            Just(json!(1.5)),
            Just(json!("x")),
            Just(json!("xy"))
        ],
    )
        .prop_map(|(op, v)| json!({ op: v }));
    let list_op = (
        prop_oneof![Just("$in"), Just("$nin")],
        prop::collection::vec(leaf(), 0..3),
    )
        .prop_map(|(op, v)| json!({ op: v }));
    let exists = any::<bool>().prop_map(|b| json!({ "$exists": b }));
    prop_oneof![
        2 => leaf(),
        2 => scalar_op,
        2 => order_op,
        1 => list_op,
        1 => exists,
        1 => (order_op_pair()).prop_map(|v| v),
    ]
}

/// Two operators on one key (an implicit `$and`).
fn order_op_pair() -> impl Strategy<Value = Value> {
    ((0i64..4), (0i64..4)).prop_map(|(lo, hi)| json!({"$gte": lo, "$lt": hi}))
}

fn filter() -> impl Strategy<Value = Value> {
    let base = prop::collection::btree_map(
        prop::sample::select(PATHS.to_vec()).prop_map(str::to_string),
        condition(),
        1..3,
    )
    .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>()));
    base.prop_recursive(3, 24, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(|v| json!({ "$and": v })),
            prop::collection::vec(inner.clone(), 0..3).prop_map(|v| json!({ "$or": v })),
            inner.prop_map(|f| json!({ "$not": f })),
        ]
    })
}

// ---- the store ----

const DOCS: usize = 60;
const CHUNKS: usize = 4;

/// One document's metadata and its chunks' (deterministic from `seed`).
fn metas(seed: u64) -> (Value, Vec<Value>) {
    let mut runner = proptest::test_runner::TestRunner::new_with_rng(
        proptest::test_runner::Config::default(),
        proptest::test_runner::TestRng::from_seed(proptest::test_runner::RngAlgorithm::ChaCha, &{
            let mut bytes = [0u8; 32];
            bytes[..8].copy_from_slice(&seed.to_le_bytes());
            bytes
        }),
    );
    let doc = meta().new_tree(&mut runner).unwrap().current();
    let chunks = (0..CHUNKS)
        .map(|_| meta().new_tree(&mut runner).unwrap().current())
        .collect();
    (doc, chunks)
}

fn document(d: usize, version: u64, seed: u64) -> Document {
    let (doc_meta, chunk_metas) = metas(seed);
    let mut doc = Document::new("s", format!("d{d}"), Version::number(version)).with_meta(doc_meta);
    for (p, meta) in chunk_metas.into_iter().enumerate() {
        doc = doc.with_chunk(
            Chunk::new(
                format!("d{d} chunk {p}"),
                vec![1.0 + d as f32, p as f32 + 0.5, 1.0],
            )
            .with_meta(meta),
        );
    }
    doc
}

struct Fixture {
    _dir: tempfile::TempDir,
    store: Store,
}

/// A store whose filter index was built by a first filtered search and then had to catch
/// up with metadata-only revisions (same texts and vectors) and deletes.
fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let store =
            Store::open(dir.path().join("f.redb"), Options::default().dimension(3)).unwrap();
        let ops = (0..DOCS)
            .map(|d| Op::Upsert(document(d, 1, d as u64)))
            .collect();
        for r in store.write_batch(ops).unwrap() {
            r.unwrap();
        }
        let any = Filter::parse(&json!({"a": {"$exists": true}})).unwrap();
        store
            .search(&[1.0, 1.0, 1.0], 1, &SearchOptions::default().filter(any))
            .unwrap();
        // Metadata-only revisions of a third of the documents, and two deletes.
        let ops = (0..DOCS)
            .filter(|d| d % 3 == 0)
            .map(|d| Op::Upsert(document(d, 2, 1000 + d as u64)))
            .chain([1, 2].map(|d| Op::Delete {
                source: "s".into(),
                id: format!("d{d}"),
                version: Version::number(5),
            }))
            .collect();
        for r in store.write_batch(ops).unwrap() {
            r.unwrap();
        }
        Fixture { _dir: dir, store }
    })
}

/// Every live chunk as (id, position, chunk meta, document meta), from the export.
fn live_chunks(store: &Store) -> Vec<(String, u32, Value, Value)> {
    let snapshot = store.snapshot().unwrap();
    let mut out = Vec::new();
    for doc in snapshot.documents(false).unwrap() {
        let doc = doc.unwrap();
        if doc.deleted {
            continue;
        }
        for (p, chunk) in doc.chunks.iter().enumerate() {
            out.push((
                doc.id.clone(),
                p as u32,
                chunk.meta.clone(),
                doc.meta.clone(),
            ));
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn matches_agrees_with_the_reference(f in filter(), chunk in meta(), doc in meta()) {
        let parsed = Filter::parse(&f).expect("generated filters are valid");
        prop_assert_eq!(parsed.matches(&chunk, &doc), reference(&f, &chunk, &doc), "filter {}", f);
    }

    #[test]
    fn filtered_search_returns_exactly_the_reference_set(f in filter()) {
        let fixture = fixture();
        let expected: BTreeSet<(String, u32)> = live_chunks(&fixture.store)
            .into_iter()
            .filter(|(_, _, chunk, doc)| reference(&f, chunk, doc))
            .map(|(id, p, _, _)| (id, p))
            .collect();
        let parsed = Filter::parse(&f).unwrap();
        for options in [
            SearchOptions::default().filter(parsed.clone()),
            SearchOptions::default().filter(parsed.clone()).exact(true),
            SearchOptions::default().filter(parsed.clone()).filter_strategy(FilterStrategy::ScanMatching),
            SearchOptions::default().filter(parsed.clone()).filter_strategy(FilterStrategy::Graph),
        ] {
            let hits = fixture.store.search(&[1.0, 0.5, 1.0], DOCS * CHUNKS, &options).unwrap();
            let got: BTreeSet<(String, u32)> = hits.iter().map(|h| (h.id.clone(), h.position)).collect();
            prop_assert_eq!(got.len(), hits.len(), "a chunk returned twice");
            prop_assert_eq!(&got, &expected, "filter {} options {:?}", f, options.filter_strategy);
        }
    }
}
