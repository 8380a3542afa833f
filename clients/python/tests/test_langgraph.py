"""The LangGraph store over a real daemon: through ``batch`` (the blocking
methods) and ``abatch`` (the ``a…`` methods)."""

from __future__ import annotations

import asyncio
import datetime
from collections.abc import Iterator
from typing import Any

import pytest
from langgraph.store.base import GetOp, InvalidNamespaceError, Item, PutOp, SearchItem

from memd import Client
from memd.langgraph import MemdStore, category_of, namespace_of, text_of, value_of

from .conftest import Daemon


@pytest.fixture
def memd(flavored: Daemon) -> Iterator[Client]:
    with Client(flavored.url) as c:
        yield c


class Both:
    """A store's blocking methods, or its ``a…`` methods run to completion:
    the same test body checks ``batch`` and ``abatch``."""

    def __init__(self, store: MemdStore, flavor: str) -> None:
        self.store = store
        self.flavor = flavor
        self.loop = asyncio.new_event_loop()

    def __getattr__(self, name: str) -> Any:
        if self.flavor == "sync":
            return getattr(self.store, name)
        method = getattr(self.store, "a" + name)
        return lambda *a, **kw: self.loop.run_until_complete(method(*a, **kw))

    def close(self) -> None:
        self.store.client.close()
        self.loop.run_until_complete(self.store.async_client.aclose())
        self.loop.close()


@pytest.fixture
def store(flavored: Daemon) -> Iterator[Both]:
    """The store, used through ``batch`` or (``async``) ``abatch``."""
    both = Both(MemdStore(Client(flavored.url)), flavored.flavor)
    yield both
    both.close()


def ns(store: Both, *labels: str) -> tuple[str, ...]:
    """A namespace of this test's own, per flavor."""
    return (store.flavor, *labels)


def today() -> datetime.date:
    return datetime.datetime.now(datetime.timezone.utc).date()


def test_put_and_get_text(store: Both) -> None:
    where = ns(store, "notes")
    store.put(where, "tea", {"text": "The user drinks oolong tea"})
    item = store.get(where, "tea")
    assert isinstance(item, Item)
    assert (item.namespace, item.key) == (where, "tea")
    assert item.value == {"text": "The user drinks oolong tea"}
    assert abs((item.created_at.date() - today()).days) <= 1
    assert store.get(where, "coffee") is None
    assert store.get(ns(store, "elsewhere"), "tea") is None


def test_put_and_get_any_value(store: Both, memd: Client) -> None:
    where = ns(store, "profile")
    value = {"name": "Ada", "langs": ["fr", "de"], "note": "two\nlines", "n": 3}
    store.put(where, "ada", value)
    assert store.get(where, "ada").value == value
    [fact] = [c for c in memd.candidates('"name": "Ada"')]
    assert fact.kind == "fact" and fact.text == text_of(value)


def test_the_same_value_again_writes_nothing(store: Both, memd: Client) -> None:
    where = ns(store, "same")
    store.put(where, "k", {"text": "The user owns a sextant"})
    facts = memd.status().facts
    store.put(where, "k", {"text": "The user owns a sextant"})
    assert memd.status().facts == facts


def test_an_update_replaces_the_value(store: Both, memd: Client) -> None:
    where = ns(store, "home")
    store.put(where, "city", {"text": "The user lives in Leeds"})
    runs = len(memd.runs())
    store.put(where, "city", {"text": "The user lives in York"})
    assert len(memd.runs()) == runs + 1  # the pending Leeds fact was consolidated first
    assert store.get(where, "city").value == {"text": "The user lives in York"}
    memd.consolidate(force=True)
    [entry] = memd.entries(category=category_of(where), session="city")
    assert entry.text.startswith("The user lives in York (since ")
    assert "; previously: The user lives in Leeds, since " in entry.text
    assert store.get(where, "city").value == {"text": "The user lives in York"}
    store.put(where, "city", {"text": "The user lives in Hull"})
    memd.consolidate(force=True)
    assert store.get(where, "city").value == {"text": "The user lives in Hull"}
    assert [e.id for e in memd.entries(category=category_of(where), session="city")] == [entry.id]


