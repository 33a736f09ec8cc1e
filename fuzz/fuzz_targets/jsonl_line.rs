//! Bytes as `ratchet ingest --jsonl` input: lines read under a bound and parsed under small
//! limits (counts, metadata depth and size, the memory budget). Never a panic; whatever is
//! accepted is valid JSON within every limit (see `ratchetdb::jsonl::fuzz_lines`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use ratchetdb::jsonl;

fuzz_target!(|data: &[u8]| {
    if let Err(broken) = jsonl::fuzz_lines(data) {
        panic!("jsonl_line: {broken}");
    }
});
