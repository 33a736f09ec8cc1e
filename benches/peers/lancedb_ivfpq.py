#!/usr/bin/env python3
"""LanceDB's IVF-PQ index (vectors on disk, compact codes searched) beside the memory
budget's figures (issue 48; benches/peers/memory_budget.sh), on the same set. Run by hand.

Measured with lancedb 0.40.0, pyarrow 26.0.1, numpy 2.4.6 in a venv of its own:

  python3 -m venv VENV && VENV/bin/pip install lancedb==0.40.0 numpy
  RATCHETDB_BENCH_DATA=DIR VENV/bin/python benches/peers/lancedb_ivfpq.py [SET] [WORKDIR]

SET: a set of benches/data/fetch.sh (default random384-200k); WORKDIR: where the table is
written (default a temporary directory); each child's JSON is kept there too.
LANCEDB_PEER_PHASES="query" runs the query child again on the table a build left in WORKDIR;
LANCEDB_PEER_REFINE (default "none,2,5,10,20") lists the refine factors swept. Two fresh processes, as memory_budget.sh's children:
  build  write the base rows (id = row, vector; 10,000 rows a batch, read from the memory-
         mapped .npy so that the set is not copied into the process) and build IVF_PQ with
         cosine distance: num_partitions = sqrt(n) rounded to a multiple of 8 (LanceDB's own
         default rule; 448 at 200k, 1000 at 1M), num_sub_vectors = 48 (8 dimensions a
         sub-vector of the 384, 48 bytes of code a vector), num_bits 8; build time, bytes on
         disk, peak RSS;
  query  reopen, time to the first indexed search (nprobes 20); then, one query at a time,
         scouting: recall@10 on the first 200 queries (one pass) as nprobes rises, per
         refine_factor, until two settings reach 0.95 or recall gains less than 0.002 (a
         pass of every setting over all queries took too long on the loaded machine: LanceDB
         answers 15-60 queries a second from Python here); then those settings over the
         set's 1,000 queries (median QPS of 3 passes), recall@10 against the exact answer; peak RSS of the query process
         and its RSS before opening (the interpreter, NumPy and pyarrow).
One thread: the query child sets LANCE_CPU_THREADS=1 before lancedb is imported (unless
already set) and searches one query at a time; its I/O threads stay LanceDB's default (with
LANCE_IO_THREADS=1 as well, lancedb 0.40.0 hung in `table.add`). The build child uses every
core, as ratchetdb's index build does. Prints a JSON line per child and a table: the
fastest swept setting reaching recall 0.95 (and 0.99), peak RSS, reopen -> first search,
build time, disk. refine_factor re-scores refine_factor x k candidates with the full vectors
read from the table (the analogue of the budgeted store's exact re-ranking).
"""

import json
import math
import os
import pathlib
import resource
import statistics
import subprocess
import sys
import tempfile
import time

if sys.argv[1:3] == ["--child", "query"]:
    os.environ.setdefault("LANCE_CPU_THREADS", "1")
# LanceDB logs a deprecation warning per search that selects columns without `_distance`.
os.environ.setdefault("LANCE_LOG", "error")
os.environ.setdefault("RUST_LOG", "error")

HERE = pathlib.Path(__file__).resolve().parent
DATA = pathlib.Path(os.environ.get("RATCHETDB_BENCH_DATA", HERE.parent / "data" / "sets"))
K = 10
NUM_SUB_VECTORS = 48
NPROBES = [5, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 448]
REFINE = [
    None if r == "none" else int(r)
    for r in os.environ.get("LANCEDB_PEER_REFINE", "none,2,5,10,20").split(",")
]
SWEEP_PASSES = 3
SCOUT = 200
SCOUT_RECALL = 0.95
BATCH = 10_000


def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def peak():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def dir_bytes(path):
    return sum(p.stat().st_size for p in pathlib.Path(path).rglob("*") if p.is_file())


def partitions(n):
    return max(8, int(round(math.sqrt(n) / 8)) * 8)


def build(name, path):
    import numpy as np
    import pyarrow as pa

    base = np.load(DATA / f"{name}.base.npy", mmap_mode="r")
    n, dim = base.shape
    before = rss()
    import lancedb

    start = time.perf_counter()
    db = lancedb.connect(str(path))

    def batch(at):
        rows = np.ascontiguousarray(base[at : at + BATCH], dtype=np.float32)
        vectors = pa.FixedSizeListArray.from_arrays(pa.array(rows.reshape(-1)), dim)
        return pa.table({"id": pa.array(range(at, at + len(rows)), pa.int64()), "vector": vectors})

    table = db.create_table("bench", batch(0))
    for at in range(BATCH, n, BATCH):
        table.add(batch(at))
    written = time.perf_counter() - start
    table.create_index(
        metric="cosine",
        index_type="IVF_PQ",
        vector_column_name="vector",
        num_partitions=partitions(n),
        num_sub_vectors=NUM_SUB_VECTORS,
        num_bits=8,
    )
    seconds = time.perf_counter() - start
    return {"write_s": written, "build_s": seconds, "disk": dir_bytes(path), "build_peak": peak(),
            "rss_before": before, "n": n, "num_partitions": partitions(n),
            "num_sub_vectors": NUM_SUB_VECTORS}


