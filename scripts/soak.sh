#!/usr/bin/env bash
# The random test of user actions, for MINUTES (default 60) instead of
# CI's fixed budget: seed after seed, each sequence shrunk to a minimal one
# when it fails. Writes what it covered (sequences, steps, actions by kind)
# and every failure to soak-report.txt (or $MEMD_RANDOM_REPORT).
#
#   scripts/soak.sh [MINUTES]
#
# Replay a failure with MEMD_RANDOM_SEED=<seed> scripts/soak.sh 0.
set -euo pipefail
cd "$(dirname "$0")/.."
minutes="${1:-60}"
report="${MEMD_RANDOM_REPORT:-$PWD/soak-report.txt}"
cargo build --features lab,failpoints
MEMD_RANDOM_MINUTES="$minutes" \
MEMD_RANDOM_REPORT="$report" \
MEMD_RANDOM_CASES="${MEMD_RANDOM_CASES:-20}" \
MEMD_RANDOM_STEPS="${MEMD_RANDOM_STEPS:-40}" \
  cargo test --features lab,failpoints --test it \
  random::random_sequences_of_user_actions_never_lose_or_hide_a_fact -- --nocapture
echo "report: $report"
