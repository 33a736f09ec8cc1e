//! The search bench on data nobody here wrote: GloVe 50-d, MiniLM embeddings of Wikipedia
//! sentences, and a seeded random 384-d set of intrinsic dimension 64, all fetched and
//! prepared by `benches/data/fetch.sh` into `benches/data/sets/` (git-ignored; or
//! `RATCHETDB_BENCH_DATA`). A set whose files are missing is skipped with a message.
//!
//! Two uses:
//! - in the bench run: per set, ingest (one chunk per document), wait for the graph, then
//!   criterion groups `real_<set>` (graph search at several `ef` beside the exact scan)
//!   and a summary with recall@10, time to a searchable graph, file size and memory;
//! - child modes for `benches/peers/peers.py`, which runs every library in two fresh
//!   processes on the same files: `RATCHETDB_REAL_CHILD=build:<set>:<path>` and
//!   `query:<set>:<path>` each print one JSON line (`reopen:<set>:<path>`: only the
//!   query child's reopen → first graph search, for sets too large to sweep). The build
//!   child reads the base rows from the file as it writes them and holds no copy of the
//!   set, so its peak RSS is the store's.

use ratchetdb::{
    Chunk, Document, Durability, IndexOptions, Op, Options, SearchOptions, Store, Version,
};
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The child-mode variable (see the module docs).
pub const CHILD_ENV: &str = "RATCHETDB_REAL_CHILD";
/// Which sets the bench run measures: comma-separated names, `none` for none. Default
/// [`DEFAULT_SETS`].
pub const SETS_ENV: &str = "RATCHETDB_SEARCH_BENCH_SETS";
pub const DEFAULT_SETS: &str = "glove-100k,minilm,random384";
/// `k` of every search.
pub const K: usize = 10;
/// Search widths swept (the sweep stops once recall@10 reaches 0.999): steps of at most a
/// quarter above 64, so that the width first reaching a recall target is not overshot by a
/// third (192 → 256 once decided a QPS ratio at 0.99); up to 1000, since `random384-200k`
/// (intrinsic dimension 64) stayed under recall 0.95 at 512. `benches/peers/peers.py` sweeps
/// the same widths for every library.
pub const EF_SWEEP: [usize; 22] = [
    10, 16, 24, 32, 40, 48, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384, 448, 512, 640, 800,
    1000,
];
/// Documents per write transaction while ingesting.
const BATCH: usize = 1000;
const SOURCE: &str = "real";

/// One prepared set: base vectors, held-out queries, their exact 100 nearest base rows.
pub struct Set {
    pub name: String,
    pub dim: usize,
    pub base: Vec<f32>,
    pub queries: Vec<f32>,
    /// `truth_k` nearest base rows per query, nearest first.
    pub truth: Vec<i32>,
    pub truth_k: usize,
    /// A chunk text per base row (MiniLM's sentences), if the set has texts.
    pub texts: Option<Vec<String>>,
}

/// Where the sets are.
pub fn data_dir() -> PathBuf {
    std::env::var_os("RATCHETDB_BENCH_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/data/sets"))
}

/// The sets the bench run measures (see [`SETS_ENV`]).
pub fn wanted_sets() -> Vec<String> {
    let names = std::env::var(SETS_ENV).unwrap_or_else(|_| DEFAULT_SETS.to_string());
    names
        .split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty() && *n != "none")
        .map(String::from)
        .collect()
}

/// A 2-d `.npy` array of little-endian f32 (`<f4`) or i32 (`<i4`), C order: (rows, cols,
/// raw bytes of the data).
fn read_npy(path: &Path, descr: &str) -> Result<(usize, usize, Vec<u8>), String> {
    let (rows, cols, reader) = open_npy(path, descr)?;
    let bad_length = || format!("{}: not a 2-d {descr} .npy file (length)", path.display());
    let len = rows
        .checked_mul(cols)
        .and_then(|n| n.checked_mul(4))
        .ok_or_else(bad_length)?;
    // Reads at most one byte past what the header promises: a longer file is refused
    // without being read whole, and nothing is reserved from the header alone.
    let mut data = Vec::new();
    reader
        .take(len as u64 + 1)
        .read_to_end(&mut data)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if data.len() != len {
        return Err(bad_length());
    }
    Ok((rows, cols, data))
}

