//! A raw file, or a real store file mutated by (offset, xor) records and truncations, opened
//! as a store: a typed error, or a store that reads, verifies and writes; never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(broken) = ratchetdb::testkit::open_mutated_file(data) {
        panic!("open_mutated_file: {broken}");
    }
});
