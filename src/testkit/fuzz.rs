//! One entry point per fuzz target (row decoding, opening a mutated file, operation sequences
//! against the model with crashes and faults), and the seed corpus.

use super::disk::{Disk, FaultMode};
use super::model::{store_rows, verify_clean, Model, ModelOutcome};
use crate::backend::redb::schema::{
    self, ChangelogRow, ChunkEntry, ChunksRow, DocRow, ListingRow, SkipRow, TextCodec, VectorData,
    VectorsRow,
};
use crate::backend::redb::text::row as text_row;
use crate::error::WriteError;
use crate::options::Options;
use crate::store::Store;
use crate::types::Version;
use crate::types::{Chunk, Document, Op, OpOutcome};
use crate::writer::WriterOptions;
use std::sync::OnceLock;

/// The text codec the row-decoding target reads compressed texts with: one trained on a
/// fixed corpus of English sentences, as a store trains its own.
fn fuzz_codec() -> &'static TextCodec {
    static CODEC: OnceLock<TextCodec> = OnceLock::new();
    CODEC.get_or_init(|| {
        let texts: Vec<String> = (0..400)
            .map(|i| {
                format!(
                    "Ratchets turn one way; revision {i} of the notes replaces what the \
                     pipeline delivered before, never backwards. Page {}.",
                    i * 3
                )
            })
            .collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        TextCodec::train(&refs)
    })
}

