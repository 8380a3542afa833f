"""A Python client for memd, the long-term memory daemon for AI agents.

:class:`Client` (blocking) and :class:`AsyncClient` (asyncio) have one method
per operation of memd's HTTP API, each returning a typed reply
(:mod:`memd.types`) and raising a :class:`MemdError` on failure.
:mod:`memd.langgraph` adapts a memory to LangGraph's ``BaseStore``;
:mod:`memd.agents` gives it to the OpenAI Agents SDK as tools.
"""

from ._api import Call, Endpoint
from .client import AsyncClient, Client
from .errors import AuthError, BusyError, InvalidError, MemdError, NotFoundError, TransportError
from .types import (
    Added,
    AddedFact,
    Applied,
    Candidate,
    Carried,
    CheckReport,
    Edited,
    EntryView,
    Erasure,
    Found,
    GitHistory,
    Hit,
    Memories,
    Record,
    Reindexed,
    ReviewList,
    Reviewed,
    Run,
    RunReport,
    Shown,
    SimilarEntry,
    Status,
    Then,
    UndoOutcome,
)

__all__ = [
    "Added",
    "AddedFact",
    "Applied",
    "AsyncClient",
    "AuthError",
    "BusyError",
    "Call",
    "Candidate",
    "Carried",
    "CheckReport",
    "Client",
    "Edited",
    "Endpoint",
    "EntryView",
    "Erasure",
    "Found",
    "GitHistory",
    "Hit",
    "InvalidError",
    "MemdError",
    "Memories",
    "NotFoundError",
    "Record",
    "Reindexed",
    "ReviewList",
    "Reviewed",
    "Run",
    "RunReport",
    "Shown",
    "SimilarEntry",
    "Status",
    "Then",
    "TransportError",
    "UndoOutcome",
]
