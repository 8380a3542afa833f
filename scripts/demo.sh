#!/usr/bin/env bash
# Builds memd and runs its main job on a copy of example-memory-dir/ with
# the built-in offline defaults: no network, no LLM, no service.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup.sh
./scripts/fetch-model.sh
# memd as a user runs it: no `lab`, no `failpoints`. The dependencies are
# the ones scripts/test.sh builds (one profile, features of memd's own
# only), and `cargo install --locked --path . --profile dev` then installs
# this very build without compiling anything.
cargo build --locked --bin memd
target="${CARGO_TARGET_DIR:-target}"
memd="$target/debug/memd"
work="$(mktemp -d)"
cp -r example-memory-dir "$work/memory"
export MEMD_DIR="$work/memory"
echo "== memory directory: $MEMD_DIR"
"$memd" add "User now drinks oat flat whites" --category preference --session demo
"$memd" add "User now drinks oat flat whites" --category preference --session demo --key demo-1
"$memd" add "User now drinks oat flat whites" --category preference --session demo --key demo-1
echo "== search"
"$memd" search "what coffee does the user like" -k 3
"$memd" search "who is the user's manager" -k 3
echo "== consolidate (built-in judge: no LLM configured)"
"$memd" consolidate --force --dry-run
"$memd" consolidate --force
echo "== MEMORY.md"
cat "$MEMD_DIR/MEMORY.md"
echo "== status"
"$memd" status
