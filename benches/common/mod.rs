//! Workload generators shared by the benches: RAG-shaped documents (chunks of about 1 KB of
//! text and a 384-d f32 vector each), deterministic so that every run measures the same work.

#![allow(dead_code)]

use ratchetdb::{Chunk, Document, Op, Store, Version};
use rotation::Rotation;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

/// Writes `vectors` as documents `bench/d{d}` of `chunks_per_doc` chunks (texts `d{d}#{p}`),
/// 500 documents per transaction; `meta(chunk)` is each chunk's metadata, by its number.
pub fn ingest_docs(
    store: &Store,
    vectors: &[Vec<f32>],
    chunks_per_doc: usize,
    meta: impl Fn(u64) -> Option<serde_json::Value>,
) {
    let docs: Vec<&[Vec<f32>]> = vectors.chunks(chunks_per_doc).collect();
    for (batch_index, batch) in docs.chunks(500).enumerate() {
        let ops = batch
            .iter()
            .enumerate()
            .map(|(j, chunks)| {
                let d = batch_index * 500 + j;
                let mut doc = Document::new("bench", format!("d{d}"), Version::number(1));
                for (p, v) in chunks.iter().enumerate() {
                    let mut chunk = Chunk::new(format!("d{d}#{p}"), v.clone());
                    if let Some(meta) = meta((d * chunks_per_doc + p) as u64) {
                        chunk = chunk.with_meta(meta);
                    }
                    doc = doc.with_chunk(chunk);
                }
                Op::Upsert(doc)
            })
            .collect();
        for result in store.write_batch(ops).expect("batch") {
            result.expect("write");
        }
    }
}

/// The search tests' vector generator (embedding-like: low-rank clusters plus noise), shared
/// so that the search bench measures the data the search tests check.
#[path = "../../tests/search_support/mod.rs"]
pub mod search_support;

pub mod floor;
pub mod rotation;

pub const DIMENSION: usize = 384;
pub const CHUNKS_PER_DOC: usize = 8;

const WORDS: &[&str] = &[
    "index",
    "ratchet",
    "version",
    "chunk",
    "vector",
    "retrieval",
    "document",
    "source",
    "pipeline",
    "commit",
    "durable",
    "replay",
    "backfill",
    "tombstone",
    "generation",
    "guard",
    "embedding",
    "query",
    "snapshot",
    "writer",
    "reader",
    "stale",
    "fresh",
    "order",
];

pub fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// About 1 KB of prose-like words: a 20,000-word synthetic vocabulary drawn with a skew
/// (a few words common, most rare), so a chunk has about as many distinct terms as real
/// text (the full-text index writes one posting per distinct term).
pub fn prose(seed: u64) -> String {
    let mut state = seed;
    let mut out = String::with_capacity(1100);
    while out.len() < 1000 {
        let u = (splitmix(&mut state) % 1_000_000) as f64 / 1_000_000.0;
        out.push_str(&format!("w{}", (u * u * u * 20_000.0) as u64));
        out.push(' ');
    }
    out
}

/// [`document`] with [`prose`] for text.
pub fn prose_document(doc: u64, version: u64) -> Document {
    let mut d = Document::new("bench", format!("doc-{doc}"), Version::number(version));
    for c in 0..CHUNKS_PER_DOC as u64 {
        let seed = doc.wrapping_mul(1_000_003) ^ version.wrapping_mul(7919) ^ c;
        d = d.with_chunk(Chunk::new(prose(seed), vector(seed)));
    }
    d
}

/// About 1 KB of words.
pub fn text(seed: u64) -> String {
    let mut state = seed;
    let mut out = String::with_capacity(1100);
    while out.len() < 1000 {
        out.push_str(WORDS[(splitmix(&mut state) % WORDS.len() as u64) as usize]);
        out.push(' ');
    }
    out
}

pub fn vector(seed: u64) -> Vec<f32> {
    let mut state = seed ^ 0xABCD;
    (0..DIMENSION)
        .map(|_| (splitmix(&mut state) % 2000) as f32 / 1000.0 - 1.0)
        .collect()
}

/// Revision `version` of document `doc`: 8 chunks whose text and vectors depend on both.
pub fn document(doc: u64, version: u64) -> Document {
    let mut d = Document::new("bench", format!("doc-{doc}"), Version::number(version));
    for c in 0..CHUNKS_PER_DOC as u64 {
        let seed = doc.wrapping_mul(1_000_003) ^ version.wrapping_mul(7919) ^ c;
        d = d.with_chunk(Chunk::new(text(seed), vector(seed)));
    }
    d
}

/// `VmRSS` and `VmHWM` of this process, in bytes.
pub fn memory() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<u64>().ok())
            .map_or(0, |kb| kb * 1024)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// Resets the process's peak resident set (`VmHWM`) to its resident set now (proc(5),
/// `clear_refs`), so that [`memory`]'s peak is of what follows. Linux only; elsewhere (or
/// refused) the peak keeps counting from the process's start.
pub fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

static NEXT_DOC: AtomicU64 = AtomicU64::new(1_000_000);

/// `n` documents never written before (in this process).
pub fn fresh(n: u64) -> Vec<Document> {
    let start = NEXT_DOC.fetch_add(n, Ordering::Relaxed);
    (start..start + n).map(|d| document(d, 1)).collect()
}

