//! Regression: a revision missing its vector in a complete vector space ended a whole
//! `ratchet ingest --jsonl` run as a fatal error. It is one line's refusal: the line is
//! rejected naming `chunks[0].spaces.NAME` (exit 3), the other lines are applied, and the
//! store verifies clean.

use ratchetdb::{Chunk, Document, Options, Store, Version};
use std::process::Command;

#[test]
fn cli_ingest_refuses_a_line_missing_a_complete_space_s_vector() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("x.redb");
    {
        let store = Store::open(&db, Options::default().dimension(2)).expect("create");
        store
            .upsert(Document::new("s", "a", Version::number(1)).with_chunk(
                Chunk::new("alpha", vec![1.0, 0.0]).with_space_vector("w", vec![1.0; 3]),
            ))
            .unwrap_err();
        store.add_space("w", "m", 3).expect("add");
        // Empty store: the new space is complete from the start.
        assert!(store.spaces().expect("spaces")[1].is_complete());
    }
    let lines = dir.path().join("ops.jsonl");
    std::fs::write(
        &lines,
        concat!(
            r#"{"op":"upsert","source":"s","id":"a","version":1,"chunks":[{"text":"alpha","vector":[1.0,0.0]}]}"#,
            "\n",
            r#"{"op":"delete","source":"s","id":"b","version":1}"#,
            "\n"
        ),
    )
    .expect("write lines");
    let out = Command::new(env!("CARGO_BIN_EXE_ratchet"))
        .env_remove("RATCHET_MODEL")
        .args(["ingest", "--db"])
        .arg(&db)
        .arg("--jsonl")
        .arg(&lines)
        .args(["--report"])
        .output()
        .expect("run ingest");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{stdout}");
    assert!(
        stdout.contains(r#""field":"chunks[0].spaces.w""#),
        "{stdout}"
    );
    assert!(stdout.contains(r#""outcome":"deleted""#), "{stdout}");
    let store = Store::open_read_only(&db).expect("open");
    assert!(store.get("s", "a").expect("get").is_none());
    assert!(store.get("s", "b").expect("get").is_some_and(|d| d.deleted));
    let report = store.verify().expect("verify");
    assert!(report.is_ok(), "{:#?}", report.violations);
}
