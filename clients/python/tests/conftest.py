"""Fixtures: real memd daemons on free ports, in temporary memory directories.

The binary is ``$MEMD_BIN``, else ``$CARGO_TARGET_DIR/debug/memd``, else
``target/debug/memd`` of this repository. Every daemon listens on
``127.0.0.1:0`` and says where it listens on stderr, which it writes to a
log file that a failing start shows. memd's own environment variables of
the developer's shell (``MEMD_TOKEN``, ``MEMD_LLM_BASE_URL``, …) are not
passed on, so the tests run with the built-in judge and no token.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from memd import AsyncClient, Client

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent.parent


def memd_bin() -> str:
    if "MEMD_BIN" in os.environ:
        return os.environ["MEMD_BIN"]
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    if not target.is_absolute():
        target = REPO / target
    return str(target / "debug" / "memd")


def memd_env(**extra: str) -> dict[str, str]:
    """The environment for a memd process: this one without ``MEMD_*``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMD_")}
    env.update(extra)
    return env


def init(directory: Path) -> Path:
    """``memd init DIRECTORY``."""
    subprocess.run([memd_bin(), "init", str(directory)], check=True, capture_output=True, env=memd_env())
    return directory


@dataclass
class Daemon:
    """A running ``memd serve``: its URL, its directory, its process."""

    url: str
    dir: Path
    process: subprocess.Popen[bytes]
    log: Path
    flavor: str = ""
    """For :func:`flavored`: which client the tests use on it."""

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


SERVING = re.compile(r"serving .* on (http://\S+)")


@contextlib.contextmanager
def serving(directory: Path, *args: str, **env: str) -> Iterator[Daemon]:
    """Run ``memd serve`` for ``directory`` (or, with ``--root``, the
    memories under it) until the block ends."""
    log = directory.parent / f"{directory.name}.serve.log"
    where = ["--root", str(directory)] if "--root" in args else ["--dir", str(directory)]
    rest = [a for a in args if a != "--root"]
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [memd_bin(), "serve", *where, "--listen", "127.0.0.1:0", *rest],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=memd_env(**env),
        )
    daemon = Daemon(url=_wait_for_url(process, log), dir=directory, process=process, log=log)
    try:
        _wait_healthy(daemon, env.get("MEMD_TOKEN"))
        yield daemon
    finally:
        daemon.stop()


def _wait_for_url(process: subprocess.Popen[bytes], log: Path, seconds: float = 60) -> str:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = SERVING.search(log.read_text(errors="replace"))
        if found:
            return found.group(1)
        if process.poll() is not None:
            break
        time.sleep(0.05)
    process.kill()
    raise RuntimeError(f"memd serve did not start:\n{log.read_text(errors='replace')}")


def _wait_healthy(daemon: Daemon, token: str | None, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    with Client(daemon.url, token=token, timeout=5) as client:
        while time.monotonic() < deadline:
            with contextlib.suppress(Exception):
                if client.send(_liveness()):
                    return
            time.sleep(0.05)
    raise RuntimeError(f"memd serve never answered /healthz:\n{daemon.log.read_text()}")


def _liveness() -> Any:
    from memd import _api

    return _api.Call("GET", "/healthz", {}, None, _api.alive, from_root=True)


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """A daemon over a fresh memory directory, for one test module."""
    with serving(init(tmp_path_factory.mktemp("memory") / "memory")) as d:
        yield d


@pytest.fixture(scope="module")
def client(daemon: Daemon) -> Iterator[Client]:
    with Client(daemon.url) as c:
        yield c


class Blocking:
    """An :class:`AsyncClient` whose methods run to completion on an event
    loop of its own: the same test body then checks both clients."""

    def __init__(self, client: AsyncClient) -> None:
        self._client = client
        self._loop = asyncio.new_event_loop()

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._client, name)
        if not callable(attr):
            return attr
        return self._blocking(attr)

    def _blocking(self, method: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            result = method(*args, **kwargs)
            return self._loop.run_until_complete(result) if inspect.isawaitable(result) else result

        return call

    def close(self) -> None:
        self._loop.run_until_complete(self._client.aclose())
        self._loop.close()


def make_client(flavor: str, url: str, **kwargs: Any) -> Any:
    """A :class:`Client`, or (``async``) an :class:`AsyncClient` behind
    :class:`Blocking`."""
    if flavor == "sync":
        return Client(url, **kwargs)
    return Blocking(AsyncClient(url, **kwargs))


@pytest.fixture(scope="module", params=["sync", "async"])
def flavored(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """A daemon over a memory of its own for each flavor of client in turn
    (``Daemon.flavor``: ``sync``, then ``async``)."""
    with serving(init(tmp_path_factory.mktemp(request.param) / "memory")) as d:
        d.flavor = request.param
        yield d


@pytest.fixture(scope="module")
def api(flavored: Daemon) -> Iterator[Any]:
    """Each client in turn (:func:`make_client`), over its own daemon;
    ``api.daemon`` is that daemon."""
    c = make_client(flavored.flavor, flavored.url)
    c.daemon = flavored
    yield c
    c.close()