def query(name, path):
    import numpy as np

    queries = np.load(DATA / f"{name}.queries.npy")
    truth = np.load(DATA / f"{name}.truth.npy")[:, :K]
    import lancedb

    before = rss()
    start = time.perf_counter()
    table = lancedb.connect(str(path)).open_table("bench")

    def search(q, nprobes, refine):
        r = table.search(q).metric("cosine").limit(K).nprobes(nprobes)
        if refine is not None:
            r = r.refine_factor(refine)
        return r.select(["id"]).to_arrow()["id"].to_pylist()

    search(queries[0], 20, None)
    first = time.perf_counter() - start
    ready_rss = rss()
    def measure(nprobes, refine, count, passes):
        rates = []
        for _ in range(passes):
            started = time.perf_counter()
            found = [search(q, nprobes, refine) for q in queries[:count]]
            rates.append(count / (time.perf_counter() - started))
        hits = sum(len(set(f) & set(t.tolist())) for f, t in zip(found, truth[:count]))
        return {"nprobes": nprobes, "refine_factor": refine, "recall": hits / (count * K),
                "qps": statistics.median(rates), "queries": count, "passes": passes}

    # Scouting: recall on the first SCOUT queries, one pass, nprobes rising per refine
    # factor until SCOUT_RECALL or until recall gains less than 0.002; then the full
    # measurement (every query, SWEEP_PASSES passes) at the two smallest nprobes of each
    # refine factor that reached SCOUT_RECALL in scouting.
    scout, chosen = [], []
    for refine in REFINE:
        last, reached = -1.0, []
        for nprobes in NPROBES:
            row = measure(nprobes, refine, SCOUT, 1)
            scout.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
            if row["recall"] >= SCOUT_RECALL:
                reached.append(nprobes)
                if len(reached) == 2 or row["recall"] >= 0.995:
                    break
            elif row["recall"] - last < 0.002:
                break
            last = row["recall"]
        chosen += [(nprobes, refine) for nprobes in reached]
    sweep = []
    for nprobes, refine in chosen:
        sweep.append(measure(nprobes, refine, len(queries), SWEEP_PASSES))
        print(json.dumps(sweep[-1]), file=sys.stderr, flush=True)
    return {"reopen_first_search_s": first, "query_rss_before": before, "ready_rss": ready_rss,
            "query_rss": rss(), "query_peak": peak(), "scout": scout, "sweep": sweep}


def at(sweep, target):
    ok = [s for s in sweep if s["recall"] >= target]
    return max(ok, key=lambda s: s["qps"]) if ok else None


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        phase, name, path = sys.argv[2:5]
        out = build(name, path) if phase == "build" else query(name, path)
        print(json.dumps(out), flush=True)
        return
    name = sys.argv[1] if len(sys.argv) > 1 else "random384-200k"
    work = pathlib.Path(sys.argv[2] if len(sys.argv) > 2 else tempfile.mkdtemp())
    path = work / f"lancedb-ivfpq-{name}"
    phases = os.environ.get("LANCEDB_PEER_PHASES", "build query").split()
    if "build" in phases:
        subprocess.run(["rm", "-rf", str(path)], check=True)
    rows = {}
    for phase in ("build", "query"):
        saved = work / f"lancedb-ivfpq-{name}.{phase}.json"
        if phase not in phases:
            if saved.exists():
                rows[phase] = json.loads(saved.read_text())
            continue
        proc = subprocess.Popen([sys.executable, __file__, "--child", phase, name, str(path)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for line in proc.stderr:  # the sweep's progress; not LanceDB's log lines
            if line.startswith("{") or "Error" in line:
                print(line, end="", file=sys.stderr, flush=True)
        if proc.wait() != 0:
            sys.exit(f"{phase} child failed")
        rows[phase] = json.loads(proc.stdout.read().strip().splitlines()[-1])
        saved.write_text(json.dumps(rows[phase]) + "\n")
        print(json.dumps({"label": f"lancedb-ivfpq-{phase}", "value": rows[phase]}), flush=True)
    if len(rows) < 2:
        sys.exit("table left out: no saved report of the phase that did not run")
    b, q = rows["build"], rows["query"]
    mib = 1 << 20
    print(f"\nLanceDB IVF_PQ on {name}: {b['num_partitions']} partitions, "
          f"{b['num_sub_vectors']} sub-vectors x 8 bits, cosine, one thread")
    for target in (0.95, 0.99):
        s = at(q["sweep"], target)
        if s is None:
            print(f"recall {target}: not reached (best {max(x['recall'] for x in q['sweep']):.3f})")
        else:
            print(f"recall {target}: nprobes {s['nprobes']} refine_factor {s['refine_factor']}"
                  f" recall {s['recall']:.3f} QPS {s['qps']:.0f}")
    print(f"query peak RSS {q['query_peak'] / mib:.0f} MiB (before open {q['query_rss_before'] / mib:.0f}"
          f" MiB, after the first search {q['ready_rss'] / mib:.0f} MiB)")
    print(f"reopen -> first search {q['reopen_first_search_s']:.3f} s")
    print(f"build {b['build_s']:.1f} s (rows written after {b['write_s']:.1f} s), build peak RSS "
          f"{b['build_peak'] / mib:.0f} MiB, disk {b['disk'] / mib:.0f} MiB")


if __name__ == "__main__":
    main()