/// Runs every row decoder of the file format on `data` (and on the row types' accessors when a
/// decode succeeds). Each must return a value or a `Corruption`, never panic; a decoded row
/// must survive an encode/decode round trip. Returns how many decoders accepted the bytes.
pub fn row_decoding(data: &[u8]) -> Result<usize, String> {
    fn round_trip<T>(what: &str, row: &T) -> Result<(), String>
    where
        T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
    {
        let again: T = schema::decode(what, &schema::encode(row))
            .map_err(|c| format!("{what}: re-decoding an encoded row failed: {}", c.detail))?;
        if &again == row {
            Ok(())
        } else {
            Err(format!("{what}: round trip changed {row:?} into {again:?}"))
        }
    }
    let mut accepted = 0;
    if let Ok(row) = schema::decode::<DocRow>("document row", data) {
        accepted += 1;
        let _ = row.version();
        let _ = row.stored();
        round_trip("document row", &row)?;
    }
    let codec = Some(fuzz_codec());
    if let Ok(row) = schema::decode_chunks_row("chunks row", data, codec) {
        accepted += 1;
        // The round trip re-encodes with the codec (a raw text may come back compressed):
        // the row read back must be the same row.
        let again =
            schema::decode_chunks_row("chunks row", &schema::encode_chunks_row(&row, codec), codec)
                .map_err(|c| format!("chunks row: re-decoding failed: {}", c.detail))?;
        if again != row {
            return Err(format!(
                "chunks row: round trip changed {row:?} into {again:?}"
            ));
        }
        // A search's one-chunk decode agrees with the whole row for every slot it holds
        // (a row whose slots repeat is refused by it: `verify` reports such a row).
        let mut slots: Vec<u32> = row.chunks.iter().map(|c| c.slot).collect();
        slots.sort_unstable();
        let repeated = slots.windows(2).any(|w| w[0] == w[1]);
        let absent = slots.last().map_or(0, |s| s.wrapping_add(1));
        for slot in slots.iter().copied().chain([absent]) {
            let at = match schema::decode_chunk_of_slot(data, slot, codec) {
                Ok(at) => at,
                Err(_) if repeated => continue,
                Err(c) => return Err(format!("slot {slot} of a decodable row: {}", c.detail)),
            };
            let want = row.chunks.iter().position(|c| c.slot == slot).map(|p| {
                (
                    p as u32,
                    row.chunks[p].text.as_str(),
                    row.chunks[p].meta.as_str(),
                )
            });
            let header = (at.generation, at.version_kind, at.version, at.source, at.id);
            let chunk = at
                .chunk
                .as_ref()
                .map(|(p, c)| (*p, c.text.as_ref(), c.meta));
            let row_header = (
                row.generation,
                row.version_kind,
                row.version,
                row.source.as_str(),
                row.id.as_str(),
            );
            if header != row_header || at.count != row.chunks.len() || chunk != want {
                return Err(format!("slot {slot}: {at:?} against {row:?}"));
            }
        }
    } else {
        // A row the whole decode refuses may still have a readable chunk (its others are
        // skipped unchecked); the one-chunk decode must answer without panicking.
        let _ = schema::decode_chunk_of_slot(data, 0, codec);
    }
    if let Ok(segments) = text_row::segments(data) {
        accepted += 1;
        for segment in &segments {
            // Terms that decode (raw, or compressed with the codec) come back the same when
            // written again with it.
            let Ok(terms) = segment.terms(codec) else {
                continue;
            };
            let list = terms.list();
            let (mut arena, mut spans) = (Vec::new(), Vec::new());
            for &(term, count) in &list {
                let start = arena.len() as u32;
                arena.extend_from_slice(term.as_bytes());
                spans.push((start, arena.len() as u32, count));
            }
            let mut again = Vec::new();
            text_row::put_segment(&mut again, segment.slot, segment.len, &arena, &spans, codec);
            let back = text_row::segments(&again)
                .map_err(|c| format!("text row: re-decoding failed: {}", c.detail))?;
            let same = match back.as_slice() {
                [one] => one.terms(codec).is_ok_and(|t| t.list() == list),
                _ => false,
            };
            if !same {
                return Err(format!(
                    "text row: slot {} changed when written again",
                    segment.slot
                ));
            }
        }
    }
    if let Ok(row) = schema::decode::<ChangelogRow>("changelog row", data) {
        accepted += 1;
        round_trip("changelog row", &row)?;
    }
    if let Ok(row) = schema::decode::<SkipRow>("skip log row", data) {
        accepted += 1;
        let _ = row.reason();
        let _ = row.versions();
        round_trip("skip log row", &row)?;
    }
    if let Ok(row) = schema::decode::<ListingRow>("listing row", data) {
        accepted += 1;
        round_trip("listing row", &row)?;
    }
    if let Ok(row) = VectorsRow::parse(data) {
        accepted += 1;
        let _ = row.dimension();
        let _ = row.vector(row.len());
        for position in 0..row.len() {
            let (Some(_), Some(_)) = (row.slot(position), row.vector_at(position)) else {
                return Err(format!(
                    "vectors row: position {position} of {} unreadable",
                    row.len()
                ));
            };
            let _ = row.same_vector(position, &[0.0]);
        }
        let _ = schema::join_chunks(data, &row, codec);
        if row.reencode().as_deref() != Ok(data) {
            return Err("vectors row: re-encoding changed the bytes".to_string());
        }
        // A coded row's raw layout holds the same slots, floats (bit for bit) and spill.
        let raw = row.to_raw();
        let same = VectorsRow::parse(&raw).is_ok_and(|back| {
            back.layout() == schema::Layout::Raw
                && back.slots().eq(row.slots())
                && back.vectors().zip(row.vectors()).all(|(a, b)| {
                    let (mut x, mut y) = (Vec::new(), Vec::new());
                    a.le_bytes(&mut x) == b.le_bytes(&mut y)
                })
                && schema::join_chunk_bytes(&[], &back) == schema::join_chunk_bytes(&[], &row)
        });
        if !same {
            return Err("vectors row: its raw layout reads differently".to_string());
        }
    }
    // The bytes as a graph snapshot's payload (format 7) under a well-sealed header: its
    // first two bytes the number of points (little-endian: slots up to 16 bits wide), its
    // third `M`, its fourth and fifth the entry slot; parsed, and a parsed graph built over
    // one vector for every id.
    if let [n0, n1, m, e0, e1, payload @ ..] = data {
        let (n, m, dim) = (
            usize::from(u16::from_le_bytes([*n0, *n1])),
            u32::from(*m % 15) + 2,
            8,
        );
        let entry = u32::from(u16::from_le_bytes([*e0, *e1]));
        let blobs = crate::index::sealed_snapshot(payload, n, m, dim, entry);
        if let Ok(parsed) = crate::index::parse_snapshot(&blobs, crate::index::Metric::Cosine, dim)
        {
            accepted += 1;
            let vector = [1.0f32; 8];
            let _ = parsed.into_graph(&[], |_| Some(&vector[..]));
        }
    }
    Ok(accepted)
}

// ---------------------------------------------------------------------------------------------
// Target 2: opening a mutated file.

/// The options every harness store uses.
pub fn harness_options() -> Options {
    Options::default().dimension(4)
}

/// A small document for harness workloads: `chunks` chunks whose text depends on `variant`.
pub fn harness_doc(source: &str, id: &str, version: u64, chunks: usize, variant: u64) -> Document {
    let mut doc = Document::new(source, id, Version::number(version));
    for position in 0..chunks {
        let x = (variant % 7) as f32 + position as f32;
        doc = doc.with_chunk(Chunk::new(
            format!("{source}/{id} text {variant} part {position}"),
            vec![1.0 + x, 0.5, -0.25 * x, 2.0],
        ));
    }
    if variant % 3 == 1 {
        doc = doc.with_meta(serde_json::json!({ "variant": variant }));
    }
    doc
}

