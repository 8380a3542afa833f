#!/usr/bin/env bash
# What moving a memory costs: deploy/move.sh on a memory of FACTS facts
# (posted, then searched once, so its index is built), moved back and
# forth ROUNDS times between two nodes; beside each move, in the same run,
# `cp -a` of the same directory (the floor any move pays) and how long
# the memory refused requests (a client posting to it every 5 ms through
# HAProxy: the first refusal to the first acknowledgement after it).
#
#   deploy/bench-move.sh DIR FACTS [ROUNDS]  (DIR: a deployment deploy/up.sh started)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
usage="usage: deploy/bench-move.sh DIR FACTS [ROUNDS]"
dir="$(cd "${1:?$usage}" && pwd)"
facts="${2:?$usage}"
rounds="${3:-3}"
read -r nodes port <"$dir/deployment"
name="moving-$facts"
auth=(-H "Authorization: Bearer ${MEMD_TOKEN:-}")
post() {
  curl -sS -o /dev/null -w '%{http_code}' "${auth[@]}" -XPOST "127.0.0.1:$port/v1/m/$name/facts" \
    -H 'content-type: application/json' -d "$1"
}
for b in $(seq 0 100 $((facts - 1))); do
  texts=""
  for i in $(seq "$b" $((b + 99 < facts - 1 ? b + 99 : facts - 1))); do
    texts+="${texts:+,}\"Fact $i of $name: the user noted item $i on day $((i % 30))\""
  done
  [ "$(post "{\"texts\":[$texts]}")" = 200 ]
done
curl -fsS -o /dev/null "${auth[@]}" "127.0.0.1:$port/v1/m/$name/search?q=noted%20item"
where() { for k in $(seq 1 "$nodes"); do if [ -d "$dir/node$k/$name/archive" ]; then echo "$k"; fi; done; }
echo "| facts | round | move | bytes | files | cp -a alone | refused for |"
echo "|---|---|---|---|---|---|---|"
for r in $(seq 1 "$rounds"); do
  from="$(where)"
  to=$((from % nodes + 1))
  cp_ms="$( { s=$(date +%s%N); cp -a "$dir/node$from/$name" "$dir/copy.tmp"; e=$(date +%s%N); rm -rf "$dir/copy.tmp"; echo $(( (e - s) / 1000000 )); } )"
  # A client writing to it the whole time: the refused window.
  log="$dir/probe.log"
  : >"$log"
  (
    i=0
    while [ ! -e "$dir/probe.stop" ]; do
      code="$(post "{\"text\":\"probe $r $i\",\"key\":\"probe-$r-$i\"}")"
      echo "$(date +%s%N) $code" >>"$log"
      if [ "$code" = 200 ]; then i=$((i + 1)); fi
      sleep 0.005
    done
  ) &
  probe=$!
  sleep 0.3
  report="$("$here/move.sh" "$dir" "$name" "$to")"
  sleep 0.3
  touch "$dir/probe.stop"
  wait "$probe"
  rm -f "$dir/probe.stop"
  refused="$(awk '$2 != 200 && !s {s = $1} $2 == 200 && s && !e {e = $1} END {print (s && e) ? int((e - s) / 1000000) " ms" : "none met"}' "$log")"
  ms="$(sed -n 's/.*"ms":\([0-9]*\).*/\1/p' <<<"$report")"
  bytes="$(sed -n 's/.*"bytes":\([0-9]*\).*/\1/p' <<<"$report")"
  files="$(sed -n 's/.*"files":\([0-9]*\).*/\1/p' <<<"$report")"
  echo "| $facts | $r | $ms ms | $bytes | $files | $cp_ms ms | $refused |"
done
