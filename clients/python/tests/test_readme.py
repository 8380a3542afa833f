"""The README, run as written (issue 33: "a test runs every command in it").

The convention, which README.md keeps and this test reads:

``sh`` blocks are commands. Every line runs, in order, in one shell
    session: ``cd`` and ``export`` carry over from line to line and from
    block to block. A line ending in ``\\`` goes on on the next one; blank
    lines and ``#`` lines are skipped. Each command must exit 0, and some
    must print what they are for (``EXPECTED`` below: search finds the fact
    added, ``memd core`` shows it, ...). HOME is a fresh temporary
    directory (its ``.cache/memd``, the embedding model, links to the real
    one) and ``memd`` is the binary under test (``MEMD_BIN``, default
    ``<repo>/target/debug/memd``), first on PATH. A line ending in ``&`` is
    a daemon: it is started in the background, waited for on the README's
    address (127.0.0.1:7437), and stopped with SIGTERM at the end, which it
    must survive with exit 0. A few lines cannot run inside a test (they
    build the tree, install packages or need another program); each is in
    ``CHECKED`` below with what is checked instead. Any other line runs.

``python`` blocks run with this Python, in order with the ``sh`` blocks (so
    against the ``memd serve &`` started before them). They must exit 0 and
    print the text of every fact they ``add``. They need the Python client
    installed (``clients/python/run-tests.sh`` does that).

``json`` blocks are an MCP client's configuration: valid JSON whose every
    server runs memd by an absolute path with args ``["mcp"]`` and an
    absolute ``MEMD_DIR``.

``text`` blocks are output or a template and do not run; the README must
    have the system-prompt template, a ``text`` block saying ``{{core}}``.

No other kind of block is allowed in README.md (the reference in docs/ has
the rest), and every relative link in it must name a file that exists.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
README = REPO / "README.md"
# Where the README says the daemon listens.
DAEMON = ("127.0.0.1", 7437)
KINDS = {"sh", "python", "json", "text"}
LINE_TIMEOUT = 300


# --- reading the README ----------------------------------------------------


@dataclass
class Block:
    kind: str
    text: str
    line: int  # of the opening fence, 1-based


def blocks(markdown: str) -> list[Block]:
    out, fence, kind, body, start = [], None, "", [], 0
    for n, line in enumerate(markdown.splitlines(), 1):
        if fence is None:
            m = re.match(r"^(```+|~~~+)\s*([^\s`]*)", line)
            if m:
                fence, kind, body, start = m.group(1), m.group(2), [], n
        elif line.strip().startswith(fence[0] * len(fence)) and not line.strip().strip(fence[0]):
            out.append(Block(kind, "\n".join(body) + "\n", start))
            fence = None
        else:
            body.append(line)
    assert fence is None, f"README.md: the block opened on line {start} is never closed"
    return out


@dataclass
class Step:
    kind: str  # "sh", "python", "json" or "text"
    text: str
    line: int

    @property
    def id(self) -> str:
        first = self.text.strip().splitlines()[0] if self.text.strip() else ""
        if self.kind == "sh":
            first = " ".join(words(first)) or first
        return f"L{self.line}-{self.kind}-{first[:48]}"


def steps() -> list[Step]:
    out = []
    for b in blocks(README.read_text()):
        if b.kind != "sh":
            out.append(Step(b.kind, b.text, b.line))
            continue
        pending, first = "", 0
        for i, raw in enumerate(b.text.splitlines(), b.line + 1):
            if not pending and (not raw.strip() or raw.lstrip().startswith("#")):
                continue
            if not pending:
                first = i
            if raw.endswith("\\"):
                pending += raw[:-1] + " "
                continue
            out.append(Step("sh", pending + raw, first))
            pending = ""
        assert not pending, f"README.md line {first}: a continued line never ends"
    return out


def words(line: str) -> list[str]:
    return shlex.split(line, comments=True)


def background(line: str) -> str | None:
    """The command of a line ending in `&` (a comment may follow), else None."""
    w = shlex.shlex(line, posix=True, punctuation_chars=True)
    w.whitespace_split = True
    w.commenters = "#"
    toks = list(w)
    if toks and toks[-1] == "&":
        return shlex.join(toks[:-1])
    return None


# --- what is checked instead of run ----------------------------------------


def executable_script(rel: str) -> None:
    path = REPO / rel
    assert path.is_file(), f"{rel} does not exist"
    assert os.access(path, os.X_OK), f"{rel} is not executable"
    r = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True)
    assert r.returncode == 0, f"{rel} is not valid bash: {r.stderr}"


def check_demo(w: list[str]) -> None:
    executable_script("scripts/demo.sh")
    text = (REPO / "scripts/demo.sh").read_text()
    assert "cargo build" in text and "example-memory-dir" in text
    assert (REPO / "example-memory-dir/archive").is_dir()


def check_tests(w: list[str]) -> None:
    executable_script("scripts/test.sh")
    ci = REPO / ".ci/run"
    assert ci.is_file() and os.access(ci, os.X_OK), ".ci/run is missing or not executable"
    assert re.search(r"^\s*(exec\s+)?\./scripts/test\.sh\b", ci.read_text(), re.M), (
        ".ci/run does not run ./scripts/test.sh, the README's test command"
    )


def check_cargo_install(w: list[str]) -> None:
    cargo = (REPO / "Cargo.toml").read_text()
    assert re.search(r'^\s*name\s*=\s*"memd"', cargo, re.M), "Cargo.toml's package is not memd"
    assert (REPO / "src/main.rs").is_file(), "no binary for cargo install to build"
    # It installs the demo's build: the same profile and no features.
    assert "[profile.dev]" in cargo, "no dev profile for cargo install --profile dev"
    demo = (REPO / "scripts/demo.sh").read_text()
    assert re.search(r"^cargo build --locked --bin memd$", demo, re.M), (
        "scripts/demo.sh does not build memd as cargo install does (no features)"
    )


def check_pip_install(w: list[str]) -> None:
    pkg = REPO / w[2]
    assert (pkg / "pyproject.toml").is_file() or (pkg / "setup.py").is_file(), (
        f"{w[2]} is not a Python package"
    )
    r = subprocess.run(
        [sys.executable, "-c", "from memd import Client"], capture_output=True, text=True
    )
    if r.returncode != 0:
        raise AssertionError(f"the Python client is not installed here: {r.stderr}")


def check_claude_mcp_add(w: list[str]) -> None:
    # claude mcp add NAME -e KEY=VALUE ... -- /ABSOLUTE/memd mcp
    # The name comes first: `-e` takes every value up to the next option,
    # so an `-e` before the name would swallow it.
    assert w[:3] == ["claude", "mcp", "add"], w
    assert "--" in w, "the command must follow `--`"
    sep = w.index("--")
    opts, cmd = w[3:sep], w[sep + 1 :]
    assert opts and not opts[0].startswith("-"), "the server's name must come right after `add`"
    env = [opts[i + 1] for i, o in enumerate(opts) if o in ("-e", "--env")]
    assert any(e.startswith("MEMD_DIR=") and os.path.isabs(e.split("=", 1)[1]) for e in env), (
        "it must set MEMD_DIR to an absolute path"
    )
    assert cmd and os.path.isabs(cmd[0]) and Path(cmd[0]).name == "memd", (
        "memd must be named by an absolute path"
    )
    assert cmd[1:] == ["mcp"], cmd


# (the words a line starts with, the check made instead of running it)
CHECKED = [
    (["./scripts/demo.sh"], check_demo),
    (["./scripts/test.sh"], check_tests),
    (["cargo", "install", "--locked", "--path", ".", "--profile", "dev"], check_cargo_install),
    (["pip", "install", "./clients/python"], check_pip_install),
    (["claude", "mcp", "add"], check_claude_mcp_add),
]


def checked(line: str):
    w = words(line)
    for prefix, check in CHECKED:
        if w[: len(prefix)] == prefix:
            if prefix[0] != "claude":
                assert w == prefix, f"`{line}`: only `{shlex.join(prefix)}` is known to this test"
            return lambda: check(w)
    return None


# --- what a command that runs must print ------------------------------------

FACT_ID = re.compile(r"\d{4}-\d{2}-\d{2}#[0-9a-f]{8}")


@dataclass
class Session:
    root: Path
    env: dict
    state: Path
    added: list[str] = field(default_factory=list)
    daemons: list = field(default_factory=list)


def expect(session: Session, line: str, out: str) -> None:
    w = words(line)
    cmd = w[: w.index("&&")] if "&&" in w else w
    if cmd[:2] == ["memd", "init"]:
        assert "initialised" in out, out
    elif cmd[:2] == ["memd", "add"]:
        assert FACT_ID.search(out), f"no fact id in {out!r}"
        if len(cmd) > 2 and not cmd[2].startswith("-"):
            session.added.append(cmd[2])
    elif cmd[:2] == ["memd", "search"]:
        assert any(t in out for t in session.added), f"search found none of {session.added}: {out!r}"
    elif cmd[:2] == ["memd", "consolidate"]:
        assert "applied" in out, out
    elif cmd[:2] == ["memd", "core"] or cmd[:2] == ["cat", "MEMORY.md"]:
        assert "<!-- memd:begin -->" in out, out
        assert any(t in out for t in session.added), f"MEMORY.md holds none of {session.added}"
    elif cmd[:2] == ["command", "-v"] and cmd[2:] == ["memd"]:
        path = Path(out.strip())
        assert path.is_absolute() and path.resolve() == memd_bin().resolve(), out


# --- running ---------------------------------------------------------------


def memd_bin() -> Path:
    return Path(os.environ.get("MEMD_BIN") or REPO / "target/debug/memd")


def in_session(session: Session, command: str, *, exec_: bool = False) -> list[str]:
    s = session.state
    script = f'. "{s}/env"\ncd -- "$(cat "{s}/cwd")" || exit 97\n'
    if exec_:
        return ["bash", "-c", script + "exec " + command]
    script += command + '\n__rc=$?\nexport -p > "' + str(s) + '/env"\npwd > "' + str(s) + '/cwd"\nexit $__rc\n'
    return ["bash", "-c", script]


def port_open(addr) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(addr) == 0


def start_daemon(session: Session, command: str) -> None:
    log = open(session.root / f"daemon-{len(session.daemons)}.log", "w+")
    proc = subprocess.Popen(
        in_session(session, command, exec_=True), stdout=log, stderr=subprocess.STDOUT,
        env=session.env, start_new_session=True,
    )
    session.daemons.append((command, proc, log))
    url = "http://%s:%d/healthz" % DAEMON
    deadline = time.monotonic() + LINE_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            log.seek(0)
            raise AssertionError(f"`{command}` exited {proc.returncode}: {log.read()}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"`{command}` never answered on {url}")


def stop_daemons(session: Session) -> dict[str, str]:
    problems = {}
    for command, proc, log in session.daemons:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                problems[command] = "did not stop within 60 s of SIGTERM"
                continue
        if proc.returncode != 0:
            log.seek(0)
            problems[command] = f"exited {proc.returncode} on SIGTERM: {log.read()}"
        log.close()
    return problems


def run_step(session: Session, step: Step) -> None:
    if step.kind == "text":
        return
    if step.kind == "json":
        config = json.loads(step.text)
        servers = config["mcpServers"]
        assert servers, "no server in the configuration"
        for name, server in servers.items():
            assert os.path.isabs(server["command"]) and Path(server["command"]).name == "memd", (
                f"{name}: the command must be memd's absolute path, not {server['command']!r}"
            )
            assert server["args"] == ["mcp"], server["args"]
            assert os.path.isabs(server["env"]["MEMD_DIR"]), server["env"]
        return
    if step.kind == "python":
        script = session.root / f"readme-{step.line}.py"
        script.write_text(step.text)
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMD_")}
        cwd = (session.state / "cwd").read_text().strip()
        r = subprocess.run(
            [sys.executable, str(script)], cwd=cwd, env=env, capture_output=True, text=True,
            timeout=LINE_TIMEOUT,
        )
        if r.returncode != 0:
            raise AssertionError(f"exit {r.returncode}\n{r.stdout}\n{r.stderr}")
        for text in re.findall(r"""\.add\(\s*(?:"([^"]+)"|'([^']+)')""", step.text):
            text = text[0] or text[1]
            assert text in r.stdout, f"{text!r} not in the output:\n{r.stdout}"
            session.added.append(text)
        return
    check = checked(step.text)
    if check is not None:
        check()
        return
    command = background(step.text)
    if command is not None:
        start_daemon(session, command)
        return
    r = subprocess.run(
        in_session(session, step.text), env=session.env, capture_output=True, text=True,
        timeout=LINE_TIMEOUT,
    )
    if r.returncode != 0:
        raise AssertionError(f"exit {r.returncode}\nstdout: {r.stdout}\nstderr: {r.stderr}")
    expect(session, step.text, r.stdout)