/// The base images `open_mutated_file` mutates: 0, a cleanly closed store with a few
/// documents, a tombstone and a listing; 1, the same store after a power loss in the middle
/// of a commit that kept a random part of its writes (a file that needs redb's repair).
pub fn base_image(which: u8) -> Result<Vec<u8>, String> {
    static IMAGES: OnceLock<Result<[Vec<u8>; 2], String>> = OnceLock::new();
    let images = IMAGES.get_or_init(|| {
        // Each open waits for the background index loader: its read snapshots change which
        // pages a commit reuses, so the images would depend on its timing.
        let settled = |store: &Store| {
            if store.wait_for_index(std::time::Duration::from_secs(30)) {
                Ok(())
            } else {
                Err("the index did not load".to_string())
            }
        };
        let disk = Disk::new();
        let store = Store::open_with_backend(disk.backend(), harness_options())
            .map_err(|e| format!("creating the base store: {e}"))?;
        settled(&store)?;
        // ... and so does the index applier's pass after each commit.
        let write = |op: Op| -> Result<(), String> {
            store
                .write_batch(vec![op])
                .map_err(|e| format!("base workload: {e}"))?
                .into_iter()
                .try_for_each(|r| r.map(|_| ()).map_err(|e| format!("base workload: {e}")))?;
            settled(&store)
        };
        write(Op::Upsert(harness_doc("wiki", "a", 1, 3, 1)))?;
        write(Op::Upsert(harness_doc("wiki", "b", 2, 2, 2)))?;
        write(Op::Upsert(harness_doc("docs", "c", 1, 1, 3)))?;
        write(Op::Delete {
            source: "wiki".into(),
            id: "b".into(),
            version: Version::number(3),
        })?;
        write(Op::Retain {
            source: "docs".into(),
            present: vec!["c".into()],
            version: Version::number(2),
        })?;
        drop(store);
        let clean = disk.image();
        // The same store, then a commit cut short by a power loss before its sync: the
        // durable image plus some of the commit's writes.
        let crash_disk = Disk::from_image(clean.clone());
        let store = Store::open_with_backend(crash_disk.backend(), harness_options())
            .map_err(|e| format!("reopening the base store: {e}"))?;
        settled(&store)?;
        crash_disk.start_trace();
        let before = crash_disk.io_ops();
        store
            .upsert(harness_doc("wiki", "a", 4, 2, 4))
            .map_err(|e| format!("base workload: {e}"))?;
        let commit = crash_disk.io_ops() - before;
        drop(store);
        let crash_disk = Disk::from_image(clean.clone());
        let store = Store::open_with_backend(crash_disk.backend(), harness_options())
            .map_err(|e| format!("reopening the base store: {e}"))?;
        settled(&store)?;
        // Everything up to the commit's final sync lands in the page cache; the sync fails.
        crash_disk.fail_after(commit.saturating_sub(1), FaultMode::Forever);
        let _ = store.upsert(harness_doc("wiki", "a", 4, 2, 4));
        let crashed = crash_disk.power_loss_image(7);
        drop(store);
        Ok([clean, crashed])
    });
    match images {
        Ok(images) => Ok(images[usize::from(which % 2)].clone()),
        Err(e) => Err(e.clone()),
    }
}

/// What opening a file image did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OpenReport {
    /// The open error's message, when opening failed.
    pub open_error: Option<String>,
    /// `verify` violations found (when it ran).
    pub violations: usize,
    /// `verify`'s own error, if it returned one.
    pub verify_error: Option<String>,
    /// Documents read back without error.
    pub documents_read: usize,
    /// Read errors met (typed).
    pub read_errors: usize,
    /// Whether a write after opening succeeded.
    pub write_ok: bool,
}

/// Opens `image` as a store on a simulated disk and uses it: verify, read every document,
/// stats, one write, verify again. Every failure must be a typed error; a panic is a bug.
pub fn open_image(image: Vec<u8>, options: Options) -> OpenReport {
    let mut report = OpenReport::default();
    let store = match Store::open_with_backend(Disk::from_image(image).backend(), options) {
        Ok(store) => store,
        Err(e) => {
            report.open_error = Some(e.to_string());
            return report;
        }
    };
    exercise(&store, &mut report);
    report
}

