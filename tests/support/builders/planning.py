"""The planner's inputs for the unit tests: windows, nodes as views, and condition shorthands.

:func:`window` parses a window as a ConfigMap's data says it (the optional keys --
``timeZone``, ``notBefore``, ``notAfter``, ... -- as keyword arguments); :func:`node` builds a Node
document whose conditions are keyword arguments (``kured_dev__RebootRequired`` for
``kured.dev/RebootRequired``; :func:`req` and :func:`blk` spell the usual two), and
:func:`nodeset` turns such documents into the planner's :class:`~kumaco.core.objects.nodes.NodeSet`.
``NOW`` is inside the default window (03:00-05:00 UTC).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping

from kumaco.core.objects.nodes import NodeSet, node_view
from kumaco.core.time.durations import SECOND
from kumaco.core.windows.format import parse_window
from kumaco.core.windows.window import Window

REQ, BLOCK, MIP = "kured.dev/RebootRequired", "kured.dev/RebootInhibited", "MaintenanceInProgress"


NOW = int(dt.datetime(2026, 12, 1, 3, 30, tzinfo=dt.UTC).timestamp()) * SECOND


def window(
    name: str,
    start: str = "0 3 * * *",
    duration: str = "2h",
    selector: str = "",
    **extra: str,
) -> Window:
    data = {"startTime": start, "duration": duration, "nodeSelector": selector, **extra}
    w = parse_window("maint", name, data)
    assert isinstance(w, Window), w  # an invalid window says why
    return w


def node(
    name: str, labels: Mapping[str, str] | None = None, **conds: str | tuple[str, str]
) -> object:
    conditions = []
    for ctype, value in conds.items():
        status, ltt = value if isinstance(value, tuple) else (value, "2026-11-01T00:00:00Z")
        conditions.append(
            {
                "type": ctype.replace("__", "/").replace("_", "."),
                "status": status,
                "lastTransitionTime": ltt,
            }
        )
    return {
        "metadata": {"name": name, "labels": dict(labels or {})},
        "status": {"conditions": conditions},
    }


def nodeset(*objs: object) -> NodeSet:
    views = [node_view(o) for o in objs]
    return NodeSet(v for v in views if v is not None)


# Condition keyword names: kured__dev/RebootRequired is awkward in kwargs, so use helpers.
def req(status: str = "True", ltt: str = "2026-11-01T00:00:00Z") -> dict[str, tuple[str, str]]:
    return {"kured_dev__RebootRequired": (status, ltt)}


def blk(status: str = "True") -> dict[str, str]:
    return {"kured_dev__RebootInhibited": status}
