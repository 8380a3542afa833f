#!/usr/bin/env bash
# Installs what building memd needs on Debian: protoc (LanceDB's build).
# Sourced by demo.sh and test.sh; safe to run again.
set -euo pipefail
if ! command -v protoc >/dev/null 2>&1; then
  echo "memd setup: installing protobuf-compiler (needed to build LanceDB)" >&2
  if [ "$(id -u)" = 0 ]; then sudo=""; else sudo="sudo"; fi
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq protobuf-compiler >/dev/null
fi
