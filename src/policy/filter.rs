//! Metadata filters: the JSON filter language both backends evaluate (the embedded store
//! on its derived postings, `backend/redb/derived/filter_index.rs`; PostgreSQL in SQL,
//! `backend/postgres/filter_sql.rs`).
//!
//! The language is the one RAG frameworks pass to their vector stores (Chroma's `where`,
//! MongoDB's queries): `{"lang": "en"}`, `{"year": {"$gte": 2020}}`, the operators
//! `$eq $ne $gt $gte $lt $lte $in $nin $exists $contains`, the combinators `$and`, `$or`,
//! `$not`, and dotted paths (`"author.name"`) into nested objects. A path is looked up in
//! the chunk's metadata first, then in its document's (a path the chunk's metadata holds
//! wins). See [`Filter`] for the exact semantics.

use crate::error::InputError;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use std::cmp::Ordering;

/// Levels of `$and` / `$or` / `$not` nesting a filter may have.
pub const MAX_FILTER_DEPTH: usize = 32;
/// Conditions and `$in` / `$nin` elements a filter may hold in all.
pub const MAX_FILTER_TERMS: usize = 10_000;

/// A parsed metadata filter (see [`Filter::parse`] for the language).
///
/// Semantics, for one chunk:
/// - A key is a dotted path (`"author.name"`: the key `name` of the object under `author`);
///   it is looked up in the chunk's metadata, and if that does not hold the path, in the
///   document's. Paths do not descend into arrays; a metadata key that itself contains a
///   `.` cannot be addressed.
/// - `{"key": value}` is `{"key": {"$eq": value}}`; several keys in one object must all hold.
/// - Operands of `$eq $ne $in $nin $contains` are scalars (string, number, boolean, null);
///   of `$gt $gte $lt $lte` numbers or strings; of `$exists` a boolean.
/// - Values of different types never compare: such a comparison is false, never an error
///   (`{"year": {"$gt": 2020}}` does not match `"year": "2021"`). Numbers compare as 64-bit
///   floats (so `1` equals `1.0`); strings compare by bytes.
/// - `$eq`, `$gt`, `$gte`, `$lt`, `$lte`: the key is present with a value of the operand's
///   type comparing so. `$ne`: present, of the operand's type, and not equal. `$in`: equal
///   to one of the elements. `$nin`: present, of the type of one of the elements, and equal
///   to none. `$exists: true` / `false`: the key is present / absent (any value).
///   `$contains`: the value is an array with an element equal to the operand, or a string
///   containing the operand (a string) as a substring.
/// - `$and: [..]` all hold (an empty list: true), `$or: [..]` one holds (empty: false),
///   `$not: {..}` the filter does not hold.
///
/// A filter serialises as the JSON it was parsed from.
#[derive(Clone, Debug)]
pub struct Filter {
    source: Value,
    node: Node,
}

impl PartialEq for Filter {
    fn eq(&self, other: &Filter) -> bool {
        self.source == other.source
    }
}

impl Eq for Filter {}

impl Serialize for Filter {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.source.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Filter {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Filter, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Filter::parse(&value).map_err(serde::de::Error::custom)
    }
}

/// A scalar a filter compares with, and a key of the index's postings. Numbers are kept
/// as the bits of their `f64` value (`-0.0` as `0.0`), so `1` and `1.0` are one key.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Scalar {
    Null,
    Bool(bool),
    Num(u64),
    Str(String),
}

impl Scalar {
    pub(crate) fn of(value: &Value) -> Option<Scalar> {
        match value {
            Value::Null => Some(Scalar::Null),
            Value::Bool(b) => Some(Scalar::Bool(*b)),
            Value::Number(n) => n.as_f64().map(Scalar::num),
            Value::String(s) => Some(Scalar::Str(s.clone())),
            Value::Array(_) | Value::Object(_) => None,
        }
    }

    fn num(x: f64) -> Scalar {
        Scalar::Num(if x == 0.0 {
            0f64.to_bits()
        } else {
            x.to_bits()
        })
    }

    fn class(&self) -> u8 {
        match self {
            Scalar::Null => 0,
            Scalar::Bool(_) => 1,
            Scalar::Num(_) => 2,
            Scalar::Str(_) => 3,
        }
    }

