"""Many memories, one daemon: ``memd serve --root``, reached with
``memory=NAME`` (``/v1/m/NAME/…``), through each client."""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from memd import AuthError, BusyError, InvalidError, NotFoundError

from .conftest import Daemon, make_client, serving


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    where = tmp_path_factory.mktemp("root") / "memories"
    where.mkdir()
    tokens = where.parent / "tokens.toml"
    tokens.write_text('carol = "carols-token"\n')
    with serving(where, "--root", "--tokens", str(tokens)) as d:
        yield d


@pytest.fixture(params=["sync", "async"])
def flavor(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def client_for(flavor: str, root: Daemon, memory: str | None, **kwargs: Any) -> Any:
    return make_client(flavor, root.url, memory=memory, **kwargs)


def test_a_first_write_makes_a_memory(flavor: str, root: Daemon) -> None:
    name = f"alice-{flavor}"
    alice = client_for(flavor, root, name)
    with pytest.raises(NotFoundError) as caught:
        alice.status()
    assert caught.value.kind == "not_found"
    added = alice.add("Alice keeps bees", session="s1")
    assert added.facts[0].written
    assert Path(root.dir, name, "archive").is_dir()
    assert alice.search("bees").hits[0].text == "Alice keeps bees"
    assert alice.health() is True
    assert alice.status().dir == str(root.dir / name)
    alice.close()


def test_memories_are_apart(flavor: str, root: Daemon) -> None:
    bob = client_for(flavor, root, f"bob-{flavor}")
    dave = client_for(flavor, root, f"dave-{flavor}")
    bob.add("Bob's boat is called Petrel")
    dave.add("Dave has never owned a boat")
    assert [h.text for h in bob.search("boat", min_score=0).hits] == ["Bob's boat is called Petrel"]
    [entry] = [e for e in _consolidated(dave) if "boat" in e.text]
    assert entry.text == "Dave has never owned a boat"
    with pytest.raises(NotFoundError):
        bob.get_entry(entry.id)
    everyone = client_for(flavor, root, None)
    listed = {m.name for m in everyone.memories().memories}
    assert {f"bob-{flavor}", f"dave-{flavor}"} <= listed
    for c in (bob, dave, everyone):
        c.close()


def _consolidated(client: Any) -> list[Any]:
    client.consolidate(force=True)
    return list(client.entries())


def test_a_bad_name_is_refused_before_any_file(flavor: str, root: Daemon) -> None:
    for name in ("..", ".hidden", "a/b", "x" * 65):
        bad = client_for(flavor, root, name)
        with pytest.raises((InvalidError, NotFoundError)) as caught:
            bad.add("never written")
        assert caught.value.status in (400, 404)
        bad.close()
    assert not any(p.name.startswith(".") for p in root.dir.iterdir() if p.name != ".memd")


def test_a_memorys_own_token(flavor: str, root: Daemon) -> None:
    carol = client_for(flavor, root, "carol", token="carols-token")
    assert carol.add("Carol sings bass").facts[0].written
    stranger = client_for(flavor, root, "carol")
    with pytest.raises(AuthError) as caught:
        stranger.entries()
    assert caught.value.status == 401
    elsewhere = client_for(flavor, root, f"erin-{flavor}", token="carols-token")
    assert elsewhere.add("Erin's memory takes no token").facts[0].written
    for c in (carol, stranger, elsewhere):
        c.close()


def test_a_write_to_a_memory_being_moved_lands_once_it_is_served_again(
    flavor: str, tmp_path: Path
) -> None:
    """A memory handed over to another node (``POST /v1/handover/NAME``)
    answers 503 with nothing done until it is served again (here: taken
    back by the same node 1.5 s later, as another node takes it over); the
    client sends the write again after each ``Retry-After`` and it lands
    once. With no retries left, the refusal is a :class:`BusyError`."""
    where = tmp_path / "memories"
    where.mkdir()
    with serving(where, "--root") as d:
        mover = make_client(flavor, d.url, memory="mover")
        mover.add("Alice keeps bees")
        outgoing = where / ".memd" / "outgoing" / "mover"
        incoming = where / ".memd" / "incoming" / "mover"

        def handover() -> None:
            httpx.post(f"{d.url}/v1/handover/mover", timeout=30).raise_for_status()

        def take_back() -> None:
            time.sleep(1.5)
            shutil.copytree(outgoing, incoming, symlinks=True)
            shutil.rmtree(outgoing)
            httpx.post(f"{d.url}/v1/takeover/mover", timeout=30).raise_for_status()

        handover()
        back = threading.Thread(target=take_back)
        back.start()
        started = time.monotonic()
        added = mover.add("Alice moved her hives", key="hives")
        back.join()
        assert added.facts[0].written
        assert time.monotonic() - started >= 1.0
        texts = [h.text for h in mover.search("hives bees", min_score=0).hits]
        assert sorted(texts) == ["Alice keeps bees", "Alice moved her hives"]

        handover()
        impatient = make_client(flavor, d.url, memory="mover", retries=0)
        with pytest.raises(BusyError) as caught:
            impatient.add("Alice sold her hives")
        assert (caught.value.status, caught.value.kind) == (503, "busy")
        mover.close()
        impatient.close()
