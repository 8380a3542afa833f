"""A LangGraph store (``langgraph.store.base.BaseStore``) kept in memd.

memd is not a key-value store: it is an append-only log of facts that a
consolidation folds into entries (merging facts that say the same,
replacing what a newer fact makes untrue, keeping the old text as history).
:class:`MemdStore` maps LangGraph's items onto that, as follows.

Mapping
-------
- **namespace → category.** A namespace tuple is one memd category: each
  label's ASCII letters, digits and ``-`` as they are, every other byte of
  its UTF-8 as ``_`` and two hex digits, the labels joined by ``__``
  (``("memories", "user_1")`` is ``memories__user_5f1``). memd's categories
  are at most 40 bytes: a longer namespace raises ``InvalidNamespaceError``.
  A category set outside the store that reads back as a namespace
  (``prefs``) is that namespace, ``("prefs",)``.
- **key → session.** An item's key is the memd session of its facts, as it
  is (a key memd cannot keep exactly, blank, with a line break, a ``·`` or
  spaces around it, raises ``ValueError``).
- **put(namespace, key, value)** appends one fact (category and session as
  above). Its text is ``value["text"]`` when the value is just
  ``{"text": "one line"}``, otherwise the value as JSON (sorted keys):
  every field is kept. If the item already holds that value, nothing is
  written. Otherwise the fact *supersedes* the entries that hold this item
  alone, so the next consolidation replaces them and memd keeps the old
  text as history (``new (since DAY; previously: old, since DAY)``). If the item still has a
  pending fact (put since the last consolidation), the store first runs a
  consolidation (``force``) so the order of the two values is kept (with
  ``consolidate_on_update=False`` the daemon's next run makes both values
  entries of the item, and ``get`` gives the one later in the file). The
  append carries an idempotency key made of the category, the key, the
  text and the ids the item held, so two identical puts racing write once.
- **put(namespace, key, None)** / ``delete`` forgets the item's pending
  facts and entries with memd's ``forget``: for good. memd keeps a
  forgotten text out, so putting the same text again later (under any
  key) is dropped by the next consolidation; that drop is not silent in
  memd (the run's ``suppressed`` and the entry's history say it, and
  ``Client.unforget`` takes the forget back) but the store does not see it.
  An entry that also holds other items' facts (consolidation merged them)
  is not forgotten: the delete raises ``ValueError`` and changes nothing.
- **get(namespace, key)** reads the item's pending facts and live entries
  and returns the newest: a pending fact before an entry, an entry that
  holds this item alone before a shared one, then the latest day, then the
  latest in the file. The value is the text read back: a JSON object as it
  was put, else ``{"text": ...}``; a ``(since …; previously: …)`` history memd added
  is left out (``Client.history`` has it). A consolidation with an LLM
  judge may rephrase a fact: the store returns what memd holds.
  ``created_at`` and ``updated_at`` are days (midnight UTC): memd dates
  facts and entries by day.
- **search(prefix, query=...)** is memd's search narrowed to each namespace
  under the prefix (the prefix itself, the namespaces of live entries, and
  those this store object has written), best score first, one item per key
  (the newest row, as ``get``). Hits memd scores under its ``[search]
  min_score`` are left out, as in memd's own searches. Without a query it
  lists the namespace's rows (``score`` is ``None``). ``filter`` is applied
  to the values (equality, or ``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``,
  ``$lte``; a dotted name reaches into nested objects).
- **list_namespaces** lists the namespaces of the live entries, and those
  this store object has written.

Not supported, or not as LangGraph's own stores do it
------------------------------------------------------
- TTLs: a put with ``ttl`` raises ``NotImplementedError``; ``refresh_ttl``
  is ignored.
- ``index``: memd indexes every fact's whole text; ``index=False`` or a
  list of fields does not change that.
- Pending facts (not consolidated yet) are found by exact lookups, but memd
  tells neither a pending fact's category nor its session in a search hit:
  a prefix search or ``list_namespaces`` sees the namespace of such a fact
  only once it is consolidated or written through this store object, and a
  pending fact written by another process comes back from ``search`` with
  memd's fact id (``DAY#HASH``) as its key. An entry that holds no session
  comes back with its entry id as its key.
- A search gives at most 100 rows per namespace (memd's largest ``k``);
  ``offset`` pages over those, and ``filter`` is applied to them (so a
  filtered search may give fewer items than ``limit``).
- Until memd mends it, a lookup narrowed to a namespace and key misses a
  pending fact whose text another pending fact (of another item) also
  has: memd's search drops duplicate texts before it narrows.
- ``get``, a search without a query and each put look the item up with
  memd's search (narrowed, ``min_score`` 0), which logs its hits as recalls
  (MEMORY.md's promotion counts them).
"""

from __future__ import annotations

