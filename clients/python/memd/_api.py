"""Every operation of memd's API, described once (sans I/O).

An operation is an :class:`Endpoint`: its HTTP method and path, how its reply
is read, and a parameter list, given as a function whose signature is the
operation's parameters and whose docstring is its documentation (the body
is never run). Calling an endpoint with arguments gives a :class:`Call`,
the request as data: method, path, query, JSON body and reply reader.

The table :class:`Operations` lists them under their method names;
:class:`~memd.Client` and :class:`~memd.AsyncClient` inherit it, and an
endpoint read from either becomes a bound method that sends its call,
synchronously or asynchronously (see ``Endpoint.__get__``). So each
operation is written here once and both clients stay in step.

The parameters keep the API's names (``query`` in a search, ``id`` of an
entry), so the tests can hold them against ``GET /v1/openapi.json``.
"""

from __future__ import annotations

import datetime
import functools
import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, ParamSpec, TypeVar, overload
from urllib.parse import quote

import httpx

from .types import (
    Added,
    Candidate,
    CheckReport,
    Edited,
    EntryView,
    Erasure,
    Found,
    Memories,
    Model,
    Record,
    Reindexed,
    ReviewList,
    Reviewed,
    Run,
    RunReport,
    Shown,
    SimilarEntry,
    Status,
    UndoOutcome,
)

P = ParamSpec("P")

T = TypeVar("T")
M = TypeVar("M", bound=Model)


@dataclass(frozen=True)
class Call(Generic[T]):
    """One request, as data: what a client sends and how it reads the reply.

    ``path`` is under the memory's base (``/v1`` or ``/v1/m/NAME``) unless
    ``from_root``, when it is under the server's root (``/v1/memories``).
    """

    method: str
    path: str
    query: dict[str, Any]
    body: dict[str, Any] | None
    read: Callable[[httpx.Response], T]
    from_root: bool = False


class Endpoint(Generic[P, T]):
    """An operation: method, path (``{field}`` taken from the arguments),
    reply reader, and ``params``, whose signature is the operation's."""

    def __init__(
        self,
        method: str,
        path: str,
        read: Reader[T],
        params: Callable[P, object],
        from_root: bool,
    ) -> None:
        self.method = method
        self.path = path
        self.read = read
        self.params = params
        self.from_root = from_root
        self.signature = inspect.signature(params).replace(
            return_annotation=inspect.Signature.empty
        )
        self.path_fields = [n for n in self.signature.parameters if "{" + n + "}" in path]
        functools.update_wrapper(self, params)

    @property
    def in_query(self) -> bool:
        """Whether the parameters past the path go in the query string (GET,
        DELETE) or in a JSON body (POST, PATCH)."""
        return self.method in ("GET", "DELETE")

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> Call[T]:
        bound = self.signature.bind(*args, **kwargs)
        bound.apply_defaults()
        values = {k: _wire(v) for k, v in bound.arguments.items() if v is not None}
        in_path = {k: quote(str(values.pop(k)), safe="") for k in self.path_fields}
        path = self.path.format(**in_path)
        if self.in_query:
            return Call(self.method, path, values, None, self.read, self.from_root)
        return Call(self.method, path, {}, values, self.read, self.from_root)

    @overload
    def __get__(self, obj: None, owner: type) -> Endpoint[P, T]: ...

    @overload
    def __get__(self, obj: SyncOperations, owner: type) -> Callable[P, T]: ...

    @overload
    def __get__(self, obj: AsyncOperations, owner: type) -> Callable[P, Awaitable[T]]: ...

    def __get__(self, obj: Any, owner: type) -> Any:
        if obj is None:
            return self
        return obj._bind(self)


def endpoint(
    method: str,
    path: str,
    read: Reader[T],
    *,
    from_root: bool = False,
) -> Callable[[Callable[P, object]], Endpoint[P, T]]:
    """Make the decorated parameter list an :class:`Endpoint`."""

    def make(params: Callable[P, object]) -> Endpoint[P, T]:
        return Endpoint(method, path, read, params, from_root)

    return make


def _wire(value: object) -> object:
    """A parameter as JSON or a query value: dates as ``YYYY-MM-DD``, times
    as RFC 3339 (a naive one is the daemon's local time), sequences as
    lists."""
    if isinstance(value, datetime.datetime):
        return value.isoformat()
    if isinstance(value, datetime.date):
        return value.isoformat()[:10]
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        return list(value)
    return value


# --- reply readers ----------------------------------------------------------


class Reader(Generic[T]):
    """How a reply is read, and the model it is made of (``None`` for a
    reply that is not JSON objects), which the tests hold to the API's
    description."""

    def __init__(self, read: Callable[[httpx.Response], T], model: type[Model] | None) -> None:
        self.read = read
        self.model = model

    def __call__(self, response: httpx.Response) -> T:
        return self.read(response)


def one(model: type[M]) -> Reader[M]:
    """A reply that is one JSON object of ``model``."""
    return Reader(lambda r: model.from_json(r.json()), model)


