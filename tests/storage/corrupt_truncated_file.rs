//! Opening a truncated store file (34 cut points: inside the header, at page boundaries, in
//! the middle, one byte short, and 20 seeded random ones): a typed error naming the problem
//! (`Corrupted` "truncated …", or `NotAStore` when not even redb's magic number is left),
//! never a panic, and never a store that opens with fewer rows than were acknowledged.
//!
//! Regression: a cut inside redb's header used to surface as `OpenError::Storage` "I/O
//! error: failed to fill whole buffer", and a cut before the magic number as `Storage` too;
//! `Store::open` now names them `Corrupted` (truncated) and `NotAStore`.

use crate::support;

use ratchetdb::testkit::SplitMix64;
use support::{clean_store_file, no_panic, open_file, Opened};

#[test]
fn truncated_files_are_refused_or_intact() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (image, rows) = clean_store_file(&dir.path().join("clean.redb"));
    let len = image.len();
    let mut points = vec![
        1,
        8,
        100,
        511,
        512,
        4095,
        4096,
        4097,
        8192,
        len / 4,
        len / 2,
        len - 4096,
        len - 512,
        len - 1,
    ];
    let mut rng = SplitMix64::new(0x7e57);
    points.extend((0..20).map(|_| 1 + rng.below(len as u64 - 1) as usize));
    let (mut refused, mut intact) = (0, 0);
    for at in points {
        let path = dir.path().join(format!("cut-{at}.redb"));
        std::fs::write(&path, &image[..at]).expect("write");
        let opened = no_panic(&format!("opening a file cut at {at}"), || open_file(&path))
            .unwrap_or_else(|p| panic!("cut at {at}: {p}"));
        match opened {
            Opened::Refused(kind, message) => {
                refused += 1;
                assert!(
                    (kind == "Corrupted" && message.contains("truncated"))
                        || (kind == "NotAStore" && message.contains("magic number")),
                    "cut at {at}: the error must name the problem: {kind}: {message}"
                );
            }
            Opened::Opened(report, got) => {
                intact += 1;
                assert_eq!(got.as_ref(), Ok(&rows), "cut at {at}: rows lost silently");
                assert_eq!(report.violations, 0, "cut at {at}: {report:?}");
                assert_eq!(report.read_errors, 0, "cut at {at}: {report:?}");
            }
        }
    }
    println!(
        "truncated file: {refused} cut points refused with a typed error, {intact} opened intact"
    );
}
