//! Regression: a graph snapshot whose header carried an `ef_construction` no store option
//! can set (here `u32::MAX`, re-signed so its checksum held) was loaded as it was, and the
//! first insert after the reopen sized its candidate heap from it: a 32 GiB allocation that
//! aborted the process. The header's `ef_construction` is now checked against the options'
//! range (1 to `MAX_INDEX_EF_CONSTRUCTION`) like its other fields: outside it the snapshot is
//! damage, ignored, and the graph rebuilt and written again.

use crate::search_support;

use ratchetdb::{Chunk, Document, SearchOptions, Version, MAX_INDEX_EF_CONSTRUCTION};
use search_support::{
    assert_verified, ingest_one_chunk_docs, open, rewrite_snapshot, settle, snapshot_parts,
    Structured,
};
use std::path::Path;

/// Where the header keeps `ef_construction` (u32, little-endian) and its checksum.
const EF_CONSTRUCTION_AT: usize = 36;
const CHECKSUM_AT: usize = 64;
const DIM: usize = 32;
const N: usize = 600;

fn ef_construction_of(header: &[u8]) -> u32 {
    let bytes = &header[EF_CONSTRUCTION_AT..EF_CONSTRUCTION_AT + 4];
    u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])
}

/// Writes `ef_construction` into the snapshot's header and signs the header again, so that
/// only the value (not the checksum) can tell the snapshot is not one the store wrote.
fn set_ef_construction(path: &Path, ef_construction: u32) {
    let mut parts = snapshot_parts(path);
    let header = &mut parts[0];
    header[EF_CONSTRUCTION_AT..EF_CONSTRUCTION_AT + 4]
        .copy_from_slice(&ef_construction.to_le_bytes());
    let mut hasher = blake3::Hasher::new();
    hasher.update(&parts[0][..CHECKSUM_AT]);
    for part in &parts[1..] {
        hasher.update(part);
    }
    let checksum = *hasher.finalize().as_bytes();
    parts[0][CHECKSUM_AT..CHECKSUM_AT + 32].copy_from_slice(&checksum);
    rewrite_snapshot(path, &parts);
}

#[test]
fn a_snapshot_with_an_impossible_ef_construction_is_ignored_and_rebuilt() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("search.redb");
    let data = Structured::new(71, DIM);
    let vectors = data.vectors(72, N);
    {
        let store = open(dir.path());
        ingest_one_chunk_docs(&store, "s", &vectors);
        store.build_index().expect("build");
    }
    let written = ef_construction_of(&snapshot_parts(&path)[0]);
    assert!((1..=MAX_INDEX_EF_CONSTRUCTION as u32).contains(&written));

    for impossible in [u32::MAX, MAX_INDEX_EF_CONSTRUCTION as u32 + 1, 0] {
        set_ef_construction(&path, impossible);
        let store = open(dir.path());
        settle(&store);
        assert!(
            store.index_info().graph_ready,
            "ef_construction {impossible}"
        );
        // The insert that sized its heap from the header's value.
        let probe = data.vectors(73 + u64::from(impossible % 7), 1).remove(0);
        let id = format!("probe-{impossible}");
        store
            .upsert(
                Document::new("s", id.as_str(), Version::number(1))
                    .with_chunk(Chunk::new("the probe", probe.clone())),
            )
            .expect("upsert after the reopen");
        settle(&store);
        let hits = store
            .search(&probe, 1, &SearchOptions::default())
            .expect("search");
        assert_eq!(hits.first().map(|h| h.id.as_str()), Some(id.as_str()));
        assert_verified(&store, "after the rebuild");
        store
            .delete("s", &id, Version::number(2))
            .expect("delete the probe");
        settle(&store);
        drop(store);
        // The snapshot written in its place carries the store's own setting.
        assert_eq!(
            ef_construction_of(&snapshot_parts(&path)[0]),
            written,
            "ef_construction {impossible}: the damaged snapshot was not replaced"
        );
    }
}
