//! `ratchet export --vectors` writes each chunk's vectors in the store's other vector spaces
//! (`"spaces": {"NAME": [...]}`, the field `ingest --jsonl` reads), so an export ingested into
//! a fresh store given the same spaces is the same store: its export is byte for byte the
//! source's, `verify` is clean, and a search of each space gives the same hits. `ratchet copy`
//! adds the source's complete spaces to the destination and carries their vectors (and the
//! active space). A store without the space refuses such a line, naming the space's field.

use ratchetdb::{
    Chunk, Document, Embedder, HashingEmbedder, Metric, Options, SearchOptions, Store, Version,
};
use std::path::Path;
use std::process::Command;

const WORDS: [&str; 8] = [
    "ratchet", "pawl", "gear", "spring", "lever", "tooth", "wheel", "shaft",
];

fn ratchet(args: &[&str], db: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_ratchet"))
        .env_remove("RATCHET_MODEL")
        .args(args)
        .arg(db)
        .output()
        .expect("run ratchet")
}

fn export(db: &Path) -> String {
    let out = ratchet(&["export", "--vectors", "--db"], db);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// The first lines where two exports differ (`None` when they are equal).
fn first_difference(a: &str, b: &str) -> Option<(String, String)> {
    if a.lines().count() != b.lines().count() {
        return Some((
            "line count".into(),
            format!("{} vs {}", a.lines().count(), b.lines().count()),
        ));
    }
    a.lines()
        .zip(b.lines())
        .find(|(x, y)| x != y)
        .map(|(x, y)| (x.to_string(), y.to_string()))
}

fn narrow_options() -> Options {
    Options::default()
        .model(HashingEmbedder::new(64).expect("embedder").name())
        .dimension(64)
        .metric(Metric::Cosine)
}

/// The hits of `question` in every space of `db`, exact.
fn hits_in_every_space(db: &Path, question: &str) -> Vec<Vec<(String, String, u32)>> {
    let store = Store::open_read_only(db).expect("open");
    let mut out = Vec::new();
    for (space, dimension) in [("default", 64), ("wide", 128)] {
        let vector = HashingEmbedder::new(dimension)
            .expect("embedder")
            .embed(question)
            .expect("embed");
        let hits = store
            .search(
                &vector,
                6,
                &SearchOptions::default().exact(true).space(space),
            )
            .expect("search");
        assert_eq!(hits.len(), 6);
        out.push(
            hits.into_iter()
                .map(|h| (h.source, h.id, h.position))
                .collect(),
        );
    }
    out
}

#[test]
fn cli_export_and_copy_carry_every_vector_space() {
    let dir = tempfile::tempdir().expect("tempdir");
    let source = dir.path().join("source.redb");
    let narrow = HashingEmbedder::new(64).expect("embedder");
    let wide = HashingEmbedder::new(128).expect("embedder");
    {
        let store = Store::open(&source, narrow_options()).expect("create");
        for d in 0..24 {
            let mut doc = Document::new("notes", format!("doc{d}"), Version::number(1));
            for c in 0..3 {
                let text = format!("{} {} note {d} part {c}", WORDS[d % 8], WORDS[(d + c) % 8]);
                doc = doc.with_chunk(Chunk::new(
                    text.clone(),
                    narrow.embed(&text).expect("embed"),
                ));
            }
            store.upsert(doc).expect("write");
        }
        store
            .delete("notes", "doc3", Version::number(2))
            .expect("delete");
        store.add_space("wide", wide.name(), 128).expect("add");
        store
            .reembed("wide", &wide, 10, &mut |_| {})
            .expect("reembed");
        store.activate("wide").expect("activate");
    }
    let exported = export(&source);
    assert!(exported.contains(r#""spaces":{"wide":["#));

    // Into a fresh store given the same space: the same store.
    let lines = dir.path().join("export.jsonl");
    std::fs::write(&lines, &exported).expect("write export");
    let target = dir.path().join("target.redb");
    {
        let store = Store::open(&target, narrow_options()).expect("create");
        store.add_space("wide", wide.name(), 128).expect("add");
    }
    let ingest = ratchet(
        &["ingest", "--jsonl", lines.to_str().expect("path"), "--db"],
        &target,
    );
    assert!(
        ingest.status.success(),
        "{}",
        String::from_utf8_lossy(&ingest.stdout)
    );
    assert_eq!(first_difference(&export(&target), &exported), None);
    let store = Store::open_read_only(&target).expect("open");
    let report = store.verify().expect("verify");
    assert!(report.is_ok(), "{:#?}", report.violations);
    let wide_space = |store: &Store| {
        store
            .spaces()
            .expect("spaces")
            .into_iter()
            .find(|s| s.name == "wide")
            .expect("wide")
    };
    assert!(wide_space(&store).is_complete());
    drop(store);
    let question = "gear spring pawl";
    assert_eq!(
        hits_in_every_space(&target, question),
        hits_in_every_space(&source, question)
    );

    // A store without the space refuses the lines, naming the space's field.
    let bare = dir.path().join("bare.redb");
    drop(Store::open(&bare, narrow_options()).expect("create"));
    let refused = ratchet(
        &[
            "ingest",
            "--report",
            "--jsonl",
            lines.to_str().expect("path"),
            "--db",
        ],
        &bare,
    );
    assert_eq!(refused.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&refused.stdout).contains("chunks[0].spaces.wide"));

    // `ratchet copy` adds the space and carries its vectors and the active space.
    #[cfg(feature = "postgres")]
    {
        let copy = dir.path().join("copy.redb");
        let out = Command::new(env!("CARGO_BIN_EXE_ratchet"))
            .env_remove("RATCHET_MODEL")
            .args(["copy", "--from"])
            .arg(&source)
            .arg("--to")
            .arg(&copy)
            .output()
            .expect("run copy");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        // Regression: `copy` did not record the source's model, so the copy's `store` line
        // (and the CLI's choice of embedder for its searches) was lost. The whole export
        // agrees, its `store` line included.
        assert!(export(&copy).starts_with(r#"{"op":"store""#));
        assert_eq!(first_difference(&export(&copy), &exported), None);
        let (from, to) = (
            Store::open_read_only(&source).expect("open"),
            Store::open_read_only(&copy).expect("open"),
        );
        // Every space as in the source: the default one's model too, and the active one.
        assert_eq!(to.spaces().expect("spaces"), from.spaces().expect("spaces"));
        assert_eq!(to.model(), from.model());
        drop((from, to));
        assert_eq!(
            hits_in_every_space(&copy, question),
            hits_in_every_space(&source, question)
        );
    }
}