/// A 2-d `.npy` file of `descr`, C order, with its header read: (rows, cols, the reader at
/// the first byte of the data).
fn open_npy(path: &Path, descr: &str) -> Result<(usize, usize, BufReader<File>), String> {
    let io = |e: std::io::Error| format!("{}: {e}", path.display());
    let mut reader = BufReader::new(File::open(path).map_err(io)?);
    let bad = |why: &str| format!("{}: not a 2-d {descr} .npy file ({why})", path.display());
    let mut magic = [0u8; 8];
    reader.read_exact(&mut magic).map_err(|_| bad("magic"))?;
    if &magic[..6] != b"\x93NUMPY" {
        return Err(bad("magic"));
    }
    let header_len = match magic[6] {
        1 => {
            let mut len = [0u8; 2];
            reader.read_exact(&mut len).map_err(|_| bad("header"))?;
            u16::from_le_bytes(len) as usize
        }
        2 | 3 => {
            let mut len = [0u8; 4];
            reader.read_exact(&mut len).map_err(|_| bad("header"))?;
            u32::from_le_bytes(len) as usize
        }
        _ => return Err(bad("version")),
    };
    let mut header = vec![0u8; header_len];
    reader.read_exact(&mut header).map_err(|_| bad("header"))?;
    let header = String::from_utf8(header).map_err(|_| bad("header"))?;
    if !header.contains(&format!("'descr': '{descr}'"))
        || !header.contains("'fortran_order': False")
    {
        return Err(bad("dtype or order"));
    }
    let shape = header
        .split("'shape': (")
        .nth(1)
        .and_then(|s| s.split(')').next())
        .ok_or_else(|| bad("shape"))?;
    let dims: Vec<usize> = shape
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().map_err(|_| bad("shape")))
        .collect::<Result<_, _>>()?;
    let [rows, cols] = dims[..] else {
        return Err(bad("not 2-d"));
    };
    Ok((rows, cols, reader))
}

fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

impl Set {
    /// Loads `name`; `Err` says why it cannot (missing files: run fetch.sh).
    pub fn load(name: &str, with_base: bool) -> Result<Set, String> {
        let dir = data_dir();
        let file = |part: &str| dir.join(format!("{name}.{part}.npy"));
        if !file("base").exists() {
            return Err(format!(
                "{} missing: run `bash benches/data/fetch.sh` first",
                file("base").display()
            ));
        }
        let (_, dim, queries) = read_npy(&file("queries"), "<f4")?;
        let (_, truth_k, truth) = read_npy(&file("truth"), "<i4")?;
        let base = if with_base {
            let (_, base_dim, base) = read_npy(&file("base"), "<f4")?;
            if base_dim != dim {
                return Err(format!("{name}: base and queries differ in dimension"));
            }
            f32s(&base)
        } else {
            Vec::new()
        };
        let texts_path = dir.join(format!("{name}.texts.txt"));
        let texts = if with_base && texts_path.exists() {
            let text = std::fs::read_to_string(&texts_path).map_err(|e| e.to_string())?;
            Some(text.lines().map(String::from).collect())
        } else {
            None
        };
        Ok(Set {
            name: name.to_string(),
            dim,
            base,
            queries: f32s(&queries),
            truth: truth
                .chunks_exact(4)
                .map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect(),
            truth_k,
            texts,
        })
    }

    pub fn len(&self) -> usize {
        self.base.len() / self.dim
    }

    pub fn query_count(&self) -> usize {
        self.queries.len() / self.dim
    }

    pub fn query(&self, i: usize) -> &[f32] {
        &self.queries[i * self.dim..(i + 1) * self.dim]
    }

    fn truth_of(&self, i: usize) -> &[i32] {
        &self.truth[i * self.truth_k..i * self.truth_k + K]
    }
}

