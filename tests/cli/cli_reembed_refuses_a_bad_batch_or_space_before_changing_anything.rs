//! Regression: `ratchet reembed --hashing 128 --batch 0` added the new space to the store
//! and only then had `Store::reembed` refuse the batch size, so it left an empty space
//! behind and said `invalid batch_size` (a library parameter, not the flag given). Now
//! `--batch` outside 1 to 100,000 and a `--space` that is no space name are usage errors
//! (exit 2) naming the flag, before the store is opened: its spaces stay as they were.

use crate::common::cli::{assert_no_panic, run};
use ratchetdb::{Chunk, Document, Options, Store, Version};
use std::time::Duration;

#[test]
fn cli_reembed_refuses_a_bad_batch_or_space_before_changing_anything() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("index.redb");
    {
        let store = Store::open(&db, Options::default().dimension(3)).expect("create");
        store
            .upsert(
                Document::new("s", "d", Version::number(1))
                    .with_chunk(Chunk::new("a chunk", vec![1.0, 0.5, 0.25])),
            )
            .expect("write");
    }
    let spaces = || {
        format!(
            "{:?}",
            Store::open_read_only(&db)
                .expect("open")
                .spaces()
                .expect("spaces")
        )
    };
    let before = spaces();
    let db_arg = db.to_string_lossy().into_owned();
    let long_name = "s".repeat(65);
    for (extra, flag) in [
        (vec!["--batch", "0"], "--batch"),
        (vec!["--batch", "100001"], "--batch"),
        (vec!["--space", "a b"], "--space"),
        (vec!["--space", ""], "--space"),
        (vec!["--space", long_name.as_str()], "--space"),
    ] {
        let mut args = vec!["reembed", "--db", db_arg.as_str(), "--hashing", "128"];
        args.extend_from_slice(&extra);
        let out = run(
            &args,
            |c| {
                c.env_remove("RATCHET_MODEL");
            },
            None,
            Duration::from_secs(60),
        );
        assert_no_panic(&out, &args);
        assert_eq!(out.code, Some(2), "{extra:?}: {}", out.stderr);
        assert!(out.stderr.contains(flag), "{extra:?}: {}", out.stderr);
        assert!(!out.stderr.contains("batch_size"), "{}", out.stderr);
        assert_eq!(spaces(), before, "{extra:?} changed the store");
    }
}
