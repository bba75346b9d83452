"""What a reflector feeds (:class:`Sink`) and the one store every watcher keeps (:class:`Store`).

Contract
--------
:class:`Sink` is everything a :class:`~kumaco.kube.reflector.Reflector` needs of
where its objects go: ``trim`` (the raw object cut to what the reader keeps, or None
to ignore it), ``replace`` (a full list: the LIST, a relist after a 410, the
streaming list's initial events), ``apply`` (one watch event: ``ADDED``,
``MODIFIED`` or ``DELETED`` with its trimmed object) and ``tuning`` (how to read
the collection: :class:`Tuning`). Bookmarks never reach a sink.

:class:`Store` is the one implementation: a thread-safe keeper of one collection's
trimmed objects. What differs between kinds is a parameter, not a copy: the
projection (``trim``), what the objects are kept in (a :class:`Keeping`: a plain
:class:`Keyed` map by key for most, a label-indexed node set or a disruption
index for the controller) and the notification. ``on_change`` is called after a
``replace`` or ``apply`` whose keeping says what its readers see changed (the
echo of a write already stored, a heartbeat nobody reads, a DELETED of what is not
held: no call), and ``on_synced`` (by default ``on_change``) after the first full
list when nothing else called; :attr:`Store.synced` is set before either is
called. :meth:`Store.write_through` stores an object a write returned, waking
nobody (the writer caused it). Several stores may share one lock (and one
keeping's index) when their collections feed one answer. A DELETED or absent
(``None``) object is never an error. No I/O, no clock.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from kumaco.kube.resources import Shrink

T = TypeVar("T")
DELETED = "DELETED"


def _nothing() -> None:
    return None


@dataclass(frozen=True, slots=True)
class Tuning:
    """How a reflector reads a sink's collection (the defaults: plain LIST pages, then watch).

    ``shrink`` cuts what the sink never reads out of the raw bytes before they are
    decoded; ``known`` recognises, from a watch event's first bytes, one that can
    change nothing in the sink (it is then not decoded; the answer is its
    resourceVersion); ``page_size`` overrides the reflector's objects per LIST page
    (large objects: a page is decoded whole); ``streamed`` lists by a streaming list
    when the collection can (:class:`~kumaco.kube.resources.Streamed`).
    """

    shrink: Shrink | None = None
    known: Callable[[bytes], str | None] | None = None
    page_size: int | None = None
    streamed: bool = False


PLAIN = Tuning()


class Sink(Protocol[T]):
    """Where a reflector's objects go (see the module contract)."""

    @property
    def tuning(self) -> Tuning: ...

    def trim(self, obj: Mapping[str, Any]) -> T | None:
        """What is kept of ``obj`` (None: nothing; its events are then ignored)."""
        ...

    def replace(self, items: list[T | None]) -> None:
        """Everything the collection holds now (a full list)."""
        ...

    def apply(self, event_type: str | None, item: T | None) -> None:
        """One watch event (``DELETED`` removes; anything else adds or updates)."""
        ...


class Keeping(Protocol[T]):
    """What a :class:`Store` keeps its objects in; each change says whether readers see one.

    Called only under the store's lock, never with None.
    """

    def replace(self, items: list[T]) -> bool: ...

    def put(self, item: T) -> bool: ...

    def remove(self, item: T) -> bool: ...


class Keyed(Generic[T]):
    """The plain keeping: objects by ``key(object)``; a change is an object not equal to before."""

    def __init__(self, key: Callable[[T], str]) -> None:
        self.key = key
        self.items: dict[str, T] = {}

    def replace(self, items: list[T]) -> bool:
        fresh = {self.key(i): i for i in items}
        changed = fresh != self.items
        self.items = fresh
        return changed

    def put(self, item: T) -> bool:
        key = self.key(item)
        changed = self.items.get(key) != item
        self.items[key] = item
        return changed

    def remove(self, item: T) -> bool:
        return self.items.pop(self.key(item), None) is not None

    def sorted(self) -> list[T]:
        """The objects in key order."""
        return [self.items[k] for k in sorted(self.items)]


class Store(Generic[T]):
    """One collection's trimmed objects, thread-safe; a :class:`Sink` (see the module contract)."""

    def __init__(
        self,
        trim: Callable[[Mapping[str, Any]], T | None],
        keeping: Keeping[T],
        on_change: Callable[[], None] = _nothing,
        *,
        on_synced: Callable[[], None] | None = None,
        lock: threading.Lock | None = None,
        tuning: Tuning = PLAIN,
    ) -> None:
        self._trim = trim
        self.keeping = keeping
        self._on_change = on_change
        self._on_synced = on_change if on_synced is None else on_synced
        self.lock = threading.Lock() if lock is None else lock
        self.tuning = tuning
        #: Set once the first full list is stored (and before anyone is told).
        self.synced = threading.Event()

    def trim(self, obj: Mapping[str, Any]) -> T | None:
        return self._trim(obj)

    def _replaced(self) -> bool:
        """Under the lock, after a full list is stored: whether more changed (a subclass's own)."""
        return False

    def replace(self, items: list[T | None]) -> None:
        fresh = [i for i in items if i is not None]
        with self.lock:
            changed = self.keeping.replace(fresh)
            changed = self._replaced() or changed
            first = not self.synced.is_set()
        self.synced.set()
        if changed:
            self._on_change()
        elif first:
            self._on_synced()

    def apply(self, event_type: str | None, item: T | None) -> None:
        if item is None:
            return
        with self.lock:
            changed = self.keeping.remove(item) if event_type == DELETED else self.keeping.put(item)
        if changed:
            self._on_change()

    def write_through(self, item: T | None) -> bool:
        """Store what a write returned, waking nobody; whether readers see a change."""
        if item is None:
            return False
        with self.lock:
            return self.keeping.put(item)