/// What `open_image` does with a store that opened.
pub fn exercise(store: &Store, report: &mut OpenReport) {
    match store.verify() {
        Ok(v) => report.violations = v.violations.len(),
        Err(e) => report.verify_error = Some(e.to_string()),
    }
    match store.snapshot() {
        Ok(snapshot) => match snapshot.documents(true) {
            Ok(documents) => {
                for doc in documents {
                    match doc {
                        Ok(_) => report.documents_read += 1,
                        Err(_) => report.read_errors += 1,
                    }
                }
            }
            Err(_) => report.read_errors += 1,
        },
        Err(_) => report.read_errors += 1,
    }
    if store.stats().is_err() {
        report.read_errors += 1;
    }
    for (source, id) in [("wiki", "a"), ("wiki", "b"), ("docs", "c")] {
        if store.get(source, id).is_err() {
            report.read_errors += 1;
        }
    }
    report.write_ok = store.upsert(harness_doc("wiki", "a", 100, 2, 5)).is_ok();
    if report.write_ok {
        let _ = store.verify();
    }
    let _ = store.ticket();
}

/// Fuzz target `open_mutated_file`. The first byte chooses the file: `0` takes the rest of the
/// input as the whole file; otherwise a base image (see [`base_image`]) mutated by 5-byte
/// records `offset (u32 LE, modulo the length) | xor`, where an xor of 0 truncates the file
/// at the offset. Opened with [`Options::check_integrity_on_open`], it must give a typed
/// error or a store that can be read, verified and written without a panic. (A plain open
/// trusts a cleanly closed file, and redb may panic on one damaged outside redb: see
/// `tests/storage/corrupt_flipped_bytes.rs`.)
pub fn open_mutated_file(data: &[u8]) -> Result<OpenReport, String> {
    let options = harness_options().check_integrity_on_open(true);
    let Some((&tag, rest)) = data.split_first() else {
        return Ok(open_image(Vec::new(), options));
    };
    let image = if tag == 0 {
        rest.to_vec()
    } else {
        mutate(base_image(tag - 1)?, rest)
    };
    Ok(open_image(image, options))
}

/// Applies `open_mutated_file`'s mutation records to `image`.
pub fn mutate(mut image: Vec<u8>, records: &[u8]) -> Vec<u8> {
    for record in records.chunks_exact(5).take(64) {
        if image.is_empty() {
            break;
        }
        let offset =
            u32::from_le_bytes([record[0], record[1], record[2], record[3]]) as usize % image.len();
        match record[4] {
            0 => image.truncate(offset),
            xor => image[offset] ^= xor,
        }
    }
    image
}

// ---------------------------------------------------------------------------------------------
// Target 3: operation sequences against the model, with crashes and faults.

/// What an `ops_vs_model` run did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OpsReport {
    /// Operations acknowledged.
    pub acknowledged: usize,
    /// Reopens (clean or after a power loss).
    pub reopens: usize,
    /// Injected faults that failed an operation.
    pub faults: usize,
}

struct Reader<'a> {
    data: &'a [u8],
}

impl Reader<'_> {
    fn byte(&mut self) -> Option<u8> {
        let (&b, rest) = self.data.split_first()?;
        self.data = rest;
        Some(b)
    }
    fn byte_or_zero(&mut self) -> u8 {
        self.byte().unwrap_or(0)
    }
}

const SOURCES: [&str; 2] = ["wiki", "docs"];
const IDS: [&str; 4] = ["a", "b", "c", "d"];

/// Decodes one plain operation (upsert, delete or retain) from `tag` and the bytes after it.
fn decode_op(tag: u8, reader: &mut Reader<'_>) -> Op {
    let b = reader.byte_or_zero();
    let source = SOURCES[usize::from(b & 1)];
    let id = IDS[usize::from((b >> 1) & 3)];
    let version = u64::from(reader.byte_or_zero() % 8);
    match tag % 5 {
        0..=2 => {
            let variant = reader.byte_or_zero();
            Op::Upsert(harness_doc(
                source,
                id,
                version,
                usize::from(variant % 4),
                u64::from(variant >> 2) % 5,
            ))
        }
        3 => Op::Delete {
            source: source.to_string(),
            id: id.to_string(),
            version: Version::number(version),
        },
        _ => Op::Retain {
            source: source.to_string(),
            present: IDS
                .iter()
                .enumerate()
                .filter(|(i, _)| (b >> (3 + i)) & 1 == 1)
                .map(|(_, id)| id.to_string())
                .collect(),
            version: Version::number(version),
        },
    }
}

