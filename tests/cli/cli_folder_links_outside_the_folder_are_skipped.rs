//! Regression (issue 44, item 4): folder ingest followed symlinked files that point outside
//! the folder (folder links were not followed), so a shared repository or archive with
//! `notes/leak.md -> ../secret/creds.txt` pulled private files into the store and into
//! search results. Such a link is now skipped with a warning and counted (exit code 3 only
//! with `--strict`); a link to a file inside the folder is indexed; `--follow-links` opts in.

use crate::common;

use common::cli;
use ratchetdb::Store;
use std::path::Path;

/// The ids and texts the store holds.
fn stored(db: &Path) -> Vec<(String, String)> {
    let store = Store::open_read_only(db).expect("open the store");
    store
        .documents(false)
        .expect("documents")
        .into_iter()
        .filter(|d| !d.deleted)
        .flat_map(|d| {
            let id = d.id.clone();
            d.chunks.into_iter().map(move |c| (id.clone(), c.text))
        })
        .collect()
}

#[cfg(unix)]
#[test]
fn a_file_link_leading_outside_the_folder_is_skipped_unless_asked() {
    use std::os::unix::fs::symlink;
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("secret");
    let docs = dir.path().join("docs");
    std::fs::create_dir_all(&secret).unwrap();
    std::fs::create_dir_all(docs.join("notes")).unwrap();
    std::fs::write(secret.join("creds.txt"), "aws key AKIAVERYSECRET").unwrap();
    std::fs::write(secret.join("more.md"), "private plan zanzibar").unwrap();
    std::fs::write(docs.join("readme.md"), "kettle manual").unwrap();
    // A file link out of the folder, one through a link chain, a folder link (never
    // followed), and a file link that stays inside the folder.
    symlink("../../secret/creds.txt", docs.join("notes/leak.md")).unwrap();
    symlink(secret.join("more.md"), dir.path().join("hop.md")).unwrap();
    symlink("../hop.md", docs.join("chain.md")).unwrap();
    symlink("../secret", docs.join("private")).unwrap();
    symlink("readme.md", docs.join("same.md")).unwrap();

    let db = dir.path().join("store.redb");
    let run = cli::ingest_folder(&db, &docs, &[]);
    assert_eq!(run.code, Some(0), "{}{}", run.stdout, run.stderr);
    let texts = stored(&db);
    let all: String = texts.iter().map(|(id, t)| format!("{id}: {t}\n")).collect();
    assert!(!all.contains("AKIAVERYSECRET"), "{all}");
    assert!(!all.contains("zanzibar"), "{all}");
    assert!(
        texts.iter().any(|(id, _)| id == "same.md"),
        "a link inside the folder is indexed: {all}"
    );
    assert!(texts.iter().any(|(id, _)| id == "readme.md"), "{all}");
    for link in ["notes/leak.md", "chain.md"] {
        assert!(
            run.stderr.contains(link) && run.stderr.contains("outside"),
            "a warning names {link}: {}",
            run.stderr
        );
    }
    assert!(
        run.stdout.contains("link to a file outside the folder 2"),
        "the summary counts them: {}",
        run.stdout
    );

    // --strict makes it a failure; nothing of the links is stored either way.
    let strict = cli::ingest_folder(&db, &docs, &["--strict"]);
    assert_eq!(strict.code, Some(3), "{}{}", strict.stdout, strict.stderr);
    assert!(!stored(&db)
        .iter()
        .any(|(_, t)| t.contains("AKIAVERYSECRET")));

    // --follow-links: the user asked for them.
    let followed = cli::ingest_folder(&db, &docs, &["--follow-links"]);
    assert_eq!(
        followed.code,
        Some(0),
        "{}{}",
        followed.stdout,
        followed.stderr
    );
    let texts = stored(&db);
    assert!(
        texts
            .iter()
            .any(|(id, t)| id == "notes/leak.md" && t.contains("AKIAVERYSECRET")),
        "{texts:?}"
    );
    assert!(
        !texts.iter().any(|(id, _)| id.starts_with("private/")),
        "folder links are still not followed: {texts:?}"
    );
}
