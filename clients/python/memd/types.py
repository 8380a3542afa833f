"""The replies of memd's API as typed, frozen dataclasses.

Each is built from the reply's JSON by :meth:`Model.from_json`: the fields
the API describes (``GET /v1/openapi.json``; the tests hold the two
together) become attributes, nested objects become their own classes, and
the whole JSON object stays in ``raw``, so a field a newer daemon adds is
there too, and a field an older one leaves out takes its default.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Literal, Mapping, TypeVar, Union

M = TypeVar("M", bound="Model")

RowKind = Literal["fact", "entry", "core"]
"""What a search hit or a candidate is: a pending fact, an entry of
``consolidated/memory.md``, or a line of ``MEMORY.md``."""


@dataclass(frozen=True, kw_only=True)
class Model:
    """A reply object: its typed fields, and ``raw``, the JSON it came from."""

    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls: type[M], data: Mapping[str, Any]) -> M:
        """Build from a JSON object; unknown keys stay in ``raw`` only."""
        hints = typing.get_type_hints(cls)
        known = {
            f.name: _convert(hints[f.name], data[f.name])
            for f in dataclasses.fields(cls)
            if f.name != "raw" and f.name in data
        }
        return cls(raw=dict(data), **known)


def _convert(tp: Any, value: Any) -> Any:
    """``value`` (JSON) as type ``tp``: nested models built, lists and maps
    converted item by item, anything else as it is."""
    origin = typing.get_origin(tp)
    if value is None:
        return None
    if origin in (Union, types.UnionType):
        not_none = [a for a in typing.get_args(tp) if a is not type(None)]
        return _convert(not_none[0], value) if len(not_none) == 1 else value
    if origin is list:
        return [_convert(typing.get_args(tp)[0], v) for v in value]
    if origin is dict:
        return {k: _convert(typing.get_args(tp)[1], v) for k, v in value.items()}
    if isinstance(tp, type) and issubclass(tp, Model):
        return tp.from_json(value)
    if tp is float and isinstance(value, int):
        return float(value)
    return value


# --- adding facts -----------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class SimilarEntry(Model):
    """An existing entry like a new fact (``score`` is the cosine similarity)."""

    id: str
    kind: RowKind
    text: str
    score: float
    source: str
    day: str | None = None
    same: bool
    """The built-in judge will merge the fact into this entry."""


@dataclass(frozen=True, kw_only=True)
class AddedFact(Model):
    """One appended fact, and (when asked) the entries most like it."""

    id: str
    day: str
    text: str
    category: str | None = None
    session: str | None = None
    written: bool
    """False when the idempotency key was already written, or the text was
    erased: nothing new."""
    erased: bool = False
    """The text is one the user erased (``erase``): not written again."""
    similar: list[SimilarEntry] | None = None


@dataclass(frozen=True, kw_only=True)
class Added(Model):
    """What an add did: each fact's id, in order, and the facts."""

    ids: list[str]
    facts: list[AddedFact]


# --- searching --------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Hit(Model):
    """One search result: a row of the index (fact, entry or MEMORY.md line)."""

    id: str
    kind: RowKind
    text: str
    score: float
    """How well it matches, 0 to 1 (hits are ordered by rank, not by score)."""
    source: str
    day: str | None = None


@dataclass(frozen=True, kw_only=True)
class Found(Model):
    """The hits, best first; ``indexing`` is ``{"files_behind": [...]}``
    when the search did not wait (``wait=False``) and files wait to be
    indexed."""

    hits: list[Hit]
    indexing: dict[str, Any] | None = None


# --- consolidating ----------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Applied(Model):
    """Ops applied by kind."""

    add: int
    replace: int
    remove: int
    keep: int


@dataclass(frozen=True, kw_only=True)
class Suppressed(Model):
    """A new fact that only restated something forgotten: not kept.
    ``erased``: when an erasure keeps it out, the erasure's time."""

    fact: str
    text: str
    forgotten: str | None = None
    erased: str | None = None


@dataclass(frozen=True, kw_only=True)
class ClusterReport(Model):
    """One cluster of a run: its facts, the entries the judge saw, what it
    decided and the ops (as JSON objects, ``{"op": "ADD", ...}``)."""

    facts: list[str]
    entries: list[str]
    decision: Literal["ops", "restatement", "fallback", "failed"]
    ops: list[dict[str, Any]]
    error: str | None = None
    diff: str


@dataclass(frozen=True, kw_only=True)
class ReviewLeft(Model):
    """A proposal left as it was, and why."""

    item: str
    why: str


@dataclass(frozen=True, kw_only=True)
class Unreadable(Model):
    """A line of REVIEW.md that looks like an item memd cannot read."""

    line: int
    text: str


@dataclass(frozen=True, kw_only=True)
class Carried(Model):
    """What carrying out the decisions of REVIEW.md did."""

    run: str | None = None
    accepted: list[str]
    rejected: list[str]
    kept_verbatim: list[str]
    withdrawn: list[ReviewLeft]
    left: list[ReviewLeft]
    repeated: list[str]
    unreadable: list[Unreadable]
    open: int


