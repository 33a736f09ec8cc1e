//! The in-memory text index's heap per (term, chunk), and text-query latency, on a shared
//! vocabulary and on a distinct one (issue 44 item 6).
//!
//! - **prose**: `common::prose` chunks (about 1 KB, a skewed 20,000-word vocabulary);
//! - **logs**: about 1 KB of log lines a chunk (a level and a few shared words, then a
//!   request id and a user id no other line has: text mode's identifiers and hashes).
//!
//! Each store holds `RATCHET_TEXT_BENCH_CHUNKS` chunks (default 40,000), 8 to a document.
//! The heap is measured twice: the live bytes a counting global allocator sees the first
//! text search (which builds the index) leave behind, and the index's own accounting
//! (`testkit::text_index_footprint`); both are divided by the (term, chunk) pairs indexed and
//! printed. Criterion then times 32 queries a store (k = 10, the hits' text resolved): prose
//! queries of two or three words of `common::text_queries`; log queries of a request id, a
//! request id and a level, two user ids, or shared words. Before criterion, the median thread
//! CPU time of 40 rounds of those queries is printed too (on Linux): on a loaded machine it
//! moves less than wall time.

mod common;

use common::{prose, splitmix, CHUNKS_PER_DOC};
use criterion::{criterion_group, criterion_main, Criterion};
use ratchetdb::testkit::text_index_footprint;
use ratchetdb::{Chunk, Document, Durability, Op, Options, SearchOptions, Store, Version};
use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicIsize, Ordering};

const K: usize = 10;

/// The system allocator, counting the bytes live.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call is forwarded to `System` unchanged; the counter is only arithmetic.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: the caller's contract is `System::alloc`'s.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: the caller's contract is `System::dealloc`'s.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: the caller's contract is `System::alloc_zeroed`'s.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        // SAFETY: the caller's contract is `System::realloc`'s.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn chunk_count() -> u64 {
    std::env::var("RATCHET_TEXT_BENCH_CHUNKS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40_000)
}

/// About 1 KB of log lines: a level and shared words, a request id and a user id that no
/// other line has, a duration from 500.
fn log_lines(seed: u64) -> String {
    let mut state = seed;
    let mut out = String::with_capacity(1100);
    while out.len() < 1000 {
        let level = ["info", "warn", "error"][(splitmix(&mut state) % 3) as usize];
        let request = splitmix(&mut state);
        let user = splitmix(&mut state) as u32;
        let took = splitmix(&mut state) % 500;
        out.push_str(&format!(
            "{level} req {request:016x} user u{user:08x} took {took}ms\n"
        ));
    }
    out
}

fn seed(doc: u64, c: u64) -> u64 {
    (doc * 1_000_003) ^ c
}

/// A store of `n` chunks of `text`, written 64 documents a batch.
fn store_of(dir: &std::path::Path, name: &str, n: u64, text: fn(u64) -> String) -> Store {
    let store = Store::open(
        dir.join(format!("{name}.redb")),
        Options::default().durability(Durability::None),
    )
    .expect("open");
    let docs = n.div_ceil(CHUNKS_PER_DOC as u64);
    let mut written = 0u64;
    for batch in 0..docs.div_ceil(64) {
        let mut ops = Vec::new();
        for doc in batch * 64..((batch + 1) * 64).min(docs) {
            let mut d = Document::new("bench", format!("doc-{doc}"), Version::number(1));
            for c in 0..CHUNKS_PER_DOC as u64 {
                if written == n {
                    break;
                }
                d = d.with_chunk(Chunk::new(text(seed(doc, c)), vec![1.0, c as f32]));
                written += 1;
            }
            ops.push(Op::Upsert(d));
        }
        for outcome in store.write_batch(ops).expect("batch") {
            outcome.expect("op");
        }
    }
    store
}

