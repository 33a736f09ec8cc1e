//! Opening a store file with a flipped bit: 1000 seeded positions on a simulated disk (three in
//! four on a non-zero byte, where redb's pages are) and 20 on real files, each opened twice:
//! plainly, and with `Options::check_integrity_on_open`.
//!
//! Finding (redb 4.6, documented in `Database::open`: "the open trusts a file that was shut
//! down cleanly and may panic if it was corrupted outside redb"): a plain open of a damaged,
//! cleanly closed file can panic inside redb. Seen with this test's seeds (1 in ~250 flips;
//! sites in `redb-4.6.0/src/`):
//! - `types.rs:47` `unreachable!()` in `TypeClassification::from_byte` (a table-type byte);
//! - `tree_store/table_tree_base.rs:48` `unreachable!()` in `TableType::from` (same);
//! - `tree_store/page_store/bitmap.rs:53` `first_unset(..).unwrap()` (allocator bitmap);
//! - `tree_store/page_store/page_manager.rs:1806` "Malformed allocator state" (a debug
//!   assertion via `StorageError::unreachable`; release builds return `Corrupted` there);
//! - `tree_store/btree_base.rs:283` a slice index out of range (a flipped length in a
//!   branch page; found by the `open_mutated_file` seed `base1-page1` in a plain open).
//!
//! With other seeds while exploring: `types.rs:109` and `types.rs:803`
//! `str::from_utf8(..).unwrap()` on a flipped byte in a table name or a `&str` key
//! (ratchetdb's `docs` table has `(&str, &str)` keys). All but the debug assertion panic in
//! release builds too.
//!
//! ratchetdb cannot catch these from inside redb, so it offers redb's remedy: with
//! `Options::check_integrity_on_open` every page's checksum is verified at open, and every
//! one of these files is refused as `OpenError::Corrupted` or opens with every row intact.
//! What this test guarantees:
//! - with the check: never a panic; a typed error, or every row intact and `verify()` clean;
//! - without it: every panic comes from inside redb (never from ratchetdb's own decoding),
//!   and the same file opened with the check does not panic. A plain open may also miss a
//!   flip inside a live row that still decodes (counted "undetected"; a document's version
//!   or a vector's float is not covered by ratchetdb's hashes, texts and metadata are).

use crate::support;

use ratchetdb::testkit::{base_image, harness_options, Disk, SplitMix64};
use ratchetdb::Store;
use std::collections::BTreeMap;
use support::{clean_store_file, open_with, Opened};

#[derive(Default, Debug)]
struct Tally {
    refused: usize,
    intact: usize,
    detected: usize,
    undetected: usize,
    redb_panics: BTreeMap<String, usize>,
}

fn classify(
    opened: Result<Opened, support::Panic>,
    rows: &BTreeMap<(String, String), ratchetdb::testkit::ModelRow>,
    tally: &mut Tally,
    what: &str,
) -> bool {
    match opened {
        Ok(Opened::Refused(kind, message)) => {
            assert!(
                matches!(kind.as_str(), "Corrupted" | "NotAStore"),
                "{what}: refused as {kind}: {message}"
            );
            tally.refused += 1;
        }
        Ok(Opened::Opened(report, got)) => {
            let clean = report.violations == 0
                && report.read_errors == 0
                && report.verify_error.is_none()
                && got.is_ok();
            if clean && got.as_ref() == Ok(rows) {
                tally.intact += 1;
            } else if clean {
                tally.undetected += 1;
            } else {
                tally.detected += 1;
            }
        }
        Err(panic) => {
            assert!(
                panic.in_redb(),
                "{what}: ratchetdb itself panicked: {panic}"
            );
            let site = panic
                .location
                .rsplit("/src/")
                .next()
                .unwrap_or("")
                .to_string();
            *tally.redb_panics.entry(site).or_default() += 1;
            return true;
        }
    }
    false
}

#[test]
fn flipped_bits_are_refused_detected_or_harmless() {
    let image = base_image(0).expect("base image");
    let dir = tempfile::tempdir().expect("tempdir");
    let (file_image, rows) = clean_store_file(&dir.path().join("clean.redb"));
    let nonzero: Vec<usize> = (0..image.len()).filter(|&i| image[i] != 0).collect();
    let mut rng = SplitMix64::new(0xf11b);
    let (mut plain, mut checked) = (Tally::default(), Tally::default());
    for n in 0..1000 {
        let position = if n % 4 == 0 {
            rng.below(image.len() as u64) as usize
        } else {
            nonzero[rng.below(nonzero.len() as u64) as usize]
        };
        let bit = 1u8 << rng.below(8);
        let mut damaged = image.clone();
        damaged[position] ^= bit;
        let what = format!("bit {bit:#04x} flipped at {position}");
        let open = |options: ratchetdb::Options| {
            let disk = Disk::from_image(damaged.clone());
            open_with(move || Store::open_with_backend(disk.backend(), options))
        };
        let panicked = classify(open(harness_options()), &rows, &mut plain, &what);
        let with_check = open(harness_options().check_integrity_on_open(true));
        if let Err(p) = &with_check {
            panic!("{what}: panicked with check_integrity_on_open: {p} (plain open panicked: {panicked})");
        }
        classify(with_check, &rows, &mut checked, &what);
    }
    // The same through real files.
    let file_nonzero: Vec<usize> = (0..file_image.len())
        .filter(|&i| file_image[i] != 0)
        .collect();
    for n in 0..20 {
        let position = file_nonzero[rng.below(file_nonzero.len() as u64) as usize];
        let mut damaged = file_image.clone();
        damaged[position] ^= 1 << rng.below(8);
        let path = dir.path().join(format!("flip-{n}.redb"));
        for check in [false, true] {
            std::fs::write(&path, &damaged).expect("write");
            let what = format!("file {n}, flip at {position}, check {check}");
            let opened = open_with(|| {
                Store::open(
                    &path,
                    harness_options()
                        .must_exist()
                        .check_integrity_on_open(check),
                )
            });
            if check {
                assert!(opened.is_ok(), "{what}: panicked with the check");
                classify(opened, &rows, &mut checked, &what);
            } else {
                classify(opened, &rows, &mut plain, &what);
            }
        }
    }
    assert_eq!(
        checked.undetected, 0,
        "with the check, a change went unnoticed: {checked:?}"
    );
    assert!(checked.redb_panics.is_empty());
    println!("flipped bits, plain open: {plain:?}");
    println!("flipped bits, check_integrity_on_open: {checked:?}");
}