@dataclass(frozen=True, kw_only=True)
class Proposed(Model):
    """An open proposal of review mode: ``state`` is ``"open"``,
    ``"accepted"`` or ``"gone"`` (rejected at the next carry-out)."""

    item: str
    state: str
    says: str
    op: dict[str, Any]
    run: str
    model: str


@dataclass(frozen=True, kw_only=True)
class ReviewList(Model):
    open: list[Proposed]
    unreadable: list[Unreadable]


@dataclass(frozen=True, kw_only=True)
class Reviewed(Model):
    changed: list[str]
    carried: Carried | None = None


@dataclass(frozen=True, kw_only=True)
class RunReport(Model):
    """What a consolidation did (or, with ``skipped``, why it did not run)."""

    run_id: str = ""
    dry_run: bool = False
    judge: str = ""
    skipped: str | None = None
    pending_facts: int = 0
    under_review: int = 0
    """Pending facts of proposals waiting in ``consolidated/REVIEW.md``."""
    proposed: list[str] = field(default_factory=list)
    """With ``review = "manual"``: the ops this run proposed, none applied."""
    review: Carried | None = None
    """The decisions of REVIEW.md this run carried out first."""
    restatements: int = 0
    near_duplicates: int = 0
    clusters: int = 0
    llm_calls: int = 0
    invalid_replies: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    applied: Applied | None = None
    suppressed: list[Suppressed] = field(default_factory=list)
    deleted_by_hand: int = 0
    skipped_hand_edited: int = 0
    declared_updates: int = 0
    judged_updates: int = 0
    """Facts the built-in judge read as updates by their words, the old
    text kept as history."""
    failed_clusters: int = 0
    failed_facts: list[str] = field(default_factory=list)
    over_budget: bool = False
    """The day's LLM budget (``max_tokens_per_day``) stopped a call: the
    failed clusters' facts wait for another day."""
    fallback_facts: int = 0
    facts_done: int = 0
    promoted_lines: int = 0
    cluster_reports: list[ClusterReport] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    total_ms: float = 0.0
    llm_ms: float = 0.0


@dataclass(frozen=True, kw_only=True)
class SyncReport(Model):
    files_checked: int
    files_synced: int
    rows_added: int
    rows_deleted: int


@dataclass(frozen=True, kw_only=True)
class Reindexed(Model):
    """What a reindex did, and the rows the index holds after it."""

    report: SyncReport
    rows: int


# --- entries ----------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class EntryView(Model):
    """One live entry of ``consolidated/memory.md``."""

    id: str
    text: str
    first_seen: str
    updated: str
    pinned: bool
    unreviewed: bool
    edited: bool
    """Its text is not what memd last wrote: a person edited it."""
    categories: list[str]
    sessions: list[str]
    sources: list[str]
    """The archive facts it holds."""


@dataclass(frozen=True, kw_only=True)
class Edited(Model):
    """An entry after an edit; ``run`` is absent when nothing changed."""

    run: str | None = None
    entry: EntryView


@dataclass(frozen=True, kw_only=True)
class Candidate(Model):
    """Something that can be (or was) forgotten: an entry or a pending fact."""

    kind: RowKind
    id: str
    text: str


@dataclass(frozen=True, kw_only=True)
class GitHistory(Model):
    """What remains of an erased text in the git repository the memory is
    in: the commits that add or remove it, newest first (``searched`` is
    false when git could not be asked), and how to purge them (memd never
    rewrites git history)."""

    repo: str
    commits: list[str]
    searched: bool
    purge: str


@dataclass(frozen=True, kw_only=True)
class Erasure(Model):
    """What an erasure took out of the files."""

    id: str
    entries: list[str]
    """The entries erased: the one named, and those merged into it."""
    facts: list[str]
    """The archive facts erased (their lines are redaction lines now)."""
    journal_records: int
    recalls: int
    git: GitHistory | None = None
    """When the memory directory is in a git repository."""


@dataclass(frozen=True, kw_only=True)
class EntryMeta(Model):
    """An entry's metadata as the journal keeps it."""

    id: str
    first_seen: str = ""
    updated: str = ""
    sources: list[str] = field(default_factory=list)
    hash: str = ""
    pinned: bool = False
    unreviewed: bool = False
    category: str | None = None


@dataclass(frozen=True, kw_only=True)
class Record(Model):
    """One record of the journal (``op`` is ADD, REPLACE, REMOVE, KEEP,
    FORGET, UNFORGET, HAND_REMOVE, ADOPT, SUPPRESS, UNDO or EDIT)."""

    ts: str
    run: str
    op: str
    entry: str
    before: str | None = None
    after: str | None = None
    sources: list[str] = field(default_factory=list)
    into: str | None = None
    model: str | None = None
    prompt_hash: str | None = None
    meta_before: EntryMeta | None = None
    meta_after: EntryMeta | None = None
    undoes: str | None = None
    erased: str | None = None
    """When an erasure took ``before`` and ``after`` out of the record."""


