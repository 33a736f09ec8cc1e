//! The text cache: the derived, in-memory inversion of the `text_docs` rows that text
//! searches score on (derived state, see [`super::Derived`]). Like the filter index it is
//! built from a snapshot by the first text search and brought up to each later search's
//! snapshot from the changelog (every revision lists its new and dropped
//! vector ids there; a new id's row is read from the snapshot); when the changelog no longer
//! reaches back far enough, the analysis recorded in the file changed, or more chunks are
//! dead in it than live, it is rebuilt. The rows stay the truth: an index that covers another
//! commit than a search's snapshot is never used for it.
//!
//! Compact, so that text of distinct terms (identifiers, hashes, log lines) costs about as
//! little per (term, chunk) as prose:
//!
//! - Chunks are numbered densely in the order indexed; a removed chunk's number is marked
//!   dead (its postings are skipped, and dropped at the next rebuild or merge).
//! - A term is hashed; the hash's high 32 bits are its fingerprint. A fingerprint with at
//!   least [`COMMON_POSTINGS`] postings is *common*: each of its terms keeps its text once and
//!   its postings as varint (number gap, count) pairs, in number order. A rarer fingerprint's
//!   postings are only (fingerprint, number) words in a sorted array (and a small sorted tail
//!   of recent ones): a query term with such a fingerprint reads its candidates' segments from
//!   the snapshot's rows and keeps the chunks that have it, with their counts. Every term of
//!   a fingerprint is on the same side, so a fingerprint shared by several terms is exact on
//!   both.
//! - A rare fingerprint that reaches [`COMMON_POSTINGS`] by later commits is made common
//!   (its candidates' rows read once).

use super::{CatchUp, Changes, Derived};
use crate::backend::redb::read::Snapshot;
use crate::backend::redb::schema::{split_vector_id, vector_id, TextCodec, TEXT_DOCS};
use crate::backend::redb::text::row;
use crate::error::ReadError;
use crate::text::TextOptions;
use foldhash::fast::RandomState;
use hashbrown::{HashMap, HashSet, HashTable};
use parking_lot::RwLock;
use redb::{ReadOnlyTable, ReadableTable};
use std::hash::BuildHasher;

/// A fingerprint with at least this many postings keeps its terms' text and postings in
/// memory; a rarer one is checked against the rows at query time.
const COMMON_POSTINGS: u32 = if cfg!(test) { 3 } else { 8 };

/// The sorted tail of recent rare postings is merged into the main array when it holds more
/// than this, and more than a 64th of the main array.
const TAIL_MIN: usize = if cfg!(test) { 4 } else { 4096 };

/// The index is rebuilt when more chunks than this, and than live ones, are dead in it.
const DEAD_MIN: u64 = if cfg!(test) { 6 } else { 1024 };

/// The text rows a search's snapshot holds, with the text codec their compressed terms
/// decode with (schema 10: `text/row.rs`).
pub(crate) struct Rows<'s> {
    table: ReadOnlyTable<u64, &'static [u8]>,
    codec: Option<&'s TextCodec>,
}

