"""What the offline commands print: text, JSON, YAML, and an iCalendar feed of windows.

The ``kubectl kumaco`` twins print through the same functions. Contract: pure
renderers, each returning the whole output as a string; the same objects give
the same bytes whether they came from files or from a cluster. Each result type
has one table of its formats (format name -> renderer): :data:`VALIDATE`
(:class:`Verdicts`), :data:`WINDOWS` (:class:`Openings`; also ``wide``, the text with
each occurrence's local time beside UTC, and ``ics``: :mod:`kumaco.views.calendar`),
:data:`PLAN` (a :class:`~kumaco.core.planning.planner.Plan`) and :data:`FORECAST` (a
:class:`~kumaco.core.planning.forecast.Forecast`); ``yaml`` is the JSON document as
YAML. The JSON shapes are a contract (docs/reference.md): ``validate`` a list of
``{namespace, name, valid, errors: [{key, message}], warnings}``;
``windows`` a list of ``{namespace, name, start, end}`` (``end`` null for an
occurrence that never closes, ``freeze: true`` for a freeze); ``plan`` ``{at,
nodes: [{name, underMaintenance, windows, maintenanceInProgress, reason,
rule, ...}]}``; ``forecast`` ``{from, until, finishedAt, nodes, unfinished, nextChance,
inNoWindow, noChance}``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import yaml

from kumaco.core.errors import one_line
from kumaco.core.planning.forecast import Forecast
from kumaco.core.planning.policy import (
    ALLOWED,
    GLOBAL,
    HELD,
    CeilingUse,
    Detail,
    NodePlan,
    Plan,
    Verdict,
)
from kumaco.core.planning.waiting import SHOWN
from kumaco.core.time.durations import SECOND, format_go_duration
from kumaco.core.time.instants import format_instant
from kumaco.core.windows.window import InvalidWindow, Occurrence, Window
from kumaco.views.calendar import calendar
from kumaco.views.table import table
from kumaco.views.timeline.zones import format_local, local_time

#: The formats every listing takes (``windows`` also ``ics``).
FORMATS = ("text", "json", "yaml")

R = TypeVar("R")
#: A result type's formats: format name -> renderer of the whole output.
Formats = dict[str, Callable[[R], str]]


def serialize(doc: object, output: str) -> str:
    """A JSON-ready document as JSON or YAML."""
    if output == "yaml":
        return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=1000)
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def formats(text: Callable[[R], str], doc: Callable[[R], object]) -> Formats[R]:
    """The table of :data:`FORMATS`: ``text``, and the document ``doc`` as JSON or YAML."""
    return {
        "text": text,
        "json": lambda r: serialize(doc(r), "json"),
        "yaml": lambda r: serialize(doc(r), "yaml"),
    }


@dataclass(frozen=True)
class Verdicts:
    """What ``kumaco validate`` found: each window ConfigMap, and warnings by window key.

    The warnings go into the JSON/YAML entries; in text they are the caller's to print
    (on standard error).
    """

    entries: Sequence[Window | InvalidWindow]
    warnings: Mapping[str, Sequence[str]] = field(default_factory=dict)


def _validate_doc(v: Verdicts) -> object:
    return [
        {
            "namespace": e.namespace,
            "name": e.name,
            "valid": isinstance(e, Window),
            "errors": []
            if isinstance(e, Window)
            else [{"key": f.key, "message": f.message} for f in e.errors],
            "warnings": list(v.warnings.get(e.key, ())),
        }
        for e in v.entries
    ]


def _validate_text(v: Verdicts) -> str:
    """One verdict per ConfigMap: ``valid ns/name`` or ``invalid ns/name: key: reason``."""
    return "".join(
        f"valid {one_line(e.key)}\n"
        if isinstance(e, Window)
        else f"invalid {one_line(e.key)}: {one_line(e.reason)}\n"
        for e in v.entries
    )


VALIDATE: Formats[Verdicts] = formats(_validate_text, _validate_doc)


def skipped(entry: InvalidWindow) -> str:
    """The note for an invalid window that a listing leaves out."""
    return f"skipping invalid {one_line(entry.key)}: {one_line(entry.reason)}\n"


@dataclass(frozen=True)
class Openings:
    """Occurrences as ``kumaco windows`` prints them, and the windows they are of.

    Freeze windows' occurrences are marked ``"freeze": true`` in JSON and
    ``(freeze)`` in text. An open-ended occurrence (it never closes, or not within
    the look-ahead) has ``"end": null`` and ``open-ended`` in text. ``ics``: an
    RFC 5545 calendar (:func:`calendar`).
    """

    found: Sequence[Occurrence]
    windows: Sequence[Window]
    #: When the listing was made (``--at``, else now): the calendar's DTSTAMP and SEQUENCE.
    generated: int = 0

    @property
    def freezes(self) -> frozenset[str]:
        return frozenset(w.key for w in self.windows if w.freeze)

    @property
    def by_key(self) -> dict[str, Window]:
        return {w.key: w for w in self.windows}


def _windows_doc(o: Openings) -> object:
    freezes = o.freezes
    return [
        {
            "namespace": x.namespace,
            "name": x.name,
            "start": format_instant(x.start),
            "end": None if x.open_ended else format_instant(x.end),
            **({"freeze": True} if x.key in freezes else {}),
        }
        for x in o.found
    ]


def _windows_text(o: Openings) -> str:
    freezes = o.freezes
    return "".join(
        f"{format_instant(x.start)}  {'open-ended' if x.open_ended else format_instant(x.end)}"
        f"  {x.namespace}/{x.name}" + ("  (freeze)" if x.key in freezes else "") + "\n"
        for x in o.found
    )


def _local_span(x: Occurrence, zone: str) -> str:
    """``Sun 2027-03-21 02:00 CET - 05:00 CET (Europe/Berlin)``: an occurrence's wall clock."""
    start = local_time(x.start, zone)
    text = f"{start:%a} {format_local(x.start, zone)} - "
    if x.open_ended:
        text += "open-ended"
    else:
        same_day = local_time(x.end, zone).date() == start.date()
        text += format_local(x.end, zone, date=not same_day)
    return f"{text} ({zone})"


