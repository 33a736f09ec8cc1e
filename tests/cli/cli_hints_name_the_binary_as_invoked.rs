//! Regression (issue 45, item 11): after `cargo run` there is no `ratchet` on the PATH, yet
//! the CLI's hints told the user to run `ratchet stats --db ...` and `ratchet ingest ...`,
//! which a shell cannot find. A hint now names the binary the way it was invoked: by its path
//! when it was run by path, `ratchet` when it was found on the `PATH`.

use crate::common::cli::run;
use std::path::Path;
use std::time::Duration;

#[test]
fn a_missing_database_hint_names_the_binary_by_the_path_it_was_run_by() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("missing.redb");
    let missing = missing.to_str().expect("utf-8 path");
    let out = run(
        &["stats", "--db", missing],
        |_| {},
        None,
        Duration::from_secs(60),
    );
    assert_eq!(out.code, Some(1), "stderr: {}", out.stderr);
    // Run by its path, the binary is named by that path: relative to the working folder
    // when it lies inside it (as `target/release/ratchet` after `cargo run`), else whole.
    let binary = Path::new(env!("CARGO_BIN_EXE_ratchet"));
    let cwd = std::env::current_dir().expect("current dir");
    let shown = binary
        .strip_prefix(&cwd)
        .unwrap_or(binary)
        .display()
        .to_string();
    assert!(
        out.stderr
            .contains(&format!("`{shown} ingest --db {missing} DIR`")),
        "the hint must name the binary as invoked ({shown}): {}",
        out.stderr
    );
}

#[test]
fn a_binary_found_on_the_path_is_named_ratchet_in_its_hints() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("missing.redb");
    let missing = missing.to_str().expect("utf-8 path");
    let binary = Path::new(env!("CARGO_BIN_EXE_ratchet"));
    let bin_dir = binary.parent().expect("binary's folder");
    let name = binary.file_name().expect("binary's name").to_owned();
    // Run it by its bare name with its folder on the PATH, as an installed binary runs.
    let out = std::process::Command::new(&name)
        .args(["stats", "--db", missing])
        .env("PATH", bin_dir)
        .output()
        .expect("run ratchet from the PATH");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr: {stderr}");
    assert!(
        stderr.contains(&format!("`ratchet ingest --db {missing} DIR`")),
        "a binary run from the PATH is `ratchet` in its hints: {stderr}"
    );
}
