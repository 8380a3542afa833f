#!/usr/bin/env bash
# Runs the whole test suite (what CI runs): formatting and lints first,
# then the tests. Uses the one dev profile and whatever CARGO_TARGET_DIR is
# set, so the tree is built once and reused (clippy's check of the
# dependencies is a few minutes more on a cold tree). The `lab` feature
# builds `memd eval` and `memd bench`, which some tests use; `failpoints`
# the test failpoints of the SIGKILL tests; Chromium and ChromeDriver the
# web page's browser tests (scripts/install-browser.sh). Then the Python tests
# (clients/python/run-tests.sh: a virtualenv under the target directory).
# The binary as `cargo install` builds it (no features; only memd itself is compiled again, not the
# dependencies) is kept beside as `memd-shipped`, for the test that a
# shipped memd never reads MEMD_PAUSE_AT.
set -euo pipefail
cd "$(dirname "$0")/.."
# The tests that load ONNX Runtime in their own process (memd's binary
# turns its telemetry off itself: src/embed/onnx.rs).
export ORT_DISABLE_TELEMETRY=1
. scripts/setup.sh
./scripts/fetch-model.sh
./scripts/install-browser.sh
cargo fmt --check
target="${CARGO_TARGET_DIR:-target}"
cargo build --locked --bin memd
cp "$target/debug/memd" "$target/debug/memd-shipped"
cargo clippy --locked --features lab,failpoints --all-targets -- -D warnings
cargo test --locked --features lab,failpoints "$@"
# The Python client, memd's MCP server under the official MCP SDK, and the
# README's commands (the doc test), against the binary just built.
./clients/python/run-tests.sh