struct Run {
    disk: Disk,
    store: Option<Store>,
    model: Model,
    /// Operations answered with a storage error since the last reopen, in order: each may
    /// or may not be on disk (a commit whose sync failed may still have reached the file).
    uncertain: Vec<Op>,
    poisoned: bool,
    report: OpsReport,
}

impl Run {
    fn store(&self) -> Result<&Store, String> {
        self.store
            .as_ref()
            .ok_or_else(|| "no open store".to_string())
    }

    /// Checks one answer against the model.
    fn answer(&mut self, op: Op, result: Result<OpOutcome, WriteError>) -> Result<(), String> {
        match result {
            Ok(outcome) => {
                if self.poisoned {
                    return Err(format!(
                        "{op:?} was acknowledged after a storage failure poisoned the store"
                    ));
                }
                let expected = self.model.apply(&op)?;
                let got = ModelOutcome::of(&outcome);
                if expected != got {
                    return Err(format!(
                        "{op:?}: the store answered {got:?}, the model {expected:?}"
                    ));
                }
                self.report.acknowledged += 1;
                Ok(())
            }
            Err(WriteError::Poisoned { .. }) if self.poisoned => Ok(()),
            Err(e @ (WriteError::Storage(_) | WriteError::BatchFailed { .. })) => {
                if self.disk.faults_hit() == 0 {
                    return Err(format!("{op:?} failed without an injected fault: {e}"));
                }
                if !self.poisoned {
                    self.report.faults += 1;
                }
                self.poisoned = true;
                self.uncertain.push(op);
                Ok(())
            }
            Err(e) => Err(format!("{op:?} failed with an unexpected error: {e}")),
        }
    }

    /// Closes the store (or, for a power loss, abandons it) and reopens what the disk kept;
    /// the state must be the model's, possibly plus a prefix of the uncertain operations.
    fn reopen(&mut self, power_loss: Option<u64>) -> Result<(), String> {
        let image = match (self.store.take(), power_loss) {
            (Some(store), Some(seed)) => {
                let image = self.disk.power_loss_image(seed);
                // Nothing more reaches this disk: the process is gone.
                drop(store);
                image
            }
            (store, _) => {
                drop(store);
                self.disk.image()
            }
        };
        self.disk = Disk::from_image(image);
        let store = Store::open_with_backend(self.disk.backend(), harness_options())
            .map_err(|e| format!("reopening after a crash failed: {e}"))?;
        verify_clean(&store)?;
        let rows = store_rows(&store)?;
        let mut candidate = self.model.clone();
        let mut matched = rows == candidate.rows;
        for op in std::mem::take(&mut self.uncertain) {
            if matched {
                break;
            }
            candidate.apply(&op)?;
            if rows == candidate.rows {
                matched = true;
                self.model = candidate.clone();
            }
        }
        if !matched {
            return Err(format!(
                "after reopening, the store holds {rows:?}; the model holds {:?}",
                self.model.rows
            ));
        }
        // The listings are not readable through the API; the model keeps what it has.
        self.poisoned = false;
        self.report.reopens += 1;
        self.store = Some(store);
        Ok(())
    }
}

impl Run {
    /// Applies `ops` as one `write_batch`, or through a concurrent `Writer`, and checks every
    /// answer against the model.
    fn batch(&mut self, ops: Vec<Op>, through_writer: bool) -> Result<(), String> {
        let store = self.store()?.clone();
        if !through_writer {
            match store.write_batch(ops.clone()) {
                Ok(results) => {
                    for (op, result) in ops.into_iter().zip(results) {
                        self.answer(op, result)?;
                    }
                }
                Err(e) => {
                    for op in ops {
                        let e = match &e {
                            WriteError::Poisoned { cause } => WriteError::Poisoned {
                                cause: cause.clone(),
                            },
                            other => WriteError::BatchFailed {
                                cause: other.to_string(),
                            },
                        };
                        self.answer(op, Err(e))?;
                    }
                }
            }
        } else {
            let writer = store.writer_with(WriterOptions::for_store(&store));
            let pending: Vec<_> = ops
                .into_iter()
                .map(|op| (op.clone(), writer.submit(op)))
                .collect();
            for (op, submitted) in pending {
                let result = submitted.and_then(|p| p.wait());
                let result = match result {
                    // After a poisoning, the writer says so as a failed batch.
                    Err(WriteError::BatchFailed { cause })
                        if self.poisoned && cause.contains("refuses writes") =>
                    {
                        Err(WriteError::Poisoned { cause })
                    }
                    other => other,
                };
                self.answer(op, result)?;
            }
            writer.shutdown();
        }
        Ok(())
    }
}

