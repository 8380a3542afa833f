#!/usr/bin/env bash
# One node of a deployment deploy/up.sh made: start it, stop it (SIGTERM:
# requests in flight finish), or kill it (SIGKILL, as a crash).
#
#   deploy/node.sh DIR K start|stop|kill
set -euo pipefail
dir="${1:?usage: deploy/node.sh DIR K start|stop|kill}"
k="${2:?node number}"
what="${3:?start, stop or kill}"
read -r _ port <"$dir/deployment"
root="$dir/node$k"
pidfile="$dir/node$k.pid"
running() { [ -s "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }
# Any HTTP answer (a node that asks for a token answers 401).
answers() { [ "$(curl -s -o /dev/null -w '%{http_code}' "$1")" != 000 ]; }
case "$what" in
  start)
    running && exit 0
    mkdir -p "$root"
    if [ -n "${MEMD_TEMPLATE:-}" ]; then cp "$MEMD_TEMPLATE" "$root/memd.toml"; fi
    addr="127.0.0.1:$((port + k))"
    nohup "${MEMD:-memd}" serve --root "$root" --listen "$addr" \
      >>"$dir/node$k.log" 2>&1 </dev/null &
    echo $! >"$pidfile"
    for _ in $(seq 1 300); do
      if answers "http://$addr/healthz"; then exit 0; fi
      running || { echo "memd: node $k exited (see $dir/node$k.log)" >&2; exit 1; }
      sleep 0.1
    done
    echo "memd: node $k does not answer on $addr" >&2
    exit 1
    ;;
  stop | kill)
    running || exit 0
    pid="$(cat "$pidfile")"
    if [ "$what" = kill ]; then kill -KILL "$pid"; else kill -TERM "$pid"; fi
    while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
    rm -f "$pidfile"
    ;;
  *) echo "memd: start, stop or kill, not $what" >&2; exit 2 ;;
esac
