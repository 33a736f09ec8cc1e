//! Regression: one damaged space row stopped every write of the store and could not be
//! removed. Every write transaction decoded every space row (`load_spaces`, with `?`), so
//! each upsert and delete failed `Corrupted`, even of documents no space needed; `drop_space`
//! decoded the row before removing it; `verify` listed the spaces first and so returned an
//! error instead of its report (whose "undecodable row" line could never run); `spaces()`,
//! `stats()` and an export with vectors failed too.
//!
//! Now a damaged space (here its row cut short by one byte, written with redb directly) is
//! the only thing refused: `verify` reports it, naming it, as a violation; writes that do
//! not name it go on (and keep the healthy complete space complete); a vector for it, a
//! guarded write into it, a search of it, activating it or re-embedding it are refused
//! naming it; the listing and the export leave it out; and `drop_space` removes it with
//! every vector it had, after which `verify` is clean and the name can be added again.

use super::{open, revision, wide, Wide, WIDE};
use ratchetdb::{
    Chunk, Document, ReadError, ReembedError, SearchOptions, SpaceVector, Store, Version,
    WriteError,
};
use redb::{ReadableDatabase, ReadableTable, TableDefinition};
use std::path::Path;

const SPACES: TableDefinition<&str, &[u8]> = TableDefinition::new("spaces");
const SPACE_VECTORS: TableDefinition<(u32, u64), &[u8]> = TableDefinition::new("space_vectors");

/// Cuts the last byte off space `name`'s row in the file at `path`.
fn truncate_space_row(path: &Path, name: &str) {
    let db = redb::Database::open(path).expect("open with redb");
    let txn = db.begin_write().expect("write");
    {
        let mut table = txn.open_table(SPACES).expect("spaces");
        let bytes = table
            .get(name)
            .expect("get")
            .expect("the space's row")
            .value()
            .to_vec();
        table
            .insert(name, &bytes[..bytes.len() - 1])
            .expect("insert");
    }
    txn.commit().expect("commit");
}

/// Rows of `space_vectors` in the file at `path`.
fn space_vector_rows(path: &Path) -> u64 {
    let db = redb::Database::open(path).expect("open with redb");
    let txn = db.begin_read().expect("read");
    let table = txn.open_table(SPACE_VECTORS).expect("space_vectors");
    table.iter().expect("iter").count() as u64
}

/// [`revision`] with each chunk's vector in `keep` (the healthy complete space).
fn with_keep(id: &str, version: u64, chunks: usize) -> Document {
    let mut doc = Document::new("s", id, Version::number(version));
    for chunk in revision(id, version, chunks).chunks {
        let vector = wide(&chunk.text);
        doc = doc.with_chunk(chunk.with_space_vector("keep", vector));
    }
    doc
}

/// Document `new`'s first chunk as a walk hands it out (from a walk of a space added for
/// the purpose, then dropped).
fn new_chunk(store: &Store) -> ratchetdb::MissingChunk {
    store.add_space("probe", "probe", 1).expect("probe");
    let chunk = store
        .chunks_missing_vectors("probe", None, 100)
        .expect("walk")
        .into_iter()
        .find(|c| c.id == "new" && c.position == 0)
        .expect("new's chunk");
    store.drop_space("probe").expect("drop probe");
    chunk
}

fn assert_corrupted_naming_wide(what: &str, error: impl std::fmt::Display) {
    let message = error.to_string();
    assert!(
        message.contains("corrupted") && message.contains("\"wide\""),
        "{what}: {message}"
    );
}