# --- runs -------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Run(Model):
    """One run of the journal: a consolidation, an edit, a forget, an undo."""

    id: str
    started: str
    kind: str
    judges: list[str]
    ops: dict[str, int]
    facts: int
    undoes: str | None = None
    undone_by: list[str] = field(default_factory=list)
    tokens: int = 0
    """Tokens its LLM calls spent."""


@dataclass(frozen=True, kw_only=True)
class Change(Model):
    entry: str
    before: str | None = None
    after: str | None = None


@dataclass(frozen=True, kw_only=True)
class Left(Model):
    """An entry an undo left as it is, and why."""

    entry: str
    why: str
    remedy: dict[str, Any] | None = None
    """What to do instead, as data: ``{"op": "unforget", "id": "e-…"}``."""


@dataclass(frozen=True, kw_only=True)
class UndoOutcome(Model):
    """What undoing a run did (or, with ``dry_run``, would do)."""

    undoes: str
    run: str | None = None
    dry_run: bool
    changes: list[Change]
    left: list[Left]
    pending_again: list[str]
    kept_out: list[str]


# --- the past ---------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Then(Model):
    """What one file held at a time: ``state`` ``"known"`` (``text``, held
    from ``since``; ``None`` when the file could not be read as text then)
    or ``"unknowable"`` (``why``, and the nearest times memd knows it,
    ``known_until`` and ``known_from``)."""

    state: Literal["known", "unknowable"]
    since: str | None = None
    text: str | None = None
    why: str | None = None
    known_until: str | None = None
    known_from: str | None = None


@dataclass(frozen=True, kw_only=True)
class Shown(Model):
    """``consolidated/memory.md`` (``memory``) and MEMORY.md's generated
    lines (``core``) as of ``as_of``, and the entries of ``memory``
    forgotten since."""

    as_of: str
    memory: Then
    core: Then
    forgotten_since: list[str] = field(default_factory=list)
    """Entries ``memory`` holds that were forgotten since (shown as the
    file was; search and MEMORY.md leave them out)."""


# --- status and check -------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class DayCount(Model):
    day: str
    facts: int


@dataclass(frozen=True, kw_only=True)
class DaemonInfo(Model):
    pid: int
    listen: str
    started: str
    token: bool
    memory: str | None = None


@dataclass(frozen=True, kw_only=True)
class WatcherInfo(Model):
    alive: bool
    pid: int
    started: str
    heartbeat: str
    reconcile_seconds: int
    events: int
    syncs: int
    last_sync: str | None = None
    last_error: str | None = None


@dataclass(frozen=True, kw_only=True)
class EmbedderInfo(Model):
    """The embedder, and whether its model's files are in place."""

    kind: str
    dir: str | None = None
    runtime: str | None = None
    name: str | None = None
    missing: str | None = None
    """Why it cannot start (files missing), and how to mend that."""


@dataclass(frozen=True, kw_only=True)
class Status(Model):
    """The state of the memory directory; ``config`` is the configuration
    in force, as JSON (``config["search"]["default_k"]``, ...)."""

    dir: str
    days: list[DayCount]
    facts: int
    entries: int
    entries_unsaved_hand_written: int
    entries_edited_by_hand: int
    entries_unreviewed: int
    entries_pinned: int
    tombstones: int
    facts_forgotten: int
    pending_facts: int
    review_open: int = 0
    """Proposals of review mode not decided yet."""
    facts_under_review: int = 0
    last_consolidation: str | None = None
    judge: str
    llm_tokens_today: int = 0
    llm_budget: int | None = None
    """``[llm] max_tokens_per_day``, when set."""
    embedder: EmbedderInfo | None = None
    """(Daemons after 0.1.0's first releases.)"""
    index: dict[str, str]
    """Each source file and whether it is indexed as it is now."""
    daemon: DaemonInfo | None = None
    watcher: WatcherInfo | None = None
    warnings: list[str]
    config: dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class Problem(Model):
    kind: str
    file: str
    line: int | None = None
    what: str
    remedy: dict[str, Any] | None = None
    """What fixes it, as data: ``{"op": "forget", "id": "e-…"}``."""


@dataclass(frozen=True, kw_only=True)
class CheckReport(Model):
    """memd's invariants checked: ``problems`` is empty when all hold."""

    problems: list[Problem]
    notes: list[Problem]
    facts: int
    entries: int
    index_rows: int | None = None
    index_fixable: bool
    index_rebuilt: bool = False


# --- many memories (``memd serve --root``) ----------------------------------


@dataclass(frozen=True, kw_only=True)
class MemoryInfo(Model):
    name: str = ""
    open: bool = False


@dataclass(frozen=True, kw_only=True)
class Memories(Model):
    """The memories under a root, how many are open, and the names this
    root handed over to another node (``moved``)."""

    memories: list[MemoryInfo] = field(default_factory=list)
    open: int = 0
    moved: list[str] = field(default_factory=list)
