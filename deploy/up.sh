#!/usr/bin/env bash
# Start N `memd serve --root` nodes and HAProxy in front of them, all on
# loopback, with their state under DIR (deploy/README.md).
#
#   deploy/up.sh DIR [NODES [PORT]]
#
# HAProxy listens on 127.0.0.1:PORT (default 7480), node K on PORT+K and
# serves the memories in DIR/nodeK. NODES defaults to 3. MEMD names the
# memd binary (default: `memd` on PATH); MEMD_TOKEN, when set, is required
# by every node (HAProxy passes the Authorization header through);
# MEMD_TEMPLATE, when set, is copied to each node as DIR/nodeK/memd.toml
# (the daemon's configuration and its new memories' template). Safe to run
# again: what runs already is left running. deploy/down.sh DIR stops all.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dir="${1:?usage: deploy/up.sh DIR [NODES [PORT]]}"
nodes="${2:-3}"
port="${3:-7480}"
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
echo "$nodes $port" >"$dir/deployment"
touch "$dir/moves.map"

ring="" one="" watch=""
for k in $(seq 1 "$nodes"); do
  addr="127.0.0.1:$((port + k))"
  ring+="    server node$k $addr"$'\n'
  one+="backend node$k"$'\n'"    server node$k $addr"$'\n'
  watch+="    server node$k $addr check inter 2s"$'\n'
  "$here/node.sh" "$dir" "$k" start
done

config="$(<"$here/haproxy.cfg.in")"
config="${config//@STATE@/"$dir"}"
config="${config//@DEPLOY@/"$here"}"
config="${config//@LISTEN@/"127.0.0.1:$port"}"
config="${config//@RING@/"$ring"}"
config="${config//@NODES@/"$one"}"
config="${config//@WATCH@/"$watch"}"
printf '%s\n' "$config" >"$dir/haproxy.cfg"
haproxy -c -f "$dir/haproxy.cfg" >/dev/null
# Running already: reloaded with the configuration just written (the old
# process finishes its requests and exits).
if [ -s "$dir/haproxy.pid" ] && kill -0 "$(cat "$dir/haproxy.pid")" 2>/dev/null; then
  haproxy -D -f "$dir/haproxy.cfg" -sf "$(cat "$dir/haproxy.pid")"
else
  haproxy -D -f "$dir/haproxy.cfg"
fi
for _ in $(seq 1 100); do
  if [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/healthz")" != 000 ]; then
    echo "memd: $nodes nodes behind HAProxy on 127.0.0.1:$port (state in $dir)"
    exit 0
  fi
  sleep 0.1
done
echo "memd: HAProxy on 127.0.0.1:$port does not answer" >&2
exit 1