#[test]
fn a_damaged_space_row_stops_only_what_needs_that_space() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("db.redb");
    {
        let store = open(dir.path());
        for d in 0..6 {
            store
                .upsert(revision(&format!("d{d}"), 1, 3))
                .expect("write");
        }
        for space in ["keep", "wide"] {
            store.add_space(space, "wide-test", WIDE).expect("add");
            store
                .reembed(space, &Wide, 4, &mut |_| {})
                .expect("reembed");
        }
        assert!(store.verify().expect("verify").is_ok());
    }
    let rows_before = space_vector_rows(&path);
    assert_eq!(rows_before, 2 * 18);
    truncate_space_row(&path, "wide");

    let store = open(dir.path());
    // Verify reports the damaged row as a violation naming the space (once, not once per
    // vector), instead of failing.
    let report = store.verify().expect("verify returns a report");
    assert_eq!(report.violations.len(), 1, "{:#?}", report.violations);
    let problem = &report.violations[0].problem;
    assert!(
        problem.contains("\"wide\"") && problem.contains("undecodable row"),
        "{problem}"
    );

    // The listing and the stats leave the damaged space out.
    let names: Vec<String> = store
        .spaces()
        .expect("spaces")
        .into_iter()
        .map(|s| s.name)
        .collect();
    assert_eq!(names, ["default", "keep"]);
    assert_eq!(store.stats().expect("stats").spaces.len(), 1);

    // Writes that do not name it go on: an upsert (with its vectors for the complete
    // `keep`), a rewrite, a delete.
    store
        .upsert(with_keep("new", 1, 2))
        .expect("a new document");
    store.upsert(with_keep("d0", 2, 3)).expect("a rewrite");
    store
        .delete("s", "d1", Version::number(2))
        .expect("a delete");
    let keep = store
        .spaces()
        .expect("spaces")
        .into_iter()
        .find(|s| s.name == "keep")
        .expect("keep");
    assert!(keep.is_complete(), "{keep:?}");
    assert_eq!(keep.vectors, keep.live_chunks);

    // What needs it is refused, naming it.
    let text = "new v2 c0";
    let needs_wide = Document::new("s", "new", Version::number(2)).with_chunk(
        Chunk::new(text, crate::common::vector(text))
            .with_space_vector("keep", wide(text))
            .with_space_vector("wide", wide(text)),
    );
    match store.upsert(needs_wide) {
        Err(WriteError::Input(e)) => {
            assert_eq!(e.field, "chunks[0].spaces.wide");
            assert!(e.problem.contains("damaged"), "{}", e.problem);
        }
        other => panic!("a vector for the damaged space: {other:?}"),
    }
    let missing = store
        .chunks_missing_vectors("keep", None, 1)
        .expect("walk keep");
    assert!(missing.is_empty());
    let chunk = new_chunk(&store);
    let guarded = SpaceVector::for_chunk(&chunk, wide(&chunk.text));
    assert_corrupted_naming_wide(
        "guarded write",
        store
            .write_space_vectors("wide", vec![guarded])
            .expect_err("a guarded write into the damaged space"),
    );
    assert_corrupted_naming_wide(
        "search",
        store
            .search(&wide(text), 3, &SearchOptions::default().space("wide"))
            .expect_err("a search of the damaged space"),
    );
    assert_corrupted_naming_wide(
        "activate",
        store
            .activate("wide")
            .expect_err("activating the damaged space"),
    );
    match store.reembed("wide", &Wide, 4, &mut |_| {}) {
        Err(ReembedError::Read(e @ ReadError::Corrupted { .. })) => {
            assert_corrupted_naming_wide("reembed", e)
        }
        other => panic!("re-embedding the damaged space: {other:?}"),
    }
    match store.add_space("wide", "wide-test", WIDE) {
        Err(WriteError::Input(e)) => assert!(e.problem.contains("damaged"), "{}", e.problem),
        other => panic!("adding over the damaged space: {other:?}"),
    }

    // The export carries every readable space's vectors, and leaves the damaged one out.
    let exported = store.documents(true).expect("export");
    for doc in &exported {
        for chunk in &doc.chunks {
            assert!(chunk.spaces.contains_key("keep"), "{doc:?}");
            assert!(!chunk.spaces.contains_key("wide"), "{doc:?}");
        }
    }

    // Dropping it removes the row and every vector it had.
    let freed = store.drop_space("wide").expect("drop the damaged space");
    assert_eq!(freed, 18);
    let report = store.verify().expect("verify");
    assert!(report.is_ok(), "{:#?}", report.violations);
    store
        .add_space("wide", "wide-test", WIDE)
        .expect("add again");
    store
        .reembed("wide", &Wide, 4, &mut |_| {})
        .expect("fill again");
    let report = store.verify().expect("verify");
    assert!(report.is_ok(), "{:#?}", report.violations);
    drop(store);
    let keep_rows = {
        let store = open(dir.path());
        store.spaces().expect("spaces")[1].vectors
    };
    assert_eq!(space_vector_rows(&path), 2 * keep_rows);
}