    /// The order of two scalars of one type (`None` across types).
    fn compare(&self, other: &Scalar) -> Option<Ordering> {
        match (self, other) {
            (Scalar::Null, Scalar::Null) => Some(Ordering::Equal),
            (Scalar::Bool(a), Scalar::Bool(b)) => Some(a.cmp(b)),
            (Scalar::Num(a), Scalar::Num(b)) => f64::from_bits(*a).partial_cmp(&f64::from_bits(*b)),
            (Scalar::Str(a), Scalar::Str(b)) => Some(a.as_bytes().cmp(b.as_bytes())),
            _ => None,
        }
    }
}

/// One condition on one key.
#[derive(Clone, Debug)]
pub(crate) enum Op {
    Eq(Scalar),
    Ne(Scalar),
    Gt(Scalar),
    Gte(Scalar),
    Lt(Scalar),
    Lte(Scalar),
    In(Vec<Scalar>),
    Nin(Vec<Scalar>),
    Exists(bool),
    Contains(Scalar),
}

impl Op {
    /// Whether a present scalar value satisfies the condition (`$exists` and the array
    /// half of `$contains` are handled by the callers).
    pub(crate) fn holds_for_scalar(&self, value: &Scalar) -> bool {
        let cmp = |operand: &Scalar| value.compare(operand);
        match self {
            Op::Eq(x) => cmp(x) == Some(Ordering::Equal),
            Op::Ne(x) => cmp(x).is_some_and(|o| o != Ordering::Equal),
            Op::Gt(x) => cmp(x) == Some(Ordering::Greater),
            Op::Gte(x) => cmp(x).is_some_and(|o| o != Ordering::Less),
            Op::Lt(x) => cmp(x) == Some(Ordering::Less),
            Op::Lte(x) => cmp(x).is_some_and(|o| o != Ordering::Greater),
            Op::In(list) => list.iter().any(|x| cmp(x) == Some(Ordering::Equal)),
            Op::Nin(list) => {
                list.iter().any(|x| x.class() == value.class())
                    && !list.iter().any(|x| cmp(x) == Some(Ordering::Equal))
            }
            Op::Exists(expected) => *expected,
            Op::Contains(x) => match (value, x) {
                (Scalar::Str(haystack), Scalar::Str(needle)) => haystack.contains(needle.as_str()),
                _ => false,
            },
        }
    }

    /// Whether a present value (of any type) satisfies the condition.
    fn holds(&self, value: &Value) -> bool {
        match (self, value) {
            (Op::Exists(expected), _) => *expected,
            (Op::Contains(x), Value::Array(items)) => items
                .iter()
                .filter_map(Scalar::of)
                .any(|item| item.compare(x) == Some(Ordering::Equal)),
            _ => Scalar::of(value).is_some_and(|scalar| self.holds_for_scalar(&scalar)),
        }
    }
}

#[derive(Clone, Debug)]
pub(crate) enum Node {
    And(Vec<Node>),
    Or(Vec<Node>),
    Not(Box<Node>),
    Leaf { path: Vec<String>, op: Op },
}

/// Looks `path` up in `meta` (objects only).
fn lookup<'a>(meta: &'a Value, path: &[String]) -> Option<&'a Value> {
    let mut node = meta;
    for key in path {
        node = node.as_object()?.get(key)?;
    }
    Some(node)
}

impl Node {
    fn matches(&self, chunk: &Value, doc: &Value) -> bool {
        match self {
            Node::And(nodes) => nodes.iter().all(|n| n.matches(chunk, doc)),
            Node::Or(nodes) => nodes.iter().any(|n| n.matches(chunk, doc)),
            Node::Not(node) => !node.matches(chunk, doc),
            Node::Leaf { path, op } => match lookup(chunk, path).or_else(|| lookup(doc, path)) {
                Some(value) => op.holds(value),
                None => matches!(op, Op::Exists(false)),
            },
        }
    }
}

/// Parsing state: the budget of terms left.
struct Parser {
    terms: usize,
}

fn err(place: &str, problem: impl Into<String>) -> InputError {
    InputError::new(place, problem)
}

impl Parser {
    fn count(&mut self, place: &str) -> Result<(), InputError> {
        self.terms += 1;
        if self.terms > MAX_FILTER_TERMS {
            return Err(err(
                place,
                format!("the filter holds more than {MAX_FILTER_TERMS} conditions and $in/$nin elements"),
            ));
        }
        Ok(())
    }