/// Options of the query and profile children's reopen: [`options`] with the durability a
/// user's store opens with by default (`Immediate`: the file shared with reader processes,
/// so the index load reads through a handle of its own without a page cache), or with the
/// bench's writes' `None` (the file held exclusively) when `RATCHETDB_QUERY_DURABILITY` is
/// `none`. Nothing is written after the reopen either way.
pub fn reopen_options() -> Options {
    match std::env::var("RATCHETDB_QUERY_DURABILITY").as_deref() {
        Ok("none") => options(),
        _ => options().durability(Durability::Immediate),
    }
}

/// Options of the stores the bench writes: no fsync per commit (one `sync` at the end), the
/// graph parameters from `RATCHETDB_INDEX_M` / `RATCHETDB_INDEX_EF_CONSTRUCTION` and redb's
/// page cache from `RATCHETDB_CACHE_SIZE` (bytes) if set, `Options::memory_budget` from
/// `RATCHETDB_MEMORY_BUDGET_MIB` if set (`benches/peers/memory_budget.sh`), and the metric
/// L2 if `RATCHETDB_BENCH_METRIC` is `l2`, cosine if it is `cosine` or unset (any other
/// value stops the bench; the sets' vectors are unit length, so both rank alike and the
/// cosine truth holds).
pub fn options() -> Options {
    let var = |name: &str| std::env::var(name).ok().and_then(|v| v.parse().ok());
    let mut index = IndexOptions::default();
    if let Some(m) = var("RATCHETDB_INDEX_M") {
        index = index.m(m);
    }
    if let Some(ef) = var("RATCHETDB_INDEX_EF_CONSTRUCTION") {
        index = index.ef_construction(ef);
    }
    let options = Options::default().durability(Durability::None).index(index);
    let options = match std::env::var("RATCHETDB_BENCH_METRIC").as_deref() {
        Ok("l2") => options.metric(ratchetdb::Metric::L2),
        Ok("cosine") | Err(std::env::VarError::NotPresent) => options,
        Ok(other) => panic!("RATCHETDB_BENCH_METRIC={other}: l2 or cosine"),
        Err(std::env::VarError::NotUnicode(raw)) => {
            panic!("RATCHETDB_BENCH_METRIC={raw:?}: l2 or cosine")
        }
    };
    let options = match var("RATCHETDB_MEMORY_BUDGET_MIB") {
        Some(mib) => options.memory_budget((mib as u64) << 20),
        None => options,
    };
    match var("RATCHETDB_CACHE_SIZE") {
        Some(bytes) => options.cache_size(bytes),
        None => options,
    }
}

/// Writes every base row of `set` (one chunk per document, [`BATCH`] documents a
/// transaction) and syncs: the seconds it took.
pub fn ingest(store: &Store, set: &Set) -> f64 {
    let dim = set.dim;
    ingest_rows(
        store,
        (0..set.len()).map(|row| {
            let text = set.texts.as_ref().and_then(|t| t.get(row).cloned());
            (
                text.unwrap_or_else(|| row_text(row)),
                set.base[row * dim..(row + 1) * dim].to_vec(),
            )
        }),
    )
}

/// The text of base row `row` of a set without texts.
fn row_text(row: usize) -> String {
    format!("row {row}")
}

/// Writes `rows` (text and vector of base row 0, 1, …) as [`ingest`] does: the seconds it
/// took.
pub fn ingest_rows(store: &Store, rows: impl Iterator<Item = (String, Vec<f32>)>) -> f64 {
    let started = Instant::now();
    let mut rows = rows.enumerate().peekable();
    while rows.peek().is_some() {
        let ops = rows
            .by_ref()
            .take(BATCH)
            .map(|(row, (text, vector))| {
                Op::Upsert(
                    Document::new(SOURCE, format!("r{row}"), Version::number(1))
                        .with_chunk(Chunk::new(text, vector)),
                )
            })
            .collect();
        for result in store.write_batch(ops).expect("batch") {
            result.expect("write");
        }
    }
    store.sync().expect("sync");
    started.elapsed().as_secs_f64()
}

