#!/usr/bin/env bash
# Installs moto's S3-compatible server (PyPI's `moto[s3,server]`, pinned)
# in a virtualenv under the target directory, for the object storage tests
# (tests/it/objectstore.rs: the index's table on S3); run by test.sh, which
# points MEMD_MOTO at it; safe to run again. Without it those tests skip
# and say why, except in CI, where they fail.
#
# Why moto: MinIO is in neither Debian's archive nor PyPI; moto installs
# from PyPI in seconds, speaks the S3 API LanceDB uses (multipart uploads,
# ranged reads, and the conditional put, If-None-Match, with which LanceDB
# commits a version), and keeps its objects in memory, so a restart is a
# store that lost every table (a case the tests need).
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${CARGO_TARGET_DIR:-target}/s3-venv"
if [ -x "$venv/bin/moto_server" ]; then
  exit 0
fi
echo "memd tests: installing moto's S3 server into $venv (the object storage tests)" >&2
python3 -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check 'moto[s3,server]==5.2.5'
