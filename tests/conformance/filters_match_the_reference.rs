//! A filtered search selects exactly what `Filter::matches` selects (the language's
//! reference semantics, itself checked against an independent evaluator in
//! `tests/search/filter_language_matches_reference.rs`; on PostgreSQL the filter runs as
//! SQL over `jsonb`): 60 chunks with random chunk and document metadata (strings, integers
//! and floats that compare as 64-bit floats, booleans, null, arrays, nested objects, keys
//! only the document has) and 400 random filters using every operator (`$eq $ne $gt $gte
//! $lt $lte $in $nin $exists $contains`, `$and $or $not`, dotted paths). An exact filtered
//! search returns exactly the chunks the reference accepts, and the index's search only
//! such chunks.

use crate::fixture::Fixture;
use ratchetdb::testkit::SplitMix64;
use ratchetdb::{Chunk, Document, Filter, Options, SearchOptions, Version};
use serde_json::{json, Value};
use std::collections::BTreeSet;

crate::conformance!(filters_match_the_reference);

const PATHS: [&str; 6] = ["a", "b", "n", "n.x", "tags", "z"];

fn scalar(rng: &mut SplitMix64) -> Value {
    match rng.below(8) {
        0 => Value::Null,
        1 => json!(rng.one_in(2)),
        2 => json!(rng.below(4)),
        3 => json!(rng.below(4) as f64 + 0.5),
        4 => json!(1.0),
        5 => json!(["x", "y", "éa", "ab"][rng.below(4) as usize]),
        6 => json!(""),
        _ => json!(-(rng.below(3) as i64)),
    }
}

fn meta(rng: &mut SplitMix64) -> Value {
    let mut object = serde_json::Map::new();
    for key in ["a", "b", "z"] {
        if rng.one_in(2) {
            object.insert(key.into(), scalar(rng));
        }
    }
    if rng.one_in(2) {
        object.insert("n".into(), json!({"x": scalar(rng)}));
    } else if rng.one_in(3) {
        object.insert("n".into(), json!([scalar(rng)]));
    }
    if rng.one_in(2) {
        let tags: Vec<Value> = (0..rng.below(3)).map(|_| scalar(rng)).collect();
        object.insert(
            "tags".into(),
            if rng.one_in(4) {
                json!("xyz")
            } else {
                json!(tags)
            },
        );
    }
    Value::Object(object)
}

fn pick(rng: &mut SplitMix64, a: Value, b: Value) -> Value {
    if rng.one_in(2) {
        a
    } else {
        b
    }
}

fn condition(rng: &mut SplitMix64) -> Value {
    let path = PATHS[rng.below(PATHS.len() as u64) as usize];
    let n = rng.below(4);
    let op = match rng.below(11) {
        0 => return json!({ path: scalar(rng) }),
        1 => json!({"$eq": scalar(rng)}),
        2 => json!({"$ne": scalar(rng)}),
        3 => json!({"$gt": pick(rng, json!(n), json!("x"))}),
        4 => json!({"$gte": pick(rng, json!(n as f64 - 0.5), json!("ab"))}),
        5 => json!({"$lt": pick(rng, json!(n), json!("y"))}),
        6 => json!({"$lte": pick(rng, json!(1.0), json!("éa"))}),
        7 => json!({"$in": (0..rng.below(3)).map(|_| scalar(rng)).collect::<Vec<_>>()}),
        8 => json!({"$nin": (0..rng.below(3)).map(|_| scalar(rng)).collect::<Vec<_>>()}),
        9 => json!({"$exists": rng.one_in(2)}),
        _ => json!({"$contains": scalar(rng)}),
    };
    json!({ path: op })
}

fn filter(rng: &mut SplitMix64, depth: u32) -> Value {
    if depth == 0 || rng.one_in(2) {
        return condition(rng);
    }
    let children: Vec<Value> = (0..rng.below(3)).map(|_| filter(rng, depth - 1)).collect();
    match rng.below(3) {
        0 => json!({"$and": children}),
        1 => json!({"$or": children}),
        _ => json!({"$not": filter(rng, depth - 1)}),
    }
}

fn filters_match_the_reference(b: &dyn Fixture) {
    let store = b.open_with("db", Options::default());
    let mut rng = SplitMix64::new(0xf117e5);
    let mut chunks: Vec<(String, Value, Value)> = Vec::new();
    for doc in 0..20 {
        let doc_meta = meta(&mut rng);
        let mut d =
            Document::new("f", format!("doc{doc}"), Version::number(1)).with_meta(doc_meta.clone());
        for position in 0..3 {
            let chunk_meta = meta(&mut rng);
            chunks.push((
                format!("doc{doc}/{position}"),
                chunk_meta.clone(),
                doc_meta.clone(),
            ));
            d = d.with_chunk(
                Chunk::new(
                    format!("doc{doc} chunk {position}"),
                    vec![1.0, doc as f32 * 0.1, position as f32 * 0.1],
                )
                .with_meta(chunk_meta),
            );
        }
        store.upsert(d).expect("write");
    }
    let mut nonempty = 0;
    for case in 0..400 {
        let json = filter(&mut rng, 3);
        let parsed = Filter::parse(&json).expect("a valid filter");
        let expected: BTreeSet<String> = chunks
            .iter()
            .filter(|(_, chunk, doc)| parsed.matches(chunk, doc))
            .map(|(name, _, _)| name.clone())
            .collect();
        let options = SearchOptions::default().filter(parsed.clone());
        let exact: BTreeSet<String> = store
            .search(&[1.0, 0.5, 0.1], 100, &options.clone().exact(true))
            .unwrap_or_else(|e| panic!("case {case} {json}: {e}"))
            .into_iter()
            .map(|h| format!("{}/{}", h.id, h.position))
            .collect();
        assert_eq!(exact, expected, "case {case}: {json}");
        let graph = store
            .search(&[1.0, 0.5, 0.1], 10, &options)
            .unwrap_or_else(|e| panic!("case {case} {json}: {e}"));
        for hit in graph {
            let name = format!("{}/{}", hit.id, hit.position);
            assert!(
                expected.contains(&name),
                "case {case}: {json} returned {name}"
            );
        }
        nonempty += usize::from(!expected.is_empty() && expected.len() < chunks.len());
    }
    assert!(
        nonempty > 100,
        "the filters must discriminate ({nonempty} did)"
    );
}