/// The base rows of set `name` read from its files one at a time, as an ingestion that
/// streams its input reads them (the build child holds no copy of the set): the rows'
/// count and their (text, vector) in order. A read error mid-file panics (bench code).
pub fn stream_base(
    name: &str,
) -> Result<(usize, impl Iterator<Item = (String, Vec<f32>)>), String> {
    let dir = data_dir();
    let base = dir.join(format!("{name}.base.npy"));
    if !base.exists() {
        return Err(format!(
            "{} missing: run `bash benches/data/fetch.sh` first",
            base.display()
        ));
    }
    let (rows, dim, mut reader) = open_npy(&base, "<f4")?;
    let texts_path = dir.join(format!("{name}.texts.txt"));
    let mut texts = match File::open(&texts_path) {
        Ok(file) => Some(BufReader::new(file).lines()),
        Err(_) => None,
    };
    let mut bytes = vec![0u8; dim * 4];
    let iter = (0..rows).map(move |row| {
        reader
            .read_exact(&mut bytes)
            .unwrap_or_else(|e| panic!("{}: row {row}: {e}", base.display()));
        let text = match texts.as_mut().and_then(Iterator::next) {
            Some(line) => line.unwrap_or_else(|e| panic!("{}: {e}", texts_path.display())),
            None => row_text(row),
        };
        (text, f32s(&bytes))
    });
    Ok((rows, iter))
}

/// Waits until the index is loaded, covers every commit and no build runs: at most an hour,
/// or `RATCHETDB_BENCH_WAIT_SECS` seconds (a 1M build on a loaded machine can take longer).
pub fn wait(store: &Store) {
    let seconds = env_number("RATCHETDB_BENCH_WAIT_SECS", 3600);
    assert!(store.wait_for_index(Duration::from_secs(seconds)), "index");
}

/// The base rows of `search`'s hits.
fn rows(store: &Store, query: &[f32], options: &SearchOptions) -> Vec<i32> {
    store
        .search(query, K, options)
        .expect("search")
        .iter()
        .filter_map(|hit| hit.id.strip_prefix('r').and_then(|r| r.parse().ok()))
        .collect()
}

/// One pass over every query, one at a time: (recall@10, queries per second).
pub fn pass(store: &Store, set: &Set, options: &SearchOptions) -> (f64, f64) {
    pass_over(store, set, options, set.query_count())
}

/// [`pass`] over the first `q` queries (at most the set's; at least one).
fn pass_over(store: &Store, set: &Set, options: &SearchOptions, q: usize) -> (f64, f64) {
    let q = q.min(set.query_count()).max(1);
    let started = Instant::now();
    let found: Vec<Vec<i32>> = (0..q).map(|i| rows(store, set.query(i), options)).collect();
    let seconds = started.elapsed().as_secs_f64();
    let hits: usize = found
        .iter()
        .enumerate()
        .map(|(i, f)| f.iter().filter(|r| set.truth_of(i).contains(r)).count())
        .sum();
    (hits as f64 / (q * K) as f64, q as f64 / seconds)
}

/// Passes over the queries per `ef` in [`sweep`]; the QPS is their median (one pass takes a
/// fraction of a second, and a shared machine's noise swamps a single one).
/// `benches/peers/peers.py` does the same for every peer.
const SWEEP_PASSES: usize = 3;

/// A number from the environment variable `name`, or `default` when it is unset. A value
/// that is set but is not a number stops the bench (a mistyped knob would otherwise run the
/// default: the whole exact pass, or the foreground rebuild, hours at 1M).
fn env_number<T: std::str::FromStr>(name: &str, default: T) -> T {
    match std::env::var(name) {
        Ok(value) => value
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name}={value:?} is not a number")),
        Err(_) => default,
    }
}

/// The widths [`sweep`] runs: `RATCHETDB_BENCH_EFS` (comma-separated, each a number) if set,
/// else [`EF_SWEEP`].
fn sweep_widths() -> Vec<usize> {
    match std::env::var("RATCHETDB_BENCH_EFS") {
        Ok(list) => {
            let widths: Vec<usize> = list
                .split(',')
                .map(|w| {
                    w.trim().parse().unwrap_or_else(|_| {
                        panic!("RATCHETDB_BENCH_EFS={list:?}: {w:?} is not a width")
                    })
                })
                .collect();
            assert!(!widths.is_empty(), "RATCHETDB_BENCH_EFS is empty");
            widths
        }
        Err(_) => EF_SWEEP.to_vec(),
    }
}

