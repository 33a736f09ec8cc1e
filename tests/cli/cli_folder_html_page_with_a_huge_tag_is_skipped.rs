//! Issue 46 (review of today's merges), item 6: html5ever's tokenizer takes time that grows
//! with the square of one tag's attributes, so a page `<p a0 a1 ... a500000>` held folder
//! ingest for minutes. A page with a tag longer than 64 KiB is now skipped before it is
//! tokenized, with a warning naming it and the reason, and counted (exit 3 only with
//! `--strict`); the other pages are indexed. (Not timed: the cli helper's deadline is the
//! guard.)

use crate::common;

use common::cli;
use ratchetdb::Store;

#[test]
fn a_page_with_a_100000_attribute_tag_is_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("site");
    std::fs::create_dir_all(&docs).unwrap();
    let attributes: String = (0..100_000).map(|i| format!(" a{i}")).collect();
    std::fs::write(
        docs.join("hostile.html"),
        format!("<html><body><p{attributes}>zebra</p></body></html>"),
    )
    .unwrap();
    std::fs::write(docs.join("fine.html"), "<p>kettle manual</p>").unwrap();

    let db = dir.path().join("store.redb");
    let run = cli::ingest_folder(&db, &docs, &[]);
    assert_eq!(run.code, Some(0), "{}{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains("hostile.html") && run.stderr.contains("64 KiB"),
        "a warning names the page and the reason: {}",
        run.stderr
    );
    assert!(
        run.stdout.contains("HTML tag over 64 KiB 1"),
        "the summary counts it: {}",
        run.stdout
    );
    let store = Store::open_read_only(&db).unwrap();
    let ids: Vec<String> = store
        .documents(false)
        .unwrap()
        .into_iter()
        .map(|d| d.id)
        .collect();
    assert_eq!(ids, ["fine.html"]);

    let strict = cli::ingest_folder(&db, &docs, &["--strict"]);
    assert_eq!(strict.code, Some(3), "{}{}", strict.stdout, strict.stderr);
}