def _windows_wide(o: Openings) -> str:
    """The text listing with each occurrence's local time, in its window's zone, beside UTC."""
    freezes, zones = o.freezes, {w.key: w.zone_name for w in o.windows}
    return "".join(
        f"{format_instant(x.start)}  {'open-ended' if x.open_ended else format_instant(x.end)}"
        f"  {x.namespace}/{x.name}  {_local_span(x, zones.get(x.key, 'UTC'))}"
        + ("  (freeze)" if x.key in freezes else "")
        + "\n"
        for x in o.found
    )


WINDOWS: Formats[Openings] = {
    **formats(_windows_text, _windows_doc),
    "wide": _windows_wide,
    "ics": lambda o: calendar(o.found, o.by_key, o.generated),
}


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
    if v.cause is not None:
        parts.append("released: " + v.cause)
    parts += (text for d in v.details if (text := d.text()))
    if v.boot is None and v.rule in (ALLOWED, HELD):
        parts.append("no bootID: ends only when a required condition clears")
    return "; ".join(parts)


def _verdict_json(
    v: Verdict | None, uses: dict[str, CeilingUse], details: tuple[type[Detail], ...]
) -> dict[str, object]:
    """A node's verdict in ``plan -o json``; each rule's details under their own keys."""
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
        "releaseCause": v.cause,
        "bootID": v.boot,
        **{kind.key: kind.empty() for kind in details},
        **{d.key: d.json() for d in v.details},
    }


def _plan_doc(result: Plan) -> object:
    uses = {c.name: c for c in result.ceilings}
    rows = [
        {
            "name": n.name,
            "underMaintenance": n.is_under_maintenance,
            "windows": list(n.windows),
            "freezes": list(n.freezes),
            "maintenanceInProgress": n.is_in_progress,
            "reason": (n.in_progress or n.under_maintenance).reason,
            "message": (n.in_progress or n.under_maintenance).message,
            **_verdict_json(n.verdict, uses, result.details),
            **_planned_json(n),
        }
        for n in result.nodes
    ]
    return {
        "at": format_instant(result.at),
        "inProgress": result.in_progress if result.ceiling is not None else None,
        "placesTakenNotInProgress": list(_taken_not_in_progress(result))
        if result.ceiling is not None
        else None,
        "ceilings": [
            {"name": c.name, "limit": c.limit, "used": c.used, "nodes": list(c.occupants)}
            for c in result.ceilings
        ],
        "nodes": rows,
    }


def _taken_not_in_progress(result: Plan) -> tuple[str, ...]:
    """The nodes taking a place of the global ceiling without holding MaintenanceInProgress.

    Counted all the same by a rule (a release delay, ``--count-unavailable``,
    ``--count-released-unavailable``): the ceiling's room is what they and the holders
    leave.
    """
    holding = {n.name for n in result.nodes if n.is_in_progress}
    overall = next((c for c in result.ceilings if c.name == GLOBAL), None)
    return () if overall is None else tuple(n for n in overall.occupants if n not in holding)


def _plan_text(result: Plan) -> str:
    head = f"at {format_instant(result.at)}"
    if result.ceiling is not None:
        head += f"; in progress {result.in_progress}"
        if others := _taken_not_in_progress(result):
            taken = (
                "1 place taken by a node"
                if len(others) == 1
                else f"{len(others)} places taken by nodes"
            )
            head += f", {taken} not in progress ({', '.join(others)})"
            head += "," if result.ceiling else ";"
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
    table_rows: list[tuple[str, ...]] = [
        ("NODE", "UNDER-MAINTENANCE", "IN-PROGRESS", "REASON", "WINDOWS", "DETAIL")
    ]
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
    if result.planned_lead:
        lines[0] += f"; maintenance planned {format_go_duration(result.planned_lead)} ahead"
        table_rows = _with_planned(table_rows, result)
    return "\n".join(lines) + "\n" + table(table_rows)


