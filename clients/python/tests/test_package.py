"""The packaged memd (``scripts/package.sh``), installed as a user without
Rust installs it: the tarball unpacked into a fresh prefix, the wheel
``pip install``-ed into a fresh virtualenv. Each then runs the README's
first-use commands with the ``memd`` it installed, ONNX Runtime coming from
the package (the model directory has the model but not the library, and
PyPI is out of reach for ``memd setup``). And ``pip install`` of the client
writes nothing into the checkout.

The artifacts are in ``$MEMD_DIST`` (``scripts/test.sh`` builds them there
before the tests). Without it these tests are skipped, except under CI
(``CI`` set), where they fail.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from .test_readme import README, Session, blocks, expect, in_session, words

REPO = Path(__file__).resolve().parents[3]
MODEL_FILES = ("model.onnx", "model.safetensors", "config.json", "tokenizer.json")
NO_PYPI = {"PIP_INDEX_URL": "http://127.0.0.1:9/simple", "PIP_RETRIES": "0", "PIP_TIMEOUT": "2"}


def dist() -> Path:
    where = os.environ.get("MEMD_DIST")
    if not where:
        if os.environ.get("CI"):
            pytest.fail("MEMD_DIST is not set: scripts/test.sh builds the packages before the tests")
        pytest.skip("MEMD_DIST is not set (scripts/test.sh builds the packages there)")
    return Path(where)


def artifact(pattern: str) -> Path:
    found = sorted(dist().glob(pattern))
    assert len(found) == 1, f"expected one {pattern} in {dist()}, found {found}"
    return found[0]


def model_without_runtime(root: Path) -> Path:
    """A model directory with the model's files (links to the real ones)
    and no ONNX Runtime library."""
    real = Path(os.environ.get("MEMD_MODEL_DIR") or Path.home() / ".cache/memd/all-MiniLM-L6-v2")
    model = root / "model"
    model.mkdir(parents=True)
    for name in MODEL_FILES:
        assert (real / name).is_file(), f"the test suite fetches the model: no {real / name}"
        (model / name).symlink_to(real / name)
    return model


def first_use_lines() -> list[str]:
    text = README.read_text()
    after = text.split("\n## First use\n", 1)
    assert len(after) == 2, "README.md has no '## First use' section"
    section = after[1].split("\n## ", 1)[0]
    sh = [b for b in blocks(section) if b.kind == "sh"]
    assert sh, "README.md's first-use section has no sh block"
    lines = [l for l in sh[0].text.splitlines() if l.strip() and not l.lstrip().startswith("#")]
    assert any(words(l)[:2] == ["memd", "search"] for l in lines), lines
    return lines


def run_first_use(memd: Path, root: Path) -> None:
    """`memd setup`, the README's first-use lines, then `memd status` in the
    memory they made, with `memd` on PATH the installed one, in a fresh
    HOME."""
    home, work, state = root / "home", root / "work", root / "state"
    for d in (home, work, state):
        d.mkdir(parents=True)
    (state / "env").write_text("")
    (state / "cwd").write_text(str(work))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMD_", "PIP_"))}
    env.update(NO_PYPI)
    env.update(HOME=str(home), MEMD_MODEL_DIR=str(model_without_runtime(root)))
    env["PATH"] = f"{memd.parent}{os.pathsep}{env['PATH']}"
    session = Session(root, env, state)
    for line in ["memd setup", *first_use_lines(), "memd status"]:
        r = subprocess.run(in_session(session, line), env=env, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, f"`{line}` exited {r.returncode}\n{r.stdout}\n{r.stderr}"
        if line == "memd status":
            # ONNX Runtime from the package: nothing fetched, nothing missing.
            assert "minilm on onnx" in r.stdout and "MISSING" not in r.stdout, r.stdout
        expect(session, line, r.stdout)
    which = subprocess.run(in_session(session, "command -v memd"), env=env, capture_output=True, text=True)
    assert Path(which.stdout.strip()).resolve() == memd.resolve(), which.stdout
    lab = subprocess.run([str(memd), "eval", "--help"], env=env, capture_output=True, text=True)
    assert lab.returncode != 0, "the packaged memd carries the lab commands"


def test_the_tarball_installs_into_a_prefix_and_runs_the_first_use_commands(tmp_path):
    tarball = artifact("memd-*-linux-*.tar.gz")
    prefix = tmp_path / "prefix"
    with tarfile.open(tarball) as t:
        top = {m.name.split("/")[0] for m in t.getmembers()}
        assert len(top) == 1, top
        t.extractall(tmp_path / "unpacked", filter="data")
    shutil.copytree(tmp_path / "unpacked" / top.pop(), prefix)
    for rel in ("bin/memd", "lib/memd/libonnxruntime.so", "share/doc/memd/LICENSE",
                "share/doc/memd/THIRD-PARTY-RUST.txt"):
        assert (prefix / rel).is_file(), f"{rel} is not in the tarball"
    assert list((prefix / "share/doc/memd/onnxruntime").glob("LICENSE*")), "ONNX Runtime's licence"
    assert os.access(prefix / "bin/memd", os.X_OK)
    run_first_use(prefix / "bin/memd", tmp_path / "use")


def test_the_wheel_gives_memd_and_the_client_in_a_fresh_virtualenv(tmp_path):
    wheel = artifact("memd_client-*-py3-none-*.whl")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = subprocess.run(
        [str(venv / "bin/python"), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheel)],
        capture_output=True, text=True,
    )
    assert pip.returncode == 0, pip.stderr
    memd = venv / "bin/memd"
    assert memd.is_file() and os.access(memd, os.X_OK), "pip did not install memd into bin/"
    assert (venv / "lib/memd/libonnxruntime.so").is_file()
    client = subprocess.run(
        [str(venv / "bin/python"), "-c", "import memd; print(memd.Client.__name__)"],
        capture_output=True, text=True, cwd=tmp_path,
    )
    assert client.returncode == 0 and client.stdout.strip() == "Client", client.stderr
    run_first_use(memd, tmp_path / "use")


def test_pip_install_of_the_client_writes_nothing_into_the_checkout(tmp_path):
    source = tmp_path / "python"
    shutil.copytree(REPO / "clients/python", source,
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", ".pytest_cache", "build"))
    before = sorted(p.relative_to(source) for p in source.rglob("*"))
    r = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps",
         "--target", str(tmp_path / "site"), str(source)],
        capture_output=True, text=True,
    )
    assert r.returncode == 0, r.stderr
    after = sorted(p.relative_to(source) for p in source.rglob("*"))
    assert after == before, f"pip install left {sorted(set(after) - set(before))}"
    assert (tmp_path / "site/memd/client.py").is_file()