/// The ef sweep: `(ef, recall, qps, distances per query)` until recall reaches 0.999 (or
/// `RATCHETDB_BENCH_SWEEP_TO`: at 1M the widest settings take most of the child's time and
/// the figures are read at 0.95); the QPS is the median of [`SWEEP_PASSES`] passes.
pub fn sweep(store: &Store, set: &Set) -> Vec<(usize, f64, f64, f64)> {
    let stop_at: f64 = env_number("RATCHETDB_BENCH_SWEEP_TO", 0.999);
    // `RATCHETDB_BENCH_EFS=1280,1600`: these widths instead of [`EF_SWEEP`] (a graph of 1M
    // points of the random set stays below recall 0.95 at its widest).
    // `RATCHETDB_BENCH_RERANK=300`: under a memory budget, score this many of each
    // search's candidates exactly (`SearchOptions::rerank`; unset: the store's default).
    let rerank = std::env::var("RATCHETDB_BENCH_RERANK").ok().map(|v| {
        v.parse::<usize>()
            .expect("RATCHETDB_BENCH_RERANK: a number")
    });
    let mut out = Vec::new();
    for ef in sweep_widths() {
        let before = ratchetdb::testkit::graph_search_distances();
        let mut options = SearchOptions::default().ef(ef);
        if let Some(rerank) = rerank {
            options = options.rerank(rerank);
        }
        let passes: Vec<(f64, f64)> = (0..SWEEP_PASSES)
            .map(|_| pass(store, set, &options))
            .collect();
        let recall = passes[0].0;
        let mut rates: Vec<f64> = passes.iter().map(|p| p.1).collect();
        rates.sort_by(f64::total_cmp);
        let qps = rates[rates.len() / 2];
        let distances = (ratchetdb::testkit::graph_search_distances() - before) as f64
            / (SWEEP_PASSES * set.query_count()) as f64;
        out.push((ef, recall, qps, distances));
        if recall >= stop_at {
            break;
        }
    }
    out
}

/// An upper bound, for scale, on what resolving a query's hits against a snapshot costs, in
/// µs per query: the peers return ids, ratchetdb returns each hit's text, metadata and
/// version read from the search's snapshot. Measured as `Store::get` of every hit's
/// document (the document row, its chunks row and vectors row), for the hits of every query
/// at `ef` 64. A search reads less per hit: its document's chunks row alone (schema 4; the
/// vectors row too for a row split into it).
pub fn resolution_cost(store: &Store, set: &Set) -> f64 {
    let options = SearchOptions::default().ef(64);
    let hits: Vec<Vec<String>> = (0..set.query_count())
        .map(|i| {
            store
                .search(set.query(i), K, &options)
                .expect("search")
                .into_iter()
                .map(|hit| hit.id)
                .collect()
        })
        .collect();
    let started = Instant::now();
    for ids in &hits {
        for id in ids {
            std::hint::black_box(store.get(SOURCE, id).expect("get"));
        }
    }
    started.elapsed().as_secs_f64() * 1e6 / hits.len() as f64
}

/// The fastest swept `ef` reaching `target` recall.
pub fn at_recall(sweep: &[(usize, f64, f64, f64)], target: f64) -> Option<(usize, f64, f64, f64)> {
    sweep
        .iter()
        .copied()
        .filter(|s| s.1 >= target)
        .max_by(|a, b| a.2.total_cmp(&b.2))
}

