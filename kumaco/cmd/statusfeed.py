"""What ``kubectl kumaco status --watch`` watches: the status's collections, kept current.

Contract: a :class:`Feed` list-then-watches, each through a
:class:`~kumaco.kube.reflector.Reflector` on
:class:`~kumaco.kube.resources.KubeResources`, the nodes ``--node-selector``
selects, the window ConfigMaps of each namespace and the instance's Lease. Each
collection feeds a :class:`Store` (the one :class:`~kumaco.kube.store.Store`, with the
collection's problem) that keeps what the report reads (a node's view
without heartbeats, a ConfigMap's data, the Lease's spec) and sets
:attr:`Feed.wake` only when that changed: a kubelet heartbeat or a label edit of a
ConfigMap wakes nobody; a Lease renewal does (the report shows it).
:meth:`Feed.snapshot` is everything the stores hold now as a
:class:`~kumaco.views.status.Snapshot`, with their problems.

A collection's problem is its last failure, worded as the one-shot ``status``
words them (``cannot list nodes: 403 Forbidden: ...``; an unreachable server:
``cannot watch nodes: cannot reach the API server: ...``). A failed LIST, or a
watch that lost its connection, is a problem until a LIST of that collection
succeeds; a WATCH the server refused (403) until the watch delivers an event.
Every failure is retried forever with kumaco's one error policy for such loops
(:func:`kumaco.kube.retry.backoff_forever`), each retry from a fresh LIST
(:func:`relisting`), so what is shown is never older than the last retry.
Nothing here raises on what the server answers.
"""

from __future__ import annotations

import random
import re
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from kumaco.core.objects.nodes import node_view
from kumaco.core.planning.instance import Instance
from kumaco.kube import store as kube_store
from kumaco.kube.errors import ApiError, Expired, TransportError
from kumaco.kube.reader import problem
from kumaco.kube.reflector import Reflector
from kumaco.kube.resources import Collection, KubeResources, Page, Shrink
from kumaco.kube.retry import ErrorPolicy, OnError, backoff_forever
from kumaco.views.status import Snapshot

Keyed = tuple[str, Any]

_ADDRESS = re.compile(r" (?:object )?at 0x[0-9a-f]+")


def _problem(verb: str, what: str, exc: Exception) -> str:
    """One line: which read failed and how (an object's address left out: it is noise)."""
    if isinstance(exc, ApiError):
        return problem(f"{verb} {what}", exc)
    return f"cannot {verb} {what}: cannot reach the API server: {_ADDRESS.sub('', str(exc))}"


def _key(item: Keyed) -> str:
    return item[0]


class Store(kube_store.Store[Keyed]):
    """A reflector's sink: the one store, its objects ``(key, trimmed)`` by key, and a problem.

    It wakes the loop when what it shows changes. Its problem is the last failure of
    its collection: one of the LIST (or of the connection) lasts until a LIST
    succeeds, one answered to the WATCH until an event.
    """

    def __init__(
        self, what: str, trim: Callable[[Mapping[str, Any]], Keyed | None], wake: threading.Event
    ) -> None:
        self.what = what
        self._wake = wake
        self._kept: kube_store.Keyed[Keyed] = kube_store.Keyed(_key)
        self._problem: tuple[str, bool] | None = None  # (text, lasts until an event)
        super().__init__(trim, self._kept, wake.set)

    def _replaced(self) -> bool:
        """A LIST succeeded: a problem of the LIST (or of the connection) ends."""
        if self._problem is not None and not self._problem[1]:
            self._problem = None
            return True
        return False

    def answered(self) -> None:
        """The watch delivered something (an event or a bookmark): it works."""
        with self.lock:
            cleared, self._problem = self._problem is not None, None
        if cleared:
            self._wake.set()

    def failed(self, text: str, until_event: bool) -> None:
        with self.lock:
            changed = self._problem != (text, until_event)
            self._problem = (text, until_event)
        if changed:
            self._wake.set()

    def read(self) -> tuple[list[Any] | None, str | None]:
        """The objects sorted by key (None before the first LIST) and the problem."""
        with self.lock:
            synced = self.synced.is_set()
            items = [value for _k, value in self._kept.sorted()] if synced else None
            return items, self._problem[0] if self._problem else None

    @property
    def settled(self) -> bool:
        """Listed once, or failed: there is something to show."""
        with self.lock:
            return self.synced.is_set() or self._problem is not None


