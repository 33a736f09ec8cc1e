//! A file written by the schema-3 build (each live revision as one chunks row and one
//! vectors row, the vectors row with its dimension and the last bytes of the chunks row in
//! the slack of its pages; the chunks row without the document's version, key or slots),
//! with a text index and a persisted graph snapshot, is converted to schema 10 when this
//! build opens it (the original kept beside it as a backup): the chunks row gains its
//! document's version and key and each chunk's vector slot and loses its chunks' text
//! hashes, and is split again beside its vectors; each document row keeps the first 16
//! bytes of its content hash. Every document, version, generation,
//! content hash, chunk text and metadata, every vector bit for bit and under the same id,
//! every counter, listing and skip-log row survive; the changelog and the graph snapshot
//! (addressed by vector ids, which do not change) are kept byte for byte, and the snapshot
//! is what the index loads. The text index stays. The guard goes on deciding against the
//! converted rows, vector and text searches resolve their hits to the converted chunks
//! (document, version, generation, position, text, metadata), and opening is one
//! transaction: an I/O failure at any point of it leaves a file that opens (converted, or
//! still schema 3 and then converted) with the same contents. The fixture and how it was
//! made: `tests/fixtures/schema3-README.md`.

use crate::support;

use support::converted::{
    assert_converted_fixture_revises, assert_damaged_files_convert_or_are_refused,
    assert_failed_conversions_reopen_whole, assert_orphan_rows_are_dropped, convert_keeping_ids,
    vectors_end,
};

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/schema3-store.redb"
);
const EXPORT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/schema3-export.json"
);

#[test]
fn schema_3_file_is_converted_on_open() {
    // Written before snapshot format 5: format 3, every row at its capacity.
    let converted = convert_keeping_ids(FIXTURE, EXPORT, 3, 3);
    // Each chunks row (joined with what its vectors row carries) is the old one with its
    // document's key and its chunks' slots, without their text hashes. Schema 5 has no
    // `doc_keys` table: the keys are the old file's.
    let keys = support::doc_keys(&converted.backup);
    for (id, (old_chunks, old_vectors)) in &converted.old_rows {
        let (new_chunks, new_vectors) = &converted.new_rows[id];
        let end = vectors_end(old_vectors);
        support::assert_converted_chunks_row(
            &format!("document {id}"),
            &[new_chunks.as_slice(), &new_vectors[end..]].concat(),
            support::OldChunksRow::V3(
                &[old_chunks.as_slice(), &old_vectors[end..]].concat(),
                &keys[id],
            ),
            new_vectors,
        );
    }
    assert_converted_fixture_revises(&converted.path);
}

/// Opening is one transaction: fail each of its writes, syncs and length changes in turn;
/// whatever the durable image then is, it opens with the fixture's contents.
#[test]
fn a_failed_conversion_of_a_schema_3_file_leaves_a_file_that_opens_whole() {
    assert_failed_conversions_reopen_whole(FIXTURE, EXPORT);
}

/// A damaged schema-3 file: 400 flipped bits, each opened with the page checksums verified.
/// The conversion never panics: it converts, or refuses the file with a typed error.
#[test]
fn a_damaged_schema_3_file_is_converted_or_refused_never_a_panic() {
    assert_damaged_files_convert_or_are_refused(FIXTURE, 0x5c3e, "schema-3");
}

/// Rows no live document claims (a schema-3 build's `verify` reported them as orphans) are
/// dropped by the conversion, not refused and not carried into schema 5 unconverted
/// (`support::converted::assert_orphan_rows_are_dropped`).
#[test]
fn orphan_rows_of_a_schema_3_file_are_dropped_by_the_conversion() {
    assert_orphan_rows_are_dropped(FIXTURE, EXPORT);
}
