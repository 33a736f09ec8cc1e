//! A closing store keeps at most `CHANGELOG_KEEP_BYTES_ON_CLOSE` (16 KiB, or a thousandth
//! of a file over 16 MiB) of changelog rows, the last row whatever its size: a bulk load's
//! rows name every vector id their batch added (9 bytes each), so sixteen of them were
//! many pages of a small file (10,000 one-chunk documents written 1,000 at a time kept 89
//! KB, 11 pages of a 16 MB file). A batch of 500 documents makes a row of about 4.5 KB:
//! three are kept, the last three, in a run. A reader process that was at the first commit
//! (whose index can no longer follow the trimmed rows) still finds every document, and the
//! reopened writer finds them all with a clean `verify`.

use crate::support::changelog::{
    assert_reader_index_holds, assert_reopened_whole, changelog_rows, doc, finds, finds_probes,
    write_in_batches,
};
use ratchetdb::{Options, Store};

const BATCHES: u64 = 8;
const DOCS_PER_BATCH: u64 = 500;
const KEEP_BYTES: usize = 16 << 10;

#[test]
fn a_closing_store_keeps_16_kib_of_a_bulk_load_s_changelog() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("bulk.redb");
    let writer = Store::open(&path, Options::default()).expect("create");
    writer.upsert(doc(0)).expect("the first document");
    let reader = Store::open_read_only(&path).expect("reader");
    assert!(finds(&reader, 0));
    let last = write_in_batches(&writer, BATCHES, DOCS_PER_BATCH);
    // The close sizes what it keeps from the file as it finds it (a thousandth of it above
    // 16 MiB): this one is small, so the cap is 16 KiB.
    let open_len = std::fs::metadata(&path).expect("file").len();
    assert!(open_len < 16 << 20, "the open file is {open_len} bytes");
    drop(writer);

    assert!(finds_probes(&reader, last), "the reader lost a document");
    assert_reader_index_holds(&reader, last + 1);
    drop(reader);

    let rows = changelog_rows(&path);
    let keys: Vec<u64> = rows.iter().map(|&(key, _)| key).collect();
    let kept_bytes: usize = rows.iter().map(|&(_, len)| len).sum();
    let smallest = rows.iter().map(|&(_, len)| len).min().expect("a row kept");
    assert!(
        smallest > 4_000,
        "a batch's row is {smallest} bytes: the scenario needs about 4.5 KB"
    );
    assert_eq!(keys.len(), 3, "{rows:?}");
    assert!(kept_bytes <= KEEP_BYTES, "{rows:?}");
    assert!(
        kept_bytes + smallest > KEEP_BYTES,
        "another row would have fit: {rows:?}"
    );
    assert!(
        keys.windows(2).all(|w| w[1] == w[0] + 1),
        "the kept rows are the last, in a run: {keys:?}"
    );

    assert_reopened_whole(&path, last);
}
