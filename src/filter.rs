//! Metadata filters: the JSON filter language, and the derived in-memory form searches
//! evaluate it on.
//!
//! The language is the one RAG frameworks pass to their vector stores (Chroma's `where`,
//! MongoDB's queries): `{"lang": "en"}`, `{"year": {"$gte": 2020}}`, the operators
//! `$eq $ne $gt $gte $lt $lte $in $nin $exists $contains`, the combinators `$and`, `$or`,
//! `$not`, and dotted paths (`"author.name"`) into nested objects. A path is looked up in
//! the chunk's metadata first, then in its document's (a path the chunk's metadata holds
//! wins). See [`Filter`] for the exact semantics.
//!
//! Invariant: [`FilterIndex`] is derived. It is built from a read snapshot's rows, kept up
//! to date from the changelog (every revision lists all of its vector ids there, so a
//! document whose metadata changed is named even when its vectors did not), and rebuilt
//! from the rows when the changelog no longer reaches back far enough. Evaluating a filter
//! on it reads no row: it answers with the set of vector ids whose chunk matches.

use crate::backend::redb::read::Snapshot;
use crate::backend::redb::schema::{
    self, split_vector_id, vector_id, DocRow, VectorsRow, DOCS, VECTORS,
};
use crate::error::{InputError, ReadError};
use parking_lot::{MappedRwLockReadGuard, RwLock, RwLockReadGuard};
use redb::ReadableTable;
use roaring::RoaringBitmap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};

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
    fn of(value: &Value) -> Option<Scalar> {
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
    fn holds_for_scalar(&self, value: &Scalar) -> bool {
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

    /// The parsed tree (the Postgres backend translates it to SQL).
    #[cfg(feature = "postgres")]
    pub(crate) fn node(&self) -> &Node {
        &self.node
    }
}

/// The postings of one key path, over the index's dense row numbers (one per live vector:
/// dense rows keep the bitmaps in a few large containers, where vector ids, which carry the
/// document in their high bits, would scatter them over one small container per document
/// and make every union slow).
#[derive(Default)]
struct PathPostings {
    /// Rows whose chunk has any value at this path.
    present: RoaringBitmap,
    /// Scalar value at this path -> rows.
    values: HashMap<Scalar, RoaringBitmap>,
    /// Scalar element of an array at this path -> rows.
    elements: HashMap<Scalar, RoaringBitmap>,
}

/// What the index holds of one live document.
struct DocEntry {
    vectors: Vec<u64>,
    chunk_metas: Vec<Value>,
    doc_meta: Value,
}

/// The derived in-memory form of every live chunk's metadata that filters are evaluated
/// on: for each key path, which vector ids hold which value there.
pub(crate) struct FilterIndex {
    /// The commit sequence it covers.
    covered: u64,
    docs: HashMap<u64, DocEntry>,
    /// Every live row.
    all: RoaringBitmap,
    paths: HashMap<Vec<String>, PathPostings>,
    /// Vector id -> row, and row -> vector id (`u64::MAX`: a free row).
    rows: HashMap<u64, u32>,
    vids: Vec<u64>,
    free: Vec<u32>,
}

/// Every (path, value) of an object, depth first (objects only; arrays are values).
fn walk<'a>(value: &'a Value, prefix: &mut Vec<String>, out: &mut Vec<(Vec<String>, &'a Value)>) {
    if let Some(object) = value.as_object() {
        for (key, child) in object {
            prefix.push(key.clone());
            out.push((prefix.clone(), child));
            walk(child, prefix, out);
            prefix.pop();
        }
    }
}

/// The resolved (path, value) pairs of one chunk: the chunk's paths, then the document's
/// paths the chunk does not hold.
fn resolved<'a>(chunk: &'a Value, doc: &'a Value) -> Vec<(Vec<String>, &'a Value)> {
    let mut out = Vec::new();
    walk(chunk, &mut Vec::new(), &mut out);
    let held: HashSet<Vec<String>> = out.iter().map(|(p, _)| p.clone()).collect();
    let mut from_doc = Vec::new();
    walk(doc, &mut Vec::new(), &mut from_doc);
    out.extend(from_doc.into_iter().filter(|(p, _)| !held.contains(p)));
    out
}