impl<'s> Rows<'s> {
    /// The text rows of `snapshot`. A codec row that does not read leaves raw terms
    /// readable and compressed ones a corruption (`Store::verify` reports the row).
    pub(crate) fn open(snapshot: &'s Snapshot) -> Result<Rows<'s>, ReadError> {
        Ok(Rows {
            table: snapshot
                .txn
                .open_table(TEXT_DOCS)
                .map_err(ReadError::storage)?,
            codec: snapshot.text_codec_for_reads()?,
        })
    }
}

/// A term of a common fingerprint.
#[derive(Debug)]
struct CommonTerm {
    text: Box<str>,
    /// (number gap, count) pairs as LEB128 varints, by number ascending.
    postings: Vec<u8>,
    /// The last number appended.
    last: u32,
}

fn put_leb(out: &mut Vec<u8>, mut value: u32) {
    while value >= 0x80 {
        out.push(value as u8 | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn get_leb(bytes: &[u8], at: &mut usize) -> Option<u32> {
    let mut value = 0u32;
    let mut shift = 0u32;
    loop {
        let byte = *bytes.get(*at)?;
        *at += 1;
        value |= u32::from(byte & 0x7F).checked_shl(shift)?;
        if byte < 0x80 {
            return Some(value);
        }
        shift += 7;
    }
}

/// A rare posting: the fingerprint in the high half, the chunk number in the low one.
fn rare_entry(fp: u32, number: u32) -> u64 {
    (u64::from(fp) << 32) | u64::from(number)
}

fn entry_fp(entry: u64) -> u32 {
    (entry >> 32) as u32
}

/// The entries of `fp` in a sorted array of rare entries.
fn fp_range(entries: &[u64], fp: u32) -> &[u64] {
    let lo = entries.partition_point(|&e| entry_fp(e) < fp);
    let hi = lo + entries[lo..].partition_point(|&e| entry_fp(e) == fp);
    &entries[lo..hi]
}

/// Where a chunk's rare postings go: the main array (a build, sorted at its end) or the
/// entries of the current catch-up (sorted into the tail at its end).
#[derive(Clone, Copy)]
enum RareTarget {
    Main,
    Fresh,
}

/// The inverted index of one commit.
#[derive(Debug, Default)]
pub(crate) struct InvertedIndex {
    /// The commit sequence it covers.
    covered: u64,
    /// The analysis its rows were made with.
    options: TextOptions,
    hasher: RandomState,
    /// By chunk number: the vector id, the length in terms, the distinct terms.
    ids: Vec<u64>,
    lens: Vec<u32>,
    distinct: Vec<u32>,
    /// Dead chunk numbers, a bit each.
    dead: Vec<u64>,
    /// Live vector id -> chunk number.
    numbers: HashMap<u64, u32, RandomState>,
    dead_chunks: u64,
    /// Live (term, chunk) pairs.
    pairs: u64,
    total_terms: u64,
    common_fps: HashSet<u32, RandomState>,
    /// Indexes into `terms`, by the hash of their text.
    table: HashTable<u32>,
    terms: Vec<CommonTerm>,
    /// Rare entries, sorted; `tail`: recent ones, sorted; `fresh`: the current catch-up's.
    rare: Vec<u64>,
    tail: Vec<u64>,
    fresh: Vec<u64>,
}

impl InvertedIndex {
    /// Built from every row of `snapshot`: a first pass counts the postings of each
    /// fingerprint, the second indexes.
    fn build(snapshot: &Snapshot, options: &TextOptions) -> Result<InvertedIndex, ReadError> {
        let mut index = InvertedIndex {
            covered: snapshot.commit()?,
            options: options.clone(),
            ..InvertedIndex::default()
        };
        let rows = Rows::open(snapshot)?;
        let mut counts: HashMap<u32, u32, RandomState> = HashMap::default();
        for entry in rows.table.iter().map_err(ReadError::storage)? {
            let (_, value) = entry.map_err(ReadError::storage)?;
            for segment in row::segments(value.value())? {
                for (term, _) in segment.terms(rows.codec)?.list() {
                    let count = counts.entry(index.fp(index.hash(term))).or_insert(0);
                    *count = count.saturating_add(1);
                }
            }
        }
        let mut rare = 0usize;
        for (&fp, &count) in &counts {
            if count >= COMMON_POSTINGS {
                index.common_fps.insert(fp);
            } else {
                rare += count as usize;
            }
        }
        drop(counts);
        index.rare.reserve_exact(rare);
        // Rows come in document order and segments in slot order.
        for entry in rows.table.iter().map_err(ReadError::storage)? {
            let (key, value) = entry.map_err(ReadError::storage)?;
            let doc = key.value();
            for segment in row::segments(value.value())? {
                index.insert(
                    vector_id(doc, segment.slot),
                    segment.len,
                    &segment.terms(rows.codec)?.list(),
                    RareTarget::Main,
                )?;
            }
        }
        index.rare.sort_unstable();
        for term in &mut index.terms {
            term.postings.shrink_to_fit();
        }
        index.terms.shrink_to_fit();
        index.ids.shrink_to_fit();
        index.lens.shrink_to_fit();
        index.distinct.shrink_to_fit();
        Ok(index)
    }

    fn hash(&self, term: &str) -> u64 {
        self.hasher.hash_one(term)
    }

    fn fp(&self, hash: u64) -> u32 {
        (hash >> 32) as u32
    }

    fn is_dead(&self, number: u32) -> bool {
        self.dead
            .get(number as usize / 64)
            .is_some_and(|word| word >> (number % 64) & 1 == 1)
    }

    /// The common term `term` (of hash `hash`), added if new.
    fn common_term(&mut self, hash: u64, term: &str) -> usize {
        let terms = &self.terms;
        if let Some(&at) = self.table.find(hash, |&i| &*terms[i as usize].text == term) {
            return at as usize;
        }
        let at = self.terms.len();
        self.terms.push(CommonTerm {
            text: term.into(),
            postings: Vec::new(),
            last: 0,
        });
        let (hasher, terms) = (&self.hasher, &self.terms);
        self.table.insert_unique(hash, at as u32, |&i| {
            hasher.hash_one(&*terms[i as usize].text)
        });
        at
    }

    /// Appends a posting to a common term (numbers come in ascending order).
    fn append(&mut self, at: usize, number: u32, count: u32) {
        let term = &mut self.terms[at];
        put_leb(&mut term.postings, number.wrapping_sub(term.last));
        put_leb(&mut term.postings, count);
        term.last = number;
    }

    fn insert(
        &mut self,
        id: u64,
        len: u32,
        terms: &[(&str, u32)],
        target: RareTarget,
    ) -> Result<(), ReadError> {
        if self.numbers.contains_key(&id) {
            return Ok(());
        }
        let number = u32::try_from(self.ids.len()).map_err(|_| ReadError::Unsupported {
            operation: "a text index of more than 2^32 chunks",
            backend: "embedded",
        })?;
        if number % 64 == 0 {
            self.dead.push(0);
        }
        self.ids.push(id);
        self.lens.push(len);
        self.distinct.push(terms.len() as u32);
        for &(term, count) in terms {
            let hash = self.hash(term);
            let fp = self.fp(hash);
            if self.common_fps.contains(&fp) {
                let at = self.common_term(hash, term);
                self.append(at, number, count);
            } else {
                match target {
                    RareTarget::Main => self.rare.push(rare_entry(fp, number)),
                    RareTarget::Fresh => self.fresh.push(rare_entry(fp, number)),
                }
            }
        }
        self.pairs += terms.len() as u64;
        self.total_terms += u64::from(len);
        self.numbers.insert(id, number);
        Ok(())
    }

    fn remove_chunk(&mut self, id: u64) {
        let Some(number) = self.numbers.remove(&id) else {
            return;
        };
        let at = number as usize;
        if let Some(word) = self.dead.get_mut(at / 64) {
            *word |= 1 << (at % 64);
        }
        self.dead_chunks += 1;
        self.pairs = self
            .pairs
            .saturating_sub(u64::from(self.distinct.get(at).copied().unwrap_or(0)));
        self.total_terms = self
            .total_terms
            .saturating_sub(u64::from(self.lens.get(at).copied().unwrap_or(0)));
    }

    /// Sorts the catch-up's rare entries into the tail, makes common the fingerprints that
    /// reached [`COMMON_POSTINGS`], and merges a grown tail into the main array.
    fn settle(&mut self, rows: &Rows) -> Result<(), ReadError> {
        let mut fresh = std::mem::take(&mut self.fresh);
        fresh.sort_unstable();
        let mut promoted = Vec::new();
        let mut at = 0;
        while at < fresh.len() {
            let fp = entry_fp(fresh[at]);
            let run = fp_range(&fresh[at..], fp).len();
            let count = run + fp_range(&self.tail, fp).len() + fp_range(&self.rare, fp).len();
            if count >= COMMON_POSTINGS as usize {
                promoted.push(fp);
            }
            at += run;
        }
        self.tail = merge(&self.tail, &fresh, |_| true);
        for &fp in &promoted {
            self.promote(fp, rows)?;
        }
        if !promoted.is_empty() {
            let common = &self.common_fps;
            self.tail.retain(|&e| !common.contains(&entry_fp(e)));
        }
        if self.tail.len() > TAIL_MIN.max(self.rare.len() / 64) {
            let tail = std::mem::take(&mut self.tail);
            let rare = std::mem::take(&mut self.rare);
            self.rare = merge(&rare, &tail, |e| {
                !self.is_dead(e as u32) && !self.common_fps.contains(&entry_fp(e))
            });
        }
        Ok(())
    }

    /// Makes `fp` common: its live chunks' segments are read for the terms of that
    /// fingerprint. Its entries left in the main array are dropped at its next merge.
    fn promote(&mut self, fp: u32, rows: &Rows) -> Result<(), ReadError> {
        let mut numbers: Vec<u32> = fp_range(&self.rare, fp)
            .iter()
            .chain(fp_range(&self.tail, fp))
            .map(|&e| e as u32)
            .filter(|&n| !self.is_dead(n))
            .collect();
        numbers.sort_unstable();
        numbers.dedup();
        self.common_fps.insert(fp);
        for number in numbers {
            let (doc, slot) = split_vector_id(self.vector_id(number));
            let Some(bytes) = rows.table.get(doc).map_err(ReadError::storage)? else {
                continue;
            };
            let segments = row::segments(bytes.value())?;
            let Ok(at) = segments.binary_search_by_key(&slot, |s| s.slot) else {
                continue;
            };
            for (term, count) in segments[at].terms(rows.codec)?.list() {
                let hash = self.hash(term);
                if self.fp(hash) == fp {
                    let at = self.common_term(hash, term);
                    self.append(at, number, count);
                }
            }
        }
        Ok(())
    }

    /// Live chunks indexed.
    pub(crate) fn chunk_count(&self) -> u64 {
        self.numbers.len() as u64
    }

    /// Their lengths summed.
    pub(crate) fn total_terms(&self) -> u64 {
        self.total_terms
    }

    /// The vector id of chunk `number`.
    pub(crate) fn vector_id(&self, number: u32) -> u64 {
        self.ids.get(number as usize).copied().unwrap_or(u64::MAX)
    }

    /// The length in terms of chunk `number`.
    pub(crate) fn len_of(&self, number: u32) -> u32 {
        self.lens.get(number as usize).copied().unwrap_or(0)
    }

    /// The live chunks that have `term`, as (chunk number, count), by number. `rows`: the
    /// text rows of the snapshot the index covers (a rare term's candidates are read there).
    pub(crate) fn postings(&self, term: &str, rows: &Rows) -> Result<Vec<(u32, u32)>, ReadError> {
        let hash = self.hash(term);
        let fp = self.fp(hash);
        let mut out = Vec::new();
        if self.common_fps.contains(&fp) {
            let Some(&at) = self
                .table
                .find(hash, |&i| &*self.terms[i as usize].text == term)
            else {
                return Ok(out);
            };
            let bytes = &self.terms[at as usize].postings;
            let (mut at, mut number) = (0usize, 0u32);
            while let (Some(gap), Some(count)) = (get_leb(bytes, &mut at), get_leb(bytes, &mut at))
            {
                number = number.wrapping_add(gap);
                if !self.is_dead(number) {
                    out.push((number, count));
                }
            }
            return Ok(out);
        }
        let mut candidates: Vec<u32> = fp_range(&self.rare, fp)
            .iter()
            .chain(fp_range(&self.tail, fp))
            .map(|&e| e as u32)
            .filter(|&n| !self.is_dead(n))
            .collect();
        candidates.sort_unstable();
        candidates.dedup();
        for number in candidates {
            let (doc, slot) = split_vector_id(self.vector_id(number));
            let Some(bytes) = rows.table.get(doc).map_err(ReadError::storage)? else {
                continue;
            };
            let segments = row::segments(bytes.value())?;
            let Ok(at) = segments.binary_search_by_key(&slot, |s| s.slot) else {
                continue;
            };
            if let Some(&(_, count)) = segments[at]
                .terms(rows.codec)?
                .list()
                .iter()
                .find(|(t, _)| *t == term)
            {
                out.push((number, count));
            }
        }
        Ok(out)
    }

    /// What the index holds and the heap it takes (see [`Footprint`]).
    #[cfg(any(test, feature = "testkit"))]
    pub(crate) fn footprint(&self) -> Footprint {
        let words = self.rare.capacity() + self.tail.capacity() + self.fresh.capacity();
        let bytes = self.ids.capacity() * 8
            + self.lens.capacity() * 4
            + self.distinct.capacity() * 4
            + self.dead.capacity() * 8
            + self.numbers.allocation_size()
            + self.common_fps.allocation_size()
            + self.table.allocation_size()
            + self.terms.capacity() * std::mem::size_of::<CommonTerm>()
            + self
                .terms
                .iter()
                .map(|t| t.text.len() + t.postings.capacity())
                .sum::<usize>()
            + words * 8;
        Footprint {
            chunks: self.numbers.len() as u64,
            pairs: self.pairs,
            heap_bytes: bytes as u64,
        }
    }
}

impl Derived for InvertedIndex {
    fn covers(&self) -> u64 {
        self.covered
    }

    /// [`CatchUp::Rebuild`] also when too many chunks are dead (or numbered) in it.
    fn catch_up(&mut self, changes: &Changes<'_>) -> Result<CatchUp, ReadError> {
        let rows = Rows::open(changes.snapshot())?;
        for change in changes.rows() {
            for &id in &change.removed {
                self.remove_chunk(id);
            }
            // The added ids come a document at a time: its row is read and split once.
            for run in change
                .added
                .chunk_by(|a, b| split_vector_id(*a).0 == split_vector_id(*b).0)
            {
                let doc = split_vector_id(run[0]).0;
                // Absent: removed again by a later commit up to the snapshot.
                let Some(bytes) = rows.table.get(doc).map_err(ReadError::storage)? else {
                    continue;
                };
                let segments = row::segments(bytes.value())?;
                for &id in run {
                    if self.numbers.contains_key(&id) {
                        continue;
                    }
                    let slot = split_vector_id(id).1;
                    if let Ok(at) = segments.binary_search_by_key(&slot, |s| s.slot) {
                        let segment = &segments[at];
                        self.insert(
                            id,
                            segment.len,
                            &segment.terms(rows.codec)?.list(),
                            RareTarget::Fresh,
                        )?;
                    }
                }
            }
        }
        let live = self.numbers.len() as u64;
        if self.dead_chunks > DEAD_MIN.max(live) || self.ids.len() > (u32::MAX / 2) as usize {
            return Ok(CatchUp::Rebuild);
        }
        self.settle(&rows)?;
        self.covered = changes.target();
        Ok(CatchUp::Done)
    }
}

/// The entries of two sorted arrays that `keep` passes, sorted, without repeats.
fn merge(a: &[u64], b: &[u64], keep: impl Fn(u64) -> bool) -> Vec<u64> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        let next = match (a.get(i), b.get(j)) {
            (Some(&x), Some(&y)) if x <= y => {
                i += 1;
                if x == y {
                    j += 1;
                }
                x
            }
            (_, Some(&y)) => {
                j += 1;
                y
            }
            (Some(&x), None) => {
                i += 1;
                x
            }
            (None, None) => break,
        };
        if keep(next) {
            out.push(next);
        }
    }
    out
}

/// What an inverted index holds and the heap it takes.
#[cfg(any(test, feature = "testkit"))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Footprint {
    /// Live chunks indexed.
    pub chunks: u64,
    /// (term, chunk) pairs: each live chunk's distinct terms, summed.
    pub pairs: u64,
    /// Heap bytes the index holds (its tables' capacities, not the allocator's overhead).
    pub heap_bytes: u64,
}

/// The store's inverted index, shared by its searches.
#[derive(Debug, Default)]
pub(crate) struct TextCache {
    index: RwLock<Option<InvertedIndex>>,
}

impl TextCache {
    /// The footprint of the index as last built or brought up (`None`: no text search yet).
    #[cfg(any(test, feature = "testkit"))]
    pub(crate) fn footprint(&self) -> Option<Footprint> {
        self.index.read().as_ref().map(InvertedIndex::footprint)
    }