    fn object(&mut self, value: &Value, place: &str, depth: usize) -> Result<Node, InputError> {
        if depth > MAX_FILTER_DEPTH {
            return Err(err(
                place,
                format!("nests $and/$or/$not deeper than {MAX_FILTER_DEPTH} levels"),
            ));
        }
        let Some(object) = value.as_object() else {
            return Err(err(place, "must be a JSON object (a filter)"));
        };
        let mut nodes = Vec::with_capacity(object.len());
        for (key, value) in object {
            let here = format!("{place}.{key}");
            self.count(&here)?;
            nodes.push(match key.as_str() {
                "$and" | "$or" => {
                    let Some(items) = value.as_array() else {
                        return Err(err(&here, "must be an array of filters"));
                    };
                    let mut children = Vec::with_capacity(items.len());
                    for (i, item) in items.iter().enumerate() {
                        children.push(self.object(item, &format!("{here}[{i}]"), depth + 1)?);
                    }
                    if key == "$and" {
                        Node::And(children)
                    } else {
                        Node::Or(children)
                    }
                }
                "$not" => Node::Not(Box::new(self.object(value, &here, depth + 1)?)),
                other if other.starts_with('$') => {
                    return Err(err(
                        &here,
                        "unknown combinator; a filter's top level takes $and, $or, $not and keys",
                    ))
                }
                _ => self.condition(key, value, &here)?,
            });
        }
        Ok(if nodes.len() == 1 {
            nodes.remove(0)
        } else {
            Node::And(nodes)
        })
    }

    fn condition(&mut self, key: &str, value: &Value, place: &str) -> Result<Node, InputError> {
        let path: Vec<String> = key.split('.').map(str::to_owned).collect();
        if path.iter().any(String::is_empty) {
            return Err(err(
                place,
                "is not a key path: a dotted path has no empty segments",
            ));
        }
        let leaf = |op| Node::Leaf {
            path: path.clone(),
            op,
        };
        match value {
            Value::Object(ops) => {
                if ops.is_empty() || !ops.keys().all(|k| k.starts_with('$')) {
                    return Err(err(
                        place,
                        "an object here must hold only operators ($eq, $gt, $in, ...); reach nested keys with a dotted path",
                    ));
                }
                let mut nodes = Vec::with_capacity(ops.len());
                for (name, operand) in ops {
                    let here = format!("{place}.{name}");
                    self.count(&here)?;
                    nodes.push(leaf(self.operator(name, operand, &here)?));
                }
                Ok(if nodes.len() == 1 {
                    nodes.remove(0)
                } else {
                    Node::And(nodes)
                })
            }
            Value::Array(_) => Err(err(
                place,
                "an array cannot be compared; use {\"$in\": [...]} or {\"$contains\": ...}",
            )),
            scalar => Ok(leaf(Op::Eq(scalar_operand(scalar, place)?))),
        }
    }

    fn operator(&mut self, name: &str, operand: &Value, place: &str) -> Result<Op, InputError> {
        Ok(match name {
            "$eq" => Op::Eq(scalar_operand(operand, place)?),
            "$ne" => Op::Ne(scalar_operand(operand, place)?),
            "$contains" => Op::Contains(scalar_operand(operand, place)?),
            "$gt" | "$gte" | "$lt" | "$lte" => {
                let scalar = match operand {
                    Value::Number(_) | Value::String(_) => scalar_operand(operand, place)?,
                    _ => return Err(err(place, "must be a number or a string")),
                };
                match name {
                    "$gt" => Op::Gt(scalar),
                    "$gte" => Op::Gte(scalar),
                    "$lt" => Op::Lt(scalar),
                    _ => Op::Lte(scalar),
                }
            }
            "$in" | "$nin" => {
                let Some(items) = operand.as_array() else {
                    return Err(err(place, "must be an array of scalars"));
                };
                let mut list = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    let here = format!("{place}[{i}]");
                    self.count(&here)?;
                    list.push(scalar_operand(item, &here)?);
                }
                if name == "$in" {
                    Op::In(list)
                } else {
                    Op::Nin(list)
                }
            }
            "$exists" => match operand {
                Value::Bool(b) => Op::Exists(*b),
                _ => return Err(err(place, "must be true or false")),
            },
            _ => {
                return Err(err(
                    place,
                    "unknown operator; use $eq $ne $gt $gte $lt $lte $in $nin $exists $contains",
                ))
            }
        })
    }
}

fn scalar_operand(value: &Value, place: &str) -> Result<Scalar, InputError> {
    Scalar::of(value).ok_or_else(|| err(place, "must be a string, number, boolean or null"))
}

