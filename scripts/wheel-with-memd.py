"""Add memd to the Python client's wheel, so that one `pip install` gives an
agent builder the client and the `memd` command (scripts/package.sh).

    python3 wheel-with-memd.py CLIENT_WHEEL STAGE OUT_DIR

CLIENT_WHEEL is the pure wheel the client's build backend made; STAGE the
tarball's tree (bin/memd, lib/memd/libonnxruntime.so, share/doc/memd/). The
new wheel holds the client as it was, `bin/memd` as a script of the wheel
(pip installs it, executable, into the environment's bin/) and the library
as data under `lib/memd/` (pip installs it under the environment's prefix,
where memd looks beside its bin/), with the licence files in the
dist-info. Its tag names this platform, since it carries a binary.
"""

import base64
import hashlib
import os
import sys
import sysconfig
import zipfile


def record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return f"{name},sha256={digest.decode()},{len(data)}"


def main(client_wheel: str, stage: str, out_dir: str) -> None:
    src = zipfile.ZipFile(client_wheel)
    dist_info = next(n.split("/")[0] for n in src.namelist() if n.endswith(".dist-info/WHEEL"))
    stem = dist_info[: -len(".dist-info")]  # e.g. memd_client-0.1.0
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    tag = f"py3-none-{platform}"
    files: list[tuple[str, bytes, int]] = []
    for info in src.infolist():
        if info.filename.endswith(".dist-info/RECORD"):
            continue
        data = src.read(info)
        if info.filename.endswith(".dist-info/WHEEL"):
            lines = [l for l in data.decode().splitlines() if not l.startswith(("Tag:", "Root-Is-Purelib:"))]
            lines += ["Root-Is-Purelib: false", f"Tag: {tag}"]
            data = ("\n".join(lines) + "\n").encode()
        files.append((info.filename, data, 0o644))
    with open(os.path.join(stage, "bin", "memd"), "rb") as f:
        files.append((f"{stem}.data/scripts/memd", f.read(), 0o755))
    with open(os.path.join(stage, "lib", "memd", "libonnxruntime.so"), "rb") as f:
        files.append((f"{stem}.data/data/lib/memd/libonnxruntime.so", f.read(), 0o644))
    docs = os.path.join(stage, "share", "doc", "memd")
    for root, _, names in os.walk(docs):
        for name in sorted(names):
            if name == "README.md":
                continue
            path = os.path.join(root, name)
            rel = os.path.relpath(path, docs).replace(os.sep, "/")
            with open(path, "rb") as f:
                files.append((f"{dist_info}/licenses/memd/{rel}", f.read(), 0o644))
    name = os.path.join(out_dir, f"{stem}-{tag}.whl")
    record = f"{dist_info}/RECORD"
    with zipfile.ZipFile(name + ".part", "w", zipfile.ZIP_DEFLATED) as whl:
        lines = []
        for path, data, mode in files:
            info = zipfile.ZipInfo(path, date_time=(2026, 1, 1, 0, 0, 0))
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            whl.writestr(info, data)
            lines.append(record_line(path, data))
        lines.append(f"{record},,")
        whl.writestr(record, "\n".join(lines) + "\n")
    os.replace(name + ".part", name)
    print(f"package.sh: {name}", file=sys.stderr)


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])
