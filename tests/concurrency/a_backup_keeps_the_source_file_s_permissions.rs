//! Issue 46 (review of today's merges), item 1: `Store::backup` created its copy with the
//! default mode (0666 minus the umask), so a store readable by its owner alone got a backup
//! readable by everyone; and the finished copy was linked to its name without syncing the
//! directory. The copy now has the source file's permission bits (unix), and the link is
//! made durable by the helper store creation uses.

#![cfg(unix)]

use ratchetdb::{Store, Version};
use std::os::unix::fs::PermissionsExt;

use crate::common;

#[test]
fn a_backup_has_the_permission_bits_of_its_source() {
    let dir = tempfile::tempdir().unwrap();
    for mode in [0o600, 0o640] {
        let db = dir.path().join(format!("source-{mode:o}.redb"));
        let store = common::open_file(&db);
        store
            .upsert(common::document("s", "a", Version::number(1), &["one"]))
            .unwrap();
        std::fs::set_permissions(&db, std::fs::Permissions::from_mode(mode)).unwrap();
        let out = dir.path().join(format!("backup-{mode:o}.redb"));
        store.backup(&out).unwrap();
        let got = std::fs::metadata(&out).unwrap().permissions().mode() & 0o7777;
        assert_eq!(got, mode, "backup of a {mode:o} store");
        let copy = Store::open_read_only(&out).unwrap();
        assert!(copy.get("s", "a").unwrap().is_some());
    }
}
