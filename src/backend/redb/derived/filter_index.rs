//! The metadata filter's derived in-memory form (derived state, see [`super::Derived`]): postings of key path → value → vector ids
//! (roaring bitmaps) that searches evaluate a [`Filter`] on.
//!
//! Invariant: `FilterIndex` is derived. It is built from a read snapshot's rows, kept up
//! to date from the changelog (every revision lists all of its vector ids there, so a
//! document whose metadata changed is named even when its vectors did not), and rebuilt
//! from the rows when the changelog no longer reaches back far enough. Evaluating a filter
//! on it reads no row: it answers with the set of vector ids whose chunk matches.

use super::{CatchUp, Changes, Derived};
use crate::backend::redb::read::Snapshot;
use crate::backend::redb::schema::{
    self, split_vector_id, vector_id, DocRow, VectorsRow, DOCS, VECTORS,
};
use crate::error::ReadError;
use crate::policy::filter::{Filter, Node, Op, Scalar};
use parking_lot::{MappedRwLockReadGuard, RwLock, RwLockReadGuard};
use redb::ReadableTable;
use roaring::RoaringBitmap;
use serde_json::Value;
use std::collections::{HashMap, HashSet};

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

/// Filter indexes built on this thread so far (the crate's own tests: a search that builds
/// one per query holds a whole-store index beside the shared one, see
/// `indexer::filtered_space_search_tests`). Per thread, so tests running beside each other
/// in one process do not count each other's.
#[cfg(test)]
pub(crate) fn builds_on_this_thread() -> u64 {
    BUILDS.with(std::cell::Cell::get)
}

#[cfg(test)]
thread_local! {
    static BUILDS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

impl FilterIndex {
    /// Builds the index from every live document of `snapshot`: a posting and a row for
    /// every live chunk, so a search builds one for itself only when the shared one
    /// ([`FilterCache`]) cannot answer for its snapshot.
    pub(crate) fn build(snapshot: &Snapshot) -> Result<FilterIndex, ReadError> {
        #[cfg(test)]
        BUILDS.with(|builds| builds.set(builds.get() + 1));
        let mut index = FilterIndex {
            covered: snapshot.commit()?,
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

    /// The rows of the live chunks `filter` matches.
    fn evaluate(&self, filter: &Filter) -> RoaringBitmap {
        self.eval(filter.node())
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

impl Derived for FilterIndex {
    fn covers(&self) -> u64 {
        self.covered
    }

    /// Re-reads every document the changes name (each revision lists all of its vector
    /// ids, so a document whose metadata alone changed is named too).
    fn catch_up(&mut self, changes: &Changes<'_>) -> Result<CatchUp, ReadError> {
        let mut touched = HashSet::new();
        for change in changes.rows() {
            for id in change.added.iter().chain(&change.removed) {
                touched.insert(split_vector_id(*id).0);
            }
        }
        self.refresh(changes.snapshot(), &touched)?;
        self.covered = changes.target();
        Ok(CatchUp::Done)
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
    /// Evaluates `filter` on an index built from `snapshot` for this search alone: a whole
    /// index of the store's live chunks, outside any memory budget, so searches ask the
    /// shared one first ([`FilterCache::evaluate`]) and come here only when it has moved
    /// past their snapshot on their last attempt.
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
        let seq = snapshot.commit()?;
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
                    if super::bring_to(current, snapshot)? == CatchUp::Rebuild {
                        *index = Some(FilterIndex::build(snapshot)?);
                    }
                }
                None => *index = Some(FilterIndex::build(snapshot)?),
            }
        }
    }
}
