//! Regression: `add_space` recorded the dimension as `dimension as u32`, so under limits
//! raised past 32 bits (`Limits::max_dimension`) a dimension of 2^32 was recorded as 0 and
//! 2^32 + 8 as 8: a space listed with another dimension than it was added for, whose
//! vectors of the asked width would all be refused. Now a dimension that does not fit the
//! row's 32 bits is an `InputError` naming `dimension`, and nothing is added.

use super::open;
use ratchetdb::{Limits, Options, Store, WriteError};

#[test]
fn a_space_dimension_past_32_bits_is_refused_not_wrapped() {
    let dir = tempfile::tempdir().expect("tempdir");
    drop(open(dir.path()));
    let mut limits = Limits::default();
    limits.max_dimension = usize::MAX;
    let store = Store::open(
        dir.path().join("db.redb"),
        Options::default().dimension(3).limits(limits),
    )
    .expect("open with raised limits");
    let before = format!("{:?}", store.spaces().expect("spaces"));
    for dimension in [1usize << 32, (1usize << 32) + 8] {
        match store.add_space("huge", "m", dimension) {
            Err(WriteError::Input(e)) => {
                assert_eq!(e.field, "dimension");
                assert!(e.problem.contains(&dimension.to_string()), "{}", e.problem);
            }
            other => panic!("dimension {dimension}: {other:?}"),
        }
    }
    assert_eq!(format!("{:?}", store.spaces().expect("spaces")), before);
}
