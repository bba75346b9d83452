"""Thread-safe stores of what kumaco watches: trimmed Nodes and window ConfigMaps.

Contract: a store receives objects from a reflector (``trim``, ``replace``,
``apply``) and from write-through updates (``put`` after a successful write),
keeps only what the planner needs, and calls ``on_change`` only when
something the planner looks at changed -- so the echo of kumaco's own write,
or a kubelet heartbeat that only moves ``lastHeartbeatTime``, wakes nobody.
A watch event older than what a write-through already stored (by
resourceVersion) is ignored. Snapshots are taken under the lock and are safe
to use without it. No I/O, no clock.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from kumaco.core.nodes import Condition, NodeSet, NodeView, node_view


def newer_or_equal(a: str | None, b: str | None) -> bool:
    """Whether resourceVersion ``a`` is not older than ``b``.

    Kubernetes calls resourceVersions opaque; etcd-backed servers hand out
    increasing integers, which this relies on to drop a watch event that is
    older than a write-through update. Anything non-numeric counts as newer.
    """
    if a is None or b is None:
        return True
    if a.isdigit() and b.isdigit():
        return int(a) >= int(b)
    return True


# Kubernetes serialises an object's metadata first: the first "name" and "resourceVersion"
# in a watch event's bytes are the object's own (kind and apiVersion carry neither).
_NAME = re.compile(rb'"name":"((?:[^"\\]|\\.)*)"')
_RESOURCE_VERSION = re.compile(rb'"resourceVersion":"([0-9]+)"')
_HEAD = 512


_IMAGES = b',"images":['


def drop_images(raw: bytes) -> bytes:
    """Cut every Node's ``status.images`` list out of raw JSON before it is decoded.

    The image list is most of a Node (about 8 KB of its 15) and kumaco never
    reads it. A non-empty list ends at the first ``}]`` after it begins: each
    entry is ``{"names":[...],"sizeBytes":N}`` and image names hold neither
    ``}`` nor ``]``; an empty one is ``[]``. The key cannot occur elsewhere: in
    strings its quotes would be escaped, and managedFields say ``f:images``. A
    cut is made only where what follows is ``,`` or ``}``; otherwise the input
    is returned unchanged. Works on one Node, a watch event or a LIST page.
    """
    if _IMAGES not in raw:
        return raw
    parts = []
    pos = 0
    while (start := raw.find(_IMAGES, pos)) >= 0:
        body = start + len(_IMAGES)
        end = body + 1 if raw[body : body + 1] == b"]" else raw.find(b"}]", body) + 2
        if end < 2 or raw[end : end + 1] not in (b",", b"}"):
            return raw  # not the shape expected: decode it whole
        parts.append(raw[pos:start])
        pos = end
    parts.append(raw[pos:])
    return b"".join(parts)


def leading_resource_version(raw: bytes) -> str | None:
    """The object's own resourceVersion, read from the first bytes of its JSON (or None)."""
    m = _RESOURCE_VERSION.search(raw[:_HEAD])
    return m.group(1).decode() if m else None


def _rv(obj: Mapping[str, Any]) -> str | None:
    meta = obj.get("metadata")
    rv = meta.get("resourceVersion") if isinstance(meta, Mapping) else None
    return rv if isinstance(rv, str) else None


@dataclass(frozen=True, slots=True)
class TrimmedNode:
    """A node view and its resourceVersion (the precondition of kumaco's writes)."""

    view: NodeView
    resource_version: str | None


