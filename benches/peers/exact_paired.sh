#!/usr/bin/env bash
# The exact scan beside NumPy's `base @ q` + argpartition (peers.py's `numpy_open`), in
# alternating rounds, so the ratio is measured in the same minutes (issue 17). Run by hand.
#
#   bash benches/peers/exact_paired.sh SET ROUNDS STORE_FILE BINARY...
#
# SET: a set of benches/data/fetch.sh (glove-100k, random384, minilm); STORE_FILE: a store
# of that set made by the search bench's build child
#   RATCHETDB_REAL_CHILD=build:SET:STORE_FILE target/release/deps/search-HASH
# BINARY...: search bench executables (`cargo bench --bench search --no-run`), e.g. one
# built from main and one from a branch. Each round: one NumPy pass over the 1,000 queries
# (default OpenBLAS threads), then one pass of the store's exact search per binary
# (RATCHETDB_REAL_CHILD=profile with RATCHETDB_PROFILE_EF=exact, every hit resolved
# against the snapshot). Prints QPS per round. Needs python3 with numpy.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
export RATCHETDB_BENCH_DATA="${RATCHETDB_BENCH_DATA:-$here/../data/sets}"
set_name=$1 rounds=$2 store=$3
shift 3
for round in $(seq 1 "$rounds"); do
  qps=$(python3 - "$RATCHETDB_BENCH_DATA" "$set_name" <<'PY'
import sys, time
import numpy as np
data, name = sys.argv[1], sys.argv[2]
base = np.load(f"{data}/{name}.base.npy")
queries = np.load(f"{data}/{name}.queries.npy")
def exact(q):
    scores = base @ q
    top = np.argpartition(-scores, 10)[:10]
    return top[np.argsort(-scores[top])].tolist()
exact(queries[0])
start = time.perf_counter()
for q in queries:
    exact(q)
print(f"{len(queries) / (time.perf_counter() - start):.1f}")
PY
)
  echo "round $round numpy $qps"
  for binary in "$@"; do
    out=$(RATCHETDB_REAL_CHILD="profile:$set_name:$store" RATCHETDB_PROFILE_EF=exact \
      RATCHETDB_PROFILE_SECONDS=1 "$binary" 2>/dev/null | grep '^{' | tail -1)
    echo "round $round $binary $out"
  done
done
