//! The Node side-by-side's store shape from Rust (`benches/peers/node/side_by_side.mjs`,
//! ratchetdb's child): 10,000 one-chunk documents of the MiniLM set's base vectors with their
//! texts (`minilm.texts.txt`) and a `group` metadata field, written by `write_batch` in
//! batches of 1,000 into a store of default options, the index awaited, 1,000 queries with
//! and without a filter, closed. Prints the file's size after the close, redb's allocated
//! pages, each table's pages (redb's statistics), how many vectors rows are coded, the
//! file's size once compacted by hand, and the time from a reopen to the graph loaded from
//! its snapshot (each of five reopens, and their median).
//!
//! By hand: `cargo run --release --features testkit --example store_shape -- <sets dir>
//! [n] [no-text]` (the sets `bash benches/data/fetch.sh minilm` fetches into
//! `benches/data/sets`; `no-text`: the store opened with `Options::text_index(false)`, the
//! side-by-side's `ratchetdb-no-text`).

use ratchetdb::{Chunk, Document, Op, Options, SearchOptions, Store, Version};
use redb::{ReadableDatabase, ReadableTable, ReadableTableMetadata, TableHandle};
use std::path::Path;
use std::time::Duration;

/// A little-endian float32 `.npy` matrix: its rows, columns and floats.
fn read_npy(path: &Path) -> (usize, usize, Vec<f32>) {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let header_len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    let header = String::from_utf8_lossy(&bytes[10..10 + header_len]).to_string();
    assert!(header.contains("'descr': '<f4'"), "{header}");
    let shape = header
        .split("'shape': (")
        .nth(1)
        .and_then(|s| s.split(')').next())
        .unwrap_or_default();
    let dims: Vec<usize> = shape
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let floats = bytes[10 + header_len..]
        .chunks_exact(4)
        .take(dims[0] * dims[1])
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    (dims[0], dims[1], floats)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let sets = Path::new(args.get(1).map_or("benches/data/sets", String::as_str));
    let n: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(10_000);
    // A third argument `no-text`: the store opened without its text index.
    let text_index = args.get(3).is_none_or(|a| a != "no-text");
    let (rows, dim, base) = read_npy(&sets.join("minilm.base.npy"));
    let (queries, _, query_floats) = read_npy(&sets.join("minilm.queries.npy"));
    assert!(rows >= n, "{rows} rows");
    let texts = std::fs::read_to_string(sets.join("minilm.texts.txt")).expect("texts");
    let texts: Vec<&str> = texts.split('\n').take(n).collect();
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("store.redb");
    let options = Options::default().dimension(dim).text_index(text_index);
    {
        let store = Store::open(&path, options.clone()).expect("open");
        let docs: Vec<Op> = (0..n)
            .map(|i| {
                Op::Upsert(
                    Document::new("bench", format!("c{i}"), Version::number(1)).with_chunk(
                        Chunk::new(texts[i], base[i * dim..(i + 1) * dim].to_vec())
                            .with_meta(serde_json::json!({ "group": format!("g{}", i % 10) })),
                    ),
                )
            })
            .collect();
        let mut docs = docs.into_iter();
        loop {
            let batch: Vec<Op> = docs.by_ref().take(1000).collect();
            if batch.is_empty() {
                break;
            }
            for outcome in store.write_batch(batch).expect("write_batch") {
                assert!(outcome.is_ok(), "{outcome:?}");
            }
        }
        assert!(store.wait_for_index(Duration::from_secs(600)), "index");
        for filtered in [false, true] {
            let mut options = SearchOptions::default();
            if filtered {
                options = options.filter(
                    ratchetdb::Filter::parse(&serde_json::json!({ "group": "g3" }))
                        .expect("filter"),
                );
            }
            for q in 0..queries.min(1000) {
                let hits = store
                    .search(&query_floats[q * dim..(q + 1) * dim], 10, &options)
                    .expect("search");
                assert!(!hits.is_empty());
            }
        }
        let closing = std::time::Instant::now();
        drop(store);
        println!(
            "close (compaction included): {:.0} ms",
            closing.elapsed().as_secs_f64() * 1e3
        );
    }
    let file = std::fs::metadata(&path).expect("metadata").len();
    println!(
        "documents {n}, file {file} bytes ({:.2} MB)",
        file as f64 / 1e6
    );
    let db = redb::Database::open(&path).expect("redb");
    {
        let stats = db.begin_write().expect("write").stats().expect("stats");
        println!(
            "allocated pages {}, fragmented bytes {}, metadata bytes {}",
            stats.allocated_pages(),
            stats.fragmented_bytes(),
            stats.metadata_bytes()
        );
    }
    let txn = db.begin_read().expect("read");
    for table in txn.list_tables().expect("tables") {
        let name = table.name().to_string();
        let Ok(t) = txn.open_untyped_table(table) else {
            continue;
        };
        let stats = t.stats().expect("stats");
        println!(
            "{name:>18}: {:>6} leaf pages, {:>5} branch pages, {:>10} stored bytes",
            stats.leaf_pages(),
            stats.branch_pages(),
            stats.stored_bytes()
        );
    }
    // Coded rows have the top bit of the dimension word (bytes 4..8) set.
    let vectors = txn
        .open_table(redb::TableDefinition::<u64, &[u8]>::new("doc_vectors"))
        .expect("doc_vectors");
    let (mut coded, mut lens) = (0usize, Vec::new());
    for entry in vectors.iter().expect("iter") {
        let (_, value) = entry.expect("row");
        let row = value.value();
        coded += usize::from(row.get(7).is_some_and(|b| b & 0x80 != 0));
        lens.push(row.len());
    }
    lens.sort_unstable();
    println!(
        "vectors rows: {} ({coded} coded), length median {} max {}",
        lens.len(),
        lens.get(lens.len() / 2).copied().unwrap_or(0),
        lens.last().copied().unwrap_or(0)
    );
    drop(vectors);
    drop(txn);
    // What compacting the closed file whatever its free share would leave (the close
    // compacts only at 1 MiB free, and an eighth of a file over 64 MiB:
    // `Options::compact_on_close`).
    let mut db = db;
    db.compact().expect("compact");
    drop(db);
    let compacted = std::fs::metadata(&path).expect("metadata").len();
    println!(
        "compacted by hand: file {compacted} bytes ({:.2} MB)",
        compacted as f64 / 1e6
    );
    // Reopen to the graph loaded from its snapshot.
    let mut times = Vec::new();
    for _ in 0..5 {
        let started = std::time::Instant::now();
        let store = Store::open(&path, options.clone()).expect("reopen");
        while !store.index_info().graph_ready {
            assert!(started.elapsed() < Duration::from_secs(120), "no graph");
            std::thread::sleep(Duration::from_micros(200));
        }
        times.push(started.elapsed().as_secs_f64() * 1e3);
        drop(store);
    }
    let listed: Vec<String> = times.iter().map(|t| format!("{t:.1}")).collect();
    times.sort_by(f64::total_cmp);
    println!(
        "reopen to the graph loaded: {} ms, median {:.1} ms",
        listed.join(" / "),
        times[times.len() / 2]
    );
}
