"""memd's memory as tools for the OpenAI Agents SDK.

:func:`memory_tools` gives the tools memd's MCP server offers an agent,
under the same names and with the same meaning, answered through the HTTP
API: ``remember`` (store facts), ``recall`` (search), ``forget`` (an entry
or a pending fact, for good), ``erase`` (forgotten, and its text taken out
of every file) and ``core_memory`` (MEMORY.md)::

    from agents import Agent
    from memd import AsyncClient
    from memd.agents import memory_tools

    agent = Agent(name="assistant", tools=memory_tools(AsyncClient()))

Each tool answers in text a model reads, as the MCP tools do; a failure
(an unknown id, say) is answered as text too, so the model can correct
itself. ``core_memory`` gives MEMORY.md as the file is (the MCP tool gives
it compacted: the API has no compact form).
"""

from __future__ import annotations

import asyncio
from typing import Any, TypeVar

try:
    from agents import FunctionTool, RunContextWrapper, function_tool
except ImportError as missing:
    raise ImportError(
        "memd.agents needs the OpenAI Agents SDK: pip install 'memd-client[agents]'"
    ) from missing

from . import _api as api
from ._api import Call
from .client import AsyncClient, Client
from .errors import MemdError
from .types import Added, Candidate, Erasure, Found

__all__ = ["memory_tools"]

T = TypeVar("T")


def memory_tools(client: AsyncClient | Client) -> list[FunctionTool]:
    """The tools ``remember``, ``recall``, ``forget``, ``erase`` and ``core_memory``,
    sending their requests through ``client`` (a blocking client's calls
    run in a worker thread)."""

    async def send(call: Call[T]) -> T:
        if isinstance(client, AsyncClient):
            return await client.send(call)
        return await asyncio.to_thread(client.send, call)

    tool = function_tool(failure_error_function=_explain)

    @tool
    async def remember(
        text: str | None = None,
        texts: list[str] | None = None,
        category: str | None = None,
        session: str | None = None,
        key: str | None = None,
        supersedes: list[str] | None = None,
    ) -> str:
        """Store a fact about the user or the work in long-term memory (appended to today's archive). One self-contained sentence per fact. When the fact makes something remembered no longer true (the user moved, changed jobs, changed their mind), pass its id in `supersedes` (any id recall or remember showed: an entry's, a core line's `core:e-…`, or a fact's): memd then keeps the old text as history instead of two facts that disagree. The reply lists similar entries with their ids.

        Args:
            text: One fact, one line.
            texts: A batch of facts (instead of text).
            category: A tag for every fact (letters, digits, -, _).
            session: The session the facts come from.
            key: Idempotency key: a retried call with the same key writes nothing.
            supersedes: Ids (entries e-…, core lines core:e-…, facts) this one fact makes no longer true.
        """
        added: Added = await send(
            api.add(
                text,
                texts=texts,
                category=category,
                session=session,
                key=key,
                similar=True,
                supersedes=supersedes,
            )
        )
        return _remembered(added, declared=bool(supersedes))

    @tool
    async def recall(
        query: str,
        k: int | None = None,
        exclude_core: bool | None = None,
        min_score: float | None = None,
        category: str | None = None,
        session: str | None = None,
        since: str | None = None,
        as_of: str | None = None,
    ) -> str:
        """Search long-term memory (facts and consolidated entries) by meaning and keywords. Each hit has its id and the day it was stated; with exclude_core: true, what core_memory already shows is left out.

        Args:
            query: What to search for.
            k: How many results, 1 to 100.
            exclude_core: Leave out what core_memory already shows.
            min_score: Leave out hits scoring less than this, 0 to 1.
            category: Only facts of this category, and entries holding one.
            session: Only facts of this session, and entries holding one.
            since: Only what was stated on this day (YYYY-MM-DD) or later.
            as_of: Search the memory as it was at this time (RFC 3339, or a day: its end).
        """
        found: Found = await send(
            api.search(
                query,
                k=k,
                exclude_core=exclude_core,
                min_score=min_score,
                category=category,
                session=session,
                since=since,
                as_of=as_of,
            )
        )
        return _hits(found)

    @tool
    async def forget(id: str) -> str:
        """Forget an entry (e-…) or a pending fact (DAY#HASH) for good; it will not come back.

        Args:
            id: An entry id (e-…) or a pending fact's id (DAY#HASH).
        """
        gone: Candidate = await send(api.forget(id))
        return f"forgot {gone.kind} {gone.id}: {gone.text}"

    @tool
    async def erase(id: str) -> str:
        """Erase an entry (e-…) or a pending fact (DAY#HASH): forgotten for good and its text taken out of every file memd keeps (the archive, history, index). Only when the user asks that something be deleted for good (a secret, personal data); it cannot be undone.

        Args:
            id: An entry id (e-…) or a pending fact's id (DAY#HASH).
        """
        gone: Erasure = await send(api.erase(id))
        return (
            f"erased {gone.id}: its text is out of every file "
            f"(entries: {len(gone.entries)}, facts: {len(gone.facts)})"
        )

    @tool
    async def core_memory() -> str:
        """The always-relevant memory (MEMORY.md) to keep in mind for this conversation: the person's notes, then one line per entry with the day it was last stated and its id (for forget and supersedes)."""
        return await send(api.core(compact=True))

    return [remember, recall, forget, erase, core_memory]


def _explain(context: RunContextWrapper[Any], error: Exception) -> str:
    """A failed call as the model reads it: memd's own message (an unknown
    id, an invalid argument), so it can correct itself, as over MCP; any
    other failure without its details."""
    if isinstance(error, MemdError):
        return f"memd: {error.message}"
    return "the memory tool failed; try again later"


def _remembered(added: Added, *, declared: bool) -> str:
    """What ``remember`` answers: each fact's id and the entries like it."""
    lines: list[str] = []
    for fact in added.facts:
        if fact.erased:
            lines.append(
                f"not remembered as {fact.id}: the user erased this text, and it stays out for good"
            )
            continue
        lines.append(f"remembered as {fact.id}")
        similar = fact.similar or []
        for s in similar:
            how = "same as entry" if s.same else "similar entry"
            lines.append(f"{how} {s.id}: {_one_line(s.text)}")
        if any(not s.same for s in similar) and not declared:
            lines.append(
                "if this fact replaces one of these, remember it again with "
                "supersedes: [its id] (the same text is not written twice)"
            )
    return "\n".join(lines)


def _hits(found: Found) -> str:
    """What ``recall`` answers: one line per hit, with its id and day."""
    if not found.hits:
        return "nothing found"
    return "\n".join(
        f"- [{h.id}] {_one_line(h.text)}" + (f" ({h.day})" if h.day else "") for h in found.hits
    )


def _one_line(text: str) -> str:
    return text.replace("\n", " ")
