//! Hostile ids and source names: NUL characters, empty strings and over-long ids are refused
//! with an `InputError` naming the field (`id`, `source`, `ids[i]` of a listing), through
//! upsert, delete, retain and purge; the store is unchanged. The byte limit counts UTF-8
//! bytes, not characters, so a multi-byte character cannot slip past it.
//!
//! Documented normalisation: none. Ids are opaque: any other Unicode (newlines, tabs, emoji,
//! right-to-left marks, `..`, `/`, a lone space) is kept byte for byte, and two spellings of
//! the same text (NFC "é" and NFD "e\u{301}") are two different documents.

use ratchetdb::testkit::{harness_doc, store_rows};
use ratchetdb::{Options, Outcome, Store, Version, WriteError};

fn refused<T: std::fmt::Debug>(result: Result<T, WriteError>, field: &str, what: &str) {
    match result {
        Err(WriteError::Input(e)) => assert_eq!(e.field, field, "{what}: {e}"),
        other => panic!("{what}: expected an InputError on {field}, got {other:?}"),
    }
}

#[test]
fn nul_empty_and_long_ids_are_refused_everywhere() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store =
        Store::open(dir.path().join("ids.redb"), Options::default().dimension(4)).expect("open");
    store
        .upsert(harness_doc("s", "ok", 1, 1, 1))
        .expect("write");
    let before = store_rows(&store).expect("rows");
    let at_limit = "x".repeat(1024);
    // 1023 ASCII bytes and a two-byte character: 1024 characters, 1025 bytes.
    let multibyte = format!("{}é", "x".repeat(1023));
    assert_eq!(multibyte.chars().count(), 1024);
    for (id, what) in [
        ("a\0b", "NUL inside"),
        ("\0", "only NUL"),
        ("", "empty"),
        (multibyte.as_str(), "1025 bytes"),
    ] {
        refused(store.upsert(harness_doc("s", id, 2, 1, 1)), "id", what);
        refused(store.delete("s", id, Version::number(2)), "id", what);
        refused(store.upsert(harness_doc(id, "x", 2, 1, 1)), "source", what);
        refused(store.delete(id, "x", Version::number(2)), "source", what);
        refused(store.retain(id, ["x"], Version::number(2)), "source", what);
        refused(
            store.retain("s", ["ok", id], Version::number(2)),
            "ids[1]",
            what,
        );
        refused(store.purge(id, Version::number(2)), "source", what);
        refused(
            store.writer().upsert(harness_doc("s", id, 2, 1, 1)),
            "id",
            what,
        );
    }
    assert_eq!(
        store_rows(&store).expect("rows"),
        before,
        "a refusal changed the store"
    );
    assert!(matches!(
        store.upsert(harness_doc("s", &at_limit, 1, 1, 1)),
        Ok(Outcome::Written { .. })
    ));
    assert!(store.verify().expect("verify").is_ok());
}

#[test]
fn other_unicode_is_opaque_and_kept_byte_for_byte() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(
        dir.path().join("opaque.redb"),
        Options::default().dimension(4),
    )
    .expect("open");
    let ids = [
        "line\nbreak",
        "tab\there",
        " ",
        "..",
        "../../etc/passwd",
        "a/b\\c",
        "emoji 🦀",
        "\u{202e}rtl",
        "caf\u{e9}",
        "cafe\u{301}",
        "\u{feff}bom",
    ];
    for id in ids {
        assert!(
            matches!(
                store.upsert(harness_doc("s", id, 1, 1, 1)),
                Ok(Outcome::Written { .. })
            ),
            "{id:?}"
        );
    }
    for id in ids {
        let got = store.get("s", id).expect("get").expect("present");
        assert_eq!(got.id, id, "kept byte for byte");
    }
    // NFC and NFD spellings are two documents.
    assert_eq!(store.stats().expect("stats").documents, ids.len() as u64);
    assert!(store.verify().expect("verify").is_ok());
}
