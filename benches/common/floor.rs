//! The floor under ratchetdb's write path: the same documents' bytes straight into redb,
//! with no guard, hashing, reuse planning, changelog or index (see
//! `benches/group_commit.rs`).

use super::fresh;
use super::rotation::Rotation;
use ratchetdb::testkit::spill_len;
use ratchetdb::{Document, DEFAULT_CACHE_SIZE};
use redb::{Database, TableDefinition};
use std::path::Path;
use std::time::{Duration, Instant};

/// Opens a floor file with ratchetdb's page cache size, not redb's 1 GiB default: how much
/// of what a commit writes stays cached in memory changes what each written page costs.
pub fn open(path: &Path) -> Database {
    open_with_cache(path, DEFAULT_CACHE_SIZE)
}

/// Opens a floor file with redb's own default page cache, 1 GiB.
pub fn open_redb_default(path: &Path) -> Database {
    open_with_cache(path, 1 << 30)
}

fn open_with_cache(path: &Path, bytes: usize) -> Database {
    Database::builder()
        .set_cache_size(bytes)
        .create(path.with_extension("redb"))
        .expect("redb")
}

const FLOOR_DOCS: TableDefinition<(&str, &str), &[u8]> = TableDefinition::new("docs");
const FLOOR_KEYS: TableDefinition<u64, (&str, &str)> = TableDefinition::new("doc_keys");
const FLOOR_CHUNKS: TableDefinition<(u64, u32), &[u8]> = TableDefinition::new("chunks");
const FLOOR_VECTORS: TableDefinition<u64, &[u8]> = TableDefinition::new("vectors");

/// How the floor lays a document's chunk texts and vectors out in redb.
#[derive(Clone, Copy, Debug)]
pub enum Layout {
    /// Schema 1: a row per chunk text and a row per vector.
    RowPerChunk,
    /// Schema 2: the texts in one value, the vectors in another.
    TwoBlobs,
    /// Schema 3: as `TwoBlobs`, with the texts' last bytes moved to the end of the vectors'
    /// value, up to the end of the page run the vectors alone need (the store's own
    /// `spill_len`, through `testkit`).
    Spilled,
}

/// Writes `docs` straight into redb in one durable transaction, in `layout`. Row sizes follow
/// ratchetdb's encodings: a document row of about 80 bytes, a chunk row of the text plus
/// about 48 bytes of header, a vector row of 12 header bytes plus the little-endian floats.
pub fn write(db: &Database, docs: &[Document], next_key: &mut u64, layout: Layout) {
    let txn = db.begin_write().expect("begin");
    {
        let mut rows = txn.open_table(FLOOR_DOCS).expect("docs");
        let mut keys = txn.open_table(FLOOR_KEYS).expect("keys");
        let mut chunks = txn.open_table(FLOOR_CHUNKS).expect("chunks");
        let mut vectors = txn.open_table(FLOOR_VECTORS).expect("vectors");
        let header = [7u8; 48];
        for doc in docs {
            let key = *next_key;
            *next_key += 1;
            rows.insert((doc.source.as_str(), doc.id.as_str()), [1u8; 80].as_slice())
                .expect("doc row");
            keys.insert(key, (doc.source.as_str(), doc.id.as_str()))
                .expect("key row");
            // Encoded once, into buffers sized up front, as ratchetdb encodes its rows.
            let encoded: Vec<(Vec<u8>, Vec<u8>)> = doc
                .chunks
                .iter()
                .map(|c| {
                    let mut text = Vec::with_capacity(header.len() + c.text.len());
                    text.extend_from_slice(&header);
                    text.extend_from_slice(c.text.as_bytes());
                    let values = c.vector.as_deref().unwrap_or(&[]);
                    let mut vector = vec![0u8; 12 + values.len() * 4];
                    vector[..8].copy_from_slice(&key.to_le_bytes());
                    for (out, x) in vector[12..].chunks_exact_mut(4).zip(values) {
                        out.copy_from_slice(&x.to_le_bytes());
                    }
                    (text, vector)
                })
                .collect();
            match layout {
                Layout::RowPerChunk => {
                    for (position, (text, vector)) in encoded.iter().enumerate() {
                        chunks
                            .insert((key, position as u32), text.as_slice())
                            .expect("chunk row");
                        vectors
                            .insert(key * 1000 + position as u64, vector.as_slice())
                            .expect("vector row");
                    }
                }
                Layout::TwoBlobs | Layout::Spilled => {
                    let mut texts = Vec::with_capacity(encoded.iter().map(|(t, _)| t.len()).sum());
                    let mut all =
                        Vec::with_capacity(encoded.iter().map(|(t, v)| t.len() + v.len()).sum());
                    for (text, vector) in &encoded {
                        texts.extend_from_slice(text);
                        all.extend_from_slice(vector);
                    }
                    let spill = match layout {
                        Layout::Spilled => spill_len(all.len(), texts.len()),
                        _ => 0,
                    };
                    let (rest, tail) = texts.split_at(texts.len() - spill);
                    all.extend_from_slice(tail);
                    chunks.insert((key, 0), rest).expect("chunks");
                    vectors.insert(key, all.as_slice()).expect("vectors");
                }
            }
        }
    }
    txn.commit().expect("commit");
}

/// `iters` floor transactions of `batch` fresh documents into `files`; only the
/// transactions are timed. `next_key` numbers the documents' key rows across calls.
pub fn timed_writes(
    files: &mut Rotation<Database>,
    iters: u64,
    batch: u64,
    next_key: &mut u64,
    layout: Layout,
) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let docs = fresh(batch);
        let db = files.room_for(batch);
        let start = Instant::now();
        write(db, &docs, next_key, layout);
        total += start.elapsed();
    }
    total
}
