//! `ratchet search --space NAME` searches that vector space, whatever space is active: the
//! QUESTION is embedded with the space's model (vector and hybrid mode alike) and the hits
//! are the library's for the same space; without `--space` the active space is searched.
//! An unknown space, or one whose model this ratchet cannot run, is refused naming
//! `--space`, and a `--vector` of another width than the space's names `--vector`.

use ratchetdb::{
    Chunk, Document, Embedder, HashingEmbedder, Metric, Options, SearchOptions, Store, Version,
};
use std::path::Path;
use std::process::{Command, Output};

const WORDS: [&str; 8] = [
    "ratchet", "pawl", "gear", "spring", "lever", "tooth", "wheel", "shaft",
];

fn ratchet(db: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ratchet"))
        .env_remove("RATCHET_MODEL")
        .args(["search", "--db"])
        .arg(db)
        .args(args)
        .output()
        .expect("run search")
}

/// The (source, id, position) of each hit of a `--json` search.
fn hits_of(out: &Output) -> Vec<(String, String, u64)> {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|line| {
            let hit: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
            (
                hit["source"].as_str().expect("source").to_string(),
                hit["id"].as_str().expect("id").to_string(),
                hit["position"].as_u64().expect("position"),
            )
        })
        .collect()
}

fn keys(hits: Vec<ratchetdb::Hit>) -> Vec<(String, String, u64)> {
    hits.into_iter()
        .map(|h| (h.source, h.id, u64::from(h.position)))
        .collect()
}

#[test]
fn cli_search_a_named_space() {
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
            let text = format!(
                "{} {} {} note {d}",
                WORDS[d % 8],
                WORDS[(d / 8) % 8],
                WORDS[(d * 3) % 8]
            );
            let vector = narrow.embed(&text).expect("embed");
            store
                .upsert(
                    Document::new("notes", format!("doc{d}"), Version::number(1))
                        .with_chunk(Chunk::new(text, vector)),
                )
                .expect("write");
        }
        store.add_space("wide", wide.name(), 128).expect("add wide");
        store
            .reembed("wide", &wide, 16, &mut |_| {})
            .expect("reembed");
        store
            .add_space("odd", "a-model-ratchet-cannot-run", 8)
            .expect("add odd");
    }
    let question = "gear spring lever";
    let store = Store::open_read_only(&db).expect("open");
    let exact = SearchOptions::default().exact(true);

    // Vector mode, the named space: the question embedded by the space's model.
    let want_wide = keys(
        store
            .search(
                &wide.embed(question).expect("embed"),
                5,
                &exact.clone().space("wide"),
            )
            .expect("search wide"),
    );
    let got_wide = hits_of(&ratchet(
        &db,
        &[
            "--space", "wide", "--mode", "vector", "--exact", "--json", question,
        ],
    ));
    assert_eq!(got_wide, want_wide);
    assert_eq!(want_wide.len(), 5);

    // Without --space: the active space (still the default one).
    let want_default = keys(
        store
            .search(&narrow.embed(question).expect("embed"), 5, &exact)
            .expect("search default"),
    );
    let got_default = hits_of(&ratchet(
        &db,
        &["--mode", "vector", "--exact", "--json", question],
    ));
    assert_eq!(got_default, want_default);
    let got_named_default = hits_of(&ratchet(
        &db,
        &[
            "--space", "default", "--mode", "vector", "--exact", "--json", question,
        ],
    ));
    assert_eq!(got_named_default, want_default);

    // Hybrid mode: the vector half in the named space.
    let want_hybrid = keys(
        store
            .search_hybrid(
                question,
                &wide.embed(question).expect("embed"),
                5,
                &exact.clone().space("wide"),
            )
            .expect("hybrid wide"),
    );
    let got_hybrid = hits_of(&ratchet(
        &db,
        &[
            "--space", "wide", "--mode", "hybrid", "--exact", "--json", question,
        ],
    ));
    assert_eq!(got_hybrid, want_hybrid);

    // A raw vector of the space's width.
    let vector = serde_json::to_string(&wide.embed(question).expect("embed")).expect("json");
    let got_vector = hits_of(&ratchet(
        &db,
        &["--space", "wide", "--exact", "--json", "--vector", &vector],
    ));
    assert_eq!(got_vector, want_wide);

    // Refusals name the argument.
    let unknown = ratchet(&db, &["--space", "nope", question]);
    let stderr = String::from_utf8_lossy(&unknown.stderr);
    assert_eq!(unknown.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("--space nope"), "{stderr}");
    assert!(stderr.contains("default, odd, wide"), "{stderr}");
    let unrunnable = ratchet(&db, &["--space", "odd", "--mode", "vector", question]);
    let stderr = String::from_utf8_lossy(&unrunnable.stderr);
    assert_eq!(unrunnable.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("--space odd"), "{stderr}");
    assert!(stderr.contains("a-model-ratchet-cannot-run"), "{stderr}");
    let narrow_vector =
        serde_json::to_string(&narrow.embed(question).expect("embed")).expect("json");
    let wrong_width = ratchet(&db, &["--space", "wide", "--vector", &narrow_vector]);
    let stderr = String::from_utf8_lossy(&wrong_width.stderr);
    assert_eq!(wrong_width.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("--vector"), "{stderr}");
}
