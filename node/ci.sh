#!/usr/bin/env bash
# CI for the Node.js package (called by .ci/run): clippy on the addon, `npm install ./node`
# into a scratch project as a user does (it builds the addon), that project importing it
# through CommonJS and ESM, then the package's own tests with Node's runner.
#
# The addon builds with Cargo's dev profile (RATCHETDB_NODE_PROFILE=dev; a user's install
# builds release) into the root's target directory.
set -euo pipefail
cd "$(dirname "$0")"
here="$(pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$(cd .. && pwd)/target}"
export RATCHETDB_NODE_PROFILE="${RATCHETDB_NODE_PROFILE:-dev}"

echo "--- node/: cargo clippy -D warnings"
cargo clippy -p ratchetdb-node --all-targets -- -D warnings

echo "--- npm ci (the pinned build CLI and test dependencies)"
npm ci --ignore-scripts --no-audit --no-fund

echo "--- npm install ./node into a scratch project (builds the addon)"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
(cd "$scratch" && npm init -y >/dev/null && npm install --no-audit --no-fund "$here" >/dev/null)
(cd "$scratch" && node -e "
const { Store } = require('ratchetdb');
import('ratchetdb').then((esm) => {
  if (esm.Store !== Store) throw new Error('CommonJS and ESM export different classes');
  console.log('ratchetdb imports through CommonJS and ESM');
});")

echo "--- node --test node/tests"
node --test --test-concurrency=1 tests/
