#!/usr/bin/env bash
# The Python client's tests, against a real daemon: a virtualenv under the
# Cargo target directory (kept between runs, outside git), the client and
# its test extras installed into it at the versions constraints.txt pins
# (again only when pyproject.toml or constraints.txt changes), then pytest
# with MEMD_BIN, by default the debug build.
#
#   clients/python/run-tests.sh [PYTEST ARGS...]
#   MEMD_BIN=/path/to/memd clients/python/run-tests.sh -k langgraph
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cd "$repo"

target="${CARGO_TARGET_DIR:-target}"
case "$target" in /*) ;; *) target="$repo/$target" ;; esac
venv="$target/pyenv"
export MEMD_BIN="${MEMD_BIN:-$target/debug/memd}"

if [ ! -x "$MEMD_BIN" ]; then
    echo "run-tests.sh: no memd binary at $MEMD_BIN (cargo build, or set MEMD_BIN)" >&2
    exit 1
fi

python="${PYTHON:-python3}"
if [ ! -x "$venv/bin/python" ]; then
    "$python" -m venv "$venv"
fi

# Reinstall when the package's metadata changed (the sources are installed
# editable, so a change to them needs nothing).
stamp="$venv/.memd-client-installed"
want="$(cat "$here/pyproject.toml" "$here/constraints.txt" | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
        -c "$here/constraints.txt" -e "$here[test]"
    echo "$want" > "$stamp"
fi

cd "$here"
exec "$venv/bin/python" -m pytest -p no:cacheprovider "$@"
