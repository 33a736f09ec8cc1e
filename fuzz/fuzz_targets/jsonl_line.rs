//! Bytes as `ratchet ingest --jsonl` input: lines read under a bound and parsed under small
//! limits (counts, metadata depth and size, the memory budget). Never a panic; whatever is
//! accepted is valid JSON within every limit (see `jsonl::fuzz_lines`).
#![no_main]

use libfuzzer_sys::fuzz_target;

// The line format lives in the `ratchet` binary; the fuzz target compiles the same file.
#[path = "../../src/bin/ratchet/jsonl.rs"]
#[allow(dead_code)]
mod jsonl;

fuzz_target!(|data: &[u8]| {
    if let Err(broken) = jsonl::fuzz_lines(data) {
        panic!("jsonl_line: {broken}");
    }
});
