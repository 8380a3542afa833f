"""The asyncio client used as asyncio code uses it: in one event loop,
requests in flight together."""

from __future__ import annotations

import asyncio

from memd import AsyncClient, NotFoundError

from .conftest import Daemon


async def test_requests_in_flight_together(daemon: Daemon) -> None:
    texts = [f"The user visited city number {n} in {1990 + n}" for n in range(12)]
    async with AsyncClient(daemon.url) as memd:
        added = await asyncio.gather(*(memd.add(t, session="trip") for t in texts))
        ids = [a.ids[0] for a in added]
        assert len(set(ids)) == len(texts)
        found = await asyncio.gather(*(memd.search(f"city number {n}", k=1) for n in range(3)))
        assert [f.hits[0].text for f in found] == texts[:3]
        report, entries, status = await asyncio.gather(
            memd.consolidate(force=True, dry_run=True), memd.entries(), memd.status()
        )
        assert report.pending_facts == status.pending_facts >= len(texts)
        assert entries == []


async def test_errors_in_a_gather(daemon: Daemon) -> None:
    async with AsyncClient(daemon.url) as memd:
        results = await asyncio.gather(
            memd.get_entry("e-00000000"), memd.health(), return_exceptions=True
        )
    assert isinstance(results[0], NotFoundError) and results[0].kind == "not_found"
    assert results[1] is True