impl Filter {
    /// Parses a filter. A malformed one is an [`InputError`] whose field names the place
    /// in the filter, rooted at `where` (`where.$and[1].year.$gte`).
    ///
    /// ```
    /// use ratchetdb::Filter;
    /// use serde_json::json;
    /// let filter = Filter::parse(&json!({"lang": "en", "year": {"$gte": 2020}}))?;
    /// assert!(filter.matches(&json!({"year": 2021}), &json!({"lang": "en"})));
    /// let bad = Filter::parse(&json!({"$and": [{"lang": "en"}, {"year": {"$gte": [1]}}]}));
    /// assert_eq!(bad.unwrap_err().field, "where.$and[1].year.$gte");
    /// # Ok::<(), ratchetdb::InputError>(())
    /// ```
    pub fn parse(value: &Value) -> Result<Filter, InputError> {
        let node = Parser { terms: 0 }.object(value, "where", 0)?;
        Ok(Filter {
            source: value.clone(),
            node,
        })
    }

    /// Whether a chunk with metadata `chunk_meta`, of a document with metadata `doc_meta`,
    /// matches (a path is looked up in the chunk's metadata first).
    pub fn matches(&self, chunk_meta: &Value, doc_meta: &Value) -> bool {
        self.node.matches(chunk_meta, doc_meta)
    }

    /// The JSON the filter was parsed from.
    pub fn as_json(&self) -> &Value {
        &self.source
    }

    /// The parsed tree (the embedded store evaluates it on its postings; PostgreSQL
    /// translates it to SQL).
    pub(crate) fn node(&self) -> &Node {
        &self.node
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: Value) -> Filter {
        Filter::parse(&v).expect("valid filter")
    }

    #[test]
    fn chunk_meta_wins_over_document_meta() {
        let f = parse(json!({"lang": "en"}));
        assert!(f.matches(&json!({"lang": "en"}), &json!({"lang": "de"})));
        assert!(!f.matches(&json!({"lang": "de"}), &json!({"lang": "en"})));
        assert!(f.matches(&json!({}), &json!({"lang": "en"})));
    }

    #[test]
    fn cross_type_comparisons_are_false() {
        let f = parse(json!({"year": {"$gt": 2020}}));
        assert!(!f.matches(&json!({"year": "2021"}), &Value::Null));
        assert!(f.matches(&json!({"year": 2021.5}), &Value::Null));
        let ne = parse(json!({"year": {"$ne": 2020}}));
        assert!(!ne.matches(&json!({"year": "x"}), &Value::Null));
        assert!(!ne.matches(&json!({}), &Value::Null));
    }

    #[test]
    fn dotted_paths_and_contains() {
        let f = parse(json!({"author.name": {"$contains": "ann"}}));
        assert!(f.matches(&json!({"author": {"name": "joanna"}}), &Value::Null));
        let tags = parse(json!({"tags": {"$contains": "rust"}}));
        assert!(tags.matches(&json!({"tags": ["go", "rust"]}), &Value::Null));
        assert!(!tags.matches(&json!({"tags": ["go"]}), &Value::Null));
    }

    #[test]
    fn malformed_filters_name_the_place() {
        let cases = [
            (json!([1]), "where"),
            (json!({"$and": {"a": 1}}), "where.$and"),
            (
                json!({"$or": [{"a": 1}, {"b": {"$gt": true}}]}),
                "where.$or[1].b.$gt",
            ),
            (json!({"a": {"$in": [1, [2]]}}), "where.a.$in[1]"),
            (json!({"a": {"$regex": "x"}}), "where.a.$regex"),
            (json!({"a..b": 1}), "where.a..b"),
            (json!({"$nor": []}), "where.$nor"),
            (json!({"a": {"b": 1}}), "where.a"),
            (json!({"a": {"$exists": 1}}), "where.a.$exists"),
            (json!({"$not": 3}), "where.$not"),
        ];
        for (filter, field) in cases {
            let error = Filter::parse(&filter).expect_err("malformed");
            assert_eq!(error.field, field, "{filter}");
        }
    }

    #[test]
    fn nesting_is_bounded() {
        let mut f = json!({"a": 1});
        for _ in 0..=MAX_FILTER_DEPTH {
            f = json!({ "$not": f });
        }
        assert!(Filter::parse(&f).is_err());
    }
}