/// Fuzz target `ops_vs_model`: the input is a program of operations on a small key space
/// (2 sources, 4 ids, versions 0..8, a few contents), single or batched through
/// `write_batch` or the concurrent `Writer`, with clean reopens, power losses and injected
/// I/O faults between them. Every answer must match the reference [`Model`]; after every
/// reopen `verify()` is clean and the rows are the model's (plus, after a fault, possibly the
/// failed operations, never a part of one).
pub fn ops_vs_model(data: &[u8]) -> Result<OpsReport, String> {
    let disk = Disk::new();
    let store = Store::open_with_backend(disk.backend(), harness_options())
        .map_err(|e| format!("creating the store: {e}"))?;
    let mut run = Run {
        disk,
        store: Some(store),
        model: Model::new(),
        uncertain: Vec::new(),
        poisoned: false,
        report: OpsReport::default(),
    };
    let mut reader = Reader { data };
    let mut steps = 0;
    while let Some(tag) = reader.byte() {
        steps += 1;
        if steps > 48 {
            break;
        }
        match tag % 11 {
            0..=4 => {
                let op = decode_op(tag % 11, &mut reader);
                let store = run.store()?.clone();
                let result = match &op {
                    Op::Upsert(doc) => store.upsert(doc.clone()).map(OpOutcome::Document),
                    Op::Delete {
                        source,
                        id,
                        version,
                    } => store.delete(source, id, *version).map(OpOutcome::Document),
                    Op::Retain {
                        source,
                        present,
                        version,
                    } => store
                        .retain(source, present.clone(), *version)
                        .map(OpOutcome::Retain),
                };
                run.answer(op, result)?;
            }
            5 | 6 => {
                let count = 1 + usize::from(reader.byte_or_zero() % 4);
                let ops: Vec<Op> = (0..count)
                    .map(|_| {
                        let tag = reader.byte_or_zero();
                        decode_op(tag, &mut reader)
                    })
                    .collect();
                run.batch(ops, tag % 11 == 6)?;
            }
            7 => run.reopen(None)?,
            8 => {
                let seed = u64::from(reader.byte_or_zero());
                run.reopen(Some(seed))?;
            }
            _ => {
                let b = reader.byte_or_zero();
                let mode = if b & 0x80 != 0 {
                    FaultMode::Forever
                } else {
                    FaultMode::Once
                };
                run.disk.fail_after(u64::from(b % 24), mode);
            }
        }
        if !run.poisoned {
            verify_clean(run.store()?)?;
        }
    }
    run.reopen(None)?;
    Ok(run.report)
}

// ---------------------------------------------------------------------------------------------
// The seed corpus.

/// The committed seed corpus, as `(target, file name, bytes)`: real rows from the encoders,
/// mutation records of the base images, and operation programs that reach every opcode. The
/// ignored test `write_seed_corpus` in `tests/storage/fuzz_corpus_replay.rs` writes it to
/// `fuzz/corpus/<target>/`.
pub fn seed_corpus() -> Vec<(&'static str, String, Vec<u8>)> {
    let mut seeds = row_seeds();
    seeds.extend(file_seeds());
    seeds.extend(program_seeds());
    seeds
}

