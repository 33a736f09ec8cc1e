#!/usr/bin/env bash
# The store under `Options::memory_budget` beside the same store without one (issue 48), each
# phase in a fresh process of its own, side by side in one run. Run by hand.
#
#   bash benches/peers/memory_budget.sh [SET] [BUDGET_MIB] [DIR]
#
# SET: a set of benches/data/fetch.sh (default random384-200k: 200k x 384-d of intrinsic
# dimension 64); BUDGET_MIB: default 64; DIR: where the two stores are written (default a
# temporary directory). Builds the search bench (`--features testkit`) and runs its child
# modes (benches/search_real/mod.rs) with and without RATCHETDB_MEMORY_BUDGET_MIB:
#   build: ingest every base row into a fresh store (the index follows the writes), wait for
#          the index, then `build_index()` again in the foreground; peak RSS of the process
#          (it streams the rows from the file and holds no copy of the set), and of the close
#          (which compacts the file) and the reopen + `build_index()` each on its own;
#   query: reopen, time to the first graph search, then one query at a time over the set's
#          1,000 queries at each swept `ef` (median QPS of 3 passes), recall@10 against the
#          exact answer; peak RSS of the query process.
# Prints a JSON line per child (with the load average when it ended) and a table: recall and
# QPS at the first `ef` reaching 0.95, peak RSS, reopen -> first search, build times. Needs
# python3. RATCHETDB_BENCH_POOL_NICE=N renices the children's index pool threads (nice 10 by
# design) to N while they run (N below 10 needs root): on a machine other jobs load, the
# background build otherwise gets a sliver of a core and its time says little about the build.
# RATCHETDB_BENCH_PHASES: the children to run, in order (default "build-none build-budget
# query-none query-budget"); a query child reads the store its build child left in DIR. The
# JSON lines are appended to DIR/memory_budget.jsonl; the table is printed once it holds all
# four (the last line of each). For the 1M and 2M sets, where the full run takes hours:
# RATCHETDB_BENCH_FOREGROUND=0 skips the build child's foreground `build_index()` (the
# background build's time is the build figure); RATCHETDB_BENCH_SWEEP_TO=0.96 ends the query
# child's `ef` sweep at that recall (default 0.999); RATCHETDB_BENCH_EXACT_QUERIES=N runs the
# exact pass over the first N queries (a budgeted exact scan reads every vectors row; 0 skips
# it; the JSON's `exact_queries` says how many ran); a knob set to something that is not a
# number stops the child;
# RATCHETDB_BENCH_WAIT_SECS bounds the wait for the index (default 3,600 s);
# RATCHETDB_BENCH_EFS=1280,1600,2000 sweeps these widths instead of the usual 10-1000;
# RATCHETDB_BENCH_RERANK=N has the sweep's searches score N candidates exactly under the
# budget (`SearchOptions::rerank`; unset: the store's default).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$here/../.."
set_name=${1:-random384-200k}
budget=${2:-64}
dir=${3:-$(mktemp -d)}
export RATCHETDB_BENCH_DATA="${RATCHETDB_BENCH_DATA:-$root/benches/data/sets}"
bin=$(cd "$root" && cargo bench --bench search --features testkit --no-run --message-format=json 2>/dev/null |
  python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "search" and m.get("executable"):
        print(m["executable"])')
pool_nice=${RATCHETDB_BENCH_POOL_NICE:-}
renice_pool() { # renice_pool PID: the child's index pool threads to $pool_nice while it runs
  local pid=$1 task
  while kill -0 "$pid" 2>/dev/null; do
    for task in /proc/"$pid"/task/*; do
      case "$(cat "$task/comm" 2>/dev/null)" in
        ratchetdb-index*) renice -n "$pool_nice" -p "${task##*/}" >/dev/null 2>&1 || true ;;
      esac
    done
    sleep 0.5
  done
}
run() { # run LABEL BUDGET PHASE FILE
  local label=$1 mib=$2 phase=$3 file=$4 out pid
  out=$(mktemp)
  if [ "$mib" = none ]; then
    RATCHETDB_REAL_CHILD="$phase:$set_name:$file" "$bin" >"$out" &
  else
    RATCHETDB_MEMORY_BUDGET_MIB=$mib RATCHETDB_REAL_CHILD="$phase:$set_name:$file" "$bin" >"$out" &
  fi
  pid=$!
  [ -n "$pool_nice" ] && renice_pool "$pid" &
  wait "$pid"
  echo "{\"label\": \"$label\", \"load\": \"$(cut -d' ' -f1-3 /proc/loadavg)\", \"value\": $(tail -1 "$out")}"
  rm -f "$out"
}
phases=${RATCHETDB_BENCH_PHASES:-build-none build-budget query-none query-budget}
for phase in $phases; do
  case "$phase" in
    build-none) rm -f "$dir/full.redb"; run build-none none build "$dir/full.redb" ;;
    build-budget) rm -f "$dir/budget.redb"; run build-budget "$budget" build "$dir/budget.redb" ;;
    query-none) run query-none none query "$dir/full.redb" ;;
    query-budget) run query-budget "$budget" query "$dir/budget.redb" ;;
    *) echo "unknown phase $phase" >&2; exit 2 ;;
  esac
done | tee -a "$dir/memory_budget.jsonl"
python3 - "$dir/memory_budget.jsonl" "$budget" <<'PY'
import json, sys
rows = {}
for line in open(sys.argv[1]):
    row = json.loads(line)
    rows[row["label"]] = row["value"]
if len(rows) < 4:
    sys.exit("table left out: not every phase ran")
def at(sweep, target=0.95):
    ok = [s for s in sweep if s["recall"] >= target]
    return ok[0] if ok else sweep[-1]
mib = 1 << 20
print(f"\n{'':24}{'unbudgeted':>14}{sys.argv[2] + ' MiB':>14}{'ratio':>8}")
n, b = rows["query-none"], rows["query-budget"]
an, ab = at(n["sweep"]), at(b["sweep"])
def line(name, x, y, fmt="{:.2f}"):
    ratio = y / x if x else float("nan")
    print(f"{name:24}{fmt.format(x):>14}{fmt.format(y):>14}{ratio:>8.2f}")
line("ef at recall 0.95", an["ef"], ab["ef"], "{:.0f}")
line("recall@10 there", an["recall"], ab["recall"], "{:.3f}")
line("QPS there", an["qps"], ab["qps"], "{:.0f}")
line("query peak RSS MiB", n["query_peak"] / mib, b["query_peak"] / mib, "{:.0f}")
line("reopen->1st search s", n["reopen_first_search_s"], b["reopen_first_search_s"])
bn, bb = rows["build-none"], rows["build-budget"]
line("ingest s", bn["ingest_s"], bb["ingest_s"])
line("index ready after s", bn["ready_after_last_write_s"], bb["ready_after_last_write_s"])
if bn.get("foreground_build_s") is not None and bb.get("foreground_build_s") is not None:
    line("build_index s", bn["foreground_build_s"], bb["foreground_build_s"])
line("build peak RSS MiB", bn["build_peak"] / mib, bb["build_peak"] / mib, "{:.0f}")
if "close_peak" in bn and "close_peak" in bb:
    line("close peak RSS MiB", bn["close_peak"] / mib, bb["close_peak"] / mib, "{:.0f}")
    line("close (compaction) s", bn["close_s"], bb["close_s"])
PY
