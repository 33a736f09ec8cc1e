//! Operation programs (upserts, deletes, retains, batches, the concurrent writer, clean
//! reopens, power losses, injected I/O faults) against the reference model and `verify()`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(broken) = ratchetdb::testkit::ops_vs_model(data) {
        panic!("ops_vs_model: {broken}");
    }
});
