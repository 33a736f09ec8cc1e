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
#          (it streams the rows from the file and holds no copy of the set);
#   query: reopen, time to the first graph search, then one query at a time over the set's
#          1,000 queries at each swept `ef` (median QPS of 3 passes), recall@10 against the
#          exact answer; peak RSS of the query process.
# Prints a JSON line per child and a table: recall and QPS at the first `ef` reaching 0.95,
# peak RSS, reopen -> first search, build times. Needs python3.
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
run() { # run LABEL BUDGET PHASE FILE
  local label=$1 mib=$2 phase=$3 file=$4
  if [ "$mib" = none ]; then
    RATCHETDB_REAL_CHILD="$phase:$set_name:$file" "$bin"
  else
    RATCHETDB_MEMORY_BUDGET_MIB=$mib RATCHETDB_REAL_CHILD="$phase:$set_name:$file" "$bin"
  fi | tail -1 | sed "s/^/{\"label\": \"$label\", \"value\": /; s/\$/}/"
}
rm -f "$dir/full.redb" "$dir/budget.redb"
{
  run build-none none build "$dir/full.redb"
  run build-budget "$budget" build "$dir/budget.redb"
  run query-none none query "$dir/full.redb"
  run query-budget "$budget" query "$dir/budget.redb"
} | tee "$dir/memory_budget.jsonl"
python3 - "$dir/memory_budget.jsonl" "$budget" <<'PY'
import json, sys
rows = {}
for line in open(sys.argv[1]):
    row = json.loads(line)
    rows[row["label"]] = row["value"]
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
line("build_index s", bn["foreground_build_s"], bb["foreground_build_s"])
line("build peak RSS MiB", bn["build_peak"] / mib, bb["build_peak"] / mib, "{:.0f}")
PY
