#!/usr/bin/env bash
# Lists every quoted text of five words or more in the repository's code,
# tests and docs that the evaluation's dev splits hold word for word. The
# splits are non-commercial data, read in place and never copied: examples
# in memd are invented. Exits 1 when it finds one.
#
#   ./scripts/dev-data-quotes.sh [DATA_DIR]   (default: $MEMD_EVAL_DATA, else ../shared/evaldata)
set -euo pipefail
cd "$(dirname "$0")/.."
data="${1:-${MEMD_EVAL_DATA:-../shared/evaldata}}"
[ -d "$data" ] || { echo "no dev splits at $data" >&2; exit 2; }
exec python3 - "$data" <<'PY'
import os, re, sys
norm = lambda t: re.sub(r"\s+", " ", t.lower())
data = sys.argv[1]
held = " ".join(norm(open(os.path.join(data, f), errors="ignore").read())
                for f in sorted(os.listdir(data)) if f != "README.md")
found = 0
for root, dirs, files in os.walk("."):
    dirs[:] = [d for d in dirs if d not in (".git", "target")]
    for f in files:
        if not f.endswith((".rs", ".md", ".py", ".sh", ".toml")):
            continue
        path = os.path.join(root, f)
        text = re.sub(r"\n\s*(///|//!|//|#)", " ", open(path, errors="ignore").read())
        for q in re.findall(r'"([^"\n]{20,}?)"', norm(text)):
            q = q.strip(" .…")
            if len(q.split()) >= 5 and q in held:
                print(f"{path}: \"{q}\"")
                found += 1
sys.exit(1 if found else 0)
PY
