//! `ratchet reembed --hashing 128 --activate --drop-old` on a store built with
//! `hash-lexical-v1-64` (issue 46): once the new space is active, the old model's vectors
//! are dropped by promoting the new space in the default one's place. Afterwards the store
//! records the 128-wide model alone (`ratchet spaces list`, `stats`: one space), `verify` is
//! clean, `ratchet ingest` embeds new files with the 128-wide embedder only (a 64-wide vector
//! is never asked for), and `ratchet search` finds old and new chunks by their 128-wide
//! vectors, by default and naming the promoted space.

use ratchetdb::{
    Chunk, Document, Embedder, HashingEmbedder, Metric, Options, SearchOptions, Store, Version,
};
use std::process::Command;

fn ratchet() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ratchet"));
    command.env_remove("RATCHET_MODEL");
    command
}

fn run(command: &mut Command) -> (String, String) {
    let out = command.output().expect("run ratchet");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stdout}\n{stderr}");
    (stdout, stderr)
}

#[test]
fn cli_reembed_drop_old_promotes_the_new_embedder() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("index.redb");
    let narrow = HashingEmbedder::new(64).expect("embedder");
    let wide = HashingEmbedder::new(128).expect("embedder");
    {
        let store = Store::open(
            &db,
            Options::default()
                .model(narrow.name())
                .dimension(64)
                .metric(Metric::Cosine),
        )
        .expect("create");
        for d in 0..40 {
            let mut doc = Document::new("notes", format!("doc{d}"), Version::number(1));
            for c in 0..3 {
                let text = format!("note {d} part {c} about gear {} and lever", d * 7 + c);
                let vector = narrow.embed(&text).expect("embed");
                doc = doc.with_chunk(Chunk::new(text, vector));
            }
            store.upsert(doc).expect("write");
        }
    }
    let (_, stderr) = run(ratchet().args(["reembed", "--db"]).arg(&db).args([
        "--hashing",
        "128",
        "--activate",
        "--drop-old",
    ]));
    assert!(stderr.contains("is active"), "{stderr}");
    assert!(stderr.contains("replaced by space"), "{stderr}");

    let (listed, _) = run(ratchet().args(["spaces", "list", "--db"]).arg(&db));
    let lines: Vec<&str> = listed.lines().collect();
    assert_eq!(lines.len(), 1, "{listed}");
    assert!(
        lines[0].starts_with(&format!("{} (active)", wide.name()))
            && lines[0].contains("128 dims")
            && lines[0].contains("120/120 chunks"),
        "{listed}"
    );
    let (table, _) = run(ratchet().args(["stats", "--db"]).arg(&db));
    assert!(!table.contains("space "), "{table}");
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("dimension") && l.contains("128")),
        "{table}"
    );
    run(ratchet().args(["verify", "--db"]).arg(&db));

    // Ingest embeds with the new model alone: the store takes 128-wide vectors only.
    let docs = dir.path().join("docs");
    std::fs::create_dir(&docs).expect("mkdir");
    std::fs::write(
        docs.join("new.md"),
        "# Crank\n\nA crank latch turns the ratchet wheel.\n",
    )
    .expect("write");
    let (_, stderr) = run(ratchet().args(["ingest", "--db"]).arg(&db).arg(&docs));
    assert!(!stderr.contains("warning"), "{stderr}");
    let (found, _) = run(ratchet().args(["search", "--db"]).arg(&db).args([
        "--mode",
        "vector",
        "--json",
        "-k",
        "1",
        "crank latch ratchet wheel",
    ]));
    assert!(found.contains("A crank latch"), "{found}");

    let store = Store::open_read_only(&db).expect("open");
    assert_eq!(store.dimension(), Some(128));
    assert_eq!(store.model(), Some(wide.name()));
    let spaces = store.spaces().expect("spaces");
    assert_eq!(spaces.len(), 1, "{spaces:?}");
    assert!(spaces[0].live_chunks > 120, "{spaces:?}");
    for text in [
        "note 0 part 0 about gear 0 and lever",
        "note 39 part 2 about gear 275 and lever",
    ] {
        for options in [
            SearchOptions::default(),
            SearchOptions::default().space(wide.name()),
        ] {
            let hits = store
                .search(&wide.embed(text).expect("embed"), 1, &options.exact(true))
                .expect("search");
            assert_eq!(hits[0].text, text);
            assert!(hits[0].score > 0.999, "{:?}", hits[0]);
        }
    }
    let report = store.verify().expect("verify");
    assert!(report.is_ok(), "{:#?}", report.violations);
}