impl FilterIndex {
    /// Builds the index from every live document of `snapshot`.
    pub(crate) fn build(snapshot: &Snapshot) -> Result<FilterIndex, ReadError> {
        let mut index = FilterIndex {
            covered: crate::backend::redb::derived::live_index::commit_seq(snapshot)?,
            docs: HashMap::new(),
            all: RoaringBitmap::new(),
            paths: HashMap::new(),
            rows: HashMap::new(),
            vids: Vec::new(),
            free: Vec::new(),
        };
        let docs = snapshot.txn.open_table(DOCS).map_err(ReadError::storage)?;
        let vectors = snapshot
            .txn
            .open_table(VECTORS)
            .map_err(ReadError::storage)?;
        for entry in docs.iter().map_err(ReadError::storage)? {
            let (_, value) = entry.map_err(ReadError::storage)?;
            let row: DocRow = schema::decode("document row", value.value())?;
            if row.deleted {
                continue;
            }
            index.load_doc(snapshot, &vectors, &row)?;
        }
        Ok(index)
    }

    /// Adds a live document's chunks.
    fn load_doc(
        &mut self,
        snapshot: &Snapshot,
        vectors: &redb::ReadOnlyTable<u64, &'static [u8]>,
        row: &DocRow,
    ) -> Result<(), ReadError> {
        let chunks = snapshot.chunks_row(row)?;
        let Some(bytes) = vectors.get(row.internal_id).map_err(ReadError::storage)? else {
            return Ok(());
        };
        let slots: Vec<u32> = VectorsRow::parse(bytes.value())?.slots().collect();
        let entry = DocEntry {
            vectors: slots
                .iter()
                .map(|&slot| vector_id(row.internal_id, slot))
                .collect(),
            chunk_metas: chunks
                .chunks
                .iter()
                .map(|c| schema::decode_meta(&c.meta))
                .collect::<Result<_, _>>()?,
            doc_meta: schema::decode_meta(&row.meta)?,
        };
        self.post(&entry);
        self.docs.insert(row.internal_id, entry);
        Ok(())
    }

    /// Adds a document's postings.
    fn post(&mut self, entry: &DocEntry) {
        for (vid, chunk) in entry.vectors.iter().zip(&entry.chunk_metas) {
            let vid = self.allocate(*vid);
            self.all.insert(vid);
            for (path, value) in resolved(chunk, &entry.doc_meta) {
                let postings = self.paths.entry(path).or_default();
                postings.present.insert(vid);
                match value {
                    Value::Array(items) => {
                        for item in items.iter().filter_map(Scalar::of) {
                            postings.elements.entry(item).or_default().insert(vid);
                        }
                    }
                    other => {
                        if let Some(scalar) = Scalar::of(other) {
                            postings.values.entry(scalar).or_default().insert(vid);
                        }
                    }
                }
            }
        }
    }

    /// The row of a vector id, allocated if it has none.
    fn allocate(&mut self, vid: u64) -> u32 {
        if let Some(&row) = self.rows.get(&vid) {
            return row;
        }
        let row = match self.free.pop() {
            Some(row) => {
                self.vids[row as usize] = vid;
                row
            }
            None => {
                self.vids.push(vid);
                (self.vids.len() - 1) as u32
            }
        };
        self.rows.insert(vid, row);
        row
    }

    /// Frees the row of a vector id.
    fn release(&mut self, vid: u64) {
        if let Some(row) = self.rows.remove(&vid) {
            self.vids[row as usize] = u64::MAX;
            self.all.remove(row);
            self.free.push(row);
        }
    }