    /// Runs `f` on the inverted index of exactly `snapshot`'s commit (built or brought up
    /// to it first), or on one built from the snapshot alone when the shared one has moved
    /// past it (a search on a newer snapshot got there first).
    pub(crate) fn with<R>(
        &self,
        snapshot: &Snapshot,
        options: &TextOptions,
        f: impl FnOnce(&InvertedIndex) -> R,
    ) -> Result<R, ReadError> {
        let seq = snapshot.commit()?;
        {
            let guard = self.index.read();
            if let Some(index) = guard.as_ref() {
                if index.covered == seq && &index.options == options {
                    return Ok(f(index));
                }
            }
        }
        let mut guard = self.index.write();
        let usable = guard
            .as_ref()
            .is_some_and(|i| &i.options == options && i.covered <= seq);
        let ahead = guard
            .as_ref()
            .is_some_and(|i| &i.options == options && i.covered > seq);
        if ahead {
            drop(guard);
            return Ok(f(&InvertedIndex::build(snapshot, options)?));
        }
        let caught_up = match guard.as_mut() {
            Some(index) if usable => match super::bring_to(index, snapshot) {
                Ok(caught_up) => caught_up == CatchUp::Done,
                Err(e) => {
                    // Part of the changes may be applied: no commit's index.
                    *guard = None;
                    return Err(e);
                }
            },
            _ => false,
        };
        if !caught_up {
            *guard = Some(InvertedIndex::build(snapshot, options)?);
        }
        match guard.as_ref() {
            Some(index) => Ok(f(index)),
            None => Ok(f(&InvertedIndex::build(snapshot, options)?)),
        }
    }
}

#[cfg(test)]
mod tests {
    //! The compact inversion against a BM25 reference of the live chunks, through writes,
    //! revisions and deletions caught up between searches (this build's thresholds are small
    //! under test, so rare fingerprints are made common, tails merged and the index rebuilt
    //! for its dead chunks along the way).

