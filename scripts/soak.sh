#!/usr/bin/env bash
# The random test of user actions, for MINUTES (default 60) instead of
# CI's fixed budget: seed after seed, each sequence shrunk to a minimal one
# when it fails. Writes what it covered (sequences, steps, actions by kind)
# and every failure to soak-report.txt (or $MEMD_RANDOM_REPORT).
#
#   scripts/soak.sh [MINUTES] [TEST]
#
# TEST is the random test to soak: `one` (default: one memory, every user
# action) or `pair` (two copies synced through git, with a stranger
# pushing hostile commits to the remote between syncs).
#
# Replay a failure with MEMD_RANDOM_SEED=<seed> scripts/soak.sh 0.
set -euo pipefail
cd "$(dirname "$0")/.."
minutes="${1:-60}"
case "${2:-one}" in
  one) test=random::random_sequences_of_user_actions_never_lose_or_hide_a_fact ;;
  pair) test=random::pair::two_copies_synced_through_git_converge_and_never_lose_or_bring_back_a_fact ;;
  *) echo "TEST is one or pair" >&2; exit 2 ;;
esac
report="${MEMD_RANDOM_REPORT:-$PWD/soak-report.txt}"
cargo build --features lab,failpoints
MEMD_RANDOM_MINUTES="$minutes" \
MEMD_RANDOM_REPORT="$report" \
MEMD_RANDOM_CASES="${MEMD_RANDOM_CASES:-20}" \
MEMD_RANDOM_STEPS="${MEMD_RANDOM_STEPS:-40}" \
  cargo test --features lab,failpoints --test it \
  "$test" -- --nocapture
echo "report: $report"
