#!/usr/bin/env python3
"""What a first Python program pays: 1,000 one-text documents written by a loop of
`Store.upsert` (one commit, and with the default durability one fsync, per document)
against one `Store.add` call (one commit for all), with the default durability.

Run by hand (never in CI), with `ratchetdb` installed from ./python:

  python3 benches/peers/python_add_vs_upsert.py [--n 1000] [--dim 384] [--rounds 3] [--work DIR]

Each round writes the same seeded texts and float32 vectors into two fresh stores, one per
way, in alternating order; prints each round's seconds and the median ratio loop / add.
"""

import argparse
import pathlib
import statistics
import tempfile
import time

import numpy as np

import ratchetdb


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--work", default=None)
    args = parser.parse_args()
    work = pathlib.Path(args.work or tempfile.mkdtemp(prefix="ratchetdb-add-"))
    work.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(42)
    vectors = rng.normal(size=(args.n, args.dim)).astype(np.float32)
    ids = [f"doc-{i}" for i in range(args.n)]
    texts = [f"text of document {i}: {rng.integers(1 << 40)}" for i in range(args.n)]
    metas = [{"i": i} for i in range(args.n)]

    def loop(path):
        with ratchetdb.Store(path) as store:
            started = time.perf_counter()
            for i in range(args.n):
                store.upsert("notes", ids[i], 1, [texts[i]], vectors[i : i + 1], metas=[metas[i]])
            return time.perf_counter() - started

    def add(path):
        with ratchetdb.Store(path) as store:
            started = time.perf_counter()
            results = store.add("notes", ids, 1, texts, vectors, metas)
            elapsed = time.perf_counter() - started
            assert all(r.status == "written" for r in results)
            return elapsed

    loops, adds = [], []
    for round_ in range(args.rounds):
        order = [("loop", loop), ("add", add)] if round_ % 2 == 0 else [("add", add), ("loop", loop)]
        for name, way in order:
            seconds = way(str(work / f"{name}-{round_}.redb"))
            (loops if name == "loop" else adds).append(seconds)
        print(f"round {round_ + 1}: upsert loop {loops[-1]:.3f} s, add {adds[-1]:.3f} s")
    loop_s, add_s = statistics.median(loops), statistics.median(adds)
    print(
        f"{args.n} documents of {args.dim}-d: upsert loop {loop_s:.3f} s, add {add_s:.3f} s "
        f"(medians of {args.rounds}); loop / add = {loop_s / add_s:.1f}x"
    )


if __name__ == "__main__":
    main()
