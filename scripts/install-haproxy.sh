#!/usr/bin/env bash
# Installs Debian's HAProxy and socat (deploy/move.sh speaks to HAProxy's
# runtime socket through it), for the deployment tests (tests/it/deploy.rs:
# deploy/up.sh's nodes behind it); run by test.sh, safe to run again.
# Without it those tests skip and say why, except in CI, where they fail.
set -euo pipefail
if command -v haproxy >/dev/null 2>&1 && command -v socat >/dev/null 2>&1; then
  exit 0
fi
echo "memd tests: installing haproxy and socat (the deployment tests)" >&2
if [ "$(id -u)" = 0 ]; then sudo=""; else sudo="sudo"; fi
$sudo apt-get update -qq
$sudo apt-get install -y -qq haproxy socat >/dev/null