class Reported:
    """A :class:`~kumaco.kube.resources.Collection` that tells its store how it fares."""

    def __init__(self, inner: Collection, store: Store) -> None:
        self.inner = inner
        self.store = store

    def list_pages(self, page: int = 250, shrink: Shrink | None = None) -> Iterator[Page]:
        try:
            yield from self.inner.list_pages(page, shrink)
        except (ApiError, TransportError) as exc:
            self.store.failed(_problem("list", self.store.what, exc), until_event=False)
            raise

    def list_all(self) -> tuple[list[dict[str, Any]], str]:
        return self.inner.list_all()

    def watch(
        self,
        resource_version: str,
        timeout_seconds: int,
        *,
        known: Callable[[bytes], str | None] | None = None,
        shrink: Shrink | None = None,
        silence: float = 130.0,
    ) -> Iterator[dict[str, Any]]:
        events = self.inner.watch(
            resource_version, timeout_seconds, known=known, shrink=shrink, silence=silence
        )
        try:
            for event in events:
                self.store.answered()
                yield event
        except Expired:
            raise
        except ApiError as exc:
            self.store.failed(_problem("watch", self.store.what, exc), until_event=True)
            raise
        except TransportError as exc:
            if not exc.silent:  # a silent connection is resumed at once: not a problem
                self.store.failed(_problem("watch", self.store.what, exc), until_event=False)
            raise


def relisting(policy: ErrorPolicy) -> ErrorPolicy:
    """``policy``'s wait, each retry from a fresh LIST (see the module contract)."""

    def on_error(exc: BaseException, failures: int) -> OnError:
        return OnError(policy(exc, failures).sleep, relist=True)

    return on_error


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _configmap(obj: Mapping[str, Any]) -> Keyed | None:
    """What the report reads of a window ConfigMap (an edit of anything else wakes nobody)."""
    meta = _meta(obj)
    if not meta.get("name"):
        return None
    kept = {k: meta[k] for k in ("namespace", "name", "uid") if k in meta}
    trimmed = {"metadata": kept, "data": obj.get("data"), "binaryData": obj.get("binaryData")}
    return str(meta["name"]), trimmed


def _lease(obj: Mapping[str, Any]) -> Keyed | None:
    meta = _meta(obj)
    if not meta.get("name"):
        return None
    kept = {k: meta[k] for k in ("namespace", "name") if k in meta}
    return str(meta["name"]), {"metadata": kept, "spec": obj.get("spec")}


class Feed:
    """The reflectors of everything the status shows, and their stores (see the contract)."""

    def __init__(
        self,
        resources: KubeResources,
        instance: Instance,
        namespaces: Sequence[str],
        configmap_selector: str,
        node_selector: str,
    ) -> None:
        self.wake = threading.Event()
        self.stop = threading.Event()
        self.namespaces = tuple(namespaces)
        self.configmap_selector = configmap_selector
        self.node_selector = node_selector
        owned = (instance.under_maintenance, instance.in_progress)

        def node(obj: Mapping[str, Any]) -> Keyed | None:
            view = node_view(obj, owned, heartbeats=())
            return (view.name, view) if view is not None else None

        self.nodes = Store("nodes", node, self.wake)
        self.configmaps = [
            Store(f"ConfigMaps in namespace {ns}", _configmap, self.wake) for ns in self.namespaces
        ]
        self.lease = Store(f"Lease {instance.lease_key}", _lease, self.wake)
        watched: list[tuple[str, Collection, Store]] = [
            *(
                (f"configmaps/{ns}", resources.configmaps(ns, configmap_selector), store)
                for ns, store in zip(self.namespaces, self.configmaps, strict=True)
            ),
            ("nodes", resources.nodes(node_selector), self.nodes),
            ("lease", resources.lease(instance.lease_namespace, instance.lease_name), self.lease),
        ]
        self.reflectors = [
            Reflector(
                Reported(collection, store),
                store,
                self.stop,
                name=name,
                on_error=relisting(backoff_forever(random.Random())),
            )
            for name, collection, store in watched
        ]

    @property
    def stores(self) -> list[Store]:
        return [*self.configmaps, self.nodes, self.lease]

    def start(self) -> None:
        for r in self.reflectors:
            r.start()

    def close(self) -> None:
        self.stop.set()

    def settled(self) -> bool:
        """Every collection listed once or failed."""
        return all(s.settled for s in self.stores)

    def snapshot(self) -> Snapshot:
        """Everything the stores hold now, and their problems."""
        problems: list[str] = []
        configmaps: list[Any] = []
        for store in self.configmaps:
            items, trouble = store.read()
            configmaps += items or []
            problems += [trouble] if trouble else []
        nodes, trouble = self.nodes.read()
        problems += [trouble] if trouble else []
        leases, trouble = self.lease.read()
        problems += [trouble] if trouble else []
        return Snapshot(
            tuple(configmaps),
            tuple(nodes) if nodes is not None else None,
            leases[0] if leases else None,
            tuple(problems),
            namespaces=self.namespaces,
            configmap_selector=self.configmap_selector,
            node_selector=self.node_selector,
        )
