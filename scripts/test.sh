#!/usr/bin/env bash
# Runs the whole test suite (what CI runs): formatting and lints first,
# then the tests. Uses the one dev profile and whatever CARGO_TARGET_DIR is
# set, so the tree is built once and reused (clippy's check of the
# dependencies is a few minutes more on a cold tree). The `lab` feature
# builds `memd eval` and `memd bench`, which some tests use.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup.sh
./scripts/fetch-model.sh
cargo fmt --check
cargo clippy --locked --features lab --all-targets -- -D warnings
cargo test --locked --features lab "$@"
