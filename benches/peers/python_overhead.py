#!/usr/bin/env python3
"""The Python binding's cost over the Rust calls it wraps, measured side by side in one run.

Run by hand (never in CI), with `ratchetdb` installed from ./python as a release build
(`pip install ./python`):

  python3 benches/peers/python_overhead.py [--out FILE.md] [--paired-only] [--work DIR]

1. Makes the data (NumPy, seeded): 1,000 documents of 100 chunks of 384-d float32, and 100
   queries; builds the search store (the first 200 documents: 20,000 chunks) through the
   binding, and waits for its graph.
   Also a small store (the first document: 100 chunks, searched by an exact scan).
2. Runs `cargo bench --bench python_overhead` on the same files (RATCHETDB_PY_BENCH_DIR):
   criterion's medians of `Store::search` (k 10) on both stores and of writing the 100,000 chunks with
   `write_batch`, 100 documents per transaction, into a fresh store.
3. Times the same calls through Python: `Store.search` over the same store and queries
   (median of 15 repeats of 1,000 calls), and the same 100,000 chunks written from NumPy
   with `Store.write_batch` (median of 5 runs, the ops dicts built inside the timing).

Prints the medians, the search overhead per call (goal <= 20 us) and the bulk write rate's
ratio (goal: Rust / Python <= 1.3).
"""

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import ratchetdb

ROOT = pathlib.Path(__file__).resolve().parents[2]
DIM, DOCS, CHUNKS, DOCS_PER_BATCH, SEARCH_DOCS, SMALL_DOCS, QUERIES, K = (
    384, 1000, 100, 100, 200, 1, 100, 10)


def ops_for(base, docs):
    ops = []
    for d in docs:
        ops.append(
            {
                "op": "upsert",
                "source": "bench",
                "id": f"doc{d}",
                "version": 1,
                "texts": [f"doc {d} chunk {c}" for c in range(CHUNKS)],
                "vectors": base[d * CHUNKS : (d + 1) * CHUNKS],
                "metas": [{"chunk": c} for c in range(CHUNKS)],
            }
        )
    return ops


