#!/usr/bin/env bash
# Stop what deploy/up.sh DIR started: HAProxy, then every node (SIGTERM).
#
#   deploy/down.sh DIR
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dir="${1:?usage: deploy/down.sh DIR}"
read -r nodes _ <"$dir/deployment"
if [ -s "$dir/haproxy.pid" ]; then
  pid="$(cat "$dir/haproxy.pid")"
  kill -TERM "$pid" 2>/dev/null || true
  while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
  rm -f "$dir/haproxy.pid"
fi
for k in $(seq 1 "$nodes"); do "$here/node.sh" "$dir" "$k" stop; done
