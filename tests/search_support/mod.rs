//! Shared by the `search_*` tests: deterministic vectors (a structured, embedding-like
//! generator and plain random ones), brute-force ground truth, and small store helpers.
//!
//! The benches include this file too (`benches/common/mod.rs`), so the search bench
//! measures the data these tests check.
#![allow(dead_code)]

use ratchetdb::testkit::SplitMix64;
use ratchetdb::{Chunk, Document, Hit, Options, Store, Version};
use std::path::Path;
use std::time::Duration;

/// A deterministic PRNG: the crate's own SplitMix64, with the draws these tests need.
pub struct Rng(SplitMix64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(SplitMix64::new(seed))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// Uniform in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// Uniform in (0, 1).
    pub fn uniform(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// Standard normal (Box-Muller).
    pub fn gaussian(&mut self) -> f32 {
        let (u, v) = (self.uniform(), self.uniform());
        ((-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()) as f32
    }
}

/// A random vector with standard normal components (not normalised).
pub fn random_vector(rng: &mut Rng, dim: usize) -> Vec<f32> {
    (0..dim).map(|_| rng.gaussian()).collect()
}

/// Scales to unit length (what the store does for cosine).
pub fn normalized(mut v: Vec<f32>) -> Vec<f32> {
    let norm = v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    for x in &mut v {
        *x = (f64::from(*x) / norm) as f32;
    }
    v
}

pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Embedding-like vectors: not uniform noise (on which every ANN index looks the same and
/// recall says nothing) but a mixture of clusters in a low-rank subspace with a decaying
/// spectrum, plus isotropic noise, normalised.
///
/// Each vector is `normalise(normalise(B^T z) + noise)`: `z` is a [`Structured::RANK`]-d
/// latent drawn around one of [`Structured::CLUSTERS`] centres (per-axis scale
/// `1 / (1 + i / 16)`), `B` a fixed Gaussian `RANK x dim` basis, `noise` Gaussian with
/// norm about [`Structured::NOISE`]. At 100k x 384 the mean cosine distance to the
/// nearest neighbour is about 0.4 and to a random vector about 1.0.
pub struct Structured {
    dim: usize,
    basis: Vec<f32>,
    centres: Vec<f32>,
    scales: Vec<f32>,
}

impl Structured {
    pub const RANK: usize = 64;
    pub const CLUSTERS: usize = 64;
    pub const NOISE: f32 = 0.5;
    /// Spread of a cluster, relative to the spread of the centres.
    pub const SPREAD: f32 = 1.0;

    /// The distribution (basis and centres) fixed by `seed`.
    pub fn new(seed: u64, dim: usize) -> Structured {
        let mut rng = Rng::new(seed);
        let basis = (0..Self::RANK * dim).map(|_| rng.gaussian()).collect();
        let scales: Vec<f32> = (0..Self::RANK)
            .map(|i| 1.0 / (1.0 + i as f32 / 16.0))
            .collect();
        let centres = (0..Self::CLUSTERS * Self::RANK)
            .map(|i| rng.gaussian() * scales[i % Self::RANK])
            .collect();
        Structured {
            dim,
            basis,
            centres,
            scales,
        }
    }

    /// One unit vector from the distribution.
    pub fn sample(&self, rng: &mut Rng) -> Vec<f32> {
        let cluster = rng.below(Self::CLUSTERS as u64) as usize;
        let mut v = vec![0f32; self.dim];
        for l in 0..Self::RANK {
            let z = self.centres[cluster * Self::RANK + l]
                + Self::SPREAD * self.scales[l] * rng.gaussian();
            for (x, b) in v
                .iter_mut()
                .zip(&self.basis[l * self.dim..(l + 1) * self.dim])
            {
                *x += z * b;
            }
        }
        let v = normalized(v);
        let noise = Self::NOISE / (self.dim as f32).sqrt();
        normalized(v.into_iter().map(|x| x + noise * rng.gaussian()).collect())
    }

    /// `n` vectors drawn with `seed`.
    pub fn vectors(&self, seed: u64, n: usize) -> Vec<Vec<f32>> {
        let mut rng = Rng::new(seed);
        (0..n).map(|_| self.sample(&mut rng)).collect()
    }
}

/// Brute-force top-k by cosine over unit vectors: indexes into `vectors`, nearest first
/// (ties by index).
pub fn exact_top_k(vectors: &[Vec<f32>], query: &[f32], k: usize) -> Vec<usize> {
    let mut scored: Vec<(f32, usize)> = vectors
        .iter()
        .enumerate()
        .map(|(i, v)| (1.0 - dot(v, query), i))
        .collect();
    scored.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    scored.truncate(k);
    scored.into_iter().map(|(_, i)| i).collect()
}

/// A store in `dir` with cheap commits (the tests are not about durability).
pub fn open(dir: &Path) -> Store {
    Store::open(
        dir.join("search.redb"),
        Options::default().durability(ratchetdb::Durability::None),
    )
    .expect("open the store")
}

/// One document per vector: source `source`, id `v{i}`, one chunk `"chunk {i}"`.
/// Written in batches of 1000 documents.
pub fn ingest_one_chunk_docs(store: &Store, source: &str, vectors: &[Vec<f32>]) {
    for (batch_index, batch) in vectors.chunks(1000).enumerate() {
        let ops = batch
            .iter()
            .enumerate()
            .map(|(j, v)| {
                let i = batch_index * 1000 + j;
                ratchetdb::Op::Upsert(
                    Document::new(source, format!("v{i}"), Version::number(1))
                        .with_chunk(Chunk::new(format!("chunk {i}"), v.clone())),
                )
            })
            .collect();
        for result in store.write_batch(ops).expect("write a batch") {
            result.expect("write a document");
        }
    }
}

/// The index `i` of a hit on a document written by [`ingest_one_chunk_docs`].
pub fn doc_index(hit: &Hit) -> usize {
    hit.id
        .strip_prefix('v')
        .and_then(|i| i.parse().ok())
        .unwrap_or_else(|| panic!("unexpected document id {:?}", hit.id))
}

/// Waits (up to a minute) for the background index to load and any build to finish.
pub fn settle(store: &Store) {
    assert!(
        store.wait_for_index(Duration::from_secs(60)),
        "the index did not settle: {:?}",
        store.index_info()
    );
}

/// Asserts that `store.verify()` finds nothing (I1-I5, including index agreement).
pub fn assert_verified(store: &Store, when: &str) {
    let report = store.verify().expect("verify");
    assert!(
        report.is_ok(),
        "{when}: verify found {:#?}",
        report.violations
    );
}

/// The graph snapshot's table (`index_snapshot`: part number -> bytes).
pub const SNAPSHOT: redb::TableDefinition<u32, &[u8]> =
    redb::TableDefinition::new("index_snapshot");

/// The graph snapshot's parts in the closed file at `path`, in order (the header first).
pub fn snapshot_parts(path: &Path) -> Vec<Vec<u8>> {
    use redb::{ReadableDatabase, ReadableTable};
    let db = redb::Database::open(path).expect("open with redb");
    let txn = db.begin_read().expect("read");
    let table = txn.open_table(SNAPSHOT).expect("the snapshot table");
    table
        .iter()
        .expect("iter")
        .map(|entry| entry.expect("row").1.value().to_vec())
        .collect()
}

/// Replaces the graph snapshot in the closed file at `path` with `parts`.
pub fn rewrite_snapshot(path: &Path, parts: &[Vec<u8>]) {
    let db = redb::Database::open(path).expect("open with redb");
    let txn = db.begin_write().expect("write");
    {
        let mut table = txn.open_table(SNAPSHOT).expect("the snapshot table");
        table.retain(|_, _| false).expect("clear");
        for (i, part) in parts.iter().enumerate() {
            table.insert(i as u32, part.as_slice()).expect("insert");
        }
    }
    txn.commit().expect("commit");
}

/// The bytes of a `kB` field of this process's `/proc/self/status` (`"VmHWM:"`,
/// `"RssAnon:"`, ...).
pub fn status_bytes(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("read /proc/self/status");
    status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<u64>().ok())
        .map(|kb| kb * 1024)
        .unwrap_or_else(|| panic!("no {field} in /proc/self/status"))
}

/// In a child process [`run_child`] started: the directory the parent passed in `env`, with
/// transparent huge pages turned off for this process (a host set to `always` would let one
/// heap growth fault in 2 MiB, past the tight bounds these tests check). `None` in the
/// parent.
pub fn child_dir(env: &str) -> Option<std::path::PathBuf> {
    let dir = std::env::var_os(env)?;
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_THP_DISABLE takes integer arguments and changes only this process.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
    Some(dir.into())
}

/// Runs the test `test` (its path in this binary) again, alone, in a child process with
/// `env` set to `dir` (RSS is a process's, and a test binary runs its tests side by side in
/// one); returns what the child printed once it succeeded.
pub fn run_child(test: &str, env: &str, dir: &Path) -> String {
    let output = std::process::Command::new(std::env::current_exe().expect("test binary"))
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(env, dir)
        .output()
        .expect("run the child");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "the child failed: {stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// The number a child printed as `name` followed by it (`growth=123` for `"growth="`).
pub fn child_field(stdout: &str, name: &str) -> u64 {
    stdout
        .split_whitespace()
        .find_map(|w| w.strip_prefix(name))
        .and_then(|g| g.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in the child's output: {stdout}"))
}
