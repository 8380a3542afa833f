#!/usr/bin/env bash
# Runs the whole test suite (what CI runs). Uses the one dev profile and
# whatever CARGO_TARGET_DIR is set, so the tree is built once and reused.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup.sh
./scripts/fetch-model.sh
cargo test --locked "$@"
