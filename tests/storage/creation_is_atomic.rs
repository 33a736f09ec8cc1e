//! Regression: a process killed while creating a store left a file at the store's path
//! that redb had not finished (redb writes its magic number last), and every later open
//! refused it. A store is now built under a temporary name beside the path and linked into
//! place only when it is complete, so the path holds a whole store or nothing.

use ratchetdb::{Options, Store};

#[test]
fn a_new_store_appears_whole_and_leaves_no_temporary_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("index.redb");
    let store = Store::open(&path, Options::default()).expect("create");
    assert!(store.verify().expect("verify").is_ok());
    drop(store);
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .expect("read dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec!["index.redb".to_string()]);
}

#[test]
fn a_creator_killed_midway_leaves_nothing_that_blocks_the_next_open() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("index.redb");
    // What a killed creator leaves: a half-written file under the temporary name only.
    let leftover = dir.path().join(".index.redb.creating-4242");
    std::fs::write(&leftover, vec![0u8; 4096]).expect("leftover");
    assert!(!path.exists());
    let store = Store::open(&path, Options::default()).expect("the next open creates the store");
    assert!(store.verify().expect("verify").is_ok());
    drop(store);
    assert!(Store::open(&path, Options::default().must_exist()).is_ok());
}