    /// Re-reads the documents `touched` (internal ids) from `snapshot`.
    fn refresh(&mut self, snapshot: &Snapshot, touched: &HashSet<u64>) -> Result<(), ReadError> {
        let vectors = snapshot
            .txn
            .open_table(VECTORS)
            .map_err(ReadError::storage)?;
        let mut removed_any = false;
        for &doc in touched {
            if let Some(old) = self.docs.remove(&doc) {
                removed_any = true;
                self.unpost(&old);
                for vid in &old.vectors {
                    self.release(*vid);
                }
            }
            // A live document's chunks row names it; a document without one is not live.
            let Some((source, id)) = snapshot.document_of(doc)? else {
                continue;
            };
            let Some(row) = snapshot.doc_row(&source, &id)? else {
                continue;
            };
            if !row.deleted && row.internal_id == doc {
                self.load_doc(snapshot, &vectors, &row)?;
            }
        }
        if removed_any {
            self.paths.retain(|_, p| {
                p.values.retain(|_, ids| !ids.is_empty());
                p.elements.retain(|_, ids| !ids.is_empty());
                !p.present.is_empty()
            });
        }
        Ok(())
    }

    /// Removes a document's postings (emptied ones are dropped by the caller).
    fn unpost(&mut self, entry: &DocEntry) {
        for (vid, chunk) in entry.vectors.iter().zip(&entry.chunk_metas) {
            let Some(&row) = self.rows.get(vid) else {
                continue;
            };
            let vid = &row;
            for (path, value) in resolved(chunk, &entry.doc_meta) {
                let Some(postings) = self.paths.get_mut(&path) else {
                    continue;
                };
                postings.present.remove(*vid);
                match value {
                    Value::Array(items) => {
                        for item in items.iter().filter_map(Scalar::of) {
                            if let Some(ids) = postings.elements.get_mut(&item) {
                                ids.remove(*vid);
                            }
                        }
                    }
                    other => {
                        if let Some(ids) =
                            Scalar::of(other).and_then(|s| postings.values.get_mut(&s))
                        {
                            ids.remove(*vid);
                        }
                    }
                }
            }
        }
    }

    /// Applies the changelog rows after `covered` up to `snapshot`'s commit. Returns
    /// `false` when the changelog no longer holds them (the caller rebuilds).
    fn catch_up(&mut self, snapshot: &Snapshot) -> Result<bool, ReadError> {
        let target = crate::backend::redb::derived::live_index::commit_seq(snapshot)?;
        if self.covered >= target {
            return Ok(true);
        }
        let Some(changes) = crate::backend::redb::derived::live_index::changes_since(
            snapshot,
            self.covered,
            target,
        )?
        else {
            return Ok(false);
        };
        let mut touched = HashSet::new();
        for change in changes {
            for id in change.added.iter().chain(&change.removed) {
                touched.insert(split_vector_id(*id).0);
            }
        }
        self.refresh(snapshot, &touched)?;
        self.covered = target;
        Ok(true)
    }

    /// The rows of the live chunks `filter` matches.
    fn evaluate(&self, filter: &Filter) -> RoaringBitmap {
        self.eval(&filter.node)
    }

    fn eval(&self, node: &Node) -> RoaringBitmap {
        match node {
            Node::And(nodes) => {
                let mut iter = nodes.iter();
                let Some(first) = iter.next() else {
                    return self.all.clone();
                };
                let mut acc = self.eval(first);
                for node in iter {
                    if acc.is_empty() {
                        break;
                    }
                    acc &= self.eval(node);
                }
                acc
            }
            Node::Or(nodes) => {
                let mut acc = RoaringBitmap::new();
                for node in nodes {
                    acc |= self.eval(node);
                }
                acc
            }
            Node::Not(node) => &self.all - &self.eval(node),
            Node::Leaf { path, op } => self.leaf(path, op),
        }
    }

    fn leaf(&self, path: &[String], op: &Op) -> RoaringBitmap {
        let Some(postings) = self.paths.get(path) else {
            return match op {
                Op::Exists(false) => self.all.clone(),
                _ => RoaringBitmap::new(),
            };
        };
        let lookup = |key: &Scalar| postings.values.get(key).cloned().unwrap_or_default();
        match op {
            Op::Exists(true) => postings.present.clone(),
            Op::Exists(false) => &self.all - &postings.present,
            Op::Eq(x) => lookup(x),
            Op::In(list) => {
                let mut acc = RoaringBitmap::new();
                for x in list {
                    if let Some(ids) = postings.values.get(x) {
                        acc |= ids;
                    }
                }
                acc
            }
            Op::Contains(x) => {
                let mut acc = postings.elements.get(x).cloned().unwrap_or_default();
                if matches!(x, Scalar::Str(_)) {
                    for (value, ids) in &postings.values {
                        if op.holds_for_scalar(value) {
                            acc |= ids;
                        }
                    }
                }
                acc
            }
            _ => {
                let mut acc = RoaringBitmap::new();
                for (value, ids) in &postings.values {
                    if op.holds_for_scalar(value) {
                        acc |= ids;
                    }
                }
                acc
            }
        }
    }
}

