//! What reading the persisted graph costs a reopen, in format 7 (varint ids, 4-byte
//! fingerprints, each row's links sorted and bit-packed as distances) beside format 6 (the
//! fixed-width layout earlier builds wrote), side by side in one process on the same graph:
//! `parse/format_6` and `parse/format_7`, the snapshot's blobs checked (the blake3 checksum
//! first) and parsed into the rows the graph takes over, as a reopen does on its second
//! thread while the first loads the vectors. The graph: `RATCHET_SNAPSHOT_POINTS` (default
//! 200,000) MiniLM-like vectors of 16 dimensions (the links do not depend on the
//! dimension's size, the build time does), numbered as a store numbers one-chunk
//! documents. Prints each format's payload bytes.
//!
//! `cargo bench --bench graph_snapshot`.

use criterion::Criterion;
use ratchetdb::testkit::{graph_snapshot, graph_snapshot_as_format_6, parse_graph_snapshot};
use std::time::Duration;

const DIM: usize = 16;

fn main() {
    let n: usize = std::env::var("RATCHET_SNAPSHOT_POINTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200_000);
    let format_7 = graph_snapshot(n, DIM, 7).expect("a graph snapshot");
    let format_6 = graph_snapshot_as_format_6(&format_7, DIM).expect("format 6");
    let bytes = |blobs: &[Vec<u8>]| blobs.iter().map(Vec::len).sum::<usize>();
    println!(
        "{n} points: format 6 {} bytes, format 7 {} bytes ({:.3}x)",
        bytes(&format_6),
        bytes(&format_7),
        bytes(&format_7) as f64 / bytes(&format_6) as f64
    );
    let mut c = Criterion::default()
        .sample_size(20)
        .measurement_time(Duration::from_secs(10))
        .configure_from_args();
    let mut g = c.benchmark_group("parse");
    for (name, blobs) in [("format_6", &format_6), ("format_7", &format_7)] {
        g.bench_function(name, |b| {
            b.iter(|| {
                let points = parse_graph_snapshot(blobs, DIM).expect("parse");
                assert_eq!(points, n);
                points
            })
        });
    }
    g.finish();
    c.final_summary();
}