class NodeStore:
    """The nodes in scope, trimmed; fed by the node reflector and by write-through."""

    def __init__(self, on_change: Callable[[], None] = lambda: None) -> None:
        self._lock = threading.Lock()
        self._nodes = NodeSet()
        self._rv: dict[str, str | None] = {}
        self._on_change = on_change
        self.synced = threading.Event()

    @staticmethod
    def trim(obj: Mapping[str, Any]) -> TrimmedNode | None:
        view = node_view(obj)
        return None if view is None else TrimmedNode(view, _rv(obj))

    def _put_locked(self, node: TrimmedNode) -> bool:
        name = node.view.name
        if not newer_or_equal(node.resource_version, self._rv.get(name)):
            return False
        self._rv[name] = node.resource_version
        if self._nodes.get(name) == node.view:
            return False
        self._nodes.put(node.view)
        return True

    def replace(self, nodes: list[TrimmedNode | None]) -> None:
        with self._lock:
            fresh = NodeSet(n.view for n in nodes if n is not None)
            changed = {n.name: n for n in self._nodes} != {
                n.name: n for n in fresh
            } or not self.synced.is_set()
            self._nodes = fresh
            self._rv = {n.view.name: n.resource_version for n in nodes if n is not None}
        self.synced.set()
        if changed:
            self._on_change()

    def apply(self, event_type: str | None, node: TrimmedNode | None) -> None:
        if node is None:
            return
        with self._lock:
            if event_type == "DELETED":
                changed = node.view.name in self._nodes
                self._nodes.remove(node.view.name)
                self._rv.pop(node.view.name, None)
            else:
                changed = self._put_locked(node)
        if changed:
            self._on_change()

    shrink = staticmethod(drop_images)

    def known(self, raw: bytes) -> str | None:
        """The resourceVersion of a MODIFIED event already stored (an echo of our write), else None.

        Read from the first bytes without decoding the 15 KB of a node: the
        echo of each of kumaco's own writes is recognised and dropped cheaply.
        """
        if not raw.startswith(b'{"type":"MODIFIED"'):
            return None
        head = raw[:_HEAD]
        name, rv = _NAME.search(head), _RESOURCE_VERSION.search(head)
        if name is None or rv is None:
            return None
        version = rv.group(1).decode()
        with self._lock:
            stored = self._rv.get(name.group(1).decode())
        if stored is not None and stored.isdigit() and int(stored) >= int(version):
            return version
        return None

    def put_written(self, name: str, resource_version: str, written: list[Condition]) -> bool:
        """Write-through from the patch kumaco sent and the resourceVersion it got back.

        The server merged the conditions by type with a resourceVersion
        precondition, so the node now is the stored view with exactly these
        conditions replaced. False if the node is not stored (the caller then
        stores the server's answer instead).
        """
        with self._lock:
            old = self._nodes.get(name)
            if old is None:
                return False
            conditions = dict(old.conditions)
            for c in written:
                conditions[c.type] = c
            view = NodeView(old.name, old.labels, MappingProxyType(conditions))
            self._put_locked(TrimmedNode(view, resource_version))
        return True

    def put(self, obj: Mapping[str, Any]) -> None:
        """Write-through: store the object a write returned (no wake-up: kumaco caused it)."""
        node = self.trim(obj)
        if node is not None:
            with self._lock:
                self._put_locked(node)

    def forget(self, name: str) -> None:
        with self._lock:
            self._nodes.remove(name)
            self._rv.pop(name, None)

    @contextlib.contextmanager
    def read(self) -> Iterator[tuple[NodeSet, Mapping[str, str | None]]]:
        """The live node set and resourceVersions, under the lock: plan inside, write outside.

        Planning 5,000 nodes takes milliseconds; holding the lock that long
        only delays the reflector, while copying the label index every time
        would cost more than the plan.
        """
        with self._lock:
            yield self._nodes, self._rv

    def __len__(self) -> int:
        with self._lock:
            return len(self._nodes)