/// A store's filter index, built on the first filtered search and kept up to date by the
/// searches that use it.
#[derive(Default)]
pub(crate) struct FilterCache {
    index: RwLock<Option<FilterIndex>>,
}

/// Where a [`Matching`]'s index lives: the store's (read-locked while the search runs, so
/// that its rows keep their vector ids) or one built for a single search.
enum IndexRef<'a> {
    Shared(MappedRwLockReadGuard<'a, FilterIndex>),
    Owned(Box<FilterIndex>),
}

impl std::ops::Deref for IndexRef<'_> {
    type Target = FilterIndex;
    fn deref(&self) -> &FilterIndex {
        match self {
            IndexRef::Shared(guard) => guard,
            IndexRef::Owned(index) => index,
        }
    }
}

/// The chunks a filter matches: a bitmap of the filter index's rows.
pub(crate) struct Matching<'a> {
    index: IndexRef<'a>,
    rows: RoaringBitmap,
}

impl Matching<'_> {
    /// Evaluates `filter` on an index built from `snapshot` for this search alone.
    pub(crate) fn from_snapshot(
        snapshot: &Snapshot,
        filter: &Filter,
    ) -> Result<Matching<'static>, ReadError> {
        let index = FilterIndex::build(snapshot)?;
        let rows = index.evaluate(filter);
        Ok(Matching {
            index: IndexRef::Owned(Box::new(index)),
            rows,
        })
    }

    /// Whether the chunk of vector id `vid` matches.
    #[inline]
    pub(crate) fn contains(&self, vid: u64) -> bool {
        self.index
            .rows
            .get(&vid)
            .is_some_and(|&row| self.rows.contains(row))
    }

    /// The number of matching chunks.
    pub(crate) fn len(&self) -> u64 {
        self.rows.len()
    }

    /// Whether no chunk matches.
    pub(crate) fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The matching vector ids.
    pub(crate) fn vector_ids(&self) -> impl Iterator<Item = u64> + '_ {
        self.rows.iter().map(|row| self.index.vids[row as usize])
    }

    /// Keeps only the vector ids `keep` accepts.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(u64) -> bool) {
        let vids = &self.index.vids;
        self.rows.retain(|row| keep(vids[row as usize]));
    }
}

impl FilterCache {
    /// The chunks `filter` matches in `snapshot`, or `None` if the index already covers a
    /// newer commit than `snapshot` (the caller retries on a newer one). The index stays
    /// read-locked while the result lives.
    pub(crate) fn evaluate(
        &self,
        snapshot: &Snapshot,
        filter: &Filter,
    ) -> Result<Option<Matching<'_>>, ReadError> {
        let seq = crate::backend::redb::derived::live_index::commit_seq(snapshot)?;
        loop {
            {
                let guard = self.index.read();
                match guard.as_ref().map(|index| index.covered) {
                    Some(covered) if covered == seq => {
                        let rows = guard
                            .as_ref()
                            .map(|index| index.evaluate(filter))
                            .unwrap_or_default();
                        if let Ok(index) = RwLockReadGuard::try_map(guard, |index| index.as_ref()) {
                            return Ok(Some(Matching {
                                index: IndexRef::Shared(index),
                                rows,
                            }));
                        }
                        continue;
                    }
                    Some(covered) if covered > seq => return Ok(None),
                    _ => {}
                }
            }
            let mut index = self.index.write();
            match index.as_mut() {
                Some(current) if current.covered >= seq => {}
                Some(current) => {
                    if !current.catch_up(snapshot)? {
                        *index = Some(FilterIndex::build(snapshot)?);
                    }
                }
                None => *index = Some(FilterIndex::build(snapshot)?),
            }
        }
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
