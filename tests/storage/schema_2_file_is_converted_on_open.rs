//! A file written by the schema-2 build (each revision as one chunks row and one vectors row)
//! is converted to schema 10 when this build opens it: the vectors row gains its dimension
//! and carries the last bytes of the chunks row in the slack of its pages, the chunks row
//! gains its document's version and key and each chunk's vector slot and loses its chunks'
//! text hashes, each document row keeps the first 16 bytes of its content hash, and nothing
//! else changes. Every document, version, generation, content hash,
//! chunk text and metadata, every vector bit for bit and under the same id, every counter,
//! listing and skip-log row survive. The guard goes on deciding against the converted rows,
//! searches find the converted vectors, and the conversion is one transaction: an I/O failure
//! at any point of it leaves a file that opens (converted or still schema 2, then converted)
//! with the same contents. The fixture and how it was made: `tests/fixtures/schema2-README.md`.

use crate::support;

use ratchetdb::{Options, Store};
use redb::TableDefinition;
use std::path::Path;
use support::converted::{
    assert_damaged_files_convert_or_are_refused, assert_failed_conversions_reopen_whole,
    assert_searches_find_converted_chunks, table_rows, u32_at, LEAF_OVERHEAD, PAGE,
};
use support::schema_version;

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/schema2-store.redb"
);
const EXPORT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/schema2-export.json"
);

const CHANGELOG: TableDefinition<u64, &[u8]> = TableDefinition::new("changelog");

#[test]
fn schema_2_file_is_converted_on_open() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("old.redb");
    std::fs::copy(FIXTURE, &path).expect("copy the fixture");
    let old_rows = support::revision_rows(&path);
    let store = Store::open(&path, Options::default()).expect("a schema-2 file opens");
    support::assert_same_contents_as_export(&store, EXPORT, "after the conversion");
    // Vector and text searches find the converted chunks, and only live ones.
    assert_searches_find_converted_chunks(&store, EXPORT);
    drop(store);
    assert_eq!(schema_version(&path), 10);
    support::assert_docs_rows_are_schema_6(&path, EXPORT);

    // The changelog (addressed by vector ids, which did not change) is kept whole.
    assert_eq!(
        table_rows(&path, CHANGELOG),
        table_rows(Path::new(FIXTURE), CHANGELOG)
    );
    assert!(!table_rows(&path, CHANGELOG).is_empty());

    // The original is kept beside it, with the old build's rows.
    let backup = dir.path().join("old.redb.schema2-backup");
    assert_eq!(schema_version(&backup), 2, "the backup is schema 2");
    assert_eq!(
        support::revision_rows(&backup),
        old_rows,
        "the backup holds the original rows"
    );

    // The rows: the same vectors under a header with the dimension; the chunks row, with its
    // document's version and key and each chunk's slot (schema 4), without its chunks' text
    // hashes (schema 5), split: its last bytes after the vectors, never past the page run the
    // vectors need; the rest in the chunks row.
    let new_rows = support::revision_rows(&path);
    // Schema 5 has no `doc_keys` table: the keys are the old file's.
    let keys = support::doc_keys(&backup);
    assert!(
        !support::table_names(&path).contains(&"doc_keys".to_string()),
        "the converted file keeps no doc_keys table"
    );
    assert_eq!(
        new_rows.keys().collect::<Vec<_>>(),
        old_rows.keys().collect::<Vec<_>>()
    );
    let mut spilled = 0;
    for (id, (old_chunks, old_vectors)) in &old_rows {
        let (new_chunks, new_vectors) = &new_rows[id];
        let count = u32_at(new_vectors, 0);
        let dimension = u32_at(new_vectors, 4);
        assert_eq!(count, u32_at(old_vectors, 0), "document {id}: the count");
        assert_eq!(dimension, 32, "document {id}: the dimension");
        let end = 8 + count * 4 * (1 + dimension);
        assert_eq!(
            &new_vectors[8..end],
            &old_vectors[4..],
            "document {id}: the slots and vectors, bit for bit"
        );
        let spill = &new_vectors[end..];
        support::assert_converted_chunks_row(
            &format!("document {id}"),
            &[new_chunks.as_slice(), spill].concat(),
            support::OldChunksRow::V3(old_chunks, &keys[id]),
            new_vectors,
        );
        if end + LEAF_OVERHEAD <= PAGE {
            assert!(spill.is_empty(), "document {id}: a row that shares a leaf");
        } else {
            assert_eq!(
                (new_vectors.len() + LEAF_OVERHEAD).next_power_of_two(),
                (end + LEAF_OVERHEAD).next_power_of_two(),
                "document {id}: the spill took another page run"
            );
        }
        spilled += usize::from(!spill.is_empty());
    }
    // The fixture's live documents with vectors over a page, "long" and "meta": each row
    // carries chunk bytes in its page run's slack, or is coded (schema 8) into less page
    // space than the raw row's run (`support::revision_rows` shows it in the raw layout).
    let (_, coded) = ratchetdb::testkit::vectors_row_layouts(&path).expect("layouts");
    assert!(
        spilled + coded as usize >= 2,
        "only {spilled} rows carry chunk bytes and {coded} are coded"
    );

    // The guard decides against the converted rows.
    let store = Store::open(&path, Options::default()).expect("reopen the converted file");
    support::revise_converted_fixture(&store);
    let verified = store.verify().expect("verify");
    assert!(verified.is_ok(), "{:#?}", verified.violations);

    drop(store);
    support::reopen_verified(&path);
}

/// The conversion is one transaction: fail each of its writes, syncs and length changes
/// in turn; whatever the durable image then is, it opens with the fixture's contents.
#[test]
fn a_failed_conversion_leaves_a_file_that_opens_whole() {
    assert_failed_conversions_reopen_whole(FIXTURE, EXPORT);
}

/// A damaged schema-2 file: 400 flipped bits, each opened with the page checksums verified.
/// The conversion never panics: it converts, or refuses the file with a typed error.
#[test]
fn a_damaged_schema_2_file_is_converted_or_refused_never_a_panic() {
    assert_damaged_files_convert_or_are_refused(FIXTURE, 0x5c2e, "schema-2");
}
