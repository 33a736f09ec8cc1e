//! Regression (issue 45, item 6): folder ingest skipped `.html` and `.htm` files as "not
//! Markdown or text", so a documentation set (HTML pages) could not be indexed. A page is
//! now read by an HTML parser: its text, without scripts, styles or the head, with its
//! `<h1>`..`<h6>` headings feeding the chunks' `title` and `headings` as Markdown headings
//! do.

use crate::common;

use common::cli;
use ratchetdb::Store;
use serde_json::{json, Value};
use std::time::Duration;

const GUIDE: &str = r#"<!DOCTYPE html>
<html lang="en">
<head>
  <title>Ignored title</title>
  <style>body { color: teal; } .zebra-style {}</style>
  <script>var zebraScript = "never indexed";</script>
</head>
<body>
  <nav><a href="/">Home</a></nav>
  <h1>Kettle <em>manual</em></h1>
  <p>The kettle boils a litre in three minutes.</p>
  <h2 id="descale">Descaling</h2>
  <p>Use citric acid once a month;
     rinse twice.</p>
  <script>document.write("zebraInline")</script>
  <h3>Warranty</h3>
  <ul><li>Two years on the element.</li><li>One year on the lid.</li></ul>
  <noscript>zebraNoscript</noscript>
</body>
</html>"#;

const LEGACY: &str =
    "<HTML><BODY><H2>Spout filter</H2><P>Replace the spout filter every six months.</BODY></HTML>";

#[test]
fn html_pages_are_indexed_with_their_headings() {
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("site");
    std::fs::create_dir_all(docs.join("care")).unwrap();
    std::fs::write(docs.join("guide.html"), GUIDE).unwrap();
    std::fs::write(docs.join("care/filter.HTM"), LEGACY).unwrap();
    let db = dir.path().join("store.redb");
    // Small chunks, so that each section is its own chunk.
    let run = cli::ingest_folder(&db, &docs, &["--chunk-size", "60", "--overlap", "0"]);
    assert_eq!(run.code, Some(0), "{}{}", run.stdout, run.stderr);
    assert!(
        !run.stdout.contains("not Markdown or text"),
        "no page is skipped: {}",
        run.stdout
    );

    let store = Store::open_read_only(&db).expect("open");
    let documents = store.documents(false).expect("documents");
    let ids: Vec<&str> = documents.iter().map(|d| d.id.as_str()).collect();
    assert_eq!(ids, ["care/filter.HTM", "guide.html"]);
    let chunks: Vec<(String, Value)> = documents
        .iter()
        .flat_map(|d| d.chunks.iter().map(|c| (c.text.clone(), c.meta.clone())))
        .collect();
    let all: String = chunks.iter().map(|(t, _)| format!("{t}\n---\n")).collect();
    for hidden in ["zebra", "color: teal", "Ignored title", "<p>", "</", "&"] {
        assert!(!all.contains(hidden), "{hidden:?} is indexed:\n{all}");
    }
    let chunk_with = |needle: &str| -> &(String, Value) {
        chunks
            .iter()
            .find(|(text, _)| text.contains(needle))
            .unwrap_or_else(|| panic!("no chunk holds {needle:?}:\n{all}"))
    };
    // Whitespace of the markup collapses: the sentence reads as one.
    let (_, descale) = chunk_with("Use citric acid once a month; rinse twice.");
    assert_eq!(descale["headings"], json!(["Kettle manual", "Descaling"]));
    assert_eq!(descale["title"], "Kettle manual");
    assert_eq!(descale["ext"], "html");
    let (_, warranty) = chunk_with("Two years on the element.");
    assert_eq!(
        warranty["headings"],
        json!(["Kettle manual", "Descaling", "Warranty"])
    );
    let (_, filter) = chunk_with("Replace the spout filter every six months.");
    assert_eq!(filter["headings"], json!(["Spout filter"]));
    assert_eq!(filter["title"], "Spout filter");

    // Search finds the page's text, and filters on its headings.
    let db_arg = db.to_str().unwrap();
    let search = cli::run(
        &[
            "search",
            "--db",
            db_arg,
            "citric acid descaling",
            "-k",
            "1",
            "--json",
        ],
        |_| {},
        None,
        Duration::from_secs(60),
    );
    assert_eq!(search.code, Some(0), "{}{}", search.stdout, search.stderr);
    let hit: Value = serde_json::from_str(search.stdout.lines().next().expect("a hit")).unwrap();
    assert_eq!(hit["id"], "guide.html", "{}", search.stdout);
}