    use crate::{Chunk, Document, Options, SearchOptions, Store, Version};
    use std::collections::BTreeMap;

    fn splitmix(state: &mut u64) -> u64 {
        *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = *state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A chunk of 1 to 8 words, skewed towards the vocabulary's start.
    fn text(state: &mut u64) -> String {
        let n = 1 + splitmix(state) % 8;
        (0..n)
            .map(|_| {
                let u = (splitmix(state) % 1000) as f64 / 1000.0;
                format!("t{}", (u * u * 40.0) as u64)
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// (id, position) -> score, for every live chunk with one of `query`'s words.
    fn reference(corpus: &BTreeMap<String, Vec<String>>, query: &str) -> Vec<((String, u32), f64)> {
        let chunks: Vec<((String, u32), Vec<&str>)> = corpus
            .iter()
            .flat_map(|(id, texts)| {
                texts
                    .iter()
                    .enumerate()
                    .map(move |(p, t)| ((id.clone(), p as u32), t.split_whitespace().collect()))
            })
            .collect();
        let n = chunks.len() as f64;
        let avg = chunks.iter().map(|(_, w)| w.len()).sum::<usize>() as f64 / n;
        let mut terms: Vec<&str> = query.split_whitespace().collect();
        terms.sort();
        terms.dedup();
        let mut out = Vec::new();
        for (key, words) in &chunks {
            let mut score = 0.0;
            let mut any = false;
            for term in &terms {
                let tf = words.iter().filter(|w| *w == term).count() as f64;
                if tf == 0.0 {
                    continue;
                }
                any = true;
                let df = chunks.iter().filter(|(_, w)| w.contains(term)).count() as f64;
                let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
                let norm = 1.0 - 0.75 + 0.75 * words.len() as f64 / avg;
                score += idf * tf * 2.2 / (tf + 1.2 * norm);
            }
            if any {
                out.push((key.clone(), score));
            }
        }
        out
    }

    #[test]
    fn caught_up_index_scores_as_the_reference() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path().join("t.redb"), Options::default()).expect("open");
        let mut corpus: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut state = 11u64;
        let mut version = 0u64;
        for step in 0..120 {
            version += 1;
            let id = format!("d{}", splitmix(&mut state) % 12);
            if splitmix(&mut state).is_multiple_of(6) {
                store
                    .delete("s", &id, Version::number(version))
                    .expect("delete");
                corpus.remove(&id);
            } else {
                let texts: Vec<String> = (0..1 + splitmix(&mut state) % 3)
                    .map(|_| text(&mut state))
                    .collect();
                let mut doc = Document::new("s", id.clone(), Version::number(version));
                for (p, t) in texts.iter().enumerate() {
                    doc = doc.with_chunk(Chunk::new(t.clone(), vec![1.0, p as f32]));
                }
                store.upsert(doc).expect("upsert");
                corpus.insert(id, texts);
            }
            if step % 3 != 0 {
                continue;
            }
            for query in [
                "t0",
                "t1 t5",
                "t7 t12 t30",
                "t25",
                "t38 t39",
                "t2 t2 t3",
                "zz",
            ] {
                let hits = store
                    .search_text(query, 1000, &SearchOptions::default())
                    .expect("search");
                let mut expected = reference(&corpus, query);
                expected.sort_by(|a, b| b.1.total_cmp(&a.1));
                assert_eq!(
                    hits.len(),
                    expected.len(),
                    "step {step}, {query:?}: hit count"
                );
                let by_key: BTreeMap<(String, u32), f64> = expected.iter().cloned().collect();
                for (rank, hit) in hits.iter().enumerate() {
                    let key = (hit.id.clone(), hit.position);
                    let want = by_key
                        .get(&key)
                        .unwrap_or_else(|| panic!("step {step}, {query:?}: {key:?} not live"));
                    let close = |a: f64, b: f64| (a - b).abs() < 1e-4 * b.max(1.0);
                    assert!(
                        close(f64::from(hit.score), *want),
                        "step {step}, {query:?}: {key:?}"
                    );
                    assert!(
                        close(f64::from(hit.score), expected[rank].1),
                        "step {step}: rank"
                    );
                    assert_eq!(hit.text, corpus[&hit.id][hit.position as usize]);
                }
            }
        }
    }
}
