#!/usr/bin/env python3
"""ratchetdb beside in-process vector search peers, on the same files, in one run.

Run by hand (never in CI), after `bash benches/data/fetch.sh`:

  pip install numpy psutil hnswlib faiss-cpu chromadb lancedb sqlite-vec apsw
  cargo bench --bench search --no-run          # prints the bench executable's path
  python3 benches/peers/peers.py --ratchetdb target/release/deps/search-XXXX \
      [--sets glove-100k,minilm,random384] [--libs ratchetdb,hnswlib,...] [--out FILE.md]

Every library runs in two fresh processes per set, the same for all:
  build  insert the base vectors (cosine) and build the index; report the time to a
         searchable index, the bytes on disk, the process's peak resident memory;
  query  open what the build left, time open -> first (graph) search, resident memory
         then; recall@10 and single-thread QPS (one query at a time, 1,000 queries)
         over a sweep of the search width; an exact scan's QPS where the library has one.
Reference settings: hnswlib and FAISS HNSW with M 16 and ef_construction 200 on all
cores; Chroma's PersistentClient with the same M and ef_construction; LanceDB IVF_HNSW_SQ;
sqlite-vec (exact); NumPy's matrix-vector product (exact). ratchetdb runs with its
defaults (M 16, ef_construction 100) unless RATCHETDB_INDEX_M / _EF_CONSTRUCTION are set;
its QPS includes resolving every hit against the read snapshot (text, metadata, version),
which the peers do not do (they return ids).

Writes a markdown table per set (QPS at recall@10 0.95 and 0.99: the fastest swept width
reaching it; build; disk; memory; reopen) to stdout and to --out. With --rounds N every
library's query child runs N times, the libraries alternated round by round (the order
reversed every other round), and each figure is the median of the rounds; the table then
also lists ratchetdb's QPS over hnswlib's round by round.
"""

import argparse
import json
import os
import pathlib
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
DATA = pathlib.Path(os.environ.get("RATCHETDB_BENCH_DATA", HERE.parent / "data" / "sets"))
K = 10
# The same widths as benches/search_real/mod.rs's EF_SWEEP (steps of at most a quarter above 64).
EF_SWEEP = [10, 16, 24, 32, 40, 48, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384, 448, 512,
            640, 800, 1000]
M, EF_CONSTRUCTION = 16, 200
LIBS = ["ratchetdb", "hnswlib", "faiss", "chroma", "lancedb", "sqlite-vec", "numpy"]


def rss():
    import psutil

    return psutil.Process().memory_info().rss


def peak():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def dir_bytes(path):
    path = pathlib.Path(path)
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def load(name, part):
    import numpy as np

    return np.load(DATA / f"{name}.{part}.npy")


def recall(found, truth):
    return sum(len(set(f[:K]) & set(t[:K])) for f, t in zip(found, truth)) / (len(truth) * K)


# Passes over the queries per width; the QPS reported is their median (one pass of 1,000
# queries takes a fraction of a second, and a shared machine's noise swamps a single one).
# ratchetdb's bench child does the same (`benches/search_real/mod.rs`, `SWEEP_PASSES`).
SWEEP_PASSES = 3


def sweep(search, queries, truth, widths):
    """For each width: (width, recall, qps), one query at a time; the median of
    SWEEP_PASSES passes."""
    out = []
    for ef in widths:
        prepare = search(None, ef)
        rates = []
        for _ in range(SWEEP_PASSES):
            start = time.perf_counter()
            found = [prepare(q) for q in queries]
            elapsed = time.perf_counter() - start
            rates.append(len(queries) / elapsed)
        r = recall(found, truth)
        out.append({"ef": ef, "recall": r, "qps": statistics.median(rates)})
        if r >= 0.999:
            break
    return out


# ---------------------------------------------------------------- the peers


def hnswlib_build(base, path):
    import hnswlib

    index = hnswlib.Index(space="cosine", dim=base.shape[1])
    index.init_index(max_elements=len(base), M=M, ef_construction=EF_CONSTRUCTION, random_seed=1)
    index.set_num_threads(os.cpu_count())
    index.add_items(base, list(range(len(base))))
    index.save_index(str(path / "index.bin"))