def test_a_json_update_keeps_its_value(store: Both, memd: Client) -> None:
    where = ns(store, "prefs")
    store.put(where, "ui", {"theme": "dark", "font": 12})
    memd.consolidate(force=True)
    store.put(where, "ui", {"theme": "light", "font": 12})
    memd.consolidate(force=True)
    assert store.get(where, "ui").value == {"theme": "light", "font": 12}
    [entry] = memd.entries(category=category_of(where), session="ui")
    assert "previously" in entry.text and "dark" in entry.text


def test_delete(store: Both, memd: Client) -> None:
    where = ns(store, "secrets")
    store.put(where, "pin", {"text": "The user's bike lock code is 2468"})
    store.put(where, "locker", {"text": "The user's gym locker is number 31"})
    memd.consolidate(force=True)
    store.put(where, "pending", {"text": "The user's spare key is under the mat"})
    store.delete(where, "pin")
    store.delete(where, "pending")
    assert store.get(where, "pin") is None
    assert store.get(where, "pending") is None
    assert store.get(where, "locker") is not None
    assert memd.candidates("lock code") == [] and memd.candidates("spare key") == []
    store.delete(where, "never-was")


def test_a_shared_entry_is_not_deleted(store: Both, memd: Client) -> None:
    where = ns(store, "dupes")
    store.put(where, "a", {"text": "The user has a dog named Rex"})
    store.put(where, "b", {"text": "The user has a dog named Rex"})
    memd.consolidate(force=True)
    [shared] = memd.entries(category=category_of(where))
    assert shared.sessions == ["a", "b"]
    assert store.get(where, "a").value == store.get(where, "b").value
    with pytest.raises(ValueError, match="other items"):
        store.delete(where, "a")
    assert memd.get_entry(shared.id).text == "The user has a dog named Rex"


def test_search(store: Both) -> None:
    where = ns(store, "facts")
    store.put(where, "job", {"text": "The user works as a marine biologist"})
    store.put(where, "pet", {"text": "The user has a parrot called Kiwi"})
    store.put(where, "food", {"text": "The user is vegetarian", "since": 2019})
    [best, *_] = store.search(where, query="what is the user's job")
    assert isinstance(best, SearchItem)
    assert (best.namespace, best.key) == (where, "job")
    assert best.value == {"text": "The user works as a marine biologist"}
    assert best.score is not None and best.score > 0.3
    found = store.search(where, query="parrot", limit=1)
    assert [i.key for i in found] == ["pet"]
    listed = store.search(where)
    assert {i.key for i in listed} == {"job", "pet", "food"}
    assert all(i.score is None for i in listed)
    assert [i.key for i in store.search(where, filter={"since": {"$gte": 2000}})] == ["food"]
    assert [i.key for i in store.search(where, filter={"text": "The user has a parrot called Kiwi"})] == ["pet"]
    assert len(store.search(where, limit=2)) == 2
    assert len(store.search(where, offset=2)) == 1


def test_search_finds_consolidated_items_from_a_new_store(store: Both, memd: Client) -> None:
    where = ns(store, "later")
    store.put(where, "hobby", {"text": "The user restores old clocks"})
    memd.consolidate(force=True)
    fresh = Both(MemdStore(Client(memd.base_url)), store.flavor)
    [hit] = fresh.search(where, query="clocks")
    assert (hit.key, hit.value) == ("hobby", {"text": "The user restores old clocks"})
    assert where in fresh.list_namespaces(prefix=(store.flavor,))
    fresh.close()