STEPS = steps()


@pytest.fixture(scope="module")
def readme_run(tmp_path_factory):
    """Runs every step in order once; each test then reads its own result."""
    binary = memd_bin()
    assert binary.is_file(), f"no memd at {binary}: build it or set MEMD_BIN"
    assert not port_open(DAEMON), (
        "something already listens on %s:%d, where the README's daemon goes" % DAEMON
    )
    root = tmp_path_factory.mktemp("readme")
    home, work, bindir, state = (root / d for d in ("home", "work", "bin", "state"))
    for d in (home, work, bindir, state):
        d.mkdir()
    (bindir / "memd").symlink_to(binary.resolve())
    real_cache = Path.home() / ".cache" / "memd"
    if real_cache.exists():
        (home / ".cache").mkdir()
        (home / ".cache" / "memd").symlink_to(real_cache)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMD_")}
    if "MEMD_MODEL_DIR" in os.environ:
        env["MEMD_MODEL_DIR"] = os.environ["MEMD_MODEL_DIR"]
    env["HOME"] = str(home)
    env["PATH"] = f"{bindir}{os.pathsep}{env.get('PATH', '')}"
    (state / "env").write_text("")
    (state / "cwd").write_text(str(work))
    session = Session(root, env, state)
    results = {}
    try:
        for step in STEPS:
            try:
                run_step(session, step)
                results[step.id] = None
            except Exception as e:  # every step is reported, not just the first failure
                results[step.id] = f"README.md line {step.line}: `{step.text.strip()}`\n{e}"
    finally:
        stopped = stop_daemons(session)
    for step in STEPS:
        command = background(step.text) if step.kind == "sh" else None
        if command in stopped and results[step.id] is None:
            results[step.id] = f"README.md line {step.line}: `{command}` {stopped[command]}"
    return results


@pytest.mark.parametrize("step", STEPS, ids=[s.id for s in STEPS])
def test_readme_step(readme_run, step):
    problem = readme_run[step.id]
    if problem:
        pytest.fail(problem, pytrace=False)


def test_readme_blocks_follow_the_convention():
    found = blocks(README.read_text())
    for b in found:
        assert b.kind in KINDS, f"README.md line {b.line}: a ```{b.kind} block (allowed: {KINDS})"
    assert any(b.kind == "text" and "{{core}}" in b.text for b in found), (
        "README.md has no system-prompt template (a text block with {{core}})"
    )
    assert any(b.kind == "python" for b in found), "README.md has no Python snippet"
    assert any(b.kind == "json" for b in found), "README.md has no MCP client configuration"
    assert "{{core}}" in (REPO / "src/mcp/use_memory.md").read_text()


def test_readme_links_exist():
    text = README.read_text()
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path = target.split("#")[0]
        assert (REPO / path).exists(), f"README.md links to {target}, which does not exist"
