"""What kumaco keeps of a Node: its name, labels and conditions -- nothing else.

Contract: :func:`node_view` turns any decoded JSON/YAML value into a
:class:`NodeView`, or ``None`` when it has no usable name; it never raises on
malformed input. A missing ``status``, conditions that are not maps, without a
``type`` or with a non-string ``status`` are skipped; of duplicate condition
types the first one wins (what kubectl shows first). Labels that are not
string-to-string are dropped. Also kept: whether the node is cordoned
(``spec.unschedulable``), its boot (``status.nodeInfo.bootID``: a new value
means the machine rebooted), the ``lastHeartbeatTime`` of the condition types
asked for and, for the condition types asked for, which field
manager last wrote each one's ``status`` (from ``metadata.managedFields``: the
entry owning ``f:status`` of that condition, the latest if several do). The
image list, addresses and everything else a kubelet reports are never
retained. Views are compact: every string a view keeps (label keys and values,
condition types, statuses, reasons, messages and times) is interned, so the
thousands of nodes that share a zone, a kubelet message or a transition second
share one string, and equal owner maps are one shared object (docs/benchmarks.md,
"Levers", gives the bytes per node this saves). What views share is a
:class:`Sharing` their caller owns and passes in (a controller's node store holds
one for its life, an offline listing one for its objects); without one, a view
still interns its strings but shares no owner map. ``Sharing(interning=False)``
keeps every string and owner map as decoded: the levers benchmark's "off".

:class:`NodeSet` holds the views by name with a label index for bulk
selector evaluation; the controller updates it in place from watch events,
the offline commands build it from a file. :func:`uncarried` names the condition types
no node carries (with the closest one that some node does). Pure: no I/O, no clock.
"""

from __future__ import annotations

import datetime as dt
import difflib
from collections.abc import Container, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from sys import intern
from types import MappingProxyType
from typing import Any

from kumaco.core.labels.index import LabelIndex

_NO_OWNERS: Mapping[str, str] = MappingProxyType({})
TRUE = "True"
READY = "Ready"
FALSE = "False"
UNKNOWN = "Unknown"


@dataclass(frozen=True, slots=True)
class Condition:
    """One node condition as kumaco reads it."""

    type: str
    status: str
    reason: str = ""
    message: str = ""
    last_transition_time: str | None = None
    #: Kept only for the condition types a view is asked to (``node_view(heartbeats=...)``).
    last_heartbeat_time: str | None = None

    @property
    def is_true(self) -> bool:
        return self.status == TRUE


@dataclass(frozen=True, slots=True)
class NodeView:
    """The part of a Node kumaco needs."""

    name: str
    labels: Mapping[str, str]
    conditions: Mapping[str, Condition]
    unschedulable: bool = False
    #: Condition type -> the field manager that last wrote its status (types asked for only).
    owners: Mapping[str, str] = field(default_factory=lambda: _NO_OWNERS)
    #: ``status.nodeInfo.bootID``: changes when the machine reboots (None if not reported).
    boot_id: str | None = None

    def condition(self, ctype: str) -> Condition | None:
        return self.conditions.get(ctype)

    def is_true(self, ctype: str) -> bool:
        c = self.conditions.get(ctype)
        return c is not None and c.status == TRUE


class Sharing:
    """What node views share: one object per equal string, one per equal owner map.

    Owned by whoever keeps the views (a :class:`~kumaco.controller.stores.NodeStore`,
    an offline listing), never by the module: the owner-map table is bounded by
    ``owner_maps`` and lives as long as its owner. ``interning=False`` shares nothing.
    Threads may share one (the reflector's and the writers'): a race costs at most a
    second map equal to the first.
    """

    def __init__(self, *, interning: bool = True, owner_maps: int = 1024) -> None:
        self.interning = interning
        self._owner_maps: dict[tuple[tuple[str, str], ...], Mapping[str, str]] = {}
        self._owner_maps_max = owner_maps

    def text(self, value: str) -> str:
        """``value``, as the one object all equal strings are (when interning)."""
        return intern(value) if self.interning else value

    def owners(self, owners: Mapping[str, str]) -> Mapping[str, str]:
        """A read-only owner map equal to ``owners``, the same object for equal maps."""
        if not self.interning:
            return MappingProxyType(dict(owners))
        if not owners:
            return _NO_OWNERS
        key = tuple(sorted(owners.items()))
        found = self._owner_maps.get(key)
        if found is None:
            found = MappingProxyType({intern(t): intern(m) for t, m in key})
            if len(self._owner_maps) < self._owner_maps_max:
                self._owner_maps[key] = found
        return found


def _owners(meta: Mapping[str, Any], types: Iterable[str]) -> dict[str, str]:
    """Which field manager owns ``status`` of each condition type (see the module contract)."""
    entries = meta.get("managedFields")
    if not isinstance(entries, list):
        return {}
    keys = {f'k:{{"type":"{t}"}}': t for t in types}
    found: dict[str, tuple[str, str]] = {}
    for entry in entries:
        if not isinstance(entry, Mapping):
            continue
        manager, fields = entry.get("manager"), entry.get("fieldsV1")
        if not isinstance(manager, str) or not isinstance(fields, Mapping):
            continue
        status = fields.get("f:status")
        conditions = status.get("f:conditions") if isinstance(status, Mapping) else None
        if not isinstance(conditions, Mapping):
            continue
        stamp = entry.get("time")
        when = stamp if isinstance(stamp, str) else ""
        for key, ctype in keys.items():
            owned = conditions.get(key)
            if (
                isinstance(owned, Mapping)
                and "f:status" in owned
                and (ctype not in found or when >= found[ctype][1])
            ):
                found[ctype] = (manager, when)
    return {t: m for t, (m, _w) in found.items()}