/// Builds the index by a first search and prints its heap per (term, chunk).
fn measure(name: &str, store: &Store, first_query: &str) {
    let before = LIVE.load(Ordering::Relaxed);
    let started = std::time::Instant::now();
    black_box(
        store
            .search_text(first_query, K, &SearchOptions::default())
            .expect("search"),
    );
    let took = started.elapsed();
    let live = LIVE.load(Ordering::Relaxed) - before;
    let footprint = text_index_footprint(store).expect("built");
    println!(
        "text_index_memory {name}: {} chunks, {} (term, chunk) pairs; first search {:.2} s; \
         heap left by it {:.1} MiB = {:.1} B/pair; index's accounting {:.1} MiB = {:.1} B/pair",
        footprint.chunks,
        footprint.pairs,
        took.as_secs_f64(),
        live as f64 / 1048576.0,
        live as f64 / footprint.pairs as f64,
        footprint.heap_bytes as f64 / 1048576.0,
        footprint.heap_bytes as f64 / footprint.pairs as f64,
    );
}

/// The calling thread's CPU time (steadier than wall time on a shared machine).
#[cfg(target_os = "linux")]
fn thread_cpu() -> std::time::Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec for the call to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    std::time::Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Prints the median thread CPU time of 40 rounds of `queries`.
#[cfg(target_os = "linux")]
fn cpu_per_round(name: &str, store: &Store, queries: &[String]) {
    let options = SearchOptions::default();
    let mut rounds: Vec<f64> = (0..40)
        .map(|_| {
            let start = thread_cpu();
            for query in queries {
                black_box(store.search_text(query, K, &options).expect("search"));
            }
            (thread_cpu() - start).as_secs_f64() * 1e3
        })
        .collect();
    rounds.sort_by(f64::total_cmp);
    println!(
        "text_index_memory {name}: thread CPU per {} queries, median of 40 rounds: {:.2} ms",
        queries.len(),
        rounds[20]
    );
}

#[cfg(not(target_os = "linux"))]
fn cpu_per_round(_: &str, _: &Store, _: &[String]) {}

/// 32 log queries: request ids alone, a request id and a level, two user ids, shared words.
fn log_queries(docs: u64) -> Vec<String> {
    let mut state = 7u64;
    (0..32)
        .map(|q| {
            let doc = splitmix(&mut state) % docs;
            let c = splitmix(&mut state) % CHUNKS_PER_DOC as u64;
            let text = log_lines(seed(doc, c));
            let words: Vec<&str> = text.split_whitespace().collect();
            let line = (splitmix(&mut state) % (words.len() as u64 / 7)) as usize * 7;
            match q % 4 {
                0 => words[line + 2].to_string(),
                1 => format!("{} {}", words[line + 2], words[line]),
                2 => format!("{} {}", words[line + 4], words[(line + 11) % words.len()]),
                _ => format!("{} {}", words[line], words[line + 6]),
            }
        })
        .collect()
}

fn text_index_memory(c: &mut Criterion) {
    let n = chunk_count();
    let dir = tempfile::tempdir().expect("tempdir");
    let prose_store = store_of(dir.path(), "prose", n, prose);
    let logs_store = store_of(dir.path(), "logs", n, log_lines);
    let prose_queries: Vec<String> = common::text_queries().iter().map(|q| q.join(" ")).collect();
    let logs_queries = log_queries(n / CHUNKS_PER_DOC as u64);
    measure("prose", &prose_store, &prose_queries[0]);
    measure("logs", &logs_store, &logs_queries[0]);
    let options = SearchOptions::default();
    for query in &logs_queries {
        let hits = logs_store.search_text(query, K, &options).expect("search");
        assert!(!hits.is_empty(), "{query}: no hit");
    }
    cpu_per_round("prose", &prose_store, &prose_queries);
    cpu_per_round("logs", &logs_store, &logs_queries);
    let mut group = c.benchmark_group(format!("text_index_{n}"));
    group.sample_size(20);
    for (name, store, queries) in [
        ("prose_search_text", &prose_store, &prose_queries),
        ("logs_search_text", &logs_store, &logs_queries),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| {
                for query in queries {
                    black_box(store.search_text(query, K, &options).expect("search"));
                }
            })
        });
    }
    group.finish();
}

criterion_group!(benches, text_index_memory);
criterion_main!(benches);
