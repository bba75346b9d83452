"""Thread-safe stores of what kumaco watches: trimmed Nodes and window ConfigMaps.

Contract: each is the one :class:`~kumaco.kube.store.Store` (a
:class:`~kumaco.kube.store.Sink`), with what is specific to it: the projection and
the keeping. A store receives objects from a reflector (``trim``, ``replace``,
``apply``) and from write-through updates (``put`` after a successful write),
keeps only what the planner needs, and calls ``on_change`` only when
something the planner looks at changed -- so the echo of kumaco's own write,
or a kubelet heartbeat that only moves ``lastHeartbeatTime``, wakes nobody
(an echo is not even decoded: :meth:`NodeStore.known`).
A watch event older than what a write-through already stored (by
resourceVersion) is ignored. The store also knows since which
resourceVersion each node's view is unchanged (:meth:`NodeStore.fresh_version`),
so a write decided on an older version can carry the newest one when only
what the planner never reads changed in between. Snapshots are taken under the
lock and are safe to use without it. No I/O, no clock.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from kumaco.core.objects.nodes import (
    Condition,
    NodeSet,
    NodeView,
    Sharing,
    node_view,
)
from kumaco.core.planning.policy import Policy
from kumaco.core.planning.rules import conditions_read
from kumaco.core.windows.configmaps import WindowConfigMap, resource_version
from kumaco.kube.store import Keyed, Store, Tuning
from kumaco.kube.wire import HEAD, NAME, RESOURCE_VERSION, drop_images, newer_or_equal


@dataclass(frozen=True, slots=True)
class TrimmedNode:
    """A node view and its resourceVersion (the precondition of kumaco's writes)."""

    view: NodeView
    resource_version: str | None


def planner_conditions(policy: Policy) -> frozenset[str]:
    """The condition types the planner reads under ``policy`` (what a NodeStore must keep).

    Derived from the policy's rules (:func:`kumaco.core.planning.rules.conditions_read`):
    kumaco's own (two; three with a planned lead) and every type a rule declares it
    reads -- the required and blocking ones, ``Ready`` when unavailable nodes count
    toward the ceilings. Any
    other condition -- the kubelet's pressure conditions, node-problem-detector's,
    other controllers' -- is neither kept nor a reason to plan again when it changes.
    """
    return conditions_read(policy)


class _Nodes:
    """The node store's keeping: the views (label-indexed), their versions, the departed.

    A change is a view that differs; an object older than the stored one (by
    resourceVersion) is ignored. ``since`` holds the resourceVersion at which each
    stored view became what it is (:meth:`NodeStore.fresh_version`).
    """

    def __init__(self) -> None:
        self.nodes = NodeSet()
        self.rv: dict[str, str | None] = {}
        self.since: dict[str, str | None] = {}
        self.departed: set[str] = set()

    def replace(self, items: list[TrimmedNode]) -> bool:
        fresh = NodeSet(n.view for n in items)
        changed = {n.name: n for n in self.nodes} != {n.name: n for n in fresh}
        self.nodes = fresh
        self.rv = {n.view.name: n.resource_version for n in items}
        self.since = dict(self.rv)
        return changed

    def put(self, item: TrimmedNode) -> bool:
        name = item.view.name
        if not newer_or_equal(item.resource_version, self.rv.get(name)):
            return False
        self.rv[name] = item.resource_version
        if self.nodes.get(name) == item.view:
            return False
        self.nodes.put(item.view)
        self.since[name] = item.resource_version
        return True

    def forget(self, name: str) -> bool:
        changed = name in self.nodes
        self.nodes.remove(name)
        self.rv.pop(name, None)
        self.since.pop(name, None)
        return changed

    def remove(self, item: TrimmedNode) -> bool:
        """A DELETED event: the node was deleted or relabelled out of the watch's selector."""
        self.departed.add(item.view.name)
        return self.forget(item.view.name)


class NodeStore(Store[TrimmedNode]):
    """The nodes in scope, trimmed; fed by the node reflector and by write-through.

    The one :class:`~kumaco.kube.store.Store`, kept in a label-indexed
    :class:`~kumaco.core.objects.nodes.NodeSet` with each node's resourceVersion.
    ``owned`` are the condition types whose writers (field managers) are kept,
    and ``manager`` the one kumaco's own writes are recorded under; ``keep``,
    when given, the only condition types kept (:func:`planner_conditions`);
    ``heartbeats`` the only ones whose ``lastHeartbeatTime`` is kept (the
    required conditions: a fresh report after a reboot; none by default);
    ``sharing`` what its views share (:class:`~kumaco.core.objects.nodes.Sharing`: the store
    owns it for its life; by default interning on -- the levers benchmark passes
    ``Sharing(interning=False)`` to measure it off). A DELETED
    watch event -- a node deleted, or relabelled out of the watch's selector --
    also records the node's name in :meth:`departed`.
    """

    def __init__(
        self,
        on_change: Callable[[], None] = lambda: None,
        owned: tuple[str, ...] = (),
        manager: str = "",
        keep: frozenset[str] | None = None,
        heartbeats: frozenset[str] = frozenset(),
        sharing: Sharing | None = None,
    ) -> None:
        self._sharing = Sharing() if sharing is None else sharing
        self._owned = owned
        self._manager = manager
        self._keep = keep
        self._heartbeats = heartbeats
        self._nodes = _Nodes()
        super().__init__(
            self._trimmed,
            self._nodes,
            on_change,
            tuning=Tuning(shrink=drop_images, known=self.known),
        )

    def _trimmed(self, obj: Mapping[str, Any]) -> TrimmedNode | None:
        view = node_view(obj, self._owned, self._keep, self._heartbeats, self._sharing)
        return None if view is None else TrimmedNode(view, resource_version(obj))

    def departed(self) -> set[str]:
        """The names that left the store since the last call (and forget them)."""
        with self.lock:
            names, self._nodes.departed = self._nodes.departed, set()
        return names

    def known(self, raw: bytes) -> str | None:
        """The resourceVersion of a watch event that cannot change the store (else None).

        Read from the event's first bytes without decoding it: a ``MODIFIED``
        event of a stored node at a resourceVersion the store already holds --
        the echo of kumaco's own write, stored through when it landed (about
        15 KB of JSON per node, 50,000 of them when a window opens on 50,000
        nodes) -- or an older one. Decoded, it would be dropped or compare equal.
        """
        if not raw.startswith(b'{"type":"MODIFIED"'):
            return None
        head = raw[:HEAD]
        name, version = NAME.search(head), RESOURCE_VERSION.search(head)
        if name is None or version is None:
            return None
        with self.lock:
            stored = self._nodes.rv.get(name.group(1).decode())
        rv = version.group(1).decode()
        if stored is None or not stored.isdigit() or int(stored) < int(rv):
            return None
        return rv

    def put_written(self, name: str, resource_version: str, written: list[Condition]) -> bool:
        """Write-through from the patch kumaco sent and the resourceVersion it got back.

        The server merged the conditions by type with a resourceVersion
        precondition, so the node now is the stored view with exactly these
        conditions replaced. False if the node is not stored (the caller then
        stores the server's answer instead).
        """
        with self.lock:
            old = self._nodes.nodes.get(name)
            if old is None:
                return False
            conditions = dict(old.conditions)
            owners = dict(old.owners)
            for c in written:
                conditions[c.type] = c
                if c.type in self._owned:
                    owners[c.type] = self._manager
            view = NodeView(
                old.name,
                old.labels,
                MappingProxyType(conditions),
                old.unschedulable,
                self._sharing.owners(owners),
                old.boot_id,
            )
            self._nodes.put(TrimmedNode(view, resource_version))
        return True

    def put(self, obj: Mapping[str, Any]) -> None:
        """Write-through: store the object a write returned (no wake-up: kumaco caused it)."""
        self.write_through(self.trim(obj))

    def forget(self, name: str) -> None:
        with self.lock:
            self._nodes.forget(name)

    def fresh_version(self, name: str, decided_on: str | None) -> str | None:
        """The newest resourceVersion the decision taken on ``decided_on`` still holds for.

        That is the stored one when the stored view of ``name`` has not changed
        since ``decided_on`` (only fields the planner never reads moved: a
        heartbeat, images, a condition it does not keep), else ``decided_on``
        itself -- a write carrying it then gets its 409 and the node is decided
        again. Unknown or non-numeric versions: ``decided_on``.
        """
        with self.lock:
            current, since = self._nodes.rv.get(name), self._nodes.since.get(name)
        if current is None or since is None or decided_on is None:
            return decided_on
        if since == decided_on or (
            since.isdigit() and decided_on.isdigit() and int(since) <= int(decided_on)
        ):
            return current
        return decided_on

    @contextlib.contextmanager
    def read(self) -> Iterator[tuple[NodeSet, Mapping[str, str | None]]]:
        """The live node set and resourceVersions, under the lock: plan inside, write outside.

        Planning 5,000 nodes takes milliseconds; holding the lock that long
        only delays the reflector, while copying the label index every time
        would cost more than the plan.
        """
        with self.lock:
            yield self._nodes.nodes, self._nodes.rv

    def __len__(self) -> int:
        with self.lock:
            return len(self._nodes.nodes)


class ConfigMapStore:
    """Window ConfigMaps of every watched namespace, by ``namespace/name``.

    One :class:`~kumaco.kube.store.Store` per namespace (:meth:`sink`: what its
    reflector feeds), all behind one lock, each keeping its ConfigMaps by name.
    """

    def __init__(
        self, namespaces: tuple[str, ...], on_change: Callable[[], None] = lambda: None
    ) -> None:
        self._lock = threading.Lock()
        self._kept = {ns: Keyed(_name) for ns in namespaces}
        self._by_ns = {
            ns: Store(self.trim, kept, on_change, lock=self._lock)
            for ns, kept in self._kept.items()
        }

    @staticmethod
    def trim(obj: Mapping[str, Any]) -> WindowConfigMap | None:
        return WindowConfigMap.from_object(obj)

    def sink(self, namespace: str) -> Store[WindowConfigMap]:
        return self._by_ns[namespace]

    @property
    def synced(self) -> bool:
        return all(s.synced.is_set() for s in self._by_ns.values())

    def snapshot(self) -> list[WindowConfigMap]:
        with self._lock:
            return sorted(
                (c for kept in self._kept.values() for c in kept.items.values()),
                key=lambda c: c.key,
            )


def _name(cm: WindowConfigMap) -> str:
    return cm.name