def node_view(
    obj: object,
    owned: Iterable[str] = (),
    keep: Container[str] | None = None,
    heartbeats: Container[str] | None = None,
    sharing: Sharing | None = None,
) -> NodeView | None:
    """Trim a Node object (decoded JSON) to a :class:`NodeView`; None if unusable.

    ``owned``: the condition types whose writers (field managers) to keep.
    ``keep``: when given, only these condition types are kept (a controller
    keeps what its planner reads; a change of any other condition is then
    invisible in the view, so it wakes nobody).
    ``heartbeats``: the condition types whose ``lastHeartbeatTime`` is kept
    (None: every kept type's). A controller keeps only the required
    conditions' (a fresh report after a reboot is read from them), so other
    heartbeats still wake nobody.
    ``sharing``: what the view shares with the caller's other views (:class:`Sharing`;
    by default a fresh one: strings interned, no owner map shared).
    """
    share = Sharing() if sharing is None else sharing
    if not isinstance(obj, Mapping):
        return None
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping):
        return None
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        return None
    raw_labels = meta.get("labels")
    labels: dict[str, str] = {}
    if isinstance(raw_labels, Mapping):
        labels = {
            share.text(k): share.text(v)
            for k, v in raw_labels.items()
            if isinstance(k, str) and isinstance(v, str)
        }
    conditions: dict[str, Condition] = {}
    status = obj.get("status")
    raw_conditions = status.get("conditions") if isinstance(status, Mapping) else None
    if isinstance(raw_conditions, list):
        for c in raw_conditions:
            if not isinstance(c, Mapping):
                continue
            ctype, cstatus = c.get("type"), c.get("status")
            if (
                not isinstance(ctype, str)
                or not ctype
                or not isinstance(cstatus, str)
                or ctype in conditions
                or (keep is not None and ctype not in keep)
            ):
                continue
            ltt = c.get("lastTransitionTime")
            ctype = share.text(ctype)
            beat = (
                _timestamp_text(c.get("lastHeartbeatTime"), share)
                if heartbeats is None or ctype in heartbeats
                else None
            )
            conditions[ctype] = Condition(
                type=ctype,
                status=share.text(cstatus),
                reason=_text_or_empty(c.get("reason"), share),
                message=_text_or_empty(c.get("message"), share),
                last_transition_time=_timestamp_text(ltt, share),
                last_heartbeat_time=beat,
            )
    spec = obj.get("spec")
    unschedulable = isinstance(spec, Mapping) and spec.get("unschedulable") is True
    owners = _owners(meta, owned) if owned else {}
    info = status.get("nodeInfo") if isinstance(status, Mapping) else None
    boot = info.get("bootID") if isinstance(info, Mapping) else None
    return NodeView(
        name=name,
        labels=MappingProxyType(labels),
        conditions=MappingProxyType(conditions),
        unschedulable=unschedulable,
        owners=share.owners(owners),
        boot_id=share.text(boot.strip()) if isinstance(boot, str) and boot.strip() else None,
    )


def _text_or_empty(value: object, share: Sharing) -> str:
    return share.text(value) if isinstance(value, str) else ""


def _timestamp_text(value: Any, share: Sharing) -> str | None:
    if isinstance(value, str):
        return share.text(value)
    if isinstance(value, dt.datetime):  # YAML loaders turn timestamps into datetimes
        aware = value if value.tzinfo else value.replace(tzinfo=dt.UTC)
        try:
            return aware.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        except OverflowError:  # e.g. 0001-01-01T00:00:00+01:00 is before year 1 in UTC
            return None
    return None


class NodeSet:
    """Node views by name, plus a label index kept in step."""

    def __init__(self, nodes: Iterable[NodeView] = ()) -> None:
        self._nodes: dict[str, NodeView] = {}
        self.index = LabelIndex()
        for n in nodes:
            self.put(n)

    def put(self, node: NodeView) -> None:
        old = self._nodes.get(node.name)
        self._nodes[node.name] = node
        if old is None or old.labels != node.labels:
            self.index.set(node.name, node.labels)

    def remove(self, name: str) -> None:
        old = self._nodes.pop(name, None)
        if old is not None:
            self.index.discard(name)

    def get(self, name: str) -> NodeView | None:
        return self._nodes.get(name)

    def __len__(self) -> int:
        return len(self._nodes)

    def __iter__(self) -> Iterator[NodeView]:
        return iter(self._nodes.values())

    def __contains__(self, name: object) -> bool:
        return name in self._nodes


def uncarried(types: Iterable[str], nodes: Iterable[NodeView]) -> list[tuple[str, str | None]]:
    """Each of ``types`` that no node carries, with the carried type closest to it (or None).

    A condition type nobody carries is most often a typo (``RebootRequierd``): a rule that
    reads it then admits nobody, or blocks nobody, without a word.
    """
    carried = sorted({t for n in nodes for t in n.conditions})
    return [
        (t, next(iter(difflib.get_close_matches(t, carried, n=1, cutoff=0.8)), None))
        for t in dict.fromkeys(types)
        if t not in carried
    ]
