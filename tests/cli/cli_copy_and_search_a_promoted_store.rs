//! Regression (issue 46): on a store whose default space was replaced by a promotion
//! (`reembed --activate --drop-old`), `ratchet copy` added the promoted space to the
//! destination as an extra space (`spaces()` lists the default space under the promoted
//! name), so every copied document was refused for lacking its vector and the copy failed;
//! and `ratchet search --space default` was refused as an unknown space. Now the copy is the
//! same store (whole export equal, `verify` clean) and `--space default` searches the default
//! space, as the promoted name does.

use ratchetdb::{Chunk, Document, Embedder, HashingEmbedder, Metric, Options, Store, Version};
use std::process::Command;

fn ratchet() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ratchet"));
    command.env_remove("RATCHET_MODEL");
    command
}

fn run(command: &mut Command) -> String {
    let out = command.output().expect("run ratchet");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[test]
fn cli_copy_and_search_a_promoted_store() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("index.redb");
    let narrow = HashingEmbedder::new(64).expect("embedder");
    {
        let store = Store::open(
            &db,
            Options::default()
                .model(narrow.name())
                .dimension(64)
                .metric(Metric::Cosine),
        )
        .expect("create");
        for d in 0..12 {
            let text = format!("note {d} about gear {} and lever", d * 7);
            let doc = Document::new("notes", format!("doc{d}"), Version::number(1)).with_chunk(
                Chunk::new(text.clone(), narrow.embed(&text).expect("embed")),
            );
            store.upsert(doc).expect("write");
        }
    }
    run(ratchet().args(["reembed", "--db"]).arg(&db).args([
        "--hashing",
        "32",
        "--space",
        "wide",
        "--activate",
        "--drop-old",
    ]));

    for space in ["default", "wide"] {
        let found = run(ratchet().args(["search", "--db"]).arg(&db).args([
            "--mode",
            "vector",
            "--json",
            "-k",
            "1",
            "--space",
            space,
            "note 5 about gear 35 and lever",
        ]));
        assert!(found.contains("note 5 about gear 35"), "{space}: {found}");
    }

    #[cfg(feature = "postgres")]
    {
        let copy = dir.path().join("copy.redb");
        run(ratchet()
            .args(["copy", "--from"])
            .arg(&db)
            .arg("--to")
            .arg(&copy));
        let export =
            |path: &std::path::Path| run(ratchet().args(["export", "--vectors", "--db"]).arg(path));
        assert_eq!(export(&copy), export(&db));
        run(ratchet().args(["verify", "--db"]).arg(&copy));
        let (from, to) = (
            Store::open_read_only(&db).expect("open"),
            Store::open_read_only(&copy).expect("open"),
        );
        assert_eq!(to.model(), from.model());
        assert_eq!(to.dimension(), Some(32));
    }
}
