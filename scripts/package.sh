#!/usr/bin/env bash
# Builds memd's release artifacts, for a user without Rust, into
# $CARGO_TARGET_DIR/dist (or the directory given):
#
#   memd-VERSION-linux-ARCH.tar.gz   bin/memd, lib/memd/libonnxruntime.so,
#                                    share/doc/memd/ (licences, README)
#   memd_client-VERSION-py3-none-linux_ARCH.whl
#                                    the Python client with the same bin/memd
#                                    and library (pip puts them in the
#                                    environment's bin/ and lib/memd/)
#
# The binary is memd as `cargo build --bin memd` makes it: no `lab`, no
# `failpoints`, the one dev profile, so the dependencies are the ones the
# demo and the tests build (nothing is compiled twice), its debug info
# stripped. memd finds the library under lib/memd/ beside its bin/ itself;
# the model (about 90 MB) is fetched on first use by `memd setup`, from
# PyPI, as in a checkout. ONNX Runtime's own wheel on PyPI supplies the
# library and its licence files.
#
#   ./scripts/package.sh [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup.sh
target="${CARGO_TARGET_DIR:-target}"
out="${1:-$target/dist}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"

# The featureless binary, by the path cargo reports for this build (not
# target/debug/memd, which a test build replaces with its own).
binary="$(cargo build --locked --bin memd --message-format=json-render-diagnostics |
  python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "memd" and m.get("executable"):
        print(m["executable"])')"
[ -x "$binary" ] || { echo "package.sh: no memd binary built" >&2; exit 1; }

version="$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -1)"
arch="$(uname -m)"
ort_version="$(sed -n 's/^ORT_VERSION=//p' scripts/fetch-model.sh)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

echo "package.sh: ONNX Runtime $ort_version from PyPI" >&2
name="memd-$version-linux-$arch"
stage="$tmp/$name"
mkdir -p "$stage/bin"
# The library and its licences, as `memd setup` fetches the library.
python3 scripts/onnxruntime-from-pypi.py "$ort_version" "$stage/lib/memd" \
  "$stage/share/doc/memd/onnxruntime"
strip --strip-debug -o "$stage/bin/memd" "$binary"
cp LICENSE README.md "$stage/share/doc/memd/"
# The Rust crates compiled into memd, with their licences (SPDX).
{
  echo "The Rust crates compiled into memd and their licences, as each crate's"
  echo "Cargo.toml states them (cargo tree -e normal --format '{p} {l}'):"
  echo
  cargo tree --locked --offline -e normal --prefix none --format '{p}: {l}' |
    sed 's/ (\*)$//; s/ (proc-macro)//' | sort -u
} > "$stage/share/doc/memd/THIRD-PARTY-RUST.txt"
tar -czf "$out/$name.tar.gz" -C "$tmp" "$name"
echo "package.sh: $out/$name.tar.gz" >&2

# The wheel: the client as its build backend makes it, then the binary and
# the library added as the wheel's scripts and data.
python3 -m pip wheel -q --disable-pip-version-check --no-deps -w "$tmp/wheel" ./clients/python
python3 scripts/wheel-with-memd.py "$(ls "$tmp"/wheel/*.whl)" "$stage" "$out"
