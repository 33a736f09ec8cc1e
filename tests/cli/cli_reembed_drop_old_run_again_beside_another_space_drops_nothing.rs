//! `ratchet reembed --activate --drop-old` run again after a stop between the activation
//! and the drop, on a store with a third space: which space was active before the new one
//! is not recorded anywhere, and with two candidates (the default space and the third) it
//! cannot be told. The run drops nothing, fails (exit 1) saying so and naming the other
//! space, and says how to drop one; the store keeps every space. (Where the default space is
//! the only other one, the run finishes the drop:
//! `cli_reembed_drop_old_run_again_after_a_stop_finishes_the_drop.rs`.)

use crate::common::cli::{assert_no_panic, run};
use ratchetdb::{Chunk, Document, Embedder, HashingEmbedder, Metric, Options, Store, Version};
use std::time::Duration;

#[test]
fn cli_reembed_drop_old_run_again_beside_another_space_drops_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("index.redb");
    let narrow = HashingEmbedder::new(32).expect("embedder");
    let wide = HashingEmbedder::new(96).expect("embedder");
    {
        let store = Store::open(
            &db,
            Options::default()
                .model(narrow.name())
                .dimension(32)
                .metric(Metric::Cosine),
        )
        .expect("create");
        for d in 0..10 {
            let text = format!("note {d} about the pawl");
            let vector = narrow.embed(&text).expect("embed");
            store
                .upsert(
                    Document::new("notes", format!("d{d}"), Version::number(1))
                        .with_chunk(Chunk::new(text, vector)),
                )
                .expect("write");
        }
        store
            .add_space("third", "some-model", 8)
            .expect("add third");
        store.add_space(wide.name(), wide.name(), 96).expect("add");
        store
            .reembed(wide.name(), &wide, 8, &mut |_| {})
            .expect("reembed");
        store.activate(wide.name()).expect("activate");
    }
    let before = format!(
        "{:?}",
        Store::open_read_only(&db)
            .expect("open")
            .spaces()
            .expect("spaces")
    );
    let db_arg = db.to_string_lossy().into_owned();
    let args = [
        "reembed",
        "--db",
        db_arg.as_str(),
        "--hashing",
        "96",
        "--activate",
        "--drop-old",
    ];
    let out = run(
        &args,
        |c| {
            c.env_remove("RATCHET_MODEL");
        },
        None,
        Duration::from_secs(120),
    );
    assert_no_panic(&out, &args);
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    assert!(
        out.stderr.contains("nothing was dropped")
            && out.stderr.contains("\"third\"")
            && out.stderr.contains("spaces drop"),
        "{}",
        out.stderr
    );
    let after = format!(
        "{:?}",
        Store::open_read_only(&db)
            .expect("open")
            .spaces()
            .expect("spaces")
    );
    assert_eq!(after, before);
}
