"""The answers of ``kumaco validate``, ``windows`` and ``plan``, as text or JSON.

The ``kubectl kumaco`` twins print through the same functions. Contract: pure
renderers, each returning the whole output as a string; the same objects give
the same bytes whether they came from files or from a cluster. The JSON shapes
are a contract (README): ``validate`` a list of ``{namespace, name, valid,
errors: [{key, message}]}``; ``windows`` a list of ``{namespace, name, start,
end}``; ``plan`` ``{at, nodes: [{name, underMaintenance, windows,
maintenanceInProgress, reason}]}``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from kumaco.core.errors import one_line
from kumaco.core.planner import Plan
from kumaco.core.times import format_instant
from kumaco.core.windows import InvalidWindow, Occurrence, Window
from kumaco.views.table import table


def _json(doc: object) -> str:
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def validate(entries: Sequence[Window | InvalidWindow], output: str) -> str:
    """One verdict per ConfigMap: ``valid ns/name`` or ``invalid ns/name: key: reason``."""
    if output == "json":
        return _json(
            [
                {
                    "namespace": e.namespace,
                    "name": e.name,
                    "valid": isinstance(e, Window),
                    "errors": []
                    if isinstance(e, Window)
                    else [{"key": f.key, "message": f.message} for f in e.errors],
                }
                for e in entries
            ]
        )
    return "".join(
        f"valid {one_line(e.key)}\n"
        if isinstance(e, Window)
        else f"invalid {one_line(e.key)}: {one_line(e.reason)}\n"
        for e in entries
    )


def skipped(entry: InvalidWindow) -> str:
    """The note for an invalid window that a listing leaves out."""
    return f"skipping invalid {one_line(entry.key)}: {one_line(entry.reason)}\n"


def windows(found: Sequence[Occurrence], output: str) -> str:
    """Occurrences as ``kumaco windows`` prints them (text lines or a JSON array)."""
    if output == "json":
        return (
            json.dumps(
                [
                    {
                        "namespace": o.namespace,
                        "name": o.name,
                        "start": format_instant(o.start),
                        "end": format_instant(o.end),
                    }
                    for o in found
                ],
                indent=2,
            )
            + "\n"
        )
    return "".join(
        f"{format_instant(o.start)}  {format_instant(o.end)}  {o.namespace}/{o.name}\n"
        for o in found
    )


def plan(result: Plan, output: str) -> str:
    """A plan as ``kumaco plan`` prints it (a table or the JSON document)."""
    if output == "json":
        rows = [
            {
                "name": n.name,
                "underMaintenance": n.is_under_maintenance,
                "windows": list(n.windows),
                "maintenanceInProgress": n.is_in_progress,
                "reason": (n.in_progress or n.under_maintenance).reason,
            }
            for n in result.nodes
        ]
        return json.dumps({"at": format_instant(result.at), "nodes": rows}, indent=2) + "\n"
    head = f"at {format_instant(result.at)}"
    if result.ceiling is not None:
        head += f"; in progress {result.in_progress} of at most {result.ceiling}"
    table_rows = [("NODE", "UNDER-MAINTENANCE", "IN-PROGRESS", "REASON", "WINDOWS")]
    table_rows += [
        (
            n.name,
            str(n.is_under_maintenance).lower(),
            "-" if n.is_in_progress is None else str(n.is_in_progress).lower(),
            (n.in_progress or n.under_maintenance).reason,
            ",".join(n.windows) or "-",
        )
        for n in result.nodes
    ]
    return head + "\n" + table(table_rows)