def many(model: type[M]) -> Reader[list[M]]:
    """A reply that is a JSON array of ``model``."""
    return Reader(lambda r: [model.from_json(item) for item in r.json()], model)


def _found(r: httpx.Response) -> Found:
    """A search's reply: the hits, and what the index does not cover yet."""
    return Found.from_json(r.json())


def _similar(r: httpx.Response) -> list[list[SimilarEntry]]:
    return [[SimilarEntry.from_json(e) for e in row] for row in r.json()]


def _text(r: httpx.Response) -> str:
    """MEMORY.md: the bytes as UTF-8 (a byte that is not shows as U+FFFD)."""
    return r.content.decode("utf-8", errors="replace")


def _ok(r: httpx.Response) -> bool:
    return bool(r.json().get("ok"))


def _document(r: httpx.Response) -> dict[str, Any]:
    data: dict[str, Any] = r.json()
    return data


hits = Reader(_found, Found)
similar_lists = Reader(_similar, SimilarEntry)
markdown = Reader(_text, None)
alive = Reader(_ok, None)
json_object = Reader(_document, None)


# --- the operations ---------------------------------------------------------


@endpoint("POST", "/facts", one(Added))
def add(
    text: str | None = None,
    *,
    texts: Sequence[str] | None = None,
    category: str | None = None,
    session: str | None = None,
    key: str | None = None,
    similar: bool | None = None,
    supersedes: Sequence[str] | None = None,
) -> None:
    """Append facts to today's archive: one ``text``, or a batch in ``texts``.

    ``category`` tags every fact (letters, digits, ``-``, ``_``); ``session``
    names the conversation they come from; ``key`` makes the append
    idempotent (a retry with the same key writes nothing; in a batch the
    N-th fact's key is ``KEY#N``). ``similar=True`` also looks up the
    entries most like each fact. ``supersedes`` lists what this one fact
    makes no longer true, by any id memd shows (an entry's ``e-…``, a
    MEMORY.md line's ``core:e-…``, a fact's): the next consolidation
    replaces it, keeping its text as history.
    """


@endpoint("GET", "/search", hits)
def search(
    query: str,
    *,
    k: int | None = None,
    min_score: float | None = None,
    category: str | None = None,
    session: str | None = None,
    since: str | datetime.date | None = None,
    exclude_core: bool | None = None,
    wait: bool | None = None,
    as_of: str | datetime.datetime | datetime.date | None = None,
) -> None:
    """Hybrid search (meaning and words) over facts, entries and MEMORY.md.

    ``k`` hits (1 to 100; default ``[search] default_k``), none scoring
    below ``min_score`` (0 to 1). ``category``, ``session`` and ``since``
    (a day) narrow it; ``exclude_core=True`` leaves out what MEMORY.md
    already holds. The daemon first indexes every fact added before
    (read-your-writes); ``wait=False`` answers at once from the index as it
    is, and ``Found.indexing`` then says which files it does not cover yet.
    ``as_of`` (a time, or a day: its end) searches the memory as it was
    then: the facts written by then, the entries as they were (what was
    forgotten since stays out); :class:`~memd.InvalidError` when memd cannot
    know the entries then (see :meth:`show`).
    """


@endpoint("POST", "/similar", similar_lists)
def similar(texts: Sequence[str]) -> None:
    """For each text (at most 20), the existing entries most like it."""


@endpoint("POST", "/consolidate", one(RunReport))
def consolidate(*, force: bool | None = None, dry_run: bool | None = None) -> None:
    """Fold pending facts into the entries and refresh MEMORY.md.

    Without ``force`` the time and volume gate may skip the run
    (``RunReport.skipped`` says why); ``dry_run=True`` plans and writes
    nothing.
    """


@endpoint("POST", "/reindex", one(Reindexed))
def reindex(*, clear: bool | None = None) -> None:
    """Bring the index in step with the files (``clear=True`` rebuilds it)."""


@endpoint("GET", "/entries", many(EntryView))
def entries(
    *,
    category: str | None = None,
    session: str | None = None,
    since: str | datetime.date | None = None,
    unreviewed: bool | None = None,
    edited: bool | None = None,
) -> None:
    """The live entries, in file order, that pass every filter given:
    holding a fact of ``category`` or ``session``, updated ``since`` a day,
    marked ``unreviewed`` or ``edited`` (by a person) or not."""


@endpoint("GET", "/entries/{id}", one(EntryView))
def get_entry(id: str) -> None:
    """One live entry by id (``e-…``, or ``core:e-…`` as a search hit names
    a MEMORY.md line). Raises :class:`~memd.NotFoundError`."""


@endpoint("PATCH", "/entries/{id}", one(Edited))
def edit_entry(
    id: str,
    *,
    text: str | None = None,
    pinned: bool | None = None,
    category: str | None = None,
) -> None:
    """Change one live entry's text, pin or category (``""`` clears it);
    what is not given stays. Journaled as a run of its own (``undo`` takes
    it back)."""


