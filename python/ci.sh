#!/usr/bin/env bash
# CI for the Python package (called by .ci/run): installs the pinned test requirements,
# checks the binding crate (fmt, clippy), builds and installs `ratchetdb` from ./python with
# pip (maturin), and runs its pytest suite (LangChain's and LlamaIndex's flows included).
#
# The binding is a member of the root workspace and builds with its dev profile: with the
# root's target directory the dependencies `cargo test` compiled are reused. PyO3, numpy and
# the binding are compiled here, and so is the MiniLM encoder's `gemm` (numpy turns on
# num-complex's `std`, which `cargo test` leaves off, so gemm is built again). The MiniLM
# comparison test runs `ratchet` from the same target directory (the binary
# `cargo test --features minilm,postgres` built).
set -euo pipefail
cd "$(dirname "$0")"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$(cd .. && pwd)/target}"

echo "--- pip install -r python/requirements-test.txt"
python3 -m pip install --quiet --disable-pip-version-check -r requirements-test.txt

echo "--- python/: cargo fmt --check, cargo clippy -D warnings"
cargo fmt -p ratchetdb-python -- --check
cargo clippy -p ratchetdb-python --all-targets -- -D warnings

echo "--- pip install ./python (maturin, dev profile)"
MATURIN_PEP517_ARGS="--profile dev" python3 -m pip install --quiet --disable-pip-version-check \
  --no-build-isolation --force-reinstall --no-deps .

echo "--- pytest python/tests"
# From another directory, so `import ratchetdb` is the installed package.
cd tests && python3 -m pytest -q -p no:cacheprovider .
