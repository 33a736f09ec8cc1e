//! Regression: `ratchet reembed --activate --drop-old`, stopped (a kill) after activating
//! the new space and before dropping the old one, did not finish when run again: the new
//! space was the active one by then, so "the space that was active before" was itself and
//! nothing was dropped, silently (exit 0), though its help promises that the same command
//! goes on from where it stopped. Now the run again drops the default space (promoting the
//! new one in its place), since it is the only other space; a third run says there is
//! nothing left to drop.

use crate::common::cli::{
    fill_and_activate_hashing_space, hashing_store, ratchet_without_model, Run,
};
use ratchetdb::{Embedder, HashingEmbedder, Store};
use std::path::Path;
use std::time::Duration;

fn ratchet(args: &[&str]) -> Run {
    ratchet_without_model(args, Duration::from_secs(120))
}

/// A store of the 32-wide hashing embedder with the 96-wide one's space filled and active:
/// where `reembed --hashing 96 --activate --drop-old` stands when killed between its
/// activation and its drop.
fn stopped_before_the_drop(db: &Path) {
    let texts: Vec<String> = (0..20)
        .map(|d| format!("note {d} about the pawl and the wheel"))
        .collect();
    fill_and_activate_hashing_space(&hashing_store(db, 32, &texts), 96);
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