def hnswlib_open(path, dim):
    import hnswlib

    index = hnswlib.Index(space="cosine", dim=dim)
    index.load_index(str(path / "index.bin"))
    index.set_num_threads(1)

    def search(_, ef):
        index.set_ef(max(ef, K))
        return lambda q: index.knn_query(q, k=K)[0][0].tolist()

    return search, None


def faiss_build(base, path):
    import faiss

    index = faiss.IndexHNSWFlat(base.shape[1], M, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = EF_CONSTRUCTION
    index.add(base)
    faiss.write_index(index, str(path / "index.faiss"))


def faiss_open(path, dim):
    import faiss

    faiss.omp_set_num_threads(1)
    index = faiss.read_index(str(path / "index.faiss"))

    def search(_, ef):
        index.hnsw.efSearch = max(ef, K)
        return lambda q: index.search(q[None, :], K)[1][0].tolist()

    return search, None


def chroma_build(base, path):
    import chromadb

    client = chromadb.PersistentClient(path=str(path))
    coll = client.create_collection(
        "bench",
        configuration={"hnsw": {"space": "cosine", "ef_construction": EF_CONSTRUCTION,
                                "max_neighbors": M}},
    )
    step = min(5000, client.get_max_batch_size())
    for start in range(0, len(base), step):
        part = base[start : start + step]
        coll.add(ids=[str(i) for i in range(start, start + len(part))], embeddings=part)
    # A first query makes sure the index is built and persisted.
    coll.query(query_embeddings=base[:1], n_results=K)


def chroma_open(path, dim):
    import chromadb

    client = chromadb.PersistentClient(path=str(path))
    coll = client.get_collection("bench")

    first = [True]

    def search(_, ef):
        # Chroma 1.x keeps a loaded index with the ef_search it was loaded with: a
        # `modify` is recorded but takes effect only in a client made after the system
        # cache is cleared (checked on a small collection: recall stayed put until then).
        # So each width of the sweep loads the index again (outside the timed passes);
        # the reopen's first search uses the index as stored (ef_search 100).
        if first[0]:
            first[0] = False
            loaded = coll
        else:
            from chromadb.api.client import SharedSystemClient

            coll.modify(configuration={"hnsw": {"ef_search": max(ef, K)}})
            SharedSystemClient.clear_system_cache()
            loaded = chromadb.PersistentClient(path=str(path)).get_collection("bench")
        return lambda q: [int(i) for i in loaded.query(query_embeddings=q[None, :], n_results=K,
                                                         include=[])["ids"][0]]

    return search, None


def lancedb_build(base, path):
    import lancedb
    import pyarrow as pa

    db = lancedb.connect(str(path))
    vectors = pa.FixedSizeListArray.from_arrays(pa.array(base.reshape(-1)), base.shape[1])
    table = db.create_table("bench", pa.table({"id": pa.array(range(len(base)), pa.int64()),
                                               "vector": vectors}))
    table.create_index(metric="cosine", index_type="IVF_HNSW_SQ", vector_column_name="vector",
                       m=M, ef_construction=EF_CONSTRUCTION)


def lancedb_open(path, dim):
    import lancedb

    table = lancedb.connect(str(path)).open_table("bench")

    def search(_, ef):
        def one(q):
            r = table.search(q).metric("cosine").limit(K).ef(max(ef, K)).nprobes(20)
            return r.select(["id"]).to_arrow()["id"].to_pylist()
        return one

    def exact(q):
        r = table.search(q).metric("cosine").limit(K).bypass_vector_index()
        return r.select(["id"]).to_arrow()["id"].to_pylist()

    return search, exact


def sqlite_connect(file):
    """A connection that can load sqlite-vec: the standard module when its SQLite allows
    extensions, else APSW (`pip install apsw`; some Python builds lack extension loading)."""
    import sqlite3

    import sqlite_vec

    db = sqlite3.connect(str(file))
    if hasattr(db, "enable_load_extension"):
        db.enable_load_extension(True)
        sqlite_vec.load(db)
        return db
    import apsw

    db = apsw.Connection(str(file))
    db.enable_load_extension(True)
    db.load_extension(sqlite_vec.loadable_path())
    return db


def sqlite_vec_build(base, path):
    db = sqlite_connect(path / "vec.db")
    db.execute(f"create virtual table v using vec0(embedding float[{base.shape[1]}] distance_metric=cosine)")
    db.execute("begin")
    db.executemany("insert into v(rowid, embedding) values (?, ?)",
                   ((i, row.tobytes()) for i, row in enumerate(base)))
    db.execute("commit")
    db.close()


def sqlite_vec_open(path, dim):
    db = sqlite_connect(path / "vec.db")

    def exact(q):
        rows = db.execute("select rowid from v where embedding match ? and k = ? order by distance",
                          (q.tobytes(), K)).fetchall()
        return [r[0] for r in rows]

    return None, exact


def numpy_build(base, path):
    import numpy as np

    np.save(path / "base.npy", base)


def numpy_open(path, dim):
    import numpy as np

    base = np.load(path / "base.npy")

    def exact(q):
        scores = base @ q
        top = np.argpartition(-scores, K)[:K]
        return top[np.argsort(-scores[top])].tolist()

    return None, exact


PEERS = {
    "hnswlib": (hnswlib_build, hnswlib_open),
    "faiss": (faiss_build, faiss_open),
    "chroma": (chroma_build, chroma_open),
    "lancedb": (lancedb_build, lancedb_open),
    "sqlite-vec": (sqlite_vec_build, sqlite_vec_open),
    "numpy": (numpy_build, numpy_open),
}


# ---------------------------------------------------------------- child processes


def child(phase, lib, name, path):
    path = pathlib.Path(path)
    build, open_ = PEERS[lib]
    if phase == "build":
        base = load(name, "base")
        before = rss()
        start = time.perf_counter()
        build(base, path)
        seconds = time.perf_counter() - start
        return {"build_s": seconds, "disk": dir_bytes(path), "build_peak": peak(),
                "rss_before": before}
    queries = load(name, "queries")
    truth = load(name, "truth")
    before = rss()
    start = time.perf_counter()
    search, exact = open_(path, queries.shape[1])
    if search is not None:
        search(None, 64)(queries[0])
    else:
        exact(queries[0])
    first = time.perf_counter() - start
    ready_rss = rss()
    out = {"reopen_first_search_s": first, "query_rss": ready_rss, "query_rss_before": before}
    if search is not None:
        out["sweep"] = sweep(search, queries, truth, EF_SWEEP)
    if exact is not None:
        n = 200 if lib in ("sqlite-vec", "lancedb") else len(queries)
        start = time.perf_counter()
        found = [exact(q) for q in queries[:n]]
        out["exact_qps"] = n / (time.perf_counter() - start)
        out["exact_recall"] = recall(found, truth[:n])
    out["query_peak"] = peak()
    return out


def run_child(args_list, env=None, timeout=3600):
    proc = subprocess.run(args_list, capture_output=True, text=True, env=env, timeout=timeout)
    lines = [l for l in proc.stdout.splitlines() if l.startswith("{")]
    if proc.returncode != 0 or not lines:
        return {"error": (proc.stderr or proc.stdout)[-400:]}
    return json.loads(lines[-1])


def build(lib, name, work, ratchetdb_bin):
    """The build child of `lib` on set `name`; returns its report and the path it left."""
    path = work / f"{lib}-{name}"
    shutil.rmtree(path, ignore_errors=True)
    if lib == "ratchetdb":
        # The search bench's child modes (benches/search.rs): same phases, same files.
        path.parent.mkdir(parents=True, exist_ok=True)
        db = str(path) + ".redb"
        env = dict(os.environ, RATCHETDB_REAL_CHILD=f"build:{name}:{db}", RATCHETDB_BENCH_DATA=str(DATA))
        return run_child([ratchetdb_bin], env), db
    path.mkdir(parents=True)
    me = [sys.executable, __file__, "--child"]
    return run_child(me + ["build", lib, name, str(path)]), str(path)


def query(lib, name, path, ratchetdb_bin):
    """One query child of `lib` on what its build left at `path`."""
    if lib == "ratchetdb":
        env = dict(os.environ, RATCHETDB_REAL_CHILD=f"query:{name}:{path}", RATCHETDB_BENCH_DATA=str(DATA))
        return run_child([ratchetdb_bin], env)
    return run_child([sys.executable, __file__, "--child", "query", lib, name, path])


def median_of_rounds(rounds):
    """One query report from several rounds' reports of the same files: per `ef` the median
    QPS (recall is the same every round: the index does not change), and the medians of
    the reopen time, the resident memory and the exact QPS; the rounds themselves kept."""
    ok = [r for r in rounds if "error" not in r]
    if not ok:
        return rounds[0]
    out = dict(ok[0])
    for key in ("reopen_first_search_s", "query_rss", "exact_qps", "query_peak"):
        # (`exact_qps` is null when RATCHETDB_BENCH_EXACT_QUERIES=0 skipped the pass.)
        values = [r[key] for r in ok if r.get(key) is not None]
        if key in out and values:
            out[key] = statistics.median(values)
    if "sweep" in out:
        sweep = []
        for i, s in enumerate(out["sweep"]):
            qps = [r["sweep"][i]["qps"] for r in ok if len(r.get("sweep", [])) > i]
            sweep.append({**s, "qps": statistics.median(qps)})
        out["sweep"] = sweep
    out["rounds"] = rounds
    return out


def at_recall(result, target):
    ok = [s for s in result.get("sweep", []) if s["recall"] >= target]
    if not ok:
        return None
    best = max(ok, key=lambda s: s["qps"])
    return best


def table(name, results):
    mb = lambda b: f"{b / 1e6:,.0f} MB" if b else "–"
    rows = []
    header = "| library | QPS @ recall 0.95 (ef) | QPS @ 0.99 (ef) | exact QPS | build → searchable | disk | peak RSS build / RSS query | reopen → first search |"
    rows.append(f"### {name}\n")
    rows.append(header)
    rows.append("|" + "---|" * 8)
    ref = results.get("hnswlib", {})
    for lib, r in results.items():
        if "error" in r:
            rows.append(f"| {lib} | error: {r['error'].splitlines()[-1] if r['error'] else '?'} |||||||")
            continue
        cells = [lib]
        for target in (0.95, 0.99):
            s = at_recall(r, target)
            rs = at_recall(ref, target)
            if s is None:
                best = max(r.get("sweep", [{}]), key=lambda s: s.get("recall", 0), default={})
                cells.append(f"max recall {best.get('recall', float('nan')):.3f}" if r.get("sweep") else "–")
            else:
                ratio = f", {s['qps'] / rs['qps']:.2f}× hnswlib" if rs and lib != "hnswlib" else ""
                cells.append(f"{s['qps']:,.0f} ({s['ef']}, {s['recall']:.3f}{ratio})")
        exact_qps = r.get("exact_qps")
        cells.append("–" if exact_qps is None else f"{exact_qps:,.0f}" + (
            f" ({r['exact_queries']} queries)" if r.get("exact_queries", 1000) < 1000 else ""))
        b = r.get("build_s") if lib != "ratchetdb" else r.get("ready_after_last_write_s")
        extra = ""
        if lib == "ratchetdb":
            fg = r.get("foreground_build_s")
            fg = "skipped" if fg is None else f"{fg:.1f} s"
            extra = f" (ingest {r.get('ingest_s', 0):.1f} s, foreground build {fg})"
        cells.append(f"{b:.1f} s{extra}" if b is not None else "–")
        closed = r.get("disk_after_close")
        cells.append(mb(r.get("disk")) + (f" ({mb(closed)} closed)" if closed else ""))
        cells.append(f"{mb(r.get('build_peak'))} / {mb(r.get('query_rss'))}")
        cells.append(f"{r.get('reopen_first_search_s', float('nan')):.2f} s")
        rows.append("| " + " | ".join(cells) + " |")
    r = results.get("ratchetdb", {})
    paired = list(zip(r.get("rounds", []), ref.get("rounds", [])))
    if len(paired) > 1:
        for target in (0.95, 0.99):
            ratios = []
            for mine, theirs in paired:
                s, rs = at_recall(mine, target), at_recall(theirs, target)
                if s and rs:
                    ratios.append(s["qps"] / rs["qps"])
            if ratios:
                listed = ", ".join(f"{x:.2f}×" for x in ratios)
                rows.append(f"\nratchetdb / hnswlib QPS at recall {target}, round by round "
                            f"(alternated query processes): {listed}; median "
                            f"{statistics.median(ratios):.2f}×.")
    if "resolve_us_per_query" in r:
        rows.append(f"\nratchetdb resolves every hit against its read snapshot (text, metadata, "
                    f"version), included in its QPS: a hit reads its document's chunks row "
                    f"(schema 4). For scale, `Store::get` of the 10 hits' documents (document "
                    f"row and both revision rows) takes {r['resolve_us_per_query']:.0f} µs per "
                    f"query.")
    b = r.get("disk_breakdown")
    if b:
        tables = ", ".join(f"{k} {v['pages_bytes'] / 1e6:.1f}" for k, v in
                           sorted(b["tables"].items(), key=lambda kv: -kv[1]["pages_bytes"])
                           if v["pages_bytes"] >= 1e5)
        rows.append(f"\nratchetdb's file after the background build: {r['disk'] / 1e6:.1f} MB while "
                    f"open; closed (compacted in {r.get('close_s', float('nan')):.2f} s): "
                    f"{b['file'] / 1e6:.1f} MB, of which {b['free'] / 1e6:.1f} MB free pages; "
                    f"tables (MB of pages): {tables}.")
    return "\n".join(rows) + "\n"


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        _, _, phase, lib, name, path = sys.argv
        print(json.dumps(child(phase, lib, name, path)))
        return
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sets", default="glove-100k,minilm,random384")
    p.add_argument("--libs", default=",".join(LIBS))
    p.add_argument("--ratchetdb", help="the search bench executable (cargo bench --bench search --no-run)")
    p.add_argument("--work", type=pathlib.Path, default=None, help="scratch directory (default: a temp dir)")
    p.add_argument("--out", type=pathlib.Path, default=None)
    p.add_argument("--json", type=pathlib.Path, default=None, help="also write the raw results")
    p.add_argument("--rounds", type=int, default=1,
                   help="query children per library, alternated (figures: the median of the rounds)")
    args = p.parse_args()
    libs = args.libs.split(",")
    if "ratchetdb" in libs and not args.ratchetdb:
        sys.exit("--ratchetdb PATH needed (or leave ratchetdb out of --libs)")
    work = args.work or pathlib.Path(tempfile.mkdtemp(prefix="ratchetdb-peers-", dir=DATA))
    out, raw = [], {}
    for name in args.sets.split(","):
        if not (DATA / f"{name}.base.npy").exists():
            print(f"skipped {name}: run benches/data/fetch.sh first", file=sys.stderr)
            continue
        results, paths, rounds = {}, {}, {lib: [] for lib in libs}
        for lib in libs:
            print(f"{name}: {lib} build ...", file=sys.stderr, flush=True)
            try:
                results[lib], paths[lib] = build(lib, name, work, args.ratchetdb)
            except subprocess.TimeoutExpired:
                results[lib] = {"error": "timed out"}
            print(json.dumps(results[lib])[:600], file=sys.stderr, flush=True)
        # The query children alternate, library by library, round by round (the order
        # reversed every other round), so a change of the machine's load meets every
        # library alike; each figure is the median of the rounds.
        for r in range(args.rounds):
            order = libs if r % 2 == 0 else libs[::-1]
            for lib in order:
                if "error" in results[lib]:
                    continue
                print(f"{name}: {lib} query, round {r + 1} of {args.rounds} ...", file=sys.stderr, flush=True)
                try:
                    rounds[lib].append(query(lib, name, paths[lib], args.ratchetdb))
                except subprocess.TimeoutExpired:
                    rounds[lib].append({"error": "timed out"})
                print(json.dumps(rounds[lib][-1])[:400], file=sys.stderr, flush=True)
        for lib in libs:
            if rounds[lib]:
                results[lib] = {**results[lib], **median_of_rounds(rounds[lib])}
            if lib in paths:
                target = pathlib.Path(paths[lib])
                if target.is_dir():
                    shutil.rmtree(target, ignore_errors=True)
                else:
                    target.unlink(missing_ok=True)
        raw[name] = results
        out.append(table(name, results))
        print(out[-1], flush=True)
    if args.out:
        args.out.write_text("\n".join(out))
    if args.json:
        args.json.write_text(json.dumps(raw, indent=1))
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