def _planned_json(n: NodePlan) -> dict[str, object]:
    """A plan node's ``maintenancePlanned`` and ``plannedStart`` (false, null without a lead)."""
    return {
        "maintenancePlanned": n.is_planned,
        "plannedStart": None if n.planned_start is None else format_instant(n.planned_start),
    }


def _with_planned(rows: list[tuple[str, ...]], result: Plan) -> list[tuple[str, ...]]:
    """The plan's table with a PLANNED column after IN-PROGRESS: the planned start, or ``-``."""
    column = ["PLANNED"] + [
        "-" if n.planned_start is None else format_instant(n.planned_start) for n in result.nodes
    ]
    return [(*row[:3], cell, *row[3:]) for row, cell in zip(rows, column, strict=True)]


#: A plan as ``kumaco plan`` prints it (a table or the JSON document). Each node carries
#: the rule that decided its MaintenanceInProgress and what it involved: the required
#: conditions missing, the blocking ones present, which ceiling is full and who holds its
#: places, the ceilings an admitted (or holding, settling, unavailable) node counts toward.
PLAN: Formats[Plan] = formats(_plan_text, _plan_doc)


def render_plan(result: Plan, output: str) -> str:
    """``result`` in :data:`PLAN`'s format ``output`` (text for any other)."""
    return PLAN.get(output, _plan_text)(result)


def _ts(t: int | None) -> str | None:
    return None if t is None else format_instant(t)


def _forecast_doc(f: Forecast) -> object:
    ts = _ts
    return {
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
        "inNoWindow": list(f.in_no_window),
        "noChance": dict(sorted(f.no_chance.items())),
        "longestWaits": [
            {
                "name": w.name,
                "since": format_instant(w.since),
                "admitted": ts(w.admitted),
                "waitedSeconds": w.waited // SECOND,
            }
            for w in f.waits[:SHOWN]
        ],
    }


def _chance_lines(f: Forecast) -> list[str]:
    """Which unfinished nodes get their next chance when, and which get none (and why)."""
    lines = []
    by_chance: dict[tuple[int, str], list[str]] = {}
    for name, chance in f.next_chance.items():
        by_chance.setdefault(chance, []).append(name)
    for (at, key), names in sorted(by_chance.items()):
        lines.append(f"next chance: {format_instant(at)} ({key}) for {', '.join(sorted(names))}")
    by_reason: dict[str, list[str]] = {}
    for name, why in f.no_chance.items():
        by_reason.setdefault(why, []).append(name)
    for why, names in sorted(by_reason.items()):
        lines.append(f"no chance: {', '.join(sorted(names))} ({one_line(why)})")
    if f.in_no_window:
        outside = ", ".join(f.in_no_window)
        lines.append(f"in no window: {outside} (selected by no maintenance window)")
    return lines


def _forecast_text(f: Forecast) -> str:
    ts = _ts
    rows = [("NODE", "ADMITTED", "FINISHED", "WINDOWS")]
    rows += [
        (t.name, ts(t.admitted) or "-", ts(t.finished) or "-", ",".join(t.windows) or "-")
        for t in f.turns
    ]
    done = len(f.turns) - len(f.unfinished)
    if not f.turns:
        return table(rows) + "no node needs maintenance\n"
    if not f.unfinished:
        assert f.finished_at is not None
        summary = f"all {done} nodes finished by {format_instant(f.finished_at)}"
        return table(rows) + "\n".join([summary, *_wait_lines(f)]) + "\n"
    last = max((t.finished for t in f.turns if t.finished is not None), default=None)
    by = f" by {format_instant(last)}" if last is not None else ""
    summary = f"{done} of {len(f.turns)} nodes finished{by}"
    outside = set(f.in_no_window)
    missed = [n for n in f.unfinished if n not in outside]
    if missed:
        summary += f"; {len(missed)} did not fit: {', '.join(missed)}"
    if outside:
        summary += f"; {len(outside)} in no window"
    return table(rows) + "\n".join([summary, *_chance_lines(f), *_wait_lines(f)]) + "\n"


def _wait_lines(f: Forecast) -> list[str]:
    """The longest waits from the request (those that waited at all), on one line."""
    waits = [w for w in f.waits[:SHOWN] if w.waited]
    if not waits:
        return []
    return [
        "longest waits from the request: "
        + ", ".join(
            f"{w.name} {format_go_duration(w.waited)}"
            + ("" if w.admitted is not None else " (not admitted)")
            for w in waits
        )
    ]


#: A forecast as ``kumaco forecast`` prints it: a table by admission and a summary, or
#: JSON: ``{from, until, finishedAt (null if not all finished), nodes: [{name, admitted,
#: finished, windows}], unfinished: [names], nextChance: {name: {at, window}}, inNoWindow:
#: [names], noChance: {name: why}, longestWaits: [{name, since, admitted, waitedSeconds}]}``
#: (the three longest waits from a node's request to its admission, or to ``until``).
FORECAST: Formats[Forecast] = formats(_forecast_text, _forecast_doc)
