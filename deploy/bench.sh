#!/usr/bin/env bash
# What HAProxy adds to a request: a warm search of one memory, straight to
# its node and through HAProxy, side by side in one run (interleaved, so a
# shared machine's noise falls on both), with wrk (Debian's package).
#
#   deploy/bench.sh DIR [ROUNDS]     (DIR: a deployment deploy/up.sh started)
set -euo pipefail
dir="${1:?usage: deploy/bench.sh DIR [ROUNDS]}"
rounds="${2:-2}"
read -r nodes port <"$dir/deployment"
auth=(-H "Authorization: Bearer ${MEMD_TOKEN:-}")
for i in $(seq 1 20); do
  curl -fsS -o /dev/null "${auth[@]}" -XPOST "127.0.0.1:$port/v1/m/bench/facts" \
    -H 'content-type: application/json' -d "{\"text\":\"Bench keeps bees, hive $i\"}"
done
node=""
for k in $(seq 1 "$nodes"); do [ -d "$dir/node$k/bench/archive" ] && node=$k; done
query="/v1/m/bench/search?q=bees"
curl -fsS -o /dev/null "${auth[@]}" "127.0.0.1:$port$query"
echo "| round | path | clients | p50 | p99 | requests/s |"
echo "|---|---|---|---|---|---|"
for r in $(seq 1 "$rounds"); do
  for path in "node $((port + node))" "haproxy $port"; do
    set -- $path
    for c in 1 8; do
      out="$(wrk -t1 -c"$c" -d6s --latency "${auth[@]}" "http://127.0.0.1:$2$query")"
      p50="$(awk '$1 == "50%" {print $2}' <<<"$out")"
      p99="$(awk '$1 == "99%" {print $2}' <<<"$out")"
      rps="$(awk '$1 == "Requests/sec:" {print $2}' <<<"$out")"
      echo "| $r | $1 | $c | $p50 | $p99 | $rps |"
    done
  done
done