import datetime
import hashlib
import json
import re
import string
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        InvalidNamespaceError,
        Item,
        ListNamespacesOp,
        MatchCondition,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
    )
except ImportError as missing:
    raise ImportError(
        "memd.langgraph needs LangGraph: pip install 'memd-client[langgraph]'"
    ) from missing

from . import _api as api
from ._steps import Steps, arun, run
from .client import AsyncClient, Client
from .types import Added, EntryView, Found, Hit

__all__ = ["MemdStore", "category_of", "namespace_of"]

MAX_CATEGORY = 40
"""memd's longest category, in bytes."""

MAX_K = 100
"""memd's most hits per search."""

_PLAIN = frozenset(string.ascii_letters + string.digits + "-")
_HISTORY = re.compile(r" \((?:since \d{4}-\d{2}-\d{2}; )?previously: ")
"""Where memd's history of a replaced entry opens: ``new (previously: old)``,
or, dated, ``new (since DAY; previously: old, since DAY)``."""


class MemdStore(BaseStore):
    """LangGraph's ``BaseStore`` over a memd memory (see the module's
    documentation for how items map onto facts and entries).

    ``client`` serves :meth:`batch` and ``async_client`` :meth:`abatch`;
    either is made from the other's settings when not given, and both
    default to a daemon at ``http://127.0.0.1:7437``. Point them at one
    memory of ``memd serve --root`` with ``memory=NAME``.
    """

    supports_ttl = False

    def __init__(
        self,
        client: Client | None = None,
        *,
        async_client: AsyncClient | None = None,
        consolidate_on_update: bool = True,
    ) -> None:
        if client is None:
            client = _twin(async_client, Client) if async_client else Client()
        self.client: Client = client
        self.async_client: AsyncClient = async_client or _twin(client, AsyncClient)
        self.consolidate_on_update = consolidate_on_update
        self._written: set[tuple[str, ...]] = set()
        self._fact_keys: dict[str, str] = {}

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return run(self.client, self._all(ops))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await arun(self.async_client, self._all(ops))

    # --- the ops, as steps (one sequence of calls for both clients) --------

    def _all(self, ops: Iterable[Op]) -> Steps[list[Result]]:
        results: list[Result] = []
        for op in ops:
            results.append((yield from self._one(op)))
        return results

    def _one(self, op: Op) -> Steps[Result]:
        if isinstance(op, GetOp):
            return (yield from self._get(op.namespace, op.key))
        if isinstance(op, PutOp):
            yield from self._put(op)
            return None
        if isinstance(op, SearchOp):
            return (yield from self._search(op))
        if isinstance(op, ListNamespacesOp):
            return (yield from self._list(op))
        raise TypeError(f"MemdStore does not know the op {op!r}")

    def _get(self, namespace: tuple[str, ...], key: str) -> Steps[Item | None]:
        rows = yield from self._rows(category_of(namespace), _session(key))
        newest = _newest(rows)
        if newest is None:
            return None
        return Item(
            namespace=tuple(namespace),
            key=key,
            value=value_of(newest.text),
            created_at=_when(min(r.first for r in rows)),
            updated_at=_when(newest.day),
        )

    def _put(self, op: PutOp) -> Steps[None]:
        if op.ttl is not None:
            raise NotImplementedError("MemdStore keeps no TTLs: put with ttl=None")
        category, session = category_of(op.namespace), _session(op.key)
        rows = yield from self._rows(category, session)
        if op.value is None:
            yield from _forget(rows)
            return
        text = text_of(op.value)
        newest = _newest(rows)
        if newest is not None and value_of(newest.text) == value_of(text):
            return
        if self.consolidate_on_update and any(r.pending for r in rows):
            yield api.consolidate(force=True)
            rows = yield from self._rows(category, session)
        added: Added = yield api.add(
            text,
            category=category,
            session=session,
            key=_idempotency_key(category, session, text, rows),
            supersedes=[r.id for r in rows if r.alone and not r.pending] or None,
        )
        self._written.add(tuple(op.namespace))
        self._fact_keys.update((fact_id, session) for fact_id in added.ids)

    def _rows(self, category: str, session: str) -> Steps[list[_Row]]:
        """The item's rows: its pending facts and the live entries holding it."""
        found: Found = yield api.search(
            session, category=category, session=session, min_score=0, k=MAX_K
        )
        views: list[EntryView] = yield api.entries(category=category, session=session)
        facts = [_Row.of_fact(h, n) for n, h in enumerate(found.hits) if h.kind == "fact"]
        return facts + [_Row.of_entry(v, n, category, session) for n, v in enumerate(views)]

    def _search(self, op: SearchOp) -> Steps[list[SearchItem]]:
        spaces = yield from self._spaces()
        prefix = tuple(op.namespace_prefix)
        under = {ns for ns in spaces if ns[: len(prefix)] == prefix}
        if prefix and _is_namespace(prefix):
            under.add(prefix)
        items: list[SearchItem] = []
        for namespace in sorted(under):
            items += yield from self._search_in(namespace, op)
        items = [i for i in items if _matches(i.value, op.filter)]
        if op.query:
            items.sort(key=lambda i: -(i.score or 0.0))
        return items[op.offset : op.offset + op.limit]

    def _search_in(self, namespace: tuple[str, ...], op: SearchOp) -> Steps[list[SearchItem]]:
        category = category_of(namespace)
        found: Found = yield api.search(
            op.query or " ".join(namespace),
            category=category,
            k=min(MAX_K, op.offset + op.limit) if op.query else MAX_K,
            min_score=None if op.query else 0,
        )
        views: list[EntryView] = yield api.entries(category=category)
        by_key: dict[str, list[tuple[_Row, float]]] = {}
        for n, hit in enumerate(found.hits):
            for key, row in self._keyed(hit, n, views, category):
                by_key.setdefault(key, []).append((row, hit.score))
        return [_found(namespace, key, pairs, bool(op.query)) for key, pairs in by_key.items()]

    def _keyed(
        self, hit: Hit, n: int, views: list[EntryView], category: str
    ) -> list[tuple[str, _Row]]:
        """The keys a hit stands for, each with the row it is under that key."""
        if hit.kind == "fact":
            return [(self._fact_keys.get(hit.id, hit.id), _Row.of_fact(hit, n))]
        entry_id = hit.id.removeprefix("core:")
        view = next((v for v in views if v.id == entry_id), None)
        if view is None:
            return [(entry_id, _Row.of_fact(hit, n))]
        keys = view.sessions or [entry_id]
        return [(k, _Row.of_entry(view, n, category, k)) for k in keys]

    def _list(self, op: ListNamespacesOp) -> Steps[list[tuple[str, ...]]]:
        spaces = yield from self._spaces()
        kept = [ns for ns in spaces if all(_fits(ns, c) for c in op.match_conditions or ())]
        if op.max_depth is not None:
            kept = [ns[: op.max_depth] for ns in kept]
        return sorted(set(kept))[op.offset : op.offset + op.limit]

    def _spaces(self) -> Steps[set[tuple[str, ...]]]:
        """The namespaces of the live entries, and those this store wrote."""
        views: list[EntryView] = yield api.entries()
        categories = {c for v in views for c in v.categories}
        read = {namespace_of(c) for c in categories}
        return {ns for ns in read if ns is not None} | self._written


