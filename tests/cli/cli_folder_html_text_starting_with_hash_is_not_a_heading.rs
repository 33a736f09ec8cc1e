//! Issue 46 (review of today's merges), item 6: an HTML page's text was written as Markdown
//! as it was, so a paragraph or `<pre>` line starting with `#` became a Markdown heading
//! and changed the chunks' `title` and `headings`. Such a line is now escaped (`\#`): only
//! `<h1>`..`<h6>` are headings.

use crate::common;

use common::cli;
use ratchetdb::Store;
use serde_json::{json, Value};

#[test]
fn a_paragraph_starting_with_hash_is_not_a_heading() {
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("site");
    std::fs::create_dir_all(&docs).unwrap();
    std::fs::write(
        docs.join("page.html"),
        "<h1>Kettle</h1><p>#not a heading</p><pre>## nor this\n```</pre>\
         <p>The kettle boils a litre of water in three minutes flat.</p>\
         <p>Descale it with citric acid once a month, then rinse twice.</p>",
    )
    .unwrap();
    std::fs::write(docs.join("bare.html"), "<p># hashtag first</p>").unwrap();

    let db = dir.path().join("store.redb");
    // Small chunks, so that chunks start after the `#` lines.
    let run = cli::ingest_folder(&db, &docs, &["--chunk-size", "60", "--overlap", "0"]);
    assert_eq!(run.code, Some(0), "{}{}", run.stdout, run.stderr);
    let store = Store::open_read_only(&db).unwrap();
    for document in store.documents(false).unwrap() {
        for chunk in &document.chunks {
            let meta: &Value = &chunk.meta;
            let expected_title = if document.id == "page.html" {
                "Kettle"
            } else {
                "bare"
            };
            assert_eq!(
                meta["title"],
                json!(expected_title),
                "{}: {meta}",
                document.id
            );
            let headings = meta["headings"].as_array().unwrap();
            assert!(
                headings.iter().all(|h| h == "Kettle"),
                "{}: {meta}",
                document.id
            );
        }
    }
    let documents = store.documents(false).unwrap();
    let page = documents.iter().find(|d| d.id == "page.html").unwrap();
    assert!(page.chunks.len() > 2, "{:?}", page.chunks);
}
