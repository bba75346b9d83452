"""The one store (kumaco.kube.store): its wake-ups, its keeping, and the Sink a reflector feeds.

A :class:`~kumaco.kube.store.Store` with the plain :class:`~kumaco.kube.store.Keyed`
keeping is driven as a reflector drives it (``replace``, ``apply``) and as a writer
does (``write_through``); a keeping that records its calls shows they happen under
the store's lock (one lock shared by two stores). The reflector is run against a
collection that records what it was asked: it reads the sink's
:class:`~kumaco.kube.store.Tuning` (page size, shrink, the echo-skip) and nothing
else; every store of the controller and of ``status --watch`` is such a sink.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from kumaco.cmd.statusfeed import Store as FeedStore
from kumaco.controller.budgets import BudgetStore
from kumaco.controller.stores import ConfigMapStore, NodeStore
from kumaco.kube.reflector import Reflector
from kumaco.kube.store import Keyed, Sink, Store, Tuning

Item = tuple[str, int]


def _item(obj: Mapping[str, Any]) -> Item | None:
    name = obj.get("name")
    return None if name is None else (str(name), int(obj.get("value", 0)))


def _store(on_synced: Callable[[], None] | None = None) -> tuple[Store[Item], list[str]]:
    calls: list[str] = []

    def changed() -> None:
        calls.append("change" if store.synced.is_set() else "change before synced")

    store = Store(_item, Keyed(lambda i: i[0]), changed, on_synced=on_synced)
    return store, calls


def test_the_first_full_list_wakes_once_even_when_empty_and_synced_is_set_first() -> None:
    store, calls = _store()
    assert not store.synced.is_set()
    store.replace([])
    assert calls == ["change"] and store.synced.is_set()
    store.replace([])
    assert calls == ["change"]  # the same (empty) list again: nothing to see


def test_a_store_wakes_only_when_what_it_keeps_changed() -> None:
    store, calls = _store()
    store.replace([store.trim({"name": "a", "value": 1}), store.trim({"nameless": True})])
    calls.clear()
    store.replace([store.trim({"name": "a", "value": 1})])  # a relist (410) of the same
    store.apply("MODIFIED", store.trim({"name": "a", "value": 1}))
    store.apply("MODIFIED", None)  # trimmed away: ignored
    store.apply("DELETED", store.trim({"name": "b"}))  # not held
    assert calls == []
    store.apply("MODIFIED", store.trim({"name": "a", "value": 2}))
    store.apply("ADDED", store.trim({"name": "b", "value": 3}))
    store.apply("DELETED", store.trim({"name": "a"}))
    assert calls == ["change"] * 3
    keyed = store.keeping
    assert isinstance(keyed, Keyed) and keyed.sorted() == [("b", 3)]
    store.replace([store.trim({"name": "c", "value": 1})])
    assert calls == ["change"] * 4 and keyed.sorted() == [("c", 1)]


def test_on_synced_is_told_of_the_first_list_only_when_nothing_changed() -> None:
    listed: list[int] = []
    empty, calls = _store(on_synced=lambda: listed.append(1))
    empty.replace([])
    assert listed == [1] and calls == []
    full, calls = _store(on_synced=lambda: listed.append(2))
    full.replace([full.trim({"name": "a"})])
    assert listed == [1] and calls == ["change"]  # the change wakes; no second call
    full.replace([])
    assert listed == [1] and calls == ["change"] * 2


def test_a_write_through_is_stored_without_waking_and_its_echo_wakes_nobody() -> None:
    store, calls = _store()
    store.replace([])
    calls.clear()
    assert store.write_through(store.trim({"name": "a", "value": 5}))
    assert not store.write_through(store.trim({"name": "a", "value": 5}))
    assert not store.write_through(None)
    store.apply("MODIFIED", store.trim({"name": "a", "value": 5}))  # the write's echo
    assert calls == []


class _Recording:
    """A keeping that records whether each call held ``lock``, and says every call changed."""

    def __init__(self, lock: threading.Lock) -> None:
        self.lock = lock
        self.calls: list[tuple[str, bool]] = []

    def replace(self, items: list[Item]) -> bool:
        self.calls.append(("replace", self.lock.locked()))
        return True

    def put(self, item: Item) -> bool:
        self.calls.append(("put", self.lock.locked()))
        return True

    def remove(self, item: Item) -> bool:
        self.calls.append(("remove", self.lock.locked()))
        return True


def test_stores_sharing_a_lock_call_their_keeping_under_it() -> None:
    lock = threading.Lock()
    first, second = _Recording(lock), _Recording(lock)
    woken: list[bool] = []
    stores = [
        Store(_item, keeping, lambda: woken.append(lock.locked()), lock=lock)
        for keeping in (first, second)
    ]
    for store in stores:
        store.replace([store.trim({"name": "a"})])
        store.apply("ADDED", store.trim({"name": "b"}))
        store.apply("DELETED", store.trim({"name": "b"}))
        store.write_through(store.trim({"name": "c"}))
    expected = [("replace", True), ("put", True), ("remove", True), ("put", True)]
    assert first.calls == expected and second.calls == expected
    assert woken == [False] * 6  # nobody is woken while the lock is held


class _Asked:
    """A collection that records what the reflector asks, and stops it after one watch."""

    def __init__(self, stop: threading.Event) -> None:
        self.stop = stop
        self.pages: list[tuple[int, object]] = []
        self.watches: list[dict[str, Any]] = []

    def list_pages(self, page: int = 250, shrink: Any = None) -> Iterator[Any]:
        self.pages.append((page, shrink))
        yield [{"name": "a", "value": 1}, {"name": "b", "value": 2}], "7"

    def list_all(self) -> tuple[list[dict[str, Any]], str]:
        raise AssertionError("a reflector lists page by page")

    def watch(self, resource_version: str, timeout_seconds: int, **kw: Any) -> Iterator[Any]:
        self.watches.append({"from": resource_version, **kw})
        yield {"type": "MODIFIED", "object": {"name": "a", "value": 9, "metadata": {}}}
        yield {"type": "DELETED", "object": {"name": "b", "metadata": {"resourceVersion": "9"}}}
        self.stop.set()


def _shrink(raw: bytes) -> bytes:
    return raw


def _known(raw: bytes) -> str | None:
    return None


def test_the_reflector_reads_the_sinks_tuning_and_feeds_it_trimmed_objects() -> None:
    stop = threading.Event()
    collection = _Asked(stop)
    tuning = Tuning(shrink=_shrink, known=_known, page_size=7)
    store = Store(_item, Keyed[Item](lambda i: i[0]), tuning=tuning)
    reflector = Reflector(collection, store, stop, name="items", watch_timeout=(1, 1))
    reflector.run()
    assert collection.pages == [(7, _shrink)]
    assert collection.watches == [
        {"from": "7", "known": _known, "shrink": _shrink, "silence": 130.0}
    ]
    keyed = store.keeping
    assert isinstance(keyed, Keyed) and keyed.sorted() == [("a", 9)]
    assert reflector.resource_version == "9" and reflector.relists == 1


def test_a_sink_without_tuning_is_listed_in_the_reflectors_pages_undecoded_nothing() -> None:
    stop = threading.Event()
    collection = _Asked(stop)
    store = Store(_item, Keyed[Item](lambda i: i[0]))
    Reflector(collection, store, stop, name="items", page_size=40).run()
    assert collection.pages == [(40, None)]
    assert collection.watches[0]["known"] is None and collection.watches[0]["shrink"] is None


def test_every_store_the_commands_keep_is_a_sink() -> None:
    """The controller's, the budget store's and ``status --watch``'s: one shape, one tuning each."""
    nodes = NodeStore()
    budgets = BudgetStore()
    sinks: list[Sink[Any]] = [
        nodes,
        ConfigMapStore(("ns",)).sink("ns"),
        budgets.pods_sink(),
        budgets.budgets_sink(),
        FeedStore("nodes", lambda o: ("k", o), threading.Event()),
    ]
    assert all(isinstance(s, Store) for s in sinks)
    assert nodes.tuning.known == nodes.known and nodes.tuning.shrink is not None
    assert budgets.pods_sink().tuning == Tuning(page_size=100, streamed=True)
    assert budgets.budgets_sink().tuning == Tuning()
    assert budgets.pods_sink() is budgets.pods_sink()  # one store, not a new sink per call
