//! redb's repair runs only after an unclean shutdown: reopening a cleanly closed store makes
//! no more than redb's two open-time I/O calls (it marks the file in use: one header write,
//! one sync), so no repair can roll a cleanly closed file back. After a process crash the
//! repair does run, and keeps every acknowledged write.

use ratchetdb::testkit::{
    base_image, harness_doc, harness_options, store_rows, verify_clean, Disk, IoKind,
};
use ratchetdb::Store;

#[test]
fn a_cleanly_closed_store_is_not_repaired_a_crashed_one_is() {
    // Cleanly closed: two calls, a header write and a sync.
    let disk = Disk::from_image(base_image(0).expect("base image"));
    disk.start_trace();
    let store = Store::open_with_backend(disk.backend(), harness_options()).expect("open");
    assert_eq!(
        disk.trace(),
        vec![(IoKind::Write, true), (IoKind::Sync, true)],
        "opening a cleanly closed file must not repair it"
    );
    let before = store_rows(&store).expect("rows");
    store
        .upsert(harness_doc("wiki", "new", 1, 2, 1))
        .expect("write");
    let after = store_rows(&store).expect("rows");
    assert_ne!(before, after);

    // A process crash now (the store is not closed): the file needs repair, and the repair
    // keeps the acknowledged write.
    let crashed = disk.image();
    std::mem::forget(store); // A crash: no close, nothing more reaches this disk's image.
    let disk = Disk::from_image(crashed);
    disk.start_trace();
    let store = Store::open_with_backend(disk.backend(), harness_options()).expect("reopen");
    assert!(
        disk.trace().len() > 2,
        "a crashed file is repaired on open: {:?}",
        disk.trace()
    );
    assert_eq!(
        store_rows(&store).expect("rows"),
        after,
        "the repair kept every write"
    );
    verify_clean(&store).expect("verify");
}
