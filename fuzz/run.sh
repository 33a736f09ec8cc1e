#!/usr/bin/env bash
# Runs each fuzz target for FUZZ_SECONDS (default 45) on the stable toolchain: cargo-fuzz
# needs nightly's -Z flags (the sanitizer), which RUSTC_BOOTSTRAP=1 unlocks on stable.
# Installs cargo-fuzz first when it is missing (`cargo install cargo-fuzz --locked`; set
# FUZZ_INSTALL=0 to skip fuzzing instead). A crash fails the run: libFuzzer leaves the input in
# fuzz/artifacts/<target>/; copy it into fuzz/corpus/<target>/ (the corpus replay tests run it
# in every `cargo test`), fix the bug, and pin it with a regression test.
#
# Usage (from anywhere): fuzz/run.sh [target...]
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${FUZZ_SECONDS:-45}"
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    targets=(row_decoding open_mutated_file ops_vs_model jsonl_line)
fi

if ! cargo fuzz --version >/dev/null 2>&1; then
    if [ "${FUZZ_INSTALL:-1}" = "0" ]; then
        echo "fuzz/run.sh: cargo-fuzz is not installed and FUZZ_INSTALL=0; skipping fuzzing"
        exit 0
    fi
    echo "fuzz/run.sh: installing cargo-fuzz"
    cargo install cargo-fuzz --locked --quiet
fi
cargo fuzz --version

# Stable rustc accepts the -Z flags cargo-fuzz passes (sanitizer, coverage) with this set.
export RUSTC_BOOTSTRAP=1

started=$(date +%s)
# One build of every target (they share the dependencies), then the runs.
cargo fuzz build
echo "fuzz/run.sh: built in $(( $(date +%s) - started ))s"

status=0
mkdir -p fuzz/target
for target in "${targets[@]}"; do
    echo "fuzz/run.sh: $target for ${seconds}s"
    # New inputs go to a scratch corpus, so that the committed seed corpus stays small; the
    # committed one is read-only input.
    scratch="fuzz/target/corpus-$target"
    log="fuzz/target/$target.log"
    mkdir -p "$scratch"
    code=0
    cargo fuzz run "$target" "$scratch" "fuzz/corpus/$target" -- \
        -max_total_time="$seconds" -rss_limit_mb=4096 -timeout=30 -print_final_stats=1 \
        >"$log" 2>&1 || code=$?
    # The final stats, and anything that went wrong.
    grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb|#[0-9]+ +DONE)|panicked|ERROR|SUMMARY|Test unit written' "$log" || true
    if [ "$code" -ne 0 ]; then
        tail -40 "$log"
        echo "fuzz/run.sh: $target FAILED (exit $code): a crash input is in fuzz/artifacts/$target/; add it to fuzz/corpus/$target/ and pin it with a regression test"
        status=1
    fi
done
echo "fuzz/run.sh: done in $(( $(date +%s) - started ))s"
exit "$status"
