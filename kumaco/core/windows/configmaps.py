"""Window ConfigMaps: what kumaco keeps of one, the one path to a window, and the config hash.

Contract: :meth:`WindowConfigMap.from_object` trims any decoded ConfigMap
(from a watch, a LIST or a file) to what kumaco reads, or returns ``None``
when it has no usable namespace and name; it never raises.
:func:`window_of` is the only way a ConfigMap becomes a
:class:`~kumaco.core.windows.window.Window` (or an
:class:`~kumaco.core.windows.window.InvalidWindow` naming each bad key): the
controller, ``kubectl kumaco`` and the offline commands all go through it.
:func:`config_hash` hashes the ``data`` of all window ConfigMaps (metadata never
counts); a change of it is what makes the leader exit so that its state is
rebuilt. Pure: no I/O, no clock.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from kumaco.core.windows.format import parse_window
from kumaco.core.windows.window import InvalidWindow, Window

#: The label that marks a ConfigMap as a maintenance window (kumaco's default selector).
DEFAULT_CONFIGMAP_SELECTOR = "kured.dev/maintenance-window"


def resource_version(obj: Mapping[str, Any]) -> str | None:
    """An object's ``metadata.resourceVersion``, if it is a string."""
    meta = obj.get("metadata")
    rv = meta.get("resourceVersion") if isinstance(meta, Mapping) else None
    return rv if isinstance(rv, str) else None


@dataclass(frozen=True, slots=True)
class WindowConfigMap:
    """What kumaco keeps of a window ConfigMap."""

    namespace: str
    name: str
    uid: str
    resource_version: str | None
    #: ``data`` as found: a read-only map, None, or (malformed) whatever else it was.
    data: object
    has_binary_data: bool

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @staticmethod
    def from_object(
        obj: Mapping[str, Any], default_namespace: str | None = None
    ) -> WindowConfigMap | None:
        """Trim a decoded ConfigMap; None without a name (or a namespace and no default)."""
        meta = obj.get("metadata")
        if not isinstance(meta, Mapping):
            return None
        ns, name, uid = meta.get("namespace"), meta.get("name"), meta.get("uid")
        if not (isinstance(ns, str) and ns):
            ns = default_namespace
        if ns is None or not (isinstance(name, str) and name):
            return None
        data = obj.get("data")
        return WindowConfigMap(
            namespace=ns,
            name=name,
            uid=uid if isinstance(uid, str) else "",
            resource_version=resource_version(obj),
            data=MappingProxyType(dict(data)) if isinstance(data, Mapping) else data,
            has_binary_data=bool(obj.get("binaryData")),
        )

    def data_digest(self) -> str:
        """A digest of ``data`` alone (metadata never counts)."""
        body = json.dumps(self.data, sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(body.encode()).hexdigest()


def window_of(cm: WindowConfigMap) -> Window | InvalidWindow:
    """The window a ConfigMap declares, or why it is invalid (never raises)."""
    return parse_window(cm.namespace, cm.name, cm.data, has_binary_data=cm.has_binary_data)


def windows_of(objects: Iterable[Mapping[str, Any]]) -> list[Window | InvalidWindow]:
    """Each ConfigMap object (as the API returns it) as a window, sorted by key."""
    trimmed = (WindowConfigMap.from_object(o) for o in objects)
    return sorted((window_of(c) for c in trimmed if c is not None), key=lambda e: e.key)


def config_digest(configmaps: Iterable[WindowConfigMap]) -> dict[str, str]:
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