/// `row_decoding` seeds: each row type, whole and cut short, and some garbage.
fn row_seeds() -> Vec<(&'static str, String, Vec<u8>)> {
    let mut seeds: Vec<(&'static str, String, Vec<u8>)> = Vec::new();
    let mut add = |target: &'static str, name: &str, bytes: Vec<u8>| {
        seeds.push((target, name.to_string(), bytes));
    };
    // row_decoding: each row type, whole and cut short, and some garbage.
    let doc = DocRow {
        internal_id: 7,
        version_kind: 0,
        version: 1_700_000_000,
        generation: 42,
        chunk_count: 3,
        content_key: [0xab; 16],
        deleted: false,
        meta: "{\"title\":\"x\"}".to_string(),
        next_slot: 5,
    };
    let chunk = ChunksRow {
        generation: 42,
        version_kind: 0,
        version: 1_700_000_000,
        source: "wiki".to_string(),
        id: "a".to_string(),
        chunks: vec![
            ChunkEntry {
                slot: 0,
                text: "Ratchets turn one way.".to_string(),
                meta: "null".to_string(),
            },
            ChunkEntry {
                slot: 4,
                text: "Never backwards.".to_string(),
                meta: "{\"page\":2}".to_string(),
            },
        ],
    };
    let changelog = ChangelogRow {
        added: vec![1, 2, 300, 70_000],
        removed: vec![5],
    };
    let skip = SkipRow {
        source: "wiki".into(),
        id: "a".into(),
        reason: 1,
        stored_kind: 0,
        stored_value: 3,
        incoming_kind: 0,
        incoming_value: 3,
    };
    let listing = ListingRow {
        version_kind: 2,
        present_count: 4,
        members_hash: [0x11; 32],
    };
    let rows = [
        ("doc", schema::encode(&doc)),
        ("chunk", schema::encode_chunks_row(&chunk, None)),
        (
            "chunk-compressed",
            schema::encode_chunks_row(&chunk, Some(fuzz_codec())),
        ),
        ("changelog", schema::encode(&changelog)),
        ("skip", schema::encode(&skip)),
        ("listing", schema::encode(&listing)),
        (
            "vector",
            VectorsRow::encode(
                &[
                    (0, VectorData::Floats(&[0.5, -1.0, f32::MIN_POSITIVE])),
                    (7, VectorData::Floats(&[1.0, 0.0, -0.0])),
                ],
                &schema::encode_chunks_row(&chunk, None)[..9],
            )
            .unwrap_or_default(),
        ),
        (
            "coded-vector",
            VectorsRow::encode_coded(
                &[
                    (
                        0,
                        VectorData::Floats(&[0.5, -1.0, f32::MIN_POSITIVE, 3.0e-3, 1.0e9]),
                    ),
                    (7, VectorData::Floats(&[1.0, 0.0, -0.0, 0.75, -0.5])),
                ],
                &schema::encode_chunks_row(&chunk, None)[..9],
            )
            .unwrap_or_default(),
        ),
    ];
    for (name, bytes) in rows {
        add("row_decoding", name, bytes.clone());
        add(
            "row_decoding",
            &format!("{name}-cut"),
            bytes[..bytes.len() / 2].to_vec(),
        );
    }
    // Text rows (schema 10): two segments, their terms raw and compressed.
    for (name, codec) in [("text", None), ("text-compressed", Some(fuzz_codec()))] {
        let mut bytes = Vec::new();
        // Terms cut from the codec's own sentences, so that they compress with it.
        let arena = b"Ratchets turn one way; revision 5 of the notes replaces what the pipeline \
                      delivered before, never backwards.";
        text_row::put_segment(
            &mut bytes,
            0,
            4,
            arena,
            &[(0, 8, 1), (8, 13, 2), (13, 21, 1), (21, 29, 1)],
            codec,
        );
        text_row::put_segment(
            &mut bytes,
            4,
            4,
            &arena[29..],
            &[(0, 9, 1), (9, 15, 1), (15, 20, 1), (20, 29, 1)],
            codec,
        );
        add("row_decoding", name, bytes.clone());
        add(
            "row_decoding",
            &format!("{name}-cut"),
            bytes[..bytes.len() / 2].to_vec(),
        );
    }
    // A graph snapshot's payload (format 7) of 300 points of 8 dimensions (slots of 9
    // bits), `M` 16 (the target reads `M` as its third byte % 15 + 2) and its entry, whole
    // and cut short.
    if let Some((entry, payload)) = snapshot_payload() {
        let mut bytes = 300u16.to_le_bytes().to_vec();
        bytes.push(14);
        bytes.extend_from_slice(&entry.to_le_bytes());
        bytes.extend_from_slice(&payload);
        add("row_decoding", "snapshot", bytes.clone());
        add(
            "row_decoding",
            "snapshot-cut",
            bytes[..bytes.len() / 2].to_vec(),
        );
    }
    add("row_decoding", "empty", Vec::new());
    add("row_decoding", "ff", vec![0xff; 40]);
    add(
        "row_decoding",
        "huge-length",
        vec![0xfc, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f],
    );

    seeds
}

