//! Regression: `ratchet reembed --activate --drop-old`, stopped (a kill) after activating
//! the new space and before dropping the old one, did not finish when run again: the new
//! space was the active one by then, so "the space that was active before" was itself and
//! nothing was dropped, silently (exit 0), though its help promises that the same command
//! goes on from where it stopped. Now the run again drops the default space (promoting the
//! new one in its place), since it is the only other space; a third run says there is
//! nothing left to drop.

use crate::common::cli::{assert_no_panic, run, Run};
use ratchetdb::{Chunk, Document, Embedder, HashingEmbedder, Metric, Options, Store, Version};
use std::path::Path;
use std::time::Duration;

fn ratchet(args: &[&str]) -> Run {
    let out = run(
        args,
        |c| {
            c.env_remove("RATCHET_MODEL");
        },
        None,
        Duration::from_secs(120),
    );
    assert_no_panic(&out, args);
    out
}

/// A store of the 32-wide hashing embedder with the 96-wide one's space filled and active:
/// where `reembed --hashing 96 --activate --drop-old` stands when killed between its
/// activation and its drop.
fn stopped_before_the_drop(db: &Path) {
    let narrow = HashingEmbedder::new(32).expect("embedder");
    let wide = HashingEmbedder::new(96).expect("embedder");
    let store = Store::open(
        db,
        Options::default()
            .model(narrow.name())
            .dimension(32)
            .metric(Metric::Cosine),
    )
    .expect("create");
    for d in 0..20 {
        let text = format!("note {d} about the pawl and the wheel");
        let vector = narrow.embed(&text).expect("embed");
        store
            .upsert(
                Document::new("notes", format!("d{d}"), Version::number(1))
                    .with_chunk(Chunk::new(text, vector)),
            )
            .expect("write");
    }
    store.add_space(wide.name(), wide.name(), 96).expect("add");
    store
        .reembed(wide.name(), &wide, 8, &mut |_| {})
        .expect("reembed");
    store.activate(wide.name()).expect("activate");
}

#[test]
fn cli_reembed_drop_old_run_again_after_a_stop_finishes_the_drop() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("index.redb");
    stopped_before_the_drop(&db);
    let wide = HashingEmbedder::new(96).expect("embedder");
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

    let again = ratchet(&args);
    assert_eq!(again.code, Some(0), "{}", again.stderr);
    assert!(
        again.stderr.contains("was active already"),
        "{}",
        again.stderr
    );
    assert!(
        again.stderr.contains("replaced by space"),
        "{}",
        again.stderr
    );
    let store = Store::open_read_only(&db).expect("open");
    assert_eq!(store.model(), Some(wide.name()));
    assert_eq!(store.dimension(), Some(96));
    let spaces = store.spaces().expect("spaces");
    assert_eq!(spaces.len(), 1, "{spaces:?}");
    assert!(
        spaces[0].active && spaces[0].name == wide.name(),
        "{spaces:?}"
    );
    let report = store.verify().expect("verify");
    assert!(report.is_ok(), "{:#?}", report.violations);
    drop(store);

    let third = ratchet(&args);
    assert_eq!(third.code, Some(0), "{}", third.stderr);
    assert!(
        third
            .stderr
            .contains("is the default space already: nothing to drop"),
        "{}",
        third.stderr
    );
}
