#!/usr/bin/env python3
"""Filtered search in LanceDB and Chroma on the data and filters of `benches/filtered_search.rs`.

Run by hand, not in CI:

    python3 -m venv /tmp/peers && /tmp/peers/bin/pip install lancedb chromadb numpy
    /tmp/peers/bin/python benches/peers/filtered_search_peers.py [N] [--only=lancedb|--only=chroma]

The vectors are the same kind as the Rust bench's (a low-rank mixture of 64 clusters in 64
latent dimensions, plus noise, normalised; 384-d), generated here with numpy (not bit for
bit the Rust generator's), and every vector carries `bucket` in 0..1000, independent of the
vector. Filters: 50 % (`bucket < 500`), 10 % (`< 100`), 1 % (`< 10`), 0.1 % (`== 0`);
k = 10, one query at a time from one thread, cosine.

- LanceDB: an IVF_PQ index is not built (its recall at these sizes needs tuning); the
  search is LanceDB's pre-filtered `where(...)` flat search over the table, i.e. its exact
  filtered scan, plus its recall for reference.
- Chroma: HNSW (its defaults) with `where={"bucket": {"$lt": n}}`.

Prints one line per (engine, selectivity): median ms per query over the queries, recall@10
against numpy's filtered brute force.
"""

import statistics
import sys
import tempfile
import time

import numpy as np

DIM = 384
RANK = 64
CLUSTERS = 64
K = 10
QUERIES = 100


def structured(n, seed):
    rng = np.random.default_rng(seed)
    basis = rng.standard_normal((RANK, DIM)).astype(np.float32)
    scales = (1.0 / (1.0 + np.arange(RANK) / 16.0)).astype(np.float32)
    centres = rng.standard_normal((CLUSTERS, RANK)).astype(np.float32) * scales

    def sample(count, seed2):
        r = np.random.default_rng(seed2)
        z = centres[r.integers(0, CLUSTERS, count)] + r.standard_normal((count, RANK)).astype(np.float32) * scales
        v = z @ basis
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        v += (0.5 / np.sqrt(DIM)) * r.standard_normal((count, DIM)).astype(np.float32)
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        return v.astype(np.float32)

    return sample(n, seed + 1), sample(QUERIES, seed + 2)


CASES = [("50%", 500), ("10%", 100), ("1%", 10), ("0.1%", 1)]


def truth(vectors, buckets, queries, below):
    idx = np.nonzero(buckets < below)[0]
    sims = queries @ vectors[idx].T
    top = np.argsort(-sims, axis=1)[:, :K]
    return [set(idx[row].tolist()) for row in top]


def timed(fn, queries):
    times, results = [], []
    for q in queries:
        start = time.perf_counter()
        results.append(fn(q))
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3, results


def recall(results, expected):
    found = sum(len(set(r) & t) for r, t in zip(results, expected))
    return found / max(1, sum(len(t) for t in expected))


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--only")]
    only = next((a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--only=")), None)
    n = int(args[0]) if args else 100_000
    vectors, queries = structured(n, 7)
    buckets = np.random.default_rng(99).integers(0, 1000, n)
    expected = {name: truth(vectors, buckets, queries, below) for name, below in CASES}
    print(f"peers filtered search: {n} x {DIM}-d, k = {K}, {QUERIES} queries, median ms per query")

    if only in (None, "lancedb"):
        run_lancedb(vectors, buckets, queries, expected)
    if only in (None, "chroma"):
        run_chroma(n, vectors, buckets, queries, expected)


def run_lancedb(vectors, buckets, queries, expected):
    import lancedb

    with tempfile.TemporaryDirectory() as d:
        db = lancedb.connect(d)
        table = db.create_table(
            "t",
            data=[{"id": i, "bucket": int(b), "vector": v} for i, (b, v) in enumerate(zip(buckets, vectors))],
        )
        for name, below in CASES:
            where = f"bucket < {below}"

            def search(q):
                rows = (
                    table.search(q.tolist()).metric("cosine").where(where, prefilter=True).limit(K).to_list()
                )
                return [r["id"] for r in rows]

            ms, results = timed(search, queries)
            print(f"lancedb (flat, prefiltered where) {name}: {ms:.3f} ms, recall@10 {recall(results, expected[name]):.3f}")


def run_chroma(n, vectors, buckets, queries, expected):
    import chromadb

    client = chromadb.EphemeralClient()
    collection = client.create_collection("filtered", metadata={"hnsw:space": "cosine"})
    step = 5000
    start = time.perf_counter()
    for s in range(0, n, step):
        collection.add(
            ids=[str(i) for i in range(s, min(n, s + step))],
            embeddings=vectors[s : s + step].tolist(),
            metadatas=[{"bucket": int(b)} for b in buckets[s : s + step]],
        )
    print(f"chroma: {n} added in {time.perf_counter() - start:.1f} s")
    for name, below in CASES:
        where = {"bucket": {"$lt": below}}

        def search(q):
            out = collection.query(query_embeddings=[q.tolist()], n_results=K, where=where)
            return [int(i) for i in out["ids"][0]]

        ms, results = timed(search, queries)
        print(f"chroma (hnsw, where) {name}: {ms:.3f} ms, recall@10 {recall(results, expected[name]):.3f}")


if __name__ == "__main__":
    main()
