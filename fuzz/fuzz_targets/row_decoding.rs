//! Bytes into every row decoder of the file format: a row or a `Corruption`, never a panic;
//! a decoded row survives an encode/decode round trip.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(broken) = ratchetdb::testkit::row_decoding(data) {
        panic!("row_decoding: {broken}");
    }
});
