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
from kumaco.core.forecast import Forecast
from kumaco.core.planner import CeilingUse, Plan, Verdict
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


def windows(found: Sequence[Occurrence], output: str, freezes: frozenset[str] = frozenset()) -> str:
    """Occurrences as ``kumaco windows`` prints them (text lines or a JSON array).

    ``freezes`` are the keys of freeze windows: marked ``"freeze": true`` in JSON
    and ``(freeze)`` in text.
    """
    if output == "json":
        return (
            json.dumps(
                [
                    {
                        "namespace": o.namespace,
                        "name": o.name,
                        "start": format_instant(o.start),
                        "end": format_instant(o.end),
                        **({"freeze": True} if o.key in freezes else {}),
                    }
                    for o in found
                ],
                indent=2,
            )
            + "\n"
        )
    return "".join(
        f"{format_instant(o.start)}  {format_instant(o.end)}  {o.namespace}/{o.name}"
        + ("  (freeze)" if o.key in freezes else "")
        + "\n"
        for o in found
    )


def _detail(v: Verdict | None) -> str:
    """One line saying what decided a node's MaintenanceInProgress, for the plan's table."""
    if v is None:
        return ""
    parts = []
    if v.missing:
        parts.append("missing " + ",".join(v.missing))
    if v.blocking:
        parts.append("blocked by " + ",".join(v.blocking))
    if v.ceiling is not None:
        held = ",".join(v.holders) or "nobody"
        parts.append(f"{v.ceiling} full (held by {held})")
    if v.until is not None:
        parts.append("until " + format_instant(v.until))
    if v.counts_toward:
        parts.append("counts toward " + ",".join(v.counts_toward))
    return "; ".join(parts)


def _verdict_json(v: Verdict | None, uses: dict[str, CeilingUse]) -> dict[str, object]:
    if v is None:
        return {}
    ceiling = uses.get(v.ceiling) if v.ceiling is not None else None
    return {
        "rule": v.rule,
        "missing": list(v.missing),
        "blocking": list(v.blocking),
        "ceiling": None
        if ceiling is None
        else {"name": ceiling.name, "limit": ceiling.limit, "heldBy": list(v.holders)},
        "countsToward": list(v.counts_toward),
        "until": None if v.until is None else format_instant(v.until),
    }


def plan(result: Plan, output: str) -> str:
    """A plan as ``kumaco plan`` prints it (a table or the JSON document).

    Each node carries the rule that decided its MaintenanceInProgress and what
    it involved: the required conditions missing, the blocking ones present,
    which ceiling is full and who holds its places, the ceilings an admitted
    (or holding, settling, unavailable) node counts toward.
    """
    uses = {c.name: c for c in result.ceilings}
    if output == "json":
        rows = [
            {
                "name": n.name,
                "underMaintenance": n.is_under_maintenance,
                "windows": list(n.windows),
                "freezes": list(n.freezes),
                "maintenanceInProgress": n.is_in_progress,
                "reason": (n.in_progress or n.under_maintenance).reason,
                "message": (n.in_progress or n.under_maintenance).message,
                **_verdict_json(n.verdict, uses),
            }
            for n in result.nodes
        ]
        doc = {
            "at": format_instant(result.at),
            "inProgress": result.in_progress if result.ceiling is not None else None,
            "ceilings": [
                {"name": c.name, "limit": c.limit, "used": c.used, "nodes": list(c.occupants)}
                for c in result.ceilings
            ],
            "nodes": rows,
        }
        return json.dumps(doc, indent=2) + "\n"
    head = f"at {format_instant(result.at)}"
    if result.ceiling is not None:
        head += f"; in progress {result.in_progress}"
        head += (
            f" of at most {result.ceiling}"
            if result.ceiling
            else " (ceiling 0: paused, nobody new is admitted)"
        )
    lines = [head]
    lines += [
        f"  {c.name}: {c.used} of at most {c.limit}"
        + (f" ({', '.join(c.occupants)})" if c.occupants else "")
        for c in result.ceilings[1:]
    ]
    table_rows = [("NODE", "UNDER-MAINTENANCE", "IN-PROGRESS", "REASON", "WINDOWS", "DETAIL")]
    table_rows += [
        (
            n.name,
            str(n.is_under_maintenance).lower(),
            "-" if n.is_in_progress is None else str(n.is_in_progress).lower(),
            (n.in_progress or n.under_maintenance).reason,
            ",".join((*n.windows, *(f"{f}(freeze)" for f in n.freezes))) or "-",
            _detail(n.verdict) or "-",
        )
        for n in result.nodes
    ]
    return "\n".join(lines) + "\n" + table(table_rows)


def forecast(f: Forecast, output: str) -> str:
    """A forecast as ``kumaco forecast`` prints it: a table by admission and a summary, or JSON.

    JSON: ``{from, until, finishedAt (null if not all finished), nodes: [{name,
    admitted, finished, windows}], unfinished: [names], nextChance: {name:
    {at, window}}}``.
    """

    def ts(t: int | None) -> str | None:
        return None if t is None else format_instant(t)

    if output == "json":
        doc = {
            "from": format_instant(f.start),
            "until": format_instant(f.until),
            "finishedAt": ts(f.finished_at),
            "nodes": [
                {
                    "name": t.name,
                    "admitted": ts(t.admitted),
                    "finished": ts(t.finished),
                    "windows": list(t.windows),
                }
                for t in f.turns
            ],
            "unfinished": list(f.unfinished),
            "nextChance": {
                name: {"at": format_instant(at), "window": key}
                for name, (at, key) in sorted(f.next_chance.items())
            },
        }
        return json.dumps(doc, indent=2) + "\n"
    rows = [("NODE", "ADMITTED", "FINISHED", "WINDOWS")]
    rows += [
        (t.name, ts(t.admitted) or "-", ts(t.finished) or "-", ",".join(t.windows) or "-")
        for t in f.turns
    ]
    done = len(f.turns) - len(f.unfinished)
    if not f.turns:
        summary = "no node needs maintenance"
    elif not f.unfinished:
        assert f.finished_at is not None
        summary = f"all {done} nodes finished by {format_instant(f.finished_at)}"
    else:
        last = max((t.finished for t in f.turns if t.finished is not None), default=None)
        by = f" by {format_instant(last)}" if last is not None else ""
        summary = (
            f"{done} of {len(f.turns)} nodes finished{by}; {len(f.unfinished)} did not fit: "
            + ", ".join(f.unfinished)
        )
        if f.next_chance:
            at, key = min(f.next_chance.values())
            summary += f"; next chance: {format_instant(at)} ({key})"
    return table(rows) + summary + "\n"
