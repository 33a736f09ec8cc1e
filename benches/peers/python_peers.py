#!/usr/bin/env python3
"""ratchetdb's Python package beside Chroma (PersistentClient) and LanceDB, from Python, on
the same vectors, in one run. Run by hand (never in CI):

  pip install ./python chromadb lancedb pyarrow       # ratchetdb as a release build
  python3 benches/peers/python_peers.py [--n 50000] [--libs ratchetdb,chroma,lancedb] [--out FILE.md]

Data (NumPy, seeded): N chunks of 384-d float32, embedding-like (points around 100 cluster
centres in a 64-d subspace, plus noise), each with a ~60-byte text and a metadata dict,
written as documents of 10 chunks; 200 held-out queries; the ground truth by NumPy's exact
cosine scan. For each library, in fresh processes:

  write   upsert everything, 1,000 chunks per call (ratchetdb: `write_batch` of 100
          documents, durable commits; Chroma: `upsert`; LanceDB: `add`, then its
          IVF_HNSW_SQ index, M 16, ef_construction 100), and the time until the graph is
          searchable (ratchetdb answers exactly before: `wait_for_index`);
  query   recall@10 and the median single-query latency over a sweep of the search width;
          the table reports the fastest width reaching recall 0.95;
  reopen  a fresh process, the library already imported: open the files, first query
          answered (wall time).
"""

import argparse
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

DIM, K, QUERIES, PER_DOC, PER_CALL = 384, 10, 200, 10, 1000
EF_SWEEP = [10, 16, 24, 32, 48, 64, 96, 128, 192, 256]


def dataset(n, seed=7):
    rng = np.random.default_rng(seed)
    basis = rng.standard_normal((64, DIM)).astype(np.float32)
    centres = rng.standard_normal((100, 64)).astype(np.float32) * 3
    def draw(m):
        low = centres[rng.integers(0, 100, m)] + rng.standard_normal((m, 64)).astype(np.float32)
        x = low @ basis + 0.5 * rng.standard_normal((m, DIM)).astype(np.float32)
        return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)
    return draw(n), draw(QUERIES)


def truth(base, queries):
    return np.argsort(-(queries @ base.T), axis=1)[:, :K]


def text(i):
    return f"chunk {i}: some sixty bytes of text standing in for a passage"


# ----- ratchetdb ----------------------------------------------------------------------------

def ratchetdb_write(base, path):
    import ratchetdb

    with ratchetdb.Store(str(path / "store.redb")) as store:
        start = time.perf_counter()
        for s in range(0, len(base), PER_CALL):
            ops = [
                {"op": "upsert", "source": "bench", "id": str(d), "version": 1,
                 "texts": [text(i) for i in range(d * PER_DOC, (d + 1) * PER_DOC)],
                 "vectors": base[d * PER_DOC:(d + 1) * PER_DOC],
                 "metas": [{"i": i} for i in range(d * PER_DOC, (d + 1) * PER_DOC)]}
                for d in range(s // PER_DOC, min(len(base), s + PER_CALL) // PER_DOC)
            ]
            store.write_batch(ops)
        written = time.perf_counter() - start
        store.wait_for_index(3600)
        return written, time.perf_counter() - start


def ratchetdb_open(path):
    import ratchetdb

    store = ratchetdb.Store(str(path / "store.redb"))

    def search(q, ef):
        return [h.meta["i"] for h in store.search(q, K, ef=ef)]

    return search, lambda: store.wait_for_index(3600)


# ----- Chroma ---------------------------------------------------------------------------------

def chroma_write(base, path):
    import chromadb

    client = chromadb.PersistentClient(path=str(path))
    coll = client.create_collection(
        "bench", configuration={"hnsw": {"space": "cosine", "ef_construction": 100, "max_neighbors": 16,
                                     "ef_search": 64}}
    )
    start = time.perf_counter()
    for s in range(0, len(base), PER_CALL):
        ids = range(s, min(len(base), s + PER_CALL))
        coll.upsert(ids=[str(i) for i in ids], embeddings=base[s:s + PER_CALL],
                    documents=[text(i) for i in ids], metadatas=[{"i": i} for i in ids])
    written = time.perf_counter() - start
    coll.query(query_embeddings=base[:1], n_results=K)
    return written, time.perf_counter() - start


def chroma_open(path):
    import chromadb

    client = chromadb.PersistentClient(path=str(path))
    coll = client.get_collection("bench")
    state = {"coll": coll, "ef": coll.configuration["hnsw"]["ef_search"]}

    def search(q, ef):
        # Chroma 1.x applies a modified ef_search only in a client made after its system
        # cache is cleared (as in peers.py): a width other than the loaded one reloads the
        # index, in the sweep's untimed warm-up queries (the collection is made with
        # ef_search 64, the reopen's width, so the reopen loads it once).
        if ef != state["ef"]:
            from chromadb.api.client import SharedSystemClient

            state["coll"].modify(configuration={"hnsw": {"ef_search": ef}})
            SharedSystemClient.clear_system_cache()
            fresh = chromadb.PersistentClient(path=str(path))
            state["coll"], state["ef"] = fresh.get_collection("bench"), ef
        r = state["coll"].query(query_embeddings=q[None, :], n_results=K, include=["metadatas", "documents"])
        return [m["i"] for m in r["metadatas"][0]]

    return search, None


# ----- LanceDB --------------------------------------------------------------------------------

def lancedb_write(base, path):
    import lancedb
    import pyarrow as pa

    db = lancedb.connect(str(path))
    table = None
    start = time.perf_counter()
    for s in range(0, len(base), PER_CALL):
        part = base[s:s + PER_CALL]
        ids = list(range(s, s + len(part)))
        batch = pa.table({
            "i": pa.array(ids, pa.int64()),
            "text": pa.array([text(i) for i in ids]),
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(part.reshape(-1)), DIM),
        })
        if table is None:
            table = db.create_table("bench", batch)
        else:
            table.add(batch)
    written = time.perf_counter() - start
    table.create_index(metric="cosine", index_type="IVF_HNSW_SQ", vector_column_name="vector",
                       m=16, ef_construction=100)
    return written, time.perf_counter() - start


