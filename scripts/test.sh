#!/usr/bin/env bash
# Runs the whole test suite (what CI runs): formatting first, then the
# tests, built with clippy's lints as errors. Uses the one dev profile and
# whatever CARGO_TARGET_DIR is set, so the tree is built once and reused.
# The `lab` feature builds `memd eval` and `memd bench`, which some tests
# use; `failpoints` the test failpoints of the SIGKILL tests; Chromium and
# ChromeDriver the web page's browser tests (scripts/install-browser.sh);
# moto's S3 server the object storage tests (scripts/install-s3.sh).
# Then the Python tests (clients/python/run-tests.sh: a virtualenv under the
# target directory). The binary as a user installs it (no features, as
# the demo and `cargo install --profile dev` build it; the dependencies
# are compiled once for both builds) is kept beside as `memd-shipped`, for
# the test that a shipped memd never reads MEMD_PAUSE_AT, and packaged
# (scripts/package.sh: the tarball and the wheel, into $target/dist), for
# the tests that install them. Each step prints how long it took, to
# stderr; each build writes cargo's --timings report, and
# scripts/build-timings.py prints where the builds' time went.
#
# Clippy runs as the compiler of memd's own crates in the test build
# (RUSTC_WORKSPACE_WRAPPER and CLIPPY_ARGS, which is how `cargo clippy`
# itself drives it), not as a `cargo clippy` of its own: that would check
# every dependency a second time, in check mode, which cost 16 minutes of
# a cold CI run on 2 cores. The lints are the same (every target, with
# `lab,failpoints`, `-D warnings`); the dependencies are compiled once.
# `cargo clippy --features lab,failpoints --all-targets -- -D warnings`
# gives the same verdict by hand.
set -euo pipefail
cd "$(dirname "$0")/.."
step() {
  local started=$SECONDS
  "$@"
  echo "memd tests: '$*' took $((SECONDS - started)) s" >&2
}
# The tests that load ONNX Runtime in their own process (memd's binary
# turns its telemetry off itself: src/embed/onnx.rs).
export ORT_DISABLE_TELEMETRY=1
step . scripts/setup.sh
step ./scripts/fetch-model.sh
step ./scripts/install-browser.sh
step ./scripts/install-haproxy.sh
step ./scripts/install-s3.sh
export MEMD_MOTO="$(cd "${CARGO_TARGET_DIR:-target}/s3-venv/bin" && pwd)/moto_server"
step cargo fmt --check
target="${CARGO_TARGET_DIR:-target}"
reports="$target/cargo-timings"
before="$(ls "$reports"/cargo-timing-*.html 2>/dev/null || true)"
step cargo build --locked --bin memd --timings
cp "$target/debug/memd" "$target/debug/memd-shipped"
step ./scripts/package.sh "$target/dist"
export MEMD_DIST="$(cd "$target/dist" && pwd)"
export RUSTC_WORKSPACE_WRAPPER=clippy-driver
export CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
step cargo test --locked --features lab,failpoints --no-run --timings
# This run's two reports (older runs' are left where they are).
mapfile -t new < <(comm -13 <(echo "$before" | sort) <(ls "$reports"/cargo-timing-*.html | sort))
python3 scripts/build-timings.py "${new[@]}" >&2
# With cargo-nextest a test that hangs is named and stopped
# (.config/nextest.toml); without it, cargo's own test runner.
if cargo nextest --version >/dev/null 2>&1; then
  step cargo nextest run --locked --features lab,failpoints "$@"
else
  step cargo test --locked --features lab,failpoints "$@"
fi
# The Python client, memd's MCP server under the official MCP SDK, and the
# README's commands (the doc test), against the binary just built.
step ./clients/python/run-tests.sh
echo "memd tests: all passed in $SECONDS s" >&2