/// `iters` durable `write_batch`es of `batch` fresh documents into `stores`' files; only
/// the `write_batch` calls are timed.
pub fn timed_write_batches(stores: &mut Rotation<Store>, iters: u64, batch: u64) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let ops: Vec<Op> = fresh(batch).into_iter().map(Op::Upsert).collect();
        let store = stores.room_for(batch);
        let start = Instant::now();
        store.write_batch(ops).expect("batch");
        total += start.elapsed();
    }
    total
}

/// Criterion's saved estimates for one bench, looked at before it runs, so that
/// [`Estimates::median`] can tell whether this run measured it.
pub struct Estimates {
    path: PathBuf,
    before: Option<SystemTime>,
}

impl Estimates {
    /// Call just before `bench_function(name, ..)` in group `group`.
    pub fn before_run(group: &str, name: &str) -> Estimates {
        let base = std::env::var_os("CRITERION_HOME")
            .map(PathBuf::from)
            .or_else(|| {
                std::env::var_os("CARGO_TARGET_DIR").map(|d| PathBuf::from(d).join("criterion"))
            })
            .unwrap_or_else(|| PathBuf::from("target/criterion"));
        let path = base.join(group).join(name).join("new/estimates.json");
        let before = modified(&path);
        Estimates { path, before }
    }

    /// Criterion's median in seconds per iteration, if this run wrote it: `None` when the
    /// bench was filtered out (its `estimates.json` then still holds an older run's median,
    /// which a summary must not print as this run's), or ran in a mode that writes no
    /// estimates (`--test`, `--profile-time`).
    pub fn median(&self) -> Option<f64> {
        let after = modified(&self.path)?;
        if Some(after) == self.before {
            return None;
        }
        let text = std::fs::read_to_string(&self.path).ok()?;
        let json: serde_json::Value = serde_json::from_str(&text).ok()?;
        Some(json["median"]["point_estimate"].as_f64()? / 1e9)
    }
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// A median for a summary line: `NaN` (printed as such) when criterion did not measure it
/// in this run (see [`Estimates::median`]), so that no older run's number is printed as
/// this one's.
pub fn or_nan(median: Option<f64>) -> f64 {
    median.unwrap_or(f64::NAN)
}

/// Printed under a summary that has a `NaN` in it: what that means.
pub const NAN_NOTE: &str = "(NaN: not measured in this run: filtered out, or criterion's \
                            --test or --profile-time mode)";

/// Runs this bench binary again with `env` set to `value` (its child mode), and returns the
/// JSON of the child's last line of output.
pub fn run_child(env: &str, value: impl AsRef<OsStr>) -> serde_json::Value {
    let output = std::process::Command::new(std::env::current_exe().expect("exe"))
        .env(env, value)
        .output()
        .expect("child");
    assert!(
        output.status.success(),
        "child: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout.lines().last().expect("child output");
    serde_json::from_str(line).expect("child json")
}

/// Benchmarks one search configuration, `k` nearest over `queries` in turn, as criterion
/// function `name` of `group`; returns its median (`NaN` when criterion did not measure it in
/// this run: see [`Estimates::median`]).
pub fn bench_search(
    c: &mut criterion::Criterion,
    group: &str,
    name: &str,
    store: &Store,
    queries: &[Vec<f32>],
    k: usize,
    options: &ratchetdb::SearchOptions,
) -> f64 {
    let mut g = c.benchmark_group(group);
    let mut i = 0;
    let estimates = Estimates::before_run(group, name);
    g.bench_function(name, |b| {
        b.iter(|| {
            i += 1;
            store
                .search(&queries[i % queries.len()], k, options)
                .expect("search")
        })
    });
    g.finish();
    or_nan(estimates.median())
}

/// The text benches' 32 queries of 2 or 3 words, word ranks drawn like [`prose`]'s (skewed,
/// The text benches' corpus size: `RATCHET_TEXT_BENCH_CHUNKS` chunks (default 100,000).
pub fn text_bench_chunks() -> u64 {
    std::env::var("RATCHET_TEXT_BENCH_CHUNKS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000)
}

/// `n` chunks of `prose`, `CHUNKS_PER_DOC` to a document (version 1, source `bench`), in
/// batches of 64 documents: the corpus both text benches write.
pub fn text_corpus(n: u64) -> Vec<Vec<Document>> {
    let docs = n.div_ceil(CHUNKS_PER_DOC as u64);
    let mut written = 0u64;
    (0..docs.div_ceil(64))
        .map(|batch| {
            (batch * 64..((batch + 1) * 64).min(docs))
                .map(|doc| {
                    let mut d = Document::new("bench", format!("doc-{doc}"), Version::number(1));
                    for c in 0..CHUNKS_PER_DOC as u64 {
                        if written == n {
                            break;
                        }
                        let text = prose((doc * 1_000_003) ^ c);
                        d = d.with_chunk(Chunk::new(text, vec![1.0, c as f32]));
                        written += 1;
                    }
                    d
                })
                .collect()
        })
        .collect()
}
/// so some are common).
pub fn text_queries() -> Vec<Vec<String>> {
    let mut state = 42u64;
    (0..32)
        .map(|q| {
            (0..(2 + q % 2))
                .map(|_| {
                    let u = (splitmix(&mut state) % 1_000_000) as f64 / 1_000_000.0;
                    format!("w{}", (u * u * 20_000.0) as u64)
                })
                .collect()
        })
        .collect()
}