@dataclass(frozen=True, slots=True)
class WindowConfigMap:
    """What kumaco keeps of a window ConfigMap."""

    namespace: str
    name: str
    uid: str
    resource_version: str | None
    data: Mapping[str, object] | None
    has_binary_data: bool

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def data_digest(self) -> str:
        """A digest of ``data`` alone (metadata never counts)."""
        body = json.dumps(self.data, sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(body.encode()).hexdigest()


class ConfigMapStore:
    """Window ConfigMaps of every watched namespace, by ``namespace/name``."""

    def __init__(
        self, namespaces: tuple[str, ...], on_change: Callable[[], None] = lambda: None
    ) -> None:
        self._lock = threading.Lock()
        self._by_ns: dict[str, dict[str, WindowConfigMap]] = {ns: {} for ns in namespaces}
        self._synced = {ns: threading.Event() for ns in namespaces}
        self._on_change = on_change

    @staticmethod
    def trim(obj: Mapping[str, Any]) -> WindowConfigMap | None:
        meta = obj.get("metadata")
        if not isinstance(meta, Mapping):
            return None
        ns, name, uid = meta.get("namespace"), meta.get("name"), meta.get("uid")
        if not (isinstance(ns, str) and isinstance(name, str)):
            return None
        data = obj.get("data")
        return WindowConfigMap(
            namespace=ns,
            name=name,
            uid=uid if isinstance(uid, str) else "",
            resource_version=_rv(obj),
            data=MappingProxyType(dict(data)) if isinstance(data, Mapping) else None,
            has_binary_data=bool(obj.get("binaryData")),
        )

    def sink(self, namespace: str) -> _NamespaceSink:
        return _NamespaceSink(self, namespace)

    def _replace(self, namespace: str, items: list[WindowConfigMap | None]) -> None:
        with self._lock:
            fresh = {c.name: c for c in items if c is not None}
            changed = fresh != self._by_ns[namespace] or not self._synced[namespace].is_set()
            self._by_ns[namespace] = fresh
        self._synced[namespace].set()
        if changed:
            self._on_change()

    def _apply(self, namespace: str, event_type: str | None, cm: WindowConfigMap | None) -> None:
        if cm is None:
            return
        with self._lock:
            current = self._by_ns[namespace]
            if event_type == "DELETED":
                changed = current.pop(cm.name, None) is not None
            else:
                changed = current.get(cm.name) != cm
                current[cm.name] = cm
        if changed:
            self._on_change()

    @property
    def synced(self) -> bool:
        return all(e.is_set() for e in self._synced.values())

    def snapshot(self) -> list[WindowConfigMap]:
        with self._lock:
            return sorted(
                (c for by in self._by_ns.values() for c in by.values()), key=lambda c: c.key
            )


class _NamespaceSink:
    """The reflector-facing side of :class:`ConfigMapStore` for one namespace."""

    def __init__(self, store: ConfigMapStore, namespace: str) -> None:
        self.store = store
        self.namespace = namespace

    trim = staticmethod(ConfigMapStore.trim)

    def replace(self, items: list[WindowConfigMap | None]) -> None:
        self.store._replace(self.namespace, items)

    def apply(self, event_type: str | None, cm: WindowConfigMap | None) -> None:
        self.store._apply(self.namespace, event_type, cm)


def config_digest(configmaps: list[WindowConfigMap]) -> dict[str, str]:
    """Per-ConfigMap data digests, the basis of the config hash."""
    return {c.key: c.data_digest() for c in configmaps}


def config_hash(digests: Mapping[str, str]) -> str:
    """One hash over the ``data`` of all window ConfigMaps (sorted by namespace/name)."""
    h = hashlib.sha256()
    for key in sorted(digests):
        h.update(f"{key}\0{digests[key]}\n".encode())
    return h.hexdigest()


def describe_config_change(
    before: Mapping[str, str], after: Mapping[str, str]
) -> dict[str, list[str]]:
    """Which ConfigMaps were added, removed or edited between two digests."""
    return {
        "added": sorted(set(after) - set(before)),
        "removed": sorted(set(before) - set(after)),
        "edited": sorted(k for k in set(before) & set(after) if before[k] != after[k]),
    }