/// Where the file's bytes are: per table, its pages and the bytes stored in them; pages
/// allocated in all; the rest of the file is free space (left by copy-on-write). Opens the
/// file with redb directly: the store must be closed.
pub fn disk_breakdown(path: &Path) -> serde_json::Value {
    use redb::{ReadableDatabase, ReadableTableMetadata, TableHandle};
    // Without a page cache: redb's default (1 GiB) would keep every page the walk reads
    // resident, and the process's peak would be the file's size (494 MiB at 200k x 384-d).
    let db = redb::Builder::new()
        .set_cache_size(0)
        .open(path)
        .expect("redb open");
    let mut tables = serde_json::Map::new();
    {
        let txn = db.begin_read().expect("read");
        for handle in txn.list_tables().expect("tables") {
            let name = handle.name().to_string();
            let table = txn.open_untyped_table(handle).expect("table");
            let stats = table.stats().expect("stats");
            tables.insert(
                name,
                serde_json::json!({
                    "pages_bytes": (stats.leaf_pages() + stats.branch_pages()) * 4096,
                    "stored_bytes": stats.stored_bytes(),
                    "fragmented_bytes": stats.fragmented_bytes(),
                }),
            );
        }
    }
    let txn = db.begin_write().expect("write");
    let stats = txn.stats().expect("stats");
    let allocated = stats.allocated_pages() * stats.page_size() as u64;
    txn.abort().expect("abort");
    drop(db);
    let file = file_len(path);
    serde_json::json!({
        "file": file, "allocated": allocated, "free": file.saturating_sub(allocated),
        "tables": tables,
    })
}

