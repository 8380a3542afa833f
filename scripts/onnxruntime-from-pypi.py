"""Fetch ONNX Runtime's shared library from its wheel on PyPI.

    python3 onnxruntime-from-pypi.py VERSION LIB_DIR [DOCS_DIR]

Writes LIB_DIR/libonnxruntime.so whole (``.part``, then renamed) and, with
DOCS_DIR, the wheel's licence files there (a packaged memd ships them).
The one place both fetch-model.sh (``memd setup``) and package.sh take the
library from, so the two cannot differ.
"""

import os
import subprocess
import sys
import tempfile
import zipfile


def main(version: str, lib_dir: str, docs_dir: str | None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check",
             "--no-deps", "--only-binary=:all:", "-d", tmp, f"onnxruntime=={version}"],
            check=True,
        )
        [wheel] = [os.path.join(tmp, f) for f in os.listdir(tmp) if f.endswith(".whl")]
        with zipfile.ZipFile(wheel) as z:
            lib = next(m for m in z.namelist()
                       if os.path.basename(m).startswith("libonnxruntime.so."))
            write(z, lib, os.path.join(lib_dir, "libonnxruntime.so"))
            if docs_dir is None:
                return
            licences = [m for m in z.namelist() if m.count("/") == 1 and
                        os.path.basename(m).startswith(("LICENSE", "ThirdPartyNotices"))]
            if not licences:
                sys.exit("onnxruntime-from-pypi.py: the onnxruntime wheel carries no licence file")
            for m in licences:
                write(z, m, os.path.join(docs_dir, os.path.basename(m)))


def write(z: zipfile.ZipFile, member: str, dest: str) -> None:
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    part = dest + ".part"
    with z.open(member) as src, open(part, "wb") as out:
        out.write(src.read())
    os.replace(part, dest)


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) == 4 else None)