/// The entry slot and the payload of a graph snapshot (format 7) of 300 points of 8
/// dimensions (ids: 100 documents of 3 slots, as a store numbers them; `M` 16), built on one
/// thread so that it is the same on every machine.
fn snapshot_payload() -> Option<(u16, Vec<u8>)> {
    let index = crate::index::VectorIndex::new(8, crate::index::Metric::Cosine).ok()?;
    let mut rng = super::SplitMix64::new(60);
    let vectors: Vec<Vec<f32>> = (0..300).map(|_| rng.minilm_like(8)).collect();
    let items: Vec<(u64, &[f32])> = (0u64..300)
        .map(|i| ((i / 3 + 1) << 24) | (i % 3))
        .zip(vectors.iter().map(Vec::as_slice))
        .collect();
    index.insert_batch(&items).ok()?;
    // On one thread: the links then depend only on the vectors and the seeded levels.
    rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .ok()?
        .install(|| index.build_graph())
        .ok()?;
    let blobs = index.snapshot_blobs().ok()??;
    let entry = u16::try_from(u32::from_le_bytes(blobs[0].get(40..44)?.try_into().ok()?)).ok()?;
    Some((entry, blobs[1..].concat()))
}

/// `open_mutated_file` seeds: raw files, and mutation records of both base images.
fn file_seeds() -> Vec<(&'static str, String, Vec<u8>)> {
    let mut seeds: Vec<(&'static str, String, Vec<u8>)> = Vec::new();
    let mut add = |target: &'static str, name: &str, bytes: Vec<u8>| {
        seeds.push((target, name.to_string(), bytes));
    };
    // open_mutated_file: raw files, and mutation records of both base images.
    add("open_mutated_file", "raw-empty", vec![0]);
    add(
        "open_mutated_file",
        "raw-text",
        b"\0hello, not a database\n".to_vec(),
    );
    add(
        "open_mutated_file",
        "raw-magic",
        b"\0redb\x1a\x0a\xa9\x0d\x0a".to_vec(),
    );
    let record = |offset: u32, xor: u8| {
        let mut r = offset.to_le_bytes().to_vec();
        r.push(xor);
        r
    };
    for base in [1u8, 2] {
        add(
            "open_mutated_file",
            &format!("base{base}-intact"),
            vec![base],
        );
        for (name, offset, xor) in [
            ("header", 9u32, 0x01u8),
            ("page1", 4096 + 17, 0x80),
            ("page2", 8192 + 300, 0x04),
            ("late", 100_000, 0x20),
            ("truncate-half", 71_680, 0),
            ("truncate-header", 300, 0),
        ] {
            let mut data = vec![base];
            data.extend(record(offset, xor));
            add("open_mutated_file", &format!("base{base}-{name}"), data);
        }
    }

    seeds
}

/// `ops_vs_model` seeds: programs that reach every opcode.
fn program_seeds() -> Vec<(&'static str, String, Vec<u8>)> {
    let mut seeds: Vec<(&'static str, String, Vec<u8>)> = Vec::new();
    let mut add = |target: &'static str, name: &str, bytes: Vec<u8>| {
        seeds.push((target, name.to_string(), bytes));
    };
    // ops_vs_model: programs (see `ops_vs_model` for the opcodes).
    let programs: [(&str, &[u8]); 12] = [
        ("upserts", &[0, 0, 1, 5, 1, 2, 1, 9, 2, 4, 2, 3]),
        ("stale", &[0, 0, 5, 1, 0, 0, 3, 2, 0, 0, 5, 1]),
        ("conflict", &[0, 0, 4, 1, 1, 0, 4, 9]),
        ("delete", &[0, 2, 3, 5, 3, 2, 4, 0, 2, 2, 1]),
        (
            "retain",
            &[0, 0, 1, 1, 0, 2, 1, 1, 4, 0b0001_0000, 5, 0, 2, 3, 2],
        ),
        ("batch", &[5, 3, 0, 0, 1, 2, 3, 4, 2, 1, 0, 4, 1, 7]),
        ("writer", &[6, 3, 0, 0, 1, 2, 0, 2, 2, 5, 3, 0, 3]),
        ("reopen", &[0, 0, 1, 1, 7, 0, 0, 2, 2, 7, 3, 0, 3]),
        ("power-loss", &[0, 0, 1, 1, 8, 42, 0, 2, 2, 6, 8, 7]),
        (
            "fault-once",
            &[0, 0, 1, 1, 9, 3, 0, 2, 2, 6, 0, 4, 2, 9, 7, 0, 2, 3, 1],
        ),
        (
            "fault-forever",
            &[
                0, 0, 1, 1, 9, 0x85, 0, 2, 2, 6, 5, 2, 0, 4, 2, 1, 6, 3, 3, 8, 5,
            ],
        ),
        (
            "fault-writer",
            &[
                9, 2, 6, 3, 0, 0, 1, 2, 0, 2, 2, 5, 3, 0, 3, 8, 1, 0, 0, 1, 1,
            ],
        ),
    ];
    for (name, program) in programs {
        add("ops_vs_model", name, program.to_vec());
    }
    seeds
}
