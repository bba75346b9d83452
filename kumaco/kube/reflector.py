"""List-then-watch one collection, forever: the reflector.

Contract: :class:`Reflector` does a paginated LIST of a
:class:`~kumaco.kube.resources.Collection`, then WATCHes from its
resourceVersion with bookmarks; a watch that ends is resumed from the last
resourceVersion (no LIST), an expired one (410) is relisted; a watch silent for
``silence`` seconds (no event, no bookmark: the API server sends a bookmark
about every minute, so the connection is dead) is dropped and resumed at once
from the last resourceVersion; other failures back off as the error policy
``on_error`` says (by default :func:`kumaco.kube.retry.backoff_forever`: five
in a row start again from a fresh LIST). A failure once ``stop`` is set (the
server going away under a reader being stopped) ends the run without a word: it
is not retried, logged nor told. ``on_restart(collection, reason)`` is
told why each watch ended (``closed``, ``silent``, ``expired``, ``error``).
Events only update a :class:`~kumaco.kube.store.Sink` (a
:class:`~kumaco.kube.store.Store`) -- which wakes the controller; the controller
recomputes from the full state (level-triggered). The sink's
:class:`~kumaco.kube.store.Tuning` says how its collection is read: ``shrink`` (cut
what it never reads out of the raw bytes before they are decoded), ``page_size`` (the
objects per LIST page, when its objects are large: a page is decoded whole),
``known`` (recognise an event that can change nothing in it, such as the echo of a
write it already stored, from its first bytes: it is not decoded at all) and
``streamed`` (True: list a :class:`~kumaco.kube.resources.Streamed` collection by a
streaming list instead of LIST pages -- each object decoded and trimmed as it comes,
``replace`` at the ``k8s.io/initial-events-end`` bookmark, the changes then on the
same connection; a collection of many objects that change often, whose paginated
LIST would take longer than the API server keeps its watch history, so that the
watch from its resourceVersion would expire, be relisted, and expire again. A server
that refuses the streaming list (400 or 422: an API server without it) is LISTed
instead, from then on).
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable
from typing import Generic, TypeVar, cast

from kumaco.core.errors import error_text
from kumaco.kube.errors import ApiError, Expired, TransportError
from kumaco.kube.resources import Collection, Streamed
from kumaco.kube.retry import ErrorPolicy, backoff_forever
from kumaco.kube.store import Sink

log = logging.getLogger("kumaco.kube")

T = TypeVar("T")


class Reflector(Generic[T]):
    """List-then-watch one collection forever, feeding ``sink``; relists on 410.

    ``sink.replace(objects)`` is called with every full LIST; ``sink.apply(type,
    object)`` with each watch event, each object first cut by ``sink.trim``.
    Bookmarks only move the resourceVersion.
    """

    def __init__(
        self,
        collection: Collection,
        sink: Sink[T],
        stop: threading.Event,
        *,
        name: str,
        watch_timeout: tuple[int, int] = (300, 600),
        rng: random.Random | None = None,
        page_size: int = 250,
        silence: float = 130.0,
        on_restart: Callable[[str, str], None] = lambda _collection, _reason: None,
        on_error: ErrorPolicy | None = None,
    ) -> None:
        self.collection = collection
        self.sink = sink
        self.stop = stop
        self.name = name
        self.watch_timeout = watch_timeout
        self.rng = rng or random.Random()
        self.resource_version: str | None = None
        self.page_size = page_size
        self.silence = silence
        self.on_restart = on_restart
        self.on_error = on_error or backoff_forever(self.rng)
        self.relists = 0
        self.streaming = sink.tuning.streamed and hasattr(collection, "stream")
        self.thread = threading.Thread(target=self.run, name=f"reflector-{name}", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def _relist(self) -> None:
        objects: list[T | None] = []
        rv: str | None = None
        tuning = self.sink.tuning
        size = tuning.page_size or self.page_size
        for page, page_rv in self.collection.list_pages(size, tuning.shrink):
            objects.extend(self.sink.trim(o) for o in page)
            rv = page_rv
        self.sink.replace(objects)
        self.resource_version = rv
        self.relists += 1

    def _stream(self) -> None:
        """A streaming list, then its changes on the same connection (see the contract)."""
        objects: list[T | None] | None = []
        timeout = self.rng.randint(*self.watch_timeout)
        streamed = cast(Streamed, self.collection)
        shrink = self.sink.tuning.shrink
        for event in streamed.stream(timeout, shrink=shrink, silence=self.silence):
            obj = event.get("object") or {}
            meta = obj.get("metadata") or {}
            kind = event.get("type")
            if kind == "BOOKMARK":
                notes = meta.get("annotations") or {}
                if objects is not None and notes.get("k8s.io/initial-events-end") == "true":
                    self.sink.replace(objects)
                    objects = None
                    self.relists += 1
                    self.resource_version = str(meta.get("resourceVersion") or "")
                    log.info(
                        "listed",
                        extra={
                            "collection": self.name,
                            "resourceVersion": self.resource_version,
                            "streamed": True,
                        },
                    )
            elif objects is not None:
                objects.append(self.sink.trim(obj))
            else:
                self.sink.apply(kind, self.sink.trim(obj))
            if objects is None and meta.get("resourceVersion"):
                self.resource_version = str(meta["resourceVersion"])
            if self.stop.is_set():
                return
        self.on_restart(self.name, "closed")

    def run(self) -> None:
        failures = 0
        while not self.stop.is_set():
            try:
                if self.resource_version is None and self.streaming:
                    try:
                        self._stream()
                        if self.resource_version is not None:
                            failures = 0
                    except ApiError as exc:
                        if exc.status not in (400, 422):
                            raise
                        self.streaming = False
                        log.warning(
                            "streaming list refused; listing instead",
                            extra={"collection": self.name, "error": error_text(exc)},
                        )
                    continue
                if self.resource_version is None:
                    self._relist()
                    log.info(
                        "listed",
                        extra={"collection": self.name, "resourceVersion": self.resource_version},
                    )
                assert self.resource_version is not None
                timeout = self.rng.randint(*self.watch_timeout)
                for event in self.collection.watch(
                    self.resource_version,
                    timeout,
                    known=self.sink.tuning.known,
                    shrink=self.sink.tuning.shrink,
                    silence=self.silence,
                ):
                    failures = 0
                    if event.get("type") == "KNOWN":  # recognised undecoded: nothing to apply
                        self.resource_version = event["resourceVersion"]
                        continue
                    obj = event.get("object") or {}
                    meta = obj.get("metadata") or {}
                    rv = meta.get("resourceVersion") if isinstance(meta, dict) else None
                    if event.get("type") != "BOOKMARK":
                        self.sink.apply(event.get("type"), self.sink.trim(obj))
                    if rv:
                        self.resource_version = rv
                    if self.stop.is_set():
                        return
                self.on_restart(self.name, "closed")
            except Expired as exc:
                self.on_restart(self.name, "expired")
                log.info(
                    "watch expired; relisting",
                    extra={"collection": self.name, "error": error_text(exc)},
                )
                self.resource_version = None
            except TransportError as exc:
                if not exc.silent or self.resource_version is None:
                    failures = self._failed(exc, failures)
                    continue
                self.on_restart(self.name, "silent")
                log.warning(
                    "watch silent: the connection is dead; resuming on a new one",
                    extra={
                        "collection": self.name,
                        "silenceSeconds": self.silence,
                        "resourceVersion": self.resource_version,
                    },
                )
            except (ApiError, ValueError) as exc:
                failures = self._failed(exc, failures)

    def _failed(self, exc: Exception, failures: int) -> int:
        """Back off after a failed LIST or watch (``on_error``); returns the failures in a row.

        Once ``stop`` is set the failure ends the run (see the contract): nothing is said.
        """
        if self.stop.is_set():
            return failures
        self.on_restart(self.name, "error")
        failures += 1
        then = self.on_error(exc, failures)
        log.warning(
            "watch failed; retrying",
            extra={
                "collection": self.name,
                "error": error_text(exc),
                "retryInSeconds": round(then.sleep, 2),
            },
        )
        if then.relist:
            self.resource_version = None  # something is off: start again from a fresh LIST
        self.stop.wait(then.sleep)
        return failures