@endpoint("DELETE", "/entries/{id}", one(Candidate))
def forget(id: str) -> None:
    """Forget an entry (``e-…``) or a pending fact (``DAY#HASH``) for good:
    it is removed and tombstoned, so a later fact saying the same is kept
    out too. Returns what was forgotten."""


@endpoint("POST", "/entries/{id}/unforget", one(Candidate))
def unforget(id: str) -> None:
    """Take back the forgetting of an entry or a fact. Returns what is back."""


@endpoint("POST", "/entries/{id}/erase", one(Erasure))
def erase(id: str) -> None:
    """Forget an entry or a fact for good and take its text out of every
    file memd keeps (day file, journal, index and its old versions). Cannot
    be undone. Returns what was erased."""


@endpoint("GET", "/candidates", many(Candidate))
def candidates(text: str) -> None:
    """The entries and pending facts whose text contains ``text`` (case and
    spacing ignored): what there is to forget."""


@endpoint("GET", "/entries/{id}/history", many(Record))
def history(id: str) -> None:
    """An entry's lineage from the journal, oldest first (entries merged
    into it included)."""


@endpoint("GET", "/runs", many(Run))
def runs(*, last: int | None = None) -> None:
    """The runs of the journal, oldest first (only the ``last`` N)."""


@endpoint("POST", "/runs/{run}/undo", one(UndoOutcome))
def undo(run: str, *, dry_run: bool | None = None, keep_out: bool | None = None) -> None:
    """Undo a run: entries back as it found them, its facts pending again
    (or, with ``keep_out``, forgotten). Journaled, so it can be undone."""


@endpoint("GET", "/review", one(ReviewList))
def review_items() -> None:
    """The ops consolidation proposed for review (``[consolidation] review =
    "manual"``), each with what ``consolidated/REVIEW.md`` says of it."""


@endpoint("POST", "/review", one(Reviewed))
def review(
    *,
    action: str | None = None,
    ids: Sequence[str] | None = None,
    all: bool | None = None,
    apply: bool | None = None,
) -> None:
    """``action="accept"`` or ``"reject"`` proposals (``ids``, or ``all``),
    as an edit of REVIEW.md, carried out at once with ``apply``; or
    ``action="apply"`` (the default): carry out what REVIEW.md says."""


@endpoint("GET", "/memory", markdown)
def core(*, compact: bool | None = None) -> None:
    """MEMORY.md, the core memory an agent keeps in its prompt (markdown);
    with ``compact``, the person's notes and one line per entry,
    ``- text · day [id]``, without markup (what MCP's ``core_memory``
    gives)."""


@endpoint("GET", "/show", one(Shown))
def show(*, as_of: str | datetime.datetime | datetime.date | None = None) -> None:
    """``consolidated/memory.md`` and MEMORY.md's generated lines now, or as
    they were ``as_of`` a time (or a day: its end), byte for byte; each
    :class:`~memd.types.Then` says ``"unknowable"``, and why, where a hand
    edit memd never saw or an erasure makes the past unknown."""


@endpoint("GET", "/status", one(Status))
def status() -> None:
    """The state of the memory directory and the configuration in force."""


@endpoint("POST", "/check", one(CheckReport))
def check(*, fix: bool | None = None, deep: bool | None = None) -> None:
    """Verify memd's invariants; ``fix=True`` rebuilds the index when only
    it disagrees with the files; ``deep=True`` compares every index row
    with the files, not only those of what changed since the last check."""


@endpoint("GET", "/healthz", alive)
def health() -> None:
    """Whether the daemon (and, with ``memory``, that memory) answers."""


@endpoint("GET", "/v1/memories", one(Memories), from_root=True)
def memories() -> None:
    """Every memory under the root (``memd serve --root`` only)."""


@endpoint("GET", "/v1/openapi.json", json_object, from_root=True)
def openapi() -> None:
    """The API's OpenAPI 3.1 description, as the daemon gives it."""


class Operations:
    """Every operation, under its method name (inherited by both clients)."""

    add = add
    remember = add
    search = search
    similar = similar
    consolidate = consolidate
    reindex = reindex
    entries = entries
    get_entry = get_entry
    edit_entry = edit_entry
    forget = forget
    unforget = unforget
    erase = erase
    candidates = candidates
    history = history
    runs = runs
    undo = undo
    review_items = review_items
    review = review
    core = core
    show = show
    status = status
    check = check
    health = health
    memories = memories
    openapi = openapi


ENDPOINTS: Mapping[str, Endpoint[..., Any]] = {
    name: value for name, value in vars(Operations).items() if isinstance(value, Endpoint)
}
"""Every operation by method name (``remember`` is ``add``)."""


class SyncOperations(Operations):
    """The operations of a client that sends each call and returns its reply
    (:class:`~memd.Client`)."""


class AsyncOperations(Operations):
    """The operations of a client whose methods return awaitables
    (:class:`~memd.AsyncClient`)."""