# --- rows: what memd holds for an item --------------------------------------


@dataclass(frozen=True)
class _Row:
    """A pending fact or an entry, as the store weighs it."""

    id: str
    text: str
    first: str
    """The day it was first stated."""
    day: str
    """The day it last changed."""
    pending: bool
    alone: bool
    """It holds this item's facts only (so the item may replace or forget it)."""
    order: int

    @staticmethod
    def of_fact(hit: Hit, order: int) -> _Row:
        day = hit.day or ""
        return _Row(hit.id, hit.text, day, day, hit.kind == "fact", True, -order)

    @staticmethod
    def of_entry(view: EntryView, order: int, category: str, session: str) -> _Row:
        alone = view.categories == [category] and view.sessions == [session]
        return _Row(view.id, view.text, view.first_seen, view.updated, False, alone, order)

    def rank(self) -> tuple[bool, bool, str, int]:
        return (self.pending, self.alone, self.day, self.order)


def _newest(rows: list[_Row]) -> _Row | None:
    return max(rows, key=_Row.rank, default=None)


def _forget(rows: list[_Row]) -> Steps[None]:
    shared = [r.id for r in rows if not r.alone]
    if shared:
        raise ValueError(
            f"not deleted: entries {shared} also hold other items' facts (consolidation "
            "merged them); forget them with Client.forget to drop every item they hold"
        )
    for row in rows:
        yield api.forget(row.id)


def _idempotency_key(category: str, session: str, text: str, rows: list[_Row]) -> str:
    held = sorted(r.id for r in rows)
    digest = hashlib.sha256(json.dumps([category, session, text, held]).encode()).hexdigest()
    return f"langgraph-{digest[:40]}"


def _found(
    namespace: tuple[str, ...], key: str, pairs: list[tuple[_Row, float]], scored: bool
) -> SearchItem:
    row = max((r for r, _ in pairs), key=_Row.rank)
    return SearchItem(
        namespace=tuple(namespace),
        key=key,
        value=value_of(row.text),
        created_at=_when(min(r.first for r, _ in pairs)),
        updated_at=_when(row.day),
        score=max(s for _, s in pairs) if scored else None,
    )


