//! `ratchet reembed --activate --drop-old` run again after a stop between the activation
//! and the drop, on a store with a third space: which space was active before the new one
//! is not recorded anywhere, and with two candidates (the default space and the third) it
//! cannot be told. The run drops nothing, fails (exit 1) saying so and naming the other
//! space, and says how to drop one; the store keeps every space. (Where the default space is
//! the only other one, the run finishes the drop:
//! `cli_reembed_drop_old_run_again_after_a_stop_finishes_the_drop.rs`.)

use crate::common::cli::{fill_and_activate_hashing_space, hashing_store, ratchet_without_model};
use ratchetdb::Store;
use std::time::Duration;

#[test]
fn cli_reembed_drop_old_run_again_beside_another_space_drops_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("index.redb");
    {
        let texts: Vec<String> = (0..10)
            .map(|d| format!("note {d} about the pawl"))
            .collect();
        let store = hashing_store(&db, 32, &texts);
        store
            .add_space("third", "some-model", 8)
            .expect("add third");
        fill_and_activate_hashing_space(&store, 96);
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
    let out = ratchet_without_model(&args, Duration::from_secs(120));
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
