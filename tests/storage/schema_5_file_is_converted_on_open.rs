//! A file written by the schema-5 build (each document row with its whole 32-byte blake3
//! content hash), with a text index, a changelog and a persisted graph snapshot, is converted
//! to schema 10 when this build opens it (the original kept beside it as a backup): each
//! document row keeps the first 16 bytes of its content hash, what the guard compares, and is
//! 16 bytes shorter; nothing else changes. The chunks and vectors rows are kept byte for byte,
//! and with them every chunk text, slot, metadata and vector; every document, version,
//! generation, counter, listing and skip-log row survive, and the whole content hash `get`
//! and the export show is computed from the rows, the same as the schema-5 build stored. The
//! changelog and the graph snapshot are kept byte for byte, and the snapshot is what the
//! index loads. The guard goes on deciding against the converted rows (an equal version with
//! the same content is a duplicate, with other content a conflict), vector and text
//! searches resolve their hits to the converted chunks, and opening is one transaction: an
//! I/O failure at any point of it leaves a file that opens (converted, or still schema 5 and
//! then converted) with the same contents. The fixture and how it was made:
//! `tests/fixtures/schema5-README.md` (its documents and export are the schema-3 fixture's).

use crate::support;

use support::converted::{
    assert_converted_fixture_revises, assert_damaged_files_convert_or_are_refused,
    assert_failed_conversions_reopen_whole, convert_keeping_ids,
};

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/schema5-store.redb"
);
/// The schema-5 build exported the fixture byte for byte as the schema-3 one.
const EXPORT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/schema3-export.json"
);

#[test]
fn schema_5_file_is_converted_on_open() {
    // Written by a build that writes snapshot format 6. `convert_keeping_ids` checks the
    // document rows (each the old one with 16 bytes of its content hash) and the export.
    let converted = convert_keeping_ids(FIXTURE, EXPORT, 5, 6);
    // The revisions' rows are schema 6's already: kept byte for byte.
    assert_eq!(
        converted.new_rows, converted.old_rows,
        "the chunks and vectors rows"
    );
    let live_chunks: usize = converted
        .new_rows
        .values()
        .map(|(_, vectors)| support::vectors_row_slots(vectors).len())
        .sum();
    assert_eq!(
        Some(live_chunks as u64),
        support::fixture_export(EXPORT)["stats"]["chunks"].as_u64(),
        "the fixture's live chunks"
    );
    assert_converted_fixture_revises(&converted.path);
}

/// Opening is one transaction: fail each of its writes, syncs and length changes in turn;
/// whatever the durable image then is, it opens with the fixture's contents.
#[test]
fn a_failed_conversion_of_a_schema_5_file_leaves_a_file_that_opens_whole() {
    assert_failed_conversions_reopen_whole(FIXTURE, EXPORT);
}

/// A damaged schema-5 file: 400 flipped bits, each opened with the page checksums verified.
/// The conversion never panics: it converts, or refuses the file with a typed error.
#[test]
fn a_damaged_schema_5_file_is_converted_or_refused_never_a_panic() {
    assert_damaged_files_convert_or_are_refused(FIXTURE, 0x5c5e, "schema-5");
}