def _when(day: str) -> datetime.datetime:
    try:
        return datetime.datetime.fromisoformat(day).replace(tzinfo=datetime.timezone.utc)
    except ValueError:
        return datetime.datetime.fromtimestamp(0, datetime.timezone.utc)


# --- values and texts -------------------------------------------------------


def text_of(value: Mapping[str, Any]) -> str:
    """The fact a value is written as: ``value["text"]`` when that is all it
    is and reads back the same, else the value as JSON (sorted keys)."""
    if set(value) == {"text"} and isinstance(value["text"], str):
        text = value["text"]
        if value_of(text) == {"text": text} and _one_line(text):
            return text
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def value_of(text: str) -> dict[str, Any]:
    """A value read back from a fact's or an entry's text, without the
    ``(previously: …)`` history memd adds when it replaces an entry."""
    if text.startswith("{"):
        try:
            value, end = json.JSONDecoder().raw_decode(text)
        except ValueError:
            value, end = None, 0
        rest = text[end:]
        if isinstance(value, dict) and (not rest or _HISTORY.match(rest)):
            return value
    found = _HISTORY.search(text)
    at = found.start() if found else -1
    current = text[:at] if at > 0 and text.endswith(")") else text
    return {"text": current}


def _one_line(text: str) -> bool:
    return text == text.strip() and bool(text) and not any(c in text for c in "\n\r")


def _matches(value: Mapping[str, Any], conditions: Mapping[str, Any] | None) -> bool:
    """Whether ``value`` passes a LangGraph search filter."""
    for name, wanted in (conditions or {}).items():
        actual = _field(value, name)
        tests = wanted.items() if isinstance(wanted, dict) else [("$eq", wanted)]
        if not all(_compare(actual, op, operand) for op, operand in tests):
            return False
    return True


def _field(value: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return value


def _compare(actual: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return bool(actual == operand)
    if op == "$ne":
        return bool(actual != operand)
    try:
        return bool(
            {
                "$gt": lambda: actual > operand,
                "$gte": lambda: actual >= operand,
                "$lt": lambda: actual < operand,
                "$lte": lambda: actual <= operand,
            }[op]()
        )
    except KeyError:
        raise ValueError(f"unknown filter operator {op!r}") from None
    except TypeError:
        return False


# --- namespaces and keys ----------------------------------------------------


def category_of(namespace: tuple[str, ...]) -> str:
    """The memd category a namespace is kept under (see the module docs)."""
    if not namespace or not all(isinstance(label, str) and label for label in namespace):
        raise InvalidNamespaceError(f"a namespace is one or more non-empty labels: {namespace!r}")
    category = "__".join(_escape(label) for label in namespace)
    if len(category) > MAX_CATEGORY:
        raise InvalidNamespaceError(
            f"namespace {namespace!r} is {category!r} as a memd category: longer than "
            f"memd's {MAX_CATEGORY} bytes"
        )
    return category


def namespace_of(category: str) -> tuple[str, ...] | None:
    """The namespace a category stands for, or ``None`` when it is not one
    :func:`category_of` makes."""
    labels: list[bytes] = [b""]
    at = 0
    while at < len(category):
        if category.startswith("__", at):
            labels.append(b"")
            at += 2
        elif category[at] == "_":
            pair = category[at + 1 : at + 3]
            if len(pair) != 2 or not all(c in "0123456789abcdef" for c in pair):
                return None
            labels[-1] += bytes([int(pair, 16)])
            at += 3
        elif category[at] in _PLAIN:
            labels[-1] += category[at].encode()
            at += 1
        else:
            return None
    try:
        namespace = tuple(label.decode() for label in labels)
        return namespace if category_of(namespace) == category else None
    except (UnicodeDecodeError, InvalidNamespaceError):
        return None


def _escape(label: str) -> str:
    return "".join(c if c in _PLAIN else "".join(f"_{b:02x}" for b in c.encode()) for c in label)


def _is_namespace(namespace: tuple[str, ...]) -> bool:
    try:
        category_of(namespace)
        return True
    except InvalidNamespaceError:
        return False


def _session(key: str) -> str:
    """The memd session an item's key is kept as: the key itself."""
    if not _one_line(key) or "·" in key:
        raise ValueError(
            f"key {key!r}: memd keeps a key as a session, which is one line, "
            "not blank, without '·' or spaces around it"
        )
    return key


def _fits(namespace: tuple[str, ...], condition: MatchCondition) -> bool:
    path = tuple(condition.path)
    if len(path) > len(namespace):
        return False
    part = namespace[: len(path)] if condition.match_type == "prefix" else namespace[-len(path) :]
    return all(p == "*" or p == n for p, n in zip(path, part))


def _twin(client: Client | AsyncClient, cls: type[Any]) -> Any:
    """A client of the other kind, with ``client``'s settings."""
    return cls(client.base_url, token=client.token, memory=client.memory, timeout=client.timeout)