def lancedb_open(path):
    import lancedb

    table = lancedb.connect(str(path)).open_table("bench")

    def search(q, ef):
        r = table.search(q).metric("cosine").limit(K).ef(ef).nprobes(20)
        return r.select(["i", "text"]).to_arrow()["i"].to_pylist()

    return search, None


LIBS = {
    "ratchetdb": (ratchetdb_write, ratchetdb_open),
    "chroma": (chroma_write, chroma_open),
    "lancedb": (lancedb_write, lancedb_open),
}


def child(args):
    lib, phase, path, data = args.child
    path, data = pathlib.Path(path), pathlib.Path(data)
    write, open_ = LIBS[lib]
    if phase == "write":
        base = np.load(data / "base.npy")
        written, searchable = write(base, path)
        print(json.dumps({"written": written, "searchable": searchable}))
        return
    queries = np.load(data / "queries.npy")
    if phase == "reopen":
        # The library is imported before the clock starts: this times the open alone.
        __import__({"ratchetdb": "ratchetdb", "chroma": "chromadb", "lancedb": "lancedb"}[lib])
        start = time.perf_counter()
        search, _ = open_(path)
        search(queries[0], 64)
        print(json.dumps({"reopen": time.perf_counter() - start}))
        return
    gt = np.load(data / "truth.npy")
    search, ready = open_(path)
    if ready:
        ready()
    rows = []
    for ef in EF_SWEEP:
        for q in queries[:20]:
            search(q, ef)
        found, times = 0, []
        for q, want in zip(queries, gt):
            t = time.perf_counter()
            got = search(q, ef)
            times.append(time.perf_counter() - t)
            found += len(set(got) & set(want.tolist()))
        rows.append({"ef": ef, "recall": found / (K * len(queries)), "median": statistics.median(times)})
    print(json.dumps({"sweep": rows}))


def run(lib, phase, path, data):
    out = subprocess.run(
        [sys.executable, __file__, "--child", lib, phase, str(path), str(data)],
        check=True, capture_output=True, text=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=50_000)
    parser.add_argument("--libs", default="ratchetdb,chroma,lancedb")
    parser.add_argument("--out")
    parser.add_argument("--child", nargs=4)
    args = parser.parse_args()
    if args.child:
        return child(args)
    work = pathlib.Path(tempfile.mkdtemp(prefix="ratchetdb-py-peers-"))
    base, queries = dataset(args.n)
    np.save(work / "base.npy", base)
    np.save(work / "queries.npy", queries)
    np.save(work / "truth.npy", truth(base, queries))
    lines = [
        f"{args.n:,} chunks x {DIM}-d (documents of {PER_DOC}), {QUERIES} queries, k {K}",
        "",
        "| library | upsert, chunks/s | to searchable graph | recall@10 >= 0.95 at | median query | reopen -> first query |",
        "|---|---|---|---|---|---|",
    ]
    for lib in args.libs.split(","):
        path = work / lib
        path.mkdir()
        w = run(lib, "write", path, work)
        sweep = run(lib, "query", path, work)["sweep"]
        reopen = run(lib, "reopen", path, work)["reopen"]
        good = [r for r in sweep if r["recall"] >= 0.95]
        best = min(good, key=lambda r: r["median"]) if good else max(sweep, key=lambda r: r["recall"])
        lines.append(
            f"| {lib} | {args.n / w['written']:,.0f} | {w['searchable']:.1f} s | "
            f"ef {best['ef']} (recall {best['recall']:.3f}) | {best['median'] * 1e3:.2f} ms | "
            f"{reopen * 1e3:.0f} ms |"
        )
        print(lines[-1], file=sys.stderr)
        print(json.dumps({lib: sweep}), file=sys.stderr)
    text_out = "\n".join(lines)
    print(text_out)
    if args.out:
        pathlib.Path(args.out).write_text(text_out + "\n")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