def test_prefix_search_and_namespaces(store: Both, memd: Client) -> None:
    a, b = ns(store, "docs", "a"), ns(store, "docs", "b")
    store.put(a, "1", {"text": "The quarterly report is due in March"})
    store.put(b, "2", {"text": "The annual report is due in December"})
    found = store.search(ns(store, "docs"), query="when is the report due")
    assert {(i.namespace, i.key) for i in found} == {(a, "1"), (b, "2")}
    spaces = store.list_namespaces(prefix=ns(store, "docs"))
    assert spaces == [a, b]
    assert store.list_namespaces(prefix=ns(store, "docs"), max_depth=2) == [ns(store, "docs")]
    assert store.list_namespaces(suffix=("b",), prefix=(store.flavor, "*")) == [b]


def test_a_category_set_outside_the_store_is_a_namespace(store: Both, memd: Client) -> None:
    category = f"hobbies-{store.flavor}"
    memd.add("The user climbs at the weekend", category=category, session="chat-7")
    memd.consolidate(force=True)
    assert (category,) in store.list_namespaces()
    [hit] = store.search((category,), query="climbing")
    assert (hit.key, hit.value) == ("chat-7", {"text": "The user climbs at the weekend"})


def test_what_memd_cannot_keep_is_refused(store: Both) -> None:
    with pytest.raises(InvalidNamespaceError):
        store.put(("a-rather-long-namespace-label", "and-another-one"), "k", {"text": "x"})
    with pytest.raises(ValueError):
        store.put(ns(store, "x"), "two\nlines", {"text": "x"})
    with pytest.raises(ValueError):
        store.put(ns(store, "x"), " padded ", {"text": "x"})
    with pytest.raises(NotImplementedError):
        store.put(ns(store, "x"), "k", {"text": "x"}, ttl=5)


def test_the_same_text_in_two_namespaces(store: Both) -> None:
    store.put(ns(store, "twin", "a"), "k", {"text": "The user rides a red unicycle"})
    store.put(ns(store, "twin", "b"), "k", {"text": "The user rides a red unicycle"})
    assert store.get(ns(store, "twin", "a"), "k") is not None
    assert store.get(ns(store, "twin", "b"), "k") is not None


def test_batch_results_are_in_order(flavored: Daemon) -> None:
    store = MemdStore(Client(flavored.url))
    where = ("batch", flavored.flavor)
    results = store.batch(
        [
            PutOp(where, "k", {"text": "The user's kayak is yellow"}),
            GetOp(where, "k"),
            GetOp(where, "missing"),
        ]
    )
    assert results[0] is None and results[2] is None
    assert isinstance(results[1], Item)
    assert results[1].value == {"text": "The user's kayak is yellow"}
    store.client.close()


@pytest.mark.parametrize(
    "namespace, category",
    [
        (("memories",), "memories"),
        (("memories", "user_1"), "memories__user_5f1"),
        (("Ünï", "a-b"), "_c3_9cn_c3_af__a-b"),
        (("a", "_"), "a___5f"),
        (("x y",), "x_20y"),
    ],
)
def test_namespaces_as_categories(namespace: tuple[str, ...], category: str) -> None:
    assert category_of(namespace) == category
    assert namespace_of(category) == namespace


def test_categories_that_are_no_namespace() -> None:
    assert namespace_of("tag_with_underscores") is None
    assert namespace_of("a_zz") is None
    assert namespace_of("prefs") == ("prefs",)


@pytest.mark.parametrize(
    "value",
    [
        {"text": "plain"},
        {"text": "{not json"},
        {"text": "two\nlines"},
        {"text": "a (previously: b)"},
        {"text": "a (since 2026-01-02; previously: b, since 2026-01-01)"},
        {"content": "x", "kind": "Memory"},
        {"text": 3},
    ],
)
def test_values_read_back_as_written(value: dict[str, Any]) -> None:
    assert value_of(text_of(value)) == value
    if set(value) != {"text"} or not isinstance(value["text"], str) or value["text"] != "plain":
        return
    assert text_of(value) == "plain"
