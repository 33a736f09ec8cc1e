#!/usr/bin/env bash
# Runs each fuzz target briefly (FUZZ_SECONDS each, default 60) when cargo-fuzz and a nightly
# toolchain are installed; otherwise says so and exits 0: tests/storage/fuzz_corpus_replay.rs runs the
# committed corpus through the same harness functions in every `cargo test`.
#
# Usage (from anywhere): fuzz/run.sh [target...]
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${FUZZ_SECONDS:-60}"
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    targets=(row_decoding open_mutated_file ops_vs_model)
fi

if ! cargo +nightly --version >/dev/null 2>&1; then
    echo "fuzz/run.sh: no nightly toolchain; skipping fuzzing (the corpus replay test covers CI)"
    exit 0
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "fuzz/run.sh: cargo-fuzz is not installed; skipping fuzzing (the corpus replay test covers CI)"
    exit 0
fi

for target in "${targets[@]}"; do
    echo "fuzz/run.sh: $target for ${seconds}s"
    # New inputs go to a scratch corpus, so that the committed seed corpus stays small; the
    # committed one is read-only input.
    scratch="fuzz/target/corpus-$target"
    mkdir -p "$scratch"
    cargo +nightly fuzz run "$target" "$scratch" "fuzz/corpus/$target" -- \
        -max_total_time="$seconds" -rss_limit_mb=4096 -timeout=30 -print_final_stats=1
done
