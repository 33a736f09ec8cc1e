//! A file written by the schema-4 build (each chunk of the chunks row with a 32-byte blake3
//! hash of its text), with a text index, a changelog and a persisted graph snapshot, is
//! converted to schema 10 when this build opens it (the original kept beside it as a backup):
//! each chunks row loses its chunks' text hashes, 32 bytes a chunk, and is split again beside
//! its vectors, and each document row keeps the first 16 bytes of its content hash; nothing
//! else changes. Every document, version, generation, content hash,
//! chunk text, slot and metadata, every vector bit for bit and under the same id, every
//! counter, listing and skip-log row survive; the changelog and the graph snapshot are kept
//! byte for byte, and the snapshot is what the index loads. The text index stays. The guard
//! goes on deciding against the converted rows (matching chunks by their texts now), vector
//! and text searches resolve their hits to the converted chunks, and opening is one
//! transaction: an I/O failure at any point of it leaves a file that opens (converted, or
//! still schema 4 and then converted) with the same contents. The fixture and how it was
//! made: `tests/fixtures/schema4-README.md` (its documents and export are the schema-3
//! fixture's).

use crate::support;

use support::converted::{
    assert_converted_fixture_revises, assert_damaged_files_convert_or_are_refused,
    assert_failed_conversions_reopen_whole, assert_orphan_rows_are_dropped, convert_keeping_ids,
    vectors_end,
};

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/schema4-store.redb"
);
/// The schema-4 build exported the fixture byte for byte as the schema-3 one.
const EXPORT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/schema3-export.json"
);

/// The bytes schema 5 drops from each chunk of a chunks row.
const TEXT_HASH: usize = 32;

#[test]
fn schema_4_file_is_converted_on_open() {
    // Written by a build that writes snapshot format 6.
    let converted = convert_keeping_ids(FIXTURE, EXPORT, 4, 6);
    // Each chunks row (joined with what its vectors row carries) is the old one without its
    // chunks' text hashes: the same version, key, generation, slots, texts and metadata,
    // each old hash the blake3 of the kept text, and exactly 32 bytes a chunk shorter (every
    // other field keeps its value, so its encoding).
    let (mut chunks, mut old_bytes, mut new_bytes) = (0, 0, 0);
    for (id, (old_chunks, old_vectors)) in &converted.old_rows {
        let (new_chunks, new_vectors) = &converted.new_rows[id];
        let old_joined = [
            old_chunks.as_slice(),
            &old_vectors[vectors_end(old_vectors)..],
        ]
        .concat();
        let new_joined = [
            new_chunks.as_slice(),
            &new_vectors[vectors_end(new_vectors)..],
        ]
        .concat();
        support::assert_converted_chunks_row(
            &format!("document {id}"),
            &new_joined,
            support::OldChunksRow::V4(&old_joined),
            new_vectors,
        );
        let count = support::vectors_row_slots(new_vectors).len();
        assert_eq!(
            new_joined.len() + TEXT_HASH * count,
            old_joined.len(),
            "document {id}: the row's length"
        );
        chunks += count;
        old_bytes += old_joined.len();
        new_bytes += new_joined.len();
    }
    // Every live chunk of the fixture (the export's count) lost its hash.
    let live_chunks = support::fixture_export(EXPORT)["stats"]["chunks"].as_u64();
    assert_eq!(
        Some(chunks as u64),
        live_chunks,
        "the fixture's live chunks"
    );
    println!("chunks rows of the fixture: {old_bytes} -> {new_bytes} bytes for {chunks} chunks");
    assert_converted_fixture_revises(&converted.path);
}

/// Opening is one transaction: fail each of its writes, syncs and length changes in turn;
/// whatever the durable image then is, it opens with the fixture's contents.
#[test]
fn a_failed_conversion_of_a_schema_4_file_leaves_a_file_that_opens_whole() {
    assert_failed_conversions_reopen_whole(FIXTURE, EXPORT);
}

/// A damaged schema-4 file: 400 flipped bits, each opened with the page checksums verified.
/// The conversion never panics: it converts, or refuses the file with a typed error.
#[test]
fn a_damaged_schema_4_file_is_converted_or_refused_never_a_panic() {
    assert_damaged_files_convert_or_are_refused(FIXTURE, 0x5c4e, "schema-4");
}

/// Rows no live document claims (a schema-4 build's `verify` reported them as orphans) are
/// dropped by the conversion, not refused and not carried into schema 5 unconverted
/// (`support::converted::assert_orphan_rows_are_dropped`).
#[test]
fn orphan_rows_of_a_schema_4_file_are_dropped_by_the_conversion() {
    assert_orphan_rows_are_dropped(FIXTURE, EXPORT);
}
