#!/bin/bash
# Usage: RATCHET=target/release/ratchet benches/peers/reembed_search_latency.sh STORE.redb
# (a store built by `ratchet ingest`, which this moves to --hashing 128, or to what
# REEMBED_ARGS says, e.g. REEMBED_ARGS="--model DIR --batch 32" for all-MiniLM-L6-v2). Median wall time of `ratchet search` (a process each: open, embed, search), quiet, then
# during `ratchet reembed --hashing 128 --activate`, in the same run.
R=${RATCHET:-ratchet}
DB=$1
time_search() {
  local s=$(date +%s%N); $R search --db $DB --mode vector -k 5 "ratchet pawl gear" > /dev/null || echo FAIL; local e=$(date +%s%N); echo $(( (e-s)/1000000 ))
}
quiet=(); for i in $(seq 20); do quiet+=($(time_search)); done
( $R reembed --db $DB ${REEMBED_ARGS:---hashing 128 --batch 64} --activate 2> reembed.err ) &
pid=$!
during=()
while kill -0 $pid 2>/dev/null; do during+=($(time_search)); done
wait $pid; echo "reembed exit $?"
med() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)] " ms (n=" NR ")"}'; }
echo "quiet median: $(med "${quiet[@]}")"
echo "during median: $(med "${during[@]}")"
echo "searches failed: quiet $(printf '%s\n' "${quiet[@]}" | grep -c FAIL), during $(printf '%s\n' "${during[@]}" | grep -c FAIL)"
tail -3 reembed.err
