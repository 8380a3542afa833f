#!/usr/bin/env bash
# Move memory NAME to node K of a deployment deploy/up.sh made, with no
# acknowledged write lost and no moment at which two nodes write it
# (deploy/README.md, "Moving a memory"):
#
#   deploy/move.sh DIR NAME K
#
# 1. The node that holds NAME hands it over (POST /v1/handover/NAME): it
#    refuses new requests on NAME (503, nothing done, Retry-After), waits
#    for those in flight, closes it, marks it handed over (for good: it
#    never makes NAME anew) and moves its directory to .memd/outgoing/.
# 2. The directory is copied to node K's .memd/incoming/NAME.
# 3. Node K takes it over (POST /v1/takeover/NAME).
# 4. DIR/moves.map, then HAProxy's copy of it (through its runtime API,
#    no reload), send NAME to node K.
# 5. The handed-over directory is deleted.
#
# Prints one JSON line: {"name","from","to","files","bytes","ms"}. Each
# step is idempotent: after any failure, run the same command again.
# MEMD_TOKEN: the nodes' token. Needs curl, socat and flock.
set -euo pipefail
usage="usage: deploy/move.sh DIR NAME K"
dir="${1:?$usage}"
name="$(printf '%s' "${2:?$usage}" | tr '[:upper:]' '[:lower:]')"
to="${3:?$usage}"
dir="$(cd "$dir" && pwd)"
read -r nodes port <"$dir/deployment"
case "$name" in
  .* | */* | "") echo "memd: not a memory name: $name" >&2; exit 2 ;;
esac
if ! [[ "$to" =~ ^[0-9]+$ ]] || [ "$to" -lt 1 ] || [ "$to" -gt "$nodes" ]; then
  echo "memd: no node $to (nodes 1-$nodes)" >&2
  exit 2
fi
start=$(date +%s%N)
auth=()
if [ -n "${MEMD_TOKEN:-}" ]; then auth=(-H "Authorization: Bearer $MEMD_TOKEN"); fi

# POST to node K's operator route; its JSON reply on stdout, or fail.
post() {
  local reply code
  reply="$(curl -sS -X POST "${auth[@]}" -w '\n%{http_code}' \
    "http://127.0.0.1:$((port + $1))$2")"
  code="${reply##*$'\n'}"
  reply="${reply%$'\n'*}"
  if [ "$code" != 200 ]; then
    echo "memd: node $1 answered $code to POST $2: $reply" >&2
    return 1
  fi
  printf '%s\n' "$reply"
}

# Where NAME is: the node whose root holds it, or that handed it over and
# still has its copy (a move that stopped midway).
from=""
for k in $(seq 1 "$nodes"); do
  if [ -d "$dir/node$k/$name/archive" ]; then from=$k; fi
done
left=()
for k in $(seq 1 "$nodes"); do
  if [ -e "$dir/node$k/.memd/outgoing/$name" ]; then left+=("$k"); fi
done
if [ -z "$from" ] && [ "${#left[@]}" -gt 0 ]; then from="${left[0]}"; fi
if [ -z "$from" ]; then
  echo "memd: no node holds memory $name (its first write makes it)" >&2
  exit 1
fi

files=0 bytes=0
if [ "$from" != "$to" ]; then
  # 1. Handed over (again, harmlessly, if it was).
  handed="$(post "$from" "/v1/handover/$name")"
  files="$(sed -n 's/.*"files":\([0-9]*\).*/\1/p' <<<"$handed")"
  bytes="$(sed -n 's/.*"bytes":\([0-9]*\).*/\1/p' <<<"$handed")"
  # 2. Copied whole before it is named where the takeover looks.
  out="$dir/node$from/.memd/outgoing"
  in="$dir/node$to/.memd/incoming"
  mkdir -p "$in"
  rm -rf "$in/$name" "$in/$name.part"
  if [ -e "$out/$name.usage.jsonl" ]; then cp -p "$out/$name.usage.jsonl" "$in/$name.usage.jsonl"; fi
  if [ -d "$out/$name" ]; then
    cp -a "$out/$name" "$in/$name.part"
    sync -f "$in/$name.part"
    mv "$in/$name.part" "$in/$name"
  fi
  left=("$from")
fi
# 3. Taken over (a memory there already, from a move that stopped after
# this step, is taken over again: that only lifts its mark).
post "$to" "/v1/takeover/$name" >/dev/null

# 4. The map: the file first (what HAProxy reads when it starts), then the
# running HAProxy's copy. One move at a time edits the file.
(
  flock 9
  grep -v "^$name " "$dir/moves.map" >"$dir/moves.map.tmp" || true
  echo "$name node$to" >>"$dir/moves.map.tmp"
  sync -f "$dir/moves.map.tmp"
  mv "$dir/moves.map.tmp" "$dir/moves.map"
  runtime() { printf '%s\n' "$1" | socat -t 5 stdio "unix-connect:$dir/haproxy.sock"; }
  said="$(runtime "set map $dir/moves.map $name node$to")"
  if [ -n "$said" ]; then
    said="$(runtime "add map $dir/moves.map $name node$to")"
    if [ -n "$said" ]; then
      echo "memd: HAProxy did not take the map entry: $said" >&2
      exit 1
    fi
  fi
) 9>"$dir/moves.lock"

# 5. The copy the old node kept until now.
for k in "${left[@]}"; do
  if [ "$k" != "$to" ]; then
    rm -rf "$dir/node$k/.memd/outgoing/$name" "$dir/node$k/.memd/outgoing/$name.usage.jsonl"
  fi
done
ms=$(( ($(date +%s%N) - start) / 1000000 ))
printf '{"name":"%s","from":%s,"to":%s,"files":%s,"bytes":%s,"ms":%s}\n' \
  "$name" "$from" "$to" "${files:-0}" "${bytes:-0}" "$ms"