fn file_len(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

/// Opens the store at `path` with [`reopen_options`], waits for its graph, and runs one
/// graph search: the store, the seconds the open took, and the seconds from the open's start
/// to the search's answer.
fn reopen_to_first_search(path: &Path, set: &Set) -> (Store, f64, f64) {
    let started = Instant::now();
    let store = Store::open(path, reopen_options()).expect("open");
    let opened = started.elapsed().as_secs_f64();
    loop {
        let info = store.index_info();
        if info.graph_ready || started.elapsed() > Duration::from_secs(900) {
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    rows(&store, set.query(0), &SearchOptions::default().ef(64));
    let first = started.elapsed().as_secs_f64();
    (store, opened, first)
}

/// The child modes (see the module docs); prints one JSON line.
pub fn child(spec: &str) {
    let mut parts = spec.splitn(3, ':');
    let (Some(phase), Some(name), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
        panic!("{CHILD_ENV}=build|query|reopen|profile:<set>:<path>, got {spec}");
    };
    let path = Path::new(path);
    let json = match phase {
        "build" => {
            // The rows are read from the file as they are written, as an ingestion that
            // streams its input would: the peak is the store's, not the bench's copy of the
            // set (the Python peers map theirs).
            let (n, rows) = stream_base(name).unwrap_or_else(|e| panic!("{e}"));
            let (rss_before, _) = super::common::memory();
            let store = Store::open(path, options()).expect("open");
            let ingest_s = ingest_rows(&store, rows);
            let last_write = Instant::now();
            wait(&store);
            let ready = last_write.elapsed().as_secs_f64();
            let disk = file_len(path);
            let (rss, build_peak) = super::common::memory();
            // Closing compacts the file when enough of it is free (`compact_on_close`).
            // Each later phase's peak is its own: the peak is reset before it.
            super::common::reset_peak();
            let close_started = Instant::now();
            drop(store);
            let close_s = close_started.elapsed().as_secs_f64();
            let (_, close_peak) = super::common::memory();
            let disk_after_close = file_len(path);
            let breakdown = disk_breakdown(path);
            // The same graph built again in the foreground (every core, caller's priority);
            // `RATCHETDB_BENCH_FOREGROUND=0` skips it (at 1M it doubles the child's time).
            let (foreground, peak_after_foreground) =
                if env_number("RATCHETDB_BENCH_FOREGROUND", 1u8) == 0 {
                    (None, None)
                } else {
                    super::common::reset_peak();
                    let store = Store::open(path, options()).expect("reopen");
                    wait(&store);
                    let started = Instant::now();
                    store.build_index().expect("build_index");
                    let foreground = started.elapsed().as_secs_f64();
                    let (_, peak) = super::common::memory();
                    drop(store);
                    (Some(foreground), Some(peak))
                };
            serde_json::json!({
                "disk_breakdown": breakdown, "disk_after_close": disk_after_close,
                "close_s": close_s, "close_peak": close_peak,
                "ingest_s": ingest_s, "ready_after_last_write_s": ready, "disk": disk,
                "build_peak": build_peak, "build_rss": rss, "rss_before": rss_before,
                "foreground_build_s": foreground, "disk_after_foreground": file_len(path),
                "peak_after_foreground": peak_after_foreground, "n": n,
            })
        }
        "query" => {
            let set = Set::load(name, false).unwrap_or_else(|e| panic!("{e}"));
            let (rss_before, _) = super::common::memory();
            let (store, opened, first) = reopen_to_first_search(path, &set);
            let (ready_rss, _) = super::common::memory();
            wait(&store);
            let (query_rss, _) = super::common::memory();
            let sweep: Vec<serde_json::Value> = sweep(&store, &set)
                .into_iter()
                .map(|(ef, recall, qps, distances)| {
                    serde_json::json!({"ef": ef, "recall": recall, "qps": qps,
                        "distances_per_query": distances})
                })
                .collect();
            // `RATCHETDB_BENCH_EXACT_QUERIES`: the exact pass over the first N queries only
            // (a budgeted exact scan reads every vectors row of the file: seconds a query
            // at 1M).
            // 0 skips it.
            let exact_queries = env_number("RATCHETDB_BENCH_EXACT_QUERIES", set.query_count())
                .min(set.query_count());
            let (exact_recall, exact_qps) = if exact_queries == 0 {
                (None, None)
            } else {
                let (recall, qps) = pass_over(
                    &store,
                    &set,
                    &SearchOptions::default().exact(true),
                    exact_queries,
                );
                (Some(recall), Some(qps))
            };
            let resolve_us = resolution_cost(&store, &set);
            let (_, query_peak) = super::common::memory();
            serde_json::json!({
                "open_s": opened, "reopen_first_search_s": first, "ready_rss": ready_rss,
                "query_rss": query_rss, "query_rss_before": rss_before, "sweep": sweep,
                "exact_qps": exact_qps, "exact_recall": exact_recall,
                "exact_queries": exact_queries, "query_peak": query_peak,
                "resolve_us_per_query": resolve_us,
            })
        }
        // Reopen → first graph search only (the start of `query`, without its sweep): for
        // sets whose sweep would take too long, such as `random50-1m`.
        "reopen" => {
            let set = Set::load(name, false).unwrap_or_else(|e| panic!("{e}"));
            let (store, opened, first) = reopen_to_first_search(path, &set);
            let (ready_rss, _) = super::common::memory();
            serde_json::json!({"open_s": opened, "reopen_first_search_s": first,
                "ready_rss": ready_rss, "n": store.index_info().graph_points})
        }
        // For `perf record`: passes over the queries for `RATCHETDB_PROFILE_SECONDS` (20)
        // at `ef` `RATCHETDB_PROFILE_EF` (32), or exact with `RATCHETDB_PROFILE_EF=exact`,
        // after the index is ready.
        "profile" => {
            let set = Set::load(name, false).unwrap_or_else(|e| panic!("{e}"));
            let opened = Instant::now();
            let store = Store::open(path, reopen_options()).expect("open");
            wait(&store);
            // Open → index ready (graph installed), the reopen alone.
            let ready_s = opened.elapsed().as_secs_f64();
            let ef = std::env::var("RATCHETDB_PROFILE_EF").unwrap_or_else(|_| "32".into());
            let options = match ef.parse() {
                Ok(ef) => SearchOptions::default().ef(ef),
                Err(_) => SearchOptions::default().exact(true),
            };
            let seconds: f64 = std::env::var("RATCHETDB_PROFILE_SECONDS")
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(20.0);
            let started = Instant::now();
            let before = ratchetdb::testkit::graph_search_distances();
            let (mut passes, mut recall, mut qps) = (0usize, 0.0, 0.0);
            while started.elapsed().as_secs_f64() < seconds {
                (recall, qps) = pass(&store, &set, &options);
                passes += 1;
            }
            let distances = (ratchetdb::testkit::graph_search_distances() - before) as f64
                / (passes * set.query_count()).max(1) as f64;
            serde_json::json!({"ef": ef, "passes": passes, "recall": recall, "qps": qps,
                "distances_per_query": distances, "ready_s": ready_s})
        }
        other => panic!("unknown phase {other}"),
    };
    println!("{json}");
}