def criterion_median(group, name):
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    estimates = target / "criterion" / group / name / "new" / "estimates.json"
    return json.loads(estimates.read_text())["median"]["point_estimate"] / 1e9


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out")
    parser.add_argument("--skip-cargo", action="store_true", help="reuse the last criterion run")
    parser.add_argument("--search-only", action="store_true", help="only the search rows")
    parser.add_argument(
        "--paired-only",
        action="store_true",
        help="only the paired measurement (no cargo bench, no writes): each call's wall time "
        "less the Rust call's own time, measured inside the same call",
    )
    parser.add_argument(
        "--work",
        help="keep the data and stores in this directory: built when missing, reused otherwise",
    )
    args = parser.parse_args()
    rng = np.random.default_rng(1)
    base = (rng.random((DOCS * CHUNKS, DIM), dtype=np.float32) - 0.5).astype(np.float32)
    queries = (rng.random((QUERIES, DIM), dtype=np.float32) - 0.5).astype(np.float32)
    if args.work:
        work = pathlib.Path(args.work)
        work.mkdir(parents=True, exist_ok=True)
    else:
        work = pathlib.Path(tempfile.mkdtemp(prefix="ratchetdb-py-bench-"))
    reuse = (work / "store.redb").exists() and (work / "small.redb").exists()
    base.tofile(work / "base.f32")
    queries.tofile(work / "queries.f32")
    if not reuse:
        with ratchetdb.Store(str(work / "store.redb")) as store:
            for start in range(0, SEARCH_DOCS, DOCS_PER_BATCH):
                store.write_batch(ops_for(base, range(start, start + DOCS_PER_BATCH)))
            assert store.wait_for_index(600)
        with ratchetdb.Store(str(work / "small.redb")) as store:
            store.write_batch(ops_for(base, range(SMALL_DOCS)))
            assert store.wait_for_index(600)

    def paired(name):
        # Each call's wall time in Python less the time the Rust `Store::search` call took
        # inside it (`_search_timed`): the binding's cost, measured on the same call, so the
        # machine's load largely cancels out.
        with ratchetdb.Store(str(work / name)) as store:
            assert store.wait_for_index(600)
            rows = list(queries)
            for q in rows:
                store._search_timed(q, K)
            costs, control = [], []
            for i in range(15_000):
                start = time.perf_counter_ns()
                # Rebinding `hits` frees the previous call's hits inside the timing, as
                # criterion's loop drops each search's hits inside its own.
                hits, inner = store._search_timed(rows[i % QUERIES], K)
                after = time.perf_counter_ns()
                costs.append(after - start - inner)
                # Control: plain Python work right after the call, no binding involved. It
                # slows down after a search that walked megabytes (cold caches) exactly as
                # the binding's own work does.
                _ = [j for j in range(8)]
                control.append(time.perf_counter_ns() - after)
            return (statistics.median(costs) / 1e3, min(costs) / 1e3,
                    statistics.median(control) / 1e3)

    if args.paired_only:
        for name, label in (("store.redb", "20,000 x 384-d, graph"), ("small.redb", "100 x 384-d, exact")):
            median, least, control = paired(name)
            print(f"| binding cost per `search`, k {K}, {label} | median {median:.1f} us | min {least:.1f} us "
                  f"| control: 8-item list comprehension after the call, median {control:.1f} us |")
        return 0

    if not args.skip_cargo:
        env = dict(os.environ, RATCHETDB_PY_BENCH_DIR=str(work))
        command = ["cargo", "bench", "--bench", "python_overhead"]
        if args.search_only:
            command += ["--", "search"]
        subprocess.run(command, cwd=ROOT, env=env, check=True)
    rust_search = criterion_median("python_overhead", "search_rust")
    rust_small = criterion_median("python_overhead", "search_small_rust")
    rust_write = None if args.search_only else criterion_median(
        "python_overhead", "write_batch_100k_rust"
    )

    def py_median(name):
        with ratchetdb.Store(str(work / name)) as store:
            assert store.wait_for_index(600)
            for q in queries:
                store.search(q, K)
            rows = list(queries)
            per_call = []
            for _ in range(15):
                start = time.perf_counter()
                for i in range(1000):
                    store.search(rows[i % QUERIES], K)
                per_call.append((time.perf_counter() - start) / 1000)
            return statistics.median(per_call)

    py_search = py_median("store.redb")
    py_small = py_median("small.redb")

    writes = []
    for _ in range(0 if args.search_only else 5):
        with tempfile.TemporaryDirectory() as tmp:
            with ratchetdb.Store(os.path.join(tmp, "bulk.redb")) as store:
                start = time.perf_counter()
                for s in range(0, DOCS, DOCS_PER_BATCH):
                    store.write_batch(ops_for(base, range(s, s + DOCS_PER_BATCH)))
                writes.append(time.perf_counter() - start)
    py_write = statistics.median(writes) if writes else None

    chunks = DOCS * CHUNKS
    lines = [
        "| measurement | Rust (criterion median) | Python (median) | difference / ratio |",
        "|---|---|---|---|",
        f"| `search`, k {K}, 20,000 x 384-d, graph | {rust_search * 1e6:.1f} us | "
        f"{py_search * 1e6:.1f} us | {(py_search - rust_search) * 1e6:+.1f} us per call |",
        f"| `search`, k {K}, 100 x 384-d, one document (exact scan) | {rust_small * 1e6:.1f} us | "
        f"{py_small * 1e6:.1f} us | {(py_small - rust_small) * 1e6:+.1f} us per call |",
    ]
    if py_write is not None:
        lines.append(
        f"| `write_batch`, 100,000 chunks (1,000 docs x 100, 100 docs per transaction) | "
        f"{rust_write:.2f} s ({chunks / rust_write:,.0f} chunks/s) | {py_write:.2f} s "
        f"({chunks / py_write:,.0f} chunks/s) | Python takes {py_write / rust_write:.2f}x Rust's time |"
        )
    text = "\n".join(lines)
    print(text)
    if args.out:
        pathlib.Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    sys.exit(main())
